"""Stages: raw records → one typed ``Capture``.

In: ``Record`` objects (from a live run or a TORCH_TRACE file, the same type either way). Leaves: a
``Capture`` (``capture``) holding, per compile, one typed object per stage, declared field by field
in ``schema`` (on the machinery of ``data``: typed JSON-backed objects, checked on read; fixes are
declared in ``fix_schema``). ``assemble`` holds the one table of stage builders (``STAGE_BUILDERS``:
each stage, the record kinds it reads, its builder), used by live capture, traces and AOTInductor
alike; each stage module (``bytecode``, ``fx_graph``, ``guards``, ``breaks``, ``recompiles``,
``shapes``, ``timings``, ``inductor_ir``, ``kernels``, ``cudagraphs``, ``provenance``,
``compile_time``, ``kernel_costs``) turns its records into that stage's data.
"""
