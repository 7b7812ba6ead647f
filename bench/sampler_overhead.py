"""Figure 1c — what the compile sampler (compile time by line, ``compiler.capturing.compile_sampler``) adds
to a compile.

Two variants compile the same workload from fresh entry points, interleaved, caches off
(``force_disable_caches``: every compile traces, lowers, fuses and runs g++), in one warm process:
``capture()`` (sampling, the default) and ``capture(sample_compile=False)``. Two figures:

- the ratio of the medians (wall time of the compile and the capture's assembly), sampled / not sampled;
  on a shared 2-core machine its noise is a few percent, larger than the effect;
- the sampler's own measured cost: the seconds its thread spent taking samples (holding the GIL the
  compile needs; ``busy_s``), as a share of the sampled compile's wall time — an upper bound of the
  time it took from the compile, with no noise from the other variant.
"""
from __future__ import annotations

import statistics
import time

from .table import Row, seconds
from .workloads import fresh_entry, make

VARIANTS = ("sampled", "unsampled")
TARGET = 1.02


def _compile(variant: str, fn, args) -> tuple[float, float, float, int]:
    import torch

    import compiler

    compiled = torch.compile(fresh_entry(fn))
    cpu, wall = time.process_time(), time.perf_counter()
    with compiler.capture(sample_compile=(variant == "sampled")) as cap:
        compiled(*args)
    wall = time.perf_counter() - wall
    cpu = time.process_time() - cpu
    sampling = cap.options.get("compile_sampling") or {}
    return wall, cpu, sampling.get("busy_s", 0.0), sampling.get("samples", 0)


def measure(workload: str, reps: int) -> dict:
    import torch
    import torch._inductor.config as inductor_config

    fn, args = make(workload)
    runs = {v: [] for v in VARIANTS}
    with torch.no_grad(), inductor_config.patch(force_disable_caches=True):
        _compile("sampled", fn, args)  # warm: first-use imports of both variants' code paths
        for i in range(reps):
            for variant in VARIANTS[i % 2:] + VARIANTS[:i % 2]:
                runs[variant].append(_compile(variant, fn, args))
    med = {v: {"wall_s": statistics.median(r[0] for r in rs), "cpu_s": statistics.median(r[1] for r in rs)}
           for v, rs in runs.items()}
    busy_share = statistics.median(r[2] / r[0] for r in runs["sampled"])
    samples = statistics.median(r[3] for r in runs["sampled"])
    return {"medians": med, "busy_share": busy_share, "samples": samples, "runs": runs, "reps": reps}


def run(quick: bool, log=print) -> tuple[list[Row], dict]:
    workloads = ("mlp",) if quick else ("mlp", "transformer_block")
    reps = 6 if quick else 11
    log(f"[1c] compile sampler overhead: {', '.join(workloads)}, {reps} interleaved reps, caches off")
    out, details = [], {}
    for workload in workloads:
        r = measure(workload, reps)
        details[workload] = r
        s, u = r["medians"]["sampled"], r["medians"]["unsampled"]
        log(f"  {workload:<17} wall {seconds(s['wall_s'])} vs {seconds(u['wall_s'])}, CPU {seconds(s['cpu_s'])} vs "
            f"{seconds(u['cpu_s'])}; sampler busy {r['busy_share']:.2%} of the compile ({r['samples']:.0f} samples)")
        out.append(Row(f"compile sampler: {workload} compile wall time (caches off), sampled vs not",
                       seconds(s["wall_s"]), seconds(u["wall_s"]), s["wall_s"] / u["wall_s"], f"≤ {TARGET}",
                       high=TARGET, detail=r["medians"],
                       note=f"CPU {s['cpu_s'] / u['cpu_s']:.3f}×; medians of {r['reps']} interleaved reps, warm "
                            "process; shared-machine noise is a few %"))
        out.append(Row(f"compile sampler: {workload} time spent taking samples / compile wall time",
                       f"{r['busy_share']:.2%}", "the sampled compile", 1 + r["busy_share"], f"≤ {TARGET}",
                       high=TARGET, note=f"{r['samples']:.0f} samples per compile (median); measured in the "
                                         "sampler thread (perf_counter around each sample)"))
    return out, details
