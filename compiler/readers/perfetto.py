"""A capture as one Chrome trace-event JSON file (opens in ui.perfetto.dev and chrome://tracing).

Format (the Trace Event Format document): ``{"traceEvents": [...], "displayTimeUnit": "ms"}``; each
timed event is a complete event ``ph: "X"`` with ``ts`` and ``dur`` in microseconds, ``pid`` / ``tid``
choose the track, ``ph: "M"`` metadata events name the tracks.

What goes in, per capture (one process; a job's ranks are one process each):
- **compile tracks** (one thread per compile, named by its compile id): every timed event of the
  compile's timings stage (torch's chromium events folded into spans), at its real time, with
  ``args.compile_id``. Times are relative to the capture's first compile event.
- **runtime track** (where measured): the kernels of each compile with a measured time per call
  (the provenance stage's kernel times; on GPU the profiled kernels), laid end to end after the last
  compile, one slice per kernel of its time per call of the function. Their order and gaps are not a
  real timeline — ``args.layout`` says so; their durations are measured.

``save_perfetto`` writes atomically (``compiler.stages.files.write_atomic``).
"""
from __future__ import annotations

import json
from pathlib import Path

from compiler.stages.capture import METHODS
from compiler.stages.files import write_atomic

COMPILE_CATEGORY = "compile"
RUNTIME_CATEGORY = "runtime"
RUNTIME_LAYOUT = ("measured time per call of the function, laid end to end in the order of the generated code: "
                  "durations are measured, positions are not a timeline")
GAP_US = 1000.0  # between the last compile event and the runtime track's first kernel
NAME_LIMIT = 200  # characters of a track's or slice's name: a trace viewer shows one line of it


def _short(text) -> str:
    text = str(text)
    return text if len(text) <= NAME_LIMIT else text[:NAME_LIMIT - 1] + "…"


def _meta(pid: int, tid: int | None, kind: str, value) -> dict:
    event = {"name": kind, "ph": "M", "pid": pid, "tid": tid if tid is not None else 0}
    event["args"] = {"sort_index": value} if kind.endswith("sort_index") else {"name": value}
    return event


def _compile_events(capture, pid: int, origin_s: float) -> tuple[list[dict], float]:
    """The compile tracks of one capture, and where the last event ends (µs)."""
    events, end = [], 0.0
    for tid, c in enumerate(capture.compiles, start=1):
        if not c.timings.available or not c.timings.events:
            continue
        events.append(_meta(pid, tid, "thread_name", _short(f"compile {c.compile_id}" + (f" ({c.name})" if c.name else ""))))
        events.append(_meta(pid, tid, "thread_sort_index", tid))
        for e in c.timings.events:
            ts = (e.start - origin_s) * 1e6
            dur = max(0.0, e.seconds * 1e6)
            end = max(end, ts + dur)
            events.append({"name": _short(e.label or e.name), "cat": COMPILE_CATEGORY, "ph": "X", "ts": round(ts, 3),
                           "dur": round(dur, 3), "pid": pid, "tid": tid,
                           "args": {"compile_id": c.compile_id, "event": _short(e.name), "depth": e.depth}})
    return events, end


def _runtime_events(capture, pid: int, start_us: float) -> list[dict]:
    """Measured kernel times per call, one track per compile that has them (see the module docstring)."""
    events = []
    tid = 10_000  # after the compile tracks
    for c in capture.compiles:
        kernels = [k for k in (c.provenance.kernels if c.provenance.available else []) if k.seconds]
        if not kernels:
            continue
        tid += 1
        events.append(_meta(pid, tid, "thread_name", f"runtime kernels of {c.compile_id} (per call)"))
        events.append(_meta(pid, tid, "thread_sort_index", tid))
        ts = start_us
        for k in kernels:
            dur = k.seconds * 1e6
            events.append({"name": _short(k.name), "cat": RUNTIME_CATEGORY, "ph": "X", "ts": round(ts, 3),
                           "dur": round(dur, 3), "pid": pid, "tid": tid,
                           "args": {"compile_id": c.compile_id, "kernel": _short(k.key), "role": k.role,
                                    "calls_per_call": k.calls, "lines": k.lines, "time_source": c.provenance.time_source,
                                    "layout": RUNTIME_LAYOUT}})
            ts += dur
    profile = capture.gpu_profile
    if profile is not None and profile.available and profile.kernels:
        tid += 1
        events.append(_meta(pid, tid, "thread_name", "GPU kernels (profiled, per call)"))
        events.append(_meta(pid, tid, "thread_sort_index", tid))
        ts = start_us
        for k in profile.kernels:
            dur = k.gpu_time_us_per_call
            events.append({"name": _short(k.name), "cat": RUNTIME_CATEGORY, "ph": "X", "ts": round(ts, 3),
                           "dur": round(dur, 3), "pid": pid, "tid": tid,
                           "args": {"calls": k.calls, "layout": RUNTIME_LAYOUT}})
            ts += dur
    return events


def perfetto_trace(captures: dict[str, object]) -> dict:
    """The trace-event document of ``captures`` (process name → Capture): one process each."""
    starts = [e.start for cap in captures.values() for c in cap.compiles if c.timings.available
              for e in c.timings.events]
    origin_s = min(starts) if starts else 0.0
    events = []
    for pid, (name, capture) in enumerate(captures.items(), start=1):
        events += [_meta(pid, None, "process_name", _short(name)), _meta(pid, None, "process_sort_index", pid)]
        compile_events, end = _compile_events(capture, pid, origin_s)
        events += compile_events + _runtime_events(capture, pid, end + GAP_US)
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"producer": "tcompile", "time_origin_unix_s": origin_s}}


def _named(loaded) -> dict[str, object]:
    """A Capture, or a Job (``compiler.readers.job``): its ranks."""
    captures = getattr(loaded, "captures", None)
    if isinstance(captures, dict):
        return {f"rank {rank}": cap for rank, cap in sorted(captures.items())}
    return {"torch.compile": loaded}


def save_perfetto(loaded, path) -> Path:
    """Write ``loaded`` (a Capture or a Job) as a Chrome trace-event JSON file, atomically."""
    text = json.dumps(perfetto_trace(_named(loaded)), separators=(",", ":"), allow_nan=False)
    return write_atomic(path, text)


METHODS["save_perfetto"] = save_perfetto  # Capture.save_perfetto (compiler.stages.capture)
