"""Figure 1b — where the capture's compile overhead goes, in a warm process (the notebook case:
``explore()`` again in a live kernel, where imports and ISA probes are already paid).

Three variants compile the same workload from fresh entry points, interleaved, caches off
(``force_disable_caches``) so every compile really lowers and fuses: plain; ``capture(
artifact_logs=False)`` (structured trace + bytecode hook + assembly, no Inductor IR loggers);
``capture()`` (everything, the default). CPU time of this process is the robust figure on a
shared machine; the compile-worker pool's g++ is outside it, wall time includes it.
"""
from __future__ import annotations

import statistics
import time

from .table import Row, seconds
from .workloads import fresh_entry, make

VARIANTS = ("plain", "trace_only", "full")


def _compile(variant: str, fn, args) -> tuple[float, float, float]:
    import torch

    import compiler
    import compiler.capturing.session as session

    assemble_cpu = []
    original = session.assemble

    def timed_assemble(*a, **k):  # how much of the capture's cost is tcompile's own assembly
        start = time.process_time()
        try:
            return original(*a, **k)
        finally:
            assemble_cpu.append(time.process_time() - start)

    compiled = torch.compile(fresh_entry(fn))
    cpu, wall = time.process_time(), time.perf_counter()
    if variant == "plain":
        compiled(*args)
    else:
        session.assemble = timed_assemble
        try:
            with compiler.capture(artifact_logs=(variant == "full")) as cap:
                compiled(*args)
        finally:
            session.assemble = original
        # of the capture's cost: the compile sampler's own time, and torch's for the structured trace's payloads
        sampler = (cap.options.get("compile_sampling") or {}).get("busy_s", 0.0)
        logging = sum(c.metrics.get("structured_logging_overhead_s") or 0.0 for c in cap.compiles)
        return time.process_time() - cpu, time.perf_counter() - wall, sum(assemble_cpu), sampler, logging
    return time.process_time() - cpu, time.perf_counter() - wall, sum(assemble_cpu), 0.0, 0.0


def measure(workload: str, reps: int) -> dict:
    import torch
    import torch._inductor.config as inductor_config

    fn, args = make(workload)
    samples = {v: [] for v in VARIANTS}
    with torch.no_grad(), inductor_config.patch(force_disable_caches=True):
        _compile("full", fn, args)  # warm: first-use imports of every variant's code paths
        for i in range(reps):
            for variant in VARIANTS[i % 3:] + VARIANTS[:i % 3]:
                samples[variant].append(_compile(variant, fn, args))
    med = {v: {"cpu_s": statistics.median(s[0] for s in xs), "wall_s": statistics.median(s[1] for s in xs)}
           for v, xs in samples.items()}
    med["full"]["assemble_cpu_s"] = statistics.median(s[2] for s in samples["full"])
    med["full"]["sampler_s"] = statistics.median(s[3] for s in samples["full"])
    med["full"]["torch_structured_logging_s"] = statistics.median(s[4] for s in samples["full"])
    return {"medians": med, "samples": samples, "reps": reps}


def run(quick: bool, log=print) -> tuple[list[Row], dict]:
    workloads = ("mlp",) if quick else ("mlp", "transformer_block")
    reps = 6 if quick else 11
    log(f"[1b] warm-process compile overhead breakdown: {', '.join(workloads)}, {reps} interleaved reps")
    out, details = [], {}
    for workload in workloads:
        r = measure(workload, reps)
        details[workload] = r
        m = r["medians"]
        plain, trace_only, full = m["plain"], m["trace_only"], m["full"]
        split = (f"of the extra CPU {seconds(full['cpu_s'] - plain['cpu_s'])}: structured trace + hooks "
                 f"{seconds(trace_only['cpu_s'] - plain['cpu_s'] - full['assemble_cpu_s'])}, Inductor IR loggers "
                 f"{seconds(full['cpu_s'] - trace_only['cpu_s'])}, assembling the capture {seconds(full['assemble_cpu_s'])}"
                 f" (within the first: torch's own structured-logging time {seconds(full['torch_structured_logging_s'])}, "
                 f"the compile sampler {seconds(full['sampler_s'])})")
        log(f"  {workload:<17} wall {seconds(full['wall_s'])} vs {seconds(plain['wall_s'])}, "
            f"CPU {seconds(full['cpu_s'])} vs {seconds(plain['cpu_s'])}; {split}")
        out.append(Row(f"warm-process compile wall time: {workload}, capture vs plain", seconds(full["wall_s"]),
                       seconds(plain["wall_s"]), full["wall_s"] / plain["wall_s"], "(reference)", detail=m,
                       note=split))
        out.append(Row(f"warm-process compile CPU time: {workload}, capture vs plain", seconds(full["cpu_s"]),
                       seconds(plain["cpu_s"]), full["cpu_s"] / plain["cpu_s"], "(reference)",
                       note=f"capture without IR loggers: {trace_only['cpu_s'] / plain['cpu_s']:.3f}"))
    return out, details
