"""Stages: raw records → one typed ``Capture``.

In: ``Record`` objects (from a live run or a TORCH_TRACE file, the same type either way). Leaves: a
``Capture`` (``capture``) holding, per compile, one typed object per stage, declared field by field
beside its builder (``Breaks`` in ``breaks``, ``Graph`` in ``fx_graph``, ``Kernel`` in ``kernels`` …; on
the machinery of ``data``: typed JSON-backed objects, checked on read; fixes are declared in
``fix_schema``) and tied together in ``schema`` (``Compile``, ``CaptureData``), which imports them all;
no builder imports ``schema``. ``assemble`` holds the one table of stage builders (``STAGE_BUILDERS``:
each stage, the record kinds it reads, its builder, its type), used by live capture, traces and
AOTInductor alike; each stage module (``bytecode``, ``fx_graph``, ``guards``, ``breaks``,
``recompiles``, ``shapes``, ``timings``, ``caches``, ``inductor_ir``, ``kernels``, ``cudagraphs``,
``provenance``, ``compile_time``, ``kernel_costs``) turns its records into that stage.

Also here, because the floors above need them too: the ``Record`` type and its checks (``records``), the
atomic write (``files``), the environment record (``environment``), where source text may be read from
(``source_files``) and a GPU profile matched to a compile's kernels (``gpu_profile``). What a Capture does
with an upper floor's help (what-if, fixes, diff, saving a trace) it finds in ``capture.METHODS``.
"""
