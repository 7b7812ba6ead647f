"""Figure 1b — where the capture's compile overhead goes, in a warm process (the notebook case:
``explore()`` again in a live kernel, where imports and ISA probes are already paid).

Four variants compile the same workload from fresh entry points, interleaved, caches off
(``force_disable_caches``) so every compile really lowers and fuses:

- ``plain``: torch.compile alone;
- ``torch_trace``: plain with a do-nothing handler on torch's structured-trace logger (``torch.__trace``).
  A handler there is what makes torch compute every structured-trace payload (``trace_structured``
  checks ``trace_log.handlers`` and nothing else): this is the CPU torch spends for any consumer of
  the structured trace — TORCH_TRACE, tlparse, a capture — before any consumer code runs;
- ``trace_only``: ``capture(artifact_logs=False, sample_compile=False)`` (structured trace, bytecode hook);
- ``full``: ``capture()``, the default (also the Inductor IR loggers and the compile sampler).

CPU time of this process (``time.process_time``, all its threads) is the robust figure on a shared
machine; the compile-worker pool's g++ is outside it, wall time includes it. The clock stops when the
``with`` block ends. ``capture()`` builds the Capture on first use (``Capture._defer``), so the build is
timed on its own: the first read of ``cap.compiles`` after the block. Inside the ``full`` variant,
tcompile's own code is timed by wrapping it: the two log handlers' ``emit``, the bytecode hook, the
recorder's enter and exit, a build inside the block (none since the build is deferred), and the
sampler's own ``busy_s``.
"""
from __future__ import annotations

import contextlib
import logging
import statistics
import time

from .table import Row, seconds
from .workloads import fresh_entry, make

VARIANTS = ("plain", "torch_trace", "trace_only", "full")
BUDGET_S = 0.005  # issue 22: at most 5 ms of extra CPU per warm compile under capture
# tcompile's code timed inside a capture (owner, attribute, label); looked up when timing starts
OWN_CODE = (("compiler.capturing.records", "_TraceHandler.emit", "trace handler"),
            ("compiler.capturing.records", "_ArtifactHandler.emit", "IR/artifact handler"),
            ("compiler.capturing.session", "_BytecodeRecorder.hook", "bytecode hook"),
            ("compiler.capturing.session", "Recorder.__enter__", "enter"),
            ("compiler.capturing.session", "Recorder.__exit__", "exit"),
            ("compiler.capturing.session", "Recorder.build", "build in the block"))


class _NullHandler(logging.Handler):
    def emit(self, record) -> None:
        return None


@contextlib.contextmanager
def _timing_own_code(spent: dict):
    """Wrap tcompile's functions in ``OWN_CODE`` so each adds its CPU time to ``spent[label]``."""
    import importlib

    undo = []
    for module_name, path, label in OWN_CODE:
        owner = importlib.import_module(module_name)
        *parents, name = path.split(".")
        for parent in parents:
            owner = getattr(owner, parent)
        original = owner.__dict__[name]

        def timed(*args, _original=original, _label=label, **kwargs):
            start = time.process_time()
            try:
                return _original(*args, **kwargs)
            finally:
                spent[_label] = spent.get(_label, 0.0) + time.process_time() - start

        setattr(owner, name, timed)
        undo.append((owner, name, original))
    try:
        yield
    finally:
        for owner, name, original in reversed(undo):
            setattr(owner, name, original)


def _compile(variant: str, fn, args) -> dict:
    import torch
    from torch._logging._internal import trace_log

    import compiler

    compiled = torch.compile(fresh_entry(fn))
    out = {}
    if variant == "plain":
        cpu, wall = time.process_time(), time.perf_counter()
        compiled(*args)
    elif variant == "torch_trace":
        handler = _NullHandler()
        trace_log.addHandler(handler)
        try:
            cpu, wall = time.process_time(), time.perf_counter()
            compiled(*args)
        finally:
            trace_log.removeHandler(handler)
    else:
        spent = {}
        with _timing_own_code(spent if variant == "full" else {}):
            cpu, wall = time.process_time(), time.perf_counter()
            with compiler.capture(artifact_logs=(variant == "full"), sample_compile=(variant == "full")) as cap:
                compiled(*args)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            out["own"] = dict(spent)  # in the block only
            build = time.process_time()
            assert cap.compiles, "the capture holds no compile"  # the first read builds it
            out["deferred_build_cpu_s"] = time.process_time() - build
        out["sampler_s"] = (cap.options.get("compile_sampling") or {}).get("busy_s", 0.0)
        out["torch_structured_logging_s"] = sum(c.metrics.get("structured_logging_overhead_s") or 0.0
                                                for c in cap.compiles)
        return {"cpu_s": cpu, "wall_s": wall, **out}
    return {"cpu_s": time.process_time() - cpu, "wall_s": time.perf_counter() - wall}


