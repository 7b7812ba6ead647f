"""A compile's time, defined once (``compile_seconds``), and compile time by line of the user's code: the
compile sampler's samples (``compiler.capturing.compile_sampler``) summed per compile, per (line, phase).

A sample stands for the seconds since the previous one, so a row's ``seconds`` is measured to about
± interval × √samples (``error_s``); ``share`` is its part of this compile's sampled time. Samples
with no line (guard building, graph passes, C++ compilation, imports) are rows too, with
``line`` None and ``code`` saying what they were doing, so the shares of a compile sum to 1. The garbage
collector's passes on the compiling thread are timed exactly (``gc.callbacks``) and are rows of their own
(phase ``Garbage collection``, ``error_s`` 0): a full pass over a big heap is the process's cost, not a line's.
"""
from __future__ import annotations

import math
from collections import defaultdict

from compiler.stages.records import number

# The compile sampler's (``compiler.capturing.compile_sampler``) figures that the data and its method text name.
DEFAULT_INTERVAL_S = 0.005
# A sample older than this at a pass of the collector on the compiling thread: that thread takes the sample itself
# (the sampling thread is kept from the GIL; see compile_sampler's docstring). Three intervals: a sampler that only
# waits its pause and its turn for the GIL (5 + ≤ 5 ms, one switch interval) is never replaced, so a long C call
# that holds the GIL still gets its time from the sampler, which takes the GIL as soon as the call ends.
LATE_AFTER_S = 3 * DEFAULT_INTERVAL_S
GC_PHASE = "Garbage collection"

AOT_INDUCTOR_ROOT_EVENT = "compile_fx_aot"  # the timed span of a whole AOTInductor compile
NOT_SAMPLED = ("compile time by line was not sampled (a capture loaded from a TORCH_TRACE log, or one made "
               "with sample_compile=False)")


def samples_by_compile(samples, spans: dict[str, tuple[float, float]]) -> dict[str, list]:
    """Each sample under its compile id; one without (a lazily compiled backward on another thread)
    goes to the compile whose timed events span its time, else it is dropped."""
    out: dict[str, list] = defaultdict(list)
    for sample in samples:
        compile_id = sample.compile_id
        if compile_id is None:
            compile_id = next((cid for cid, (start, end) in spans.items() if start <= sample.time <= end), None)
        if compile_id is not None:
            out[compile_id].append(sample)
    return out


def event_spans(timing_events: dict[str, list[dict]]) -> dict[str, tuple[float, float]]:
    """Per compile id, the first start and last end of its timed events (seconds since the epoch)."""
    return {cid: (min(e["start"] for e in events), max(e["start"] + e["seconds"] for e in events))
            for cid, events in timing_events.items() if events}


def by_line(samples, method: dict, sources) -> dict:
    """``Timings.by_line`` and ``Timings.by_line_method`` of one compile's samples."""
    if not samples:
        return {"by_line": [], "by_line_method": None}
    rows: dict[tuple, dict] = {}
    modules: dict[tuple, dict] = defaultdict(lambda: defaultdict(float))
    for s in samples:
        key = (s.file, s.line, s.phase, None if s.line is not None else s.detail)
        row = rows.setdefault(key, {"file": s.file, "line": s.line, "phase": s.phase, "seconds": 0.0, "samples": 0,
                                    "code": key[3], "error_s": 0.0})
        row["seconds"] += s.seconds
        row["samples"] += 1
        row["error_s"] += 0.0 if s.phase == GC_PHASE else s.seconds ** 2  # the collector's passes: timed, not sampled
        if s.module:
            modules[key][s.module] += s.seconds
    total = sum(r["seconds"] for r in rows.values())
    interval = method.get("mean_interval_s") or method.get("interval_s") or 0.0
    out = []
    for key, row in rows.items():
        row["code"] = (sources.line(row["file"], row["line"]) if row["line"] is not None
                       else f"({row['code'] or 'no line: torch working on no user line'})")
        row["module"] = max(modules[key].items(), key=lambda kv: kv[1])[0] if modules[key] else None
        row["share"] = row["seconds"] / total if total else 0.0
        row["error_s"] = math.sqrt(row["error_s"])  # ± √(Σ interval²): interval × √samples when they are even
        out.append(row)
    out.sort(key=lambda r: -r["seconds"])
    text = (f"sampled the compiling thread's stack every {method['interval_s'] * 1e3:.0f} ms while torch compiled "
            f"(mean interval {interval * 1e3:.1f} ms, {sum(s.phase != GC_PHASE for s in samples)} samples covering "
            f"{total:.3g} s); each sample "
            f"counts the time since the previous one, so a row's seconds are within about ± interval × √samples "
            f"(error_s: √(Σ interval²), the intervals being uneven; every 50 ms while torch only waits for g++). Dynamo: the line its translator is at; AOTAutograd and Inductor: the FX node's "
            f"stack_trace; code generation: the scheduler node's FX origins. Python's garbage collector: timed at each "
            f"pass (gc.callbacks), its own rows"
            + (f" ({method['gc_s'] * 1e3:.0f} ms in all)" if method.get("gc_s") else "")
            + (f". {method['own_samples']} samples (over every compile of the capture) were taken by the compiling "
               f"thread itself, at a pass of the collector more than {LATE_AFTER_S * 1e3:.0f} ms after the last sample "
               f"(the sampling thread kept from the GIL by torch's ops releasing and retaking it)"
               if method.get("own_samples") else "")
            + (f". Taking the samples held the compiling thread's GIL for {method['busy_s'] * 1e3:.0f} ms in all "
               f"(over every compile of the capture)" if method.get("busy_s") else "")
            + (f"; the sampler's thread used {method['thread_cpu_s'] * 1e3:.0f} ms of CPU, waking up included"
               if method.get("thread_cpu_s") else ""))
    return {"by_line": out, "by_line_method": text}


