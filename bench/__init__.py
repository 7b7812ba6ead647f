"""tcompile's benchmarks: what exploring costs, measured against plain torch.compile and the
debug tools (``TORCH_TRACE``, ``TORCH_COMPILE_DEBUG``). Run ``python -m bench --quick``.

One module per figure: ``compile_time`` (fresh processes via ``compile_child``), ``steady_state``,
``timing_accuracy``, ``rendering``; ``workloads`` holds what they run.
"""
