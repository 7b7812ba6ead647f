"""Stages: raw records → one typed ``Capture``.

In: ``Record`` objects (from a live run or a TORCH_TRACE file, the same type either way). Leaves: a
``Capture`` (``capture``) holding, per compile, one typed object per stage, declared field by field
in ``schema`` (on the machinery of ``data``: typed JSON-backed objects, checked on read; fixes are
declared in ``fix_schema``). ``assemble`` holds the one table of stage builders (``STAGE_BUILDERS``: each
stage, the record kinds it reads, its builder), which live capture, traces and AOTInductor all use; each stage module (``bytecode``, ``fx_graph``, ``guards``, ``breaks``, ``recompiles``,
``shapes``, ``timings``, ``inductor_ir``, ``kernels``, ``cudagraphs``, ``provenance``) turns its
records into that stage's data.
"""
