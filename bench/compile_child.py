"""One cold compile in a fresh process: ``python -m bench.compile_child VARIANT WORKLOAD``.

The parent (``bench.compile_time``) sets the environment: a fresh ``TORCHINDUCTOR_CACHE_DIR``,
and ``TORCH_TRACE`` or ``TORCH_COMPILE_DEBUG`` for those variants. Prints one JSON line.

Timed: from just before ``torch.compile`` (and, for ``capture``, before entering the context
manager) to the end of the first call (for ``capture``: to the end of the block, when the capture
has been assembled). Imports of torch and tcompile are not timed; they are reported separately.
"""
from __future__ import annotations

import json
import resource
import sys
import time

VARIANTS = ("plain", "capture", "trace", "debug")


def _cpu_seconds() -> float:
    """CPU time of this process and its finished children (the C++ compiler runs as a child)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _compile_once(variant: str, fn, args) -> dict:
    import torch

    import compiler

    out = {}
    cpu_start = _cpu_seconds()
    start = time.perf_counter()
    if variant == "capture":
        with compiler.capture() as cap:  # fresh=False, every stage and IR logger: the default
            compiled = torch.compile(fn)
            compiled(*args)
            assemble_start = time.perf_counter()
        out["assemble_s"] = time.perf_counter() - assemble_start
    else:
        compiled = torch.compile(fn)
        compiled(*args)
    out["compile_s"] = time.perf_counter() - start
    out["cpu_s"] = _cpu_seconds() - cpu_start
    if variant == "capture":  # sanity: a real compile, with the Inductor IR stages present
        out["capture_json_bytes"] = len(cap.to_json().encode())
        out["inductor_ir"] = any(run.ir.available for c in cap.compiles for run in c.inductor.runs)
    return out


def warm_isa() -> dict:
    """Run the CPU ISA probes into this process's cache dir (the parent copies it as a seed)."""
    start = time.perf_counter()
    from torch._inductor import cpu_vec_isa

    isa = cpu_vec_isa.pick_vec_isa()
    return {"isa": str(isa), "seconds": time.perf_counter() - start}


def main(argv: list[str]) -> dict:
    start = time.perf_counter()
    import torch
    import torch._dynamo  # noqa: F401 — imported before the clock starts in every variant
    from torch._dynamo.utils import counters

    import compiler  # noqa: F401
    from bench.workloads import make

    if argv[0] == "warm-isa":
        return warm_isa()
    variant, workload = argv
    if variant not in VARIANTS:
        raise SystemExit(f"unknown variant {variant!r}; one of {VARIANTS}")
    import_s = time.perf_counter() - start
    fn, args = make(workload)
    with torch.no_grad():
        result = _compile_once(variant, fn, args)
    result.update(variant=variant, workload=workload, import_s=import_s,
                  fxgraph_cache_miss=counters["inductor"]["fxgraph_cache_miss"],
                  fxgraph_cache_hit=counters["inductor"]["fxgraph_cache_hit"])
    return result


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
