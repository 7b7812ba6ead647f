"""Capturing: watching a torch.compile run in this process.

In: the user's function and arguments (``run.run`` / ``run.explore``) or a ``with capture():`` block
(``session``). Leaves: raw records — torch's own log records (``records``), the bytecode hook's code
objects, autotuning choices (``autotune``), timings (``runtime``) and GPU profiles (``gpu``) — which
``session.Recorder.build`` hands to ``compiler.stages.assemble`` once, at the end.
"""
