"""Analyses: questions asked of captures, after they are built; they never change a Capture.

In: one or more ``Capture`` objects (and, for experiments, the live function). Leaves: new typed
results — ``whatif`` (would new arguments recompile, on which guard), ``diff`` (two captures stage by
stage), ``compare`` / ``configurations`` / ``comparison`` (one function under several
configurations), ``jit_input`` (torch.jit.trace as the input of torch.compile), ``experiments``
(what a knob does, compiled for real).
"""
