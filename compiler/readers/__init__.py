"""Readers: files in and out.

In: a TORCH_TRACE log (``trace``: the file format both ways; ``trace_capture``: one log → a Capture),
a directory of per-rank logs or saved captures (``job``), an AOTInductor log (``aot_inductor``).
Leaves: the same ``Record`` objects a live capture makes, handed to ``compiler.stages.assemble``, and
the ``Capture`` / ``Job`` it builds. ``source_files`` says where a frame's source text may be read
from (never a local file for a trace, unless asked).
"""