def measure(workload: str, reps: int) -> dict:
    import torch
    import torch._inductor.config as inductor_config

    fn, args = make(workload)
    samples = {v: [] for v in VARIANTS}
    with torch.no_grad(), inductor_config.patch(force_disable_caches=True):
        for variant in VARIANTS:  # warm: first-use imports of every variant's code paths
            _compile(variant, fn, args)
        for i in range(reps):
            for variant in VARIANTS[i % len(VARIANTS):] + VARIANTS[:i % len(VARIANTS)]:
                samples[variant].append(_compile(variant, fn, args))
    med = {v: {"cpu_s": statistics.median(s["cpu_s"] for s in xs), "wall_s": statistics.median(s["wall_s"] for s in xs)}
           for v, xs in samples.items()}
    full = samples["full"]
    med["full"]["deferred_build_cpu_s"] = statistics.median(s["deferred_build_cpu_s"] for s in full)
    med["full"]["sampler_s"] = statistics.median(s["sampler_s"] for s in full)
    med["full"]["torch_structured_logging_s"] = statistics.median(s["torch_structured_logging_s"] for s in full)
    med["full"]["own"] = {label: statistics.median(s["own"].get(label, 0.0) for s in full) for _, _, label in OWN_CODE}
    return {"medians": med, "samples": samples, "reps": reps}


def split(m: dict) -> dict:
    """The capture's extra CPU per warm compile (medians), by where it goes."""
    plain, floor, trace_only, full = (m[v]["cpu_s"] for v in VARIANTS)
    own = m["full"]["own"]
    return {"extra_s": full - plain, "torch_trace_s": floor - plain,
            "ir_loggers_and_sampler_s": full - trace_only, "sampler_s": m["full"]["sampler_s"],
            "own_code_s": sum(own.values()), "own": own, "deferred_build_s": m["full"]["deferred_build_cpu_s"]}


def run(quick: bool, log=print) -> tuple[list[Row], dict]:
    workloads = ("mlp",) if quick else ("mlp", "transformer_block")
    reps = 8 if quick else 11
    log(f"[1b] warm-process compile overhead breakdown: {', '.join(workloads)}, {reps} interleaved reps")
    out, details = [], {}
    for workload in workloads:
        r = measure(workload, reps)
        details[workload] = r
        m = r["medians"]
        plain, full = m["plain"], m["full"]
        s = r["split"] = split(m)
        own = ", ".join(f"{label} {seconds(v)}" for label, v in s["own"].items())
        note = (f"of the extra CPU {seconds(s['extra_s'])} (medians, each a difference of two noisy medians): "
                f"torch computing its structured-trace payloads for any handler {seconds(s['torch_trace_s'])}; "
                f"Inductor IR loggers + compile sampler {seconds(s['ir_loggers_and_sampler_s'])} (the sampler's own "
                f"busy time {seconds(s['sampler_s'])}); tcompile's own code inside the block {seconds(s['own_code_s'])} "
                f"({own}). Not in the block: the capture's deferred build, on first use, {seconds(s['deferred_build_s'])}")
        log(f"  {workload:<17} CPU {seconds(full['cpu_s'])} vs {seconds(plain['cpu_s'])}; {note}")
        out.append(Row(f"warm-process compile wall time: {workload}, capture vs plain", seconds(full["wall_s"]),
                       seconds(plain["wall_s"]), full["wall_s"] / plain["wall_s"], "(reference)", detail=m))
        out.append(Row(f"warm-process compile CPU time: {workload}, capture vs plain", seconds(full["cpu_s"]),
                       seconds(plain["cpu_s"]), full["cpu_s"] / plain["cpu_s"], "(reference)",
                       note=f"capture without IR loggers and sampler: {m['trace_only']['cpu_s'] / plain['cpu_s']:.3f}; "
                            f"plain + a do-nothing structured-trace handler: {m['torch_trace']['cpu_s'] / plain['cpu_s']:.3f}"))
        out.append(Row(f"capture CPU per warm compile: {workload}, extra over plain", seconds(s["extra_s"]),
                       f"{seconds(BUDGET_S)} budget", s["extra_s"] / BUDGET_S, f"≤ 1 (≤ {seconds(BUDGET_S)})",
                       high=1.0, note=note))
        out.append(Row(f"capture CPU per warm compile: {workload}, extra over a do-nothing structured-trace handler",
                       seconds(s["extra_s"] - s["torch_trace_s"]), f"{seconds(BUDGET_S)} budget",
                       (s["extra_s"] - s["torch_trace_s"]) / BUDGET_S, "(reference)",
                       note="what the capture adds beyond the payloads torch computes for every structured-trace "
                            "consumer (TORCH_TRACE included): IR loggers, sampler, tcompile's handlers and hooks"))
        out.append(Row(f"capture's deferred build: {workload}, first read of the capture (CPU)",
                       seconds(s["deferred_build_s"]), seconds(plain["cpu_s"]),
                       s["deferred_build_s"] / plain["cpu_s"], "(reference)",
                       note="assembling the records, Capture.from_data, proposing fixes: paid once, when the capture "
                            "is first read (a view, print, save), not by the compile"))
    return out, details
