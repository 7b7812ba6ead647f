"""A small detection-model-like network that is messy the way torchvision's Mask R-CNN is on CPU
(torchvision does not import beside this torch build): a Python loop whose data-dependent break makes
Dynamo skip the whole frame ("graph break in loop"), a float argument (``spatial_scale``) that changes
per call and fills the recompile limit, and kernels that mix code from two files (this package's
``model.py`` and ``ops.py``)."""
