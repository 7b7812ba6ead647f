"""Figure 1c — what the compile sampler (compile time by line, ``compiler.capturing.compile_sampler``) adds
to a compile.

Two variants compile the same workload from fresh entry points, interleaved, caches off
(``force_disable_caches``: every compile traces, lowers, fuses and runs g++), in one warm process:
``capture()`` (sampling, the default) and ``capture(sample_compile=False)``. Two figures:

- the ratio of the medians (wall time of the compile and the capture's assembly), sampled / not sampled;
  on a shared 2-core machine its noise is a few percent, larger than the effect;
- the sampler's own measured cost: its thread's CPU time (``thread_cpu_s``: taking samples and waking up
  for them), as a share of the sampled compile's wall time, with no noise from the other variant. Not an
  upper bound: the compiling thread also loses time handing the GIL over for each sample (a warm MLP
  compile, paired process CPU: +9 ms with the sampler, of which ~4 ms its thread; the time around the
  samples alone, ``busy_s``, was ~2.7 ms).
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
    # the sampler thread's whole CPU (its samples and its waking up), where recorded; else the time taking samples
    return wall, cpu, sampling.get("thread_cpu_s", sampling.get("busy_s", 0.0)), sampling.get("samples", 0)


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
            f"{seconds(u['cpu_s'])}; sampler thread CPU {r['busy_share']:.2%} of the compile ({r['samples']:.0f} samples)")
        out.append(Row(f"compile sampler: {workload} compile wall time (caches off), sampled vs not",
                       seconds(s["wall_s"]), seconds(u["wall_s"]), s["wall_s"] / u["wall_s"], f"≤ {TARGET}",
                       high=TARGET, detail=r["medians"],
                       note=f"CPU {s['cpu_s'] / u['cpu_s']:.3f}×; medians of {r['reps']} interleaved reps, warm "
                            "process; shared-machine noise is a few %"))
        out.append(Row(f"compile sampler: {workload} sampler thread CPU / compile wall time",
                       f"{r['busy_share']:.2%}", "the sampled compile", 1 + r["busy_share"], f"≤ {TARGET}",
                       high=TARGET, note=f"{r['samples']:.0f} samples per compile (median); the sampler thread's "
                                         "CPU time (thread_time: its samples and its waking up; the time around the "
                                         "samples alone, busy_s, is about a third of it)"))
    return out, details