def compile_time_rows(capture, by: str = "line", depth: int | None = None) -> list[dict]:
    """Rows of ``Capture.compile_time_table``: per compile and line (``by="line"``), per module or per phase;
    ``depth`` cuts module paths to their first ``depth`` parts (``h.0.attn.c_proj`` → ``h.0`` at 2)."""
    rows = []
    for c in capture.compiles:
        for r in c.timings.by_line if c.timings.available else []:
            rows.append({"compile_id": c.compile_id, **r.to_data()})
    if by == "line":
        return rows
    if by not in ("module", "phase"):
        raise ValueError(f"by={by!r}: expected 'line', 'module' or 'phase'")
    total = sum(r["seconds"] for r in rows) or 1.0
    grouped: dict[str, dict] = {}
    for r in rows:
        name = r[by] if r[by] is not None else ("(top level, or no module)" if by == "module" else "(unknown)")
        if by == "module" and depth and r[by] is not None:
            name = ".".join(name.split(".")[:depth])
        g = grouped.setdefault(name, {by: name, "seconds": 0.0, "samples": 0})
        g["seconds"] += r["seconds"]
        g["samples"] += r["samples"]
    out = sorted(grouped.values(), key=lambda g: -g["seconds"])
    for g in out:
        g["share"] = g["seconds"] / total
    return out


def aot_inductor_compile_seconds(events: list, metrics: dict) -> float | None:
    """An AOTInductor compile's time, which torch logs no ``entire_frame_compile_time_s`` for: the span
    of its outermost timed event (``compile_fx_aot``; ``events``: ``TimingEvent``s), else the start to
    end of its compilation_metrics record; None if the trace holds neither."""
    spans = [e.seconds for e in events if e.name == AOT_INDUCTOR_ROOT_EVENT and not e.depth]
    if spans:
        return sum(spans)
    start, end = metrics.get("start_time_us"), metrics.get("end_time_us")
    return (end - start) / 1e6 if isinstance(start, int) and isinstance(end, int) and end >= start else None


def compile_seconds(origin: str | None, metrics: dict, timings) -> float | None:
    """A compile's time, defined once (the summary, each Compile, amortization and the views read it):
    torch's ``entire_frame_compile_time_s`` plus its backward graph's compile
    (``backward_cumulative_compile_time_us``: AOTAutograd compiles the backward lazily, on the first
    backward call); for an AOTInductor compile, which logs neither, its compile_fx_aot span. None where
    torch logged no time."""
    if origin == "aot_inductor":  # ``timings``: the compile's Timings stage
        return aot_inductor_compile_seconds(timings.events if timings.available else [], metrics)
    forward = metrics.get("entire_frame_compile_time_s")
    if not number(forward):
        return None
    backward = metrics.get("backward_cumulative_compile_time_us")
    return float(forward) + (backward * 1e-6 if number(backward) else 0.0)
