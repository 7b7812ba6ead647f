"""Compile timings: torch's chromium events (B/E pairs, each with ``args.compile_id``) and
``compilation_metrics``, folded into the stages a user thinks in."""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, ClassVar

from compiler.stages.records import number
from compiler.stages.data import Data, Stage, _table, _text_table, as_declared


# --- declared here, built below (``compiler.stages.schema`` ties the stages into a ``Compile``) ---

@dataclass(repr=False, eq=False)
class Phase(Data):
    name: str = ""
    label: str = ""
    seconds: float = 0.0
    count: int = 1


@dataclass(repr=False, eq=False)
class TimingEvent(Data):
    name: str = ""
    label: str = ""
    seconds: float = 0.0
    start: float = 0.0
    depth: int = 0


@dataclass(repr=False, eq=False)
class CacheEvent(Data):
    artifact: str = ""
    cache_state: str | None = None
    cache_status_detailed: str | None = None
    key: str | None = None
    cache_bypass_reason: str | None = None
    reason: str | None = None


@dataclass(repr=False, eq=False)
class LineCompileTime(Data):
    """Compile seconds spent on one line of the user's code in one phase (``compiler.stages.compile_time``);
    ``line`` None: time torch spent on no line (guard building, C++ compile, imports: ``code`` says which)."""

    file: str | None = None
    line: int | None = None
    code: str | None = None
    module: str | None = None  # the nn.Module path, where torch knew it
    phase: str = ""
    seconds: float = 0.0
    share: float = 0.0  # of this compile's sampled time
    samples: int = 0
    error_s: float = 0.0  # ± √(Σ interval²) of its samples: interval × √samples when they are even


@dataclass(repr=False, eq=False)
class Timings(Stage):
    NAME: ClassVar[str] = "timings"
    phases: list[Phase] = field(default_factory=list)
    events: list[TimingEvent] = field(default_factory=list)
    cache: list[CacheEvent] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    by_line: list[LineCompileTime] = field(default_factory=list)  # sampled: compile time by line of user code
    by_line_method: str | None = None  # how by_line was measured and how exact it is (None: not sampled)

    def _text(self):
        return _text_table(self.phases, ["label", "seconds", "count"])

    def _summary(self):
        return f"{len(self.phases)} phases"

    @property
    def table(self):
        return _table(self.phases)


# (event name torch emits, the stage it is shown as), outermost first.
PHASES = [
    ("entire_frame_compile", "Whole frame compile"),
    ("bytecode_tracing", "Dynamo tracing"),
    ("build_guards", "Guard building"),
    ("backend_compile", "Backend compile"),
    ("create_aot_dispatcher_function", "AOTAutograd"),
    ("_recursive_pre_grad_passes", "Pre-grad passes"),
    ("_recursive_joint_graph_passes", "Joint-graph passes"),
    ("inductor_compile", "Inductor"),
    ("_recursive_post_grad_passes", "Post-grad passes"),
    ("GraphLowering.run", "Lowering to IR"),
    ("Scheduler.__init__", "Scheduling & fusion"),
    ("GraphLowering.codegen", "Code generation"),
    ("compile_file", "C++ compile"),
    ("async_compile.wait", "Waiting for kernel compiles"),
    ("compiled_autograd", "Compiled autograd"),
]
LABELS = dict(PHASES)


def _ignore(record, field, value, why) -> None:
    return None


# What fold_events reads of an event, and what each must be (Chrome's trace event format).
EVENT_CHECKS = {"ts": number, "name": lambda v: isinstance(v, str), "ph": lambda v: isinstance(v, str),
                "args": lambda v: isinstance(v, dict)}


def chromium_event(record, report=_ignore) -> dict | None:
    """The event of a ``chromium_event`` record (its payload, or its body), or None where it is not
    one: not a JSON object, or a field fold_events reads of the wrong type (reported)."""
    if record.payload:
        try:
            event = json.loads(record.payload)
        except (TypeError, ValueError, RecursionError):
            report(record, "chromium_event payload", record.payload, "not JSON; the event is skipped")
            return None
    else:
        event = record.metadata.get("chromium_event")
        if not event:
            return None
    if not isinstance(event, dict):
        report(record, "chromium_event", event, "not a JSON object; the event is skipped")
        return None
    for key, check in EVENT_CHECKS.items():
        if event.get(key) is not None and not check(event[key]):
            report(record, f"chromium_event.{key}", event[key], "not a valid value of this field; the event is skipped")
            return None
    compile_id = (event.get("args") or {}).get("compile_id")
    if compile_id is not None and not isinstance(compile_id, str):
        report(record, "chromium_event.args.compile_id", compile_id, "not a compile id string; the event is skipped")
        return None
    if record.payload and "\\u" in record.payload:  # a JSON escape: maybe a lone surrogate, unwritable as UTF-8
        from compiler.stages.files import without_surrogates

        return without_surrogates(event)
    return event


def fold_events(events: list[dict]) -> dict[str, list[dict]]:
    """Durations per compile id: ``{"0/0": [{"name", "seconds", "depth", "start"}…]}``."""
    open_events: dict[tuple, list[tuple[float, int]]] = defaultdict(list)
    depth: dict[str, int] = defaultdict(int)
    out: dict[str, list[dict]] = defaultdict(list)
    for event in sorted(events, key=lambda e: e.get("ts") or 0):
        compile_id = (event.get("args") or {}).get("compile_id")
        if not compile_id:
            continue
        key = (compile_id, event.get("name"))
        if event.get("ph") == "B" and event.get("ts") is not None:
            open_events[key].append((event["ts"], depth[compile_id]))
            depth[compile_id] += 1
        elif event.get("ph") == "E" and event.get("ts") is not None and open_events[key]:
            start, level = open_events[key].pop()
            depth[compile_id] = level
            out[compile_id].append({"name": event["name"], "label": LABELS.get(event["name"], event["name"]),
                                    "seconds": (event["ts"] - start) / 1e6, "depth": level, "start": start / 1e6})
    for items in out.values():
        items.sort(key=lambda e: e["start"])
    return dict(out)


def phase_totals(events: list[dict]) -> list[dict]:
    """The named stages, summed over repeated events (e.g. forward + backward Inductor compiles)."""
    totals: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for event in events:
        if event["name"] in LABELS:
            totals[event["name"]] += event["seconds"]
            counts[event["name"]] += 1
    return [{"name": name, "label": label, "seconds": round(totals[name], 6), "count": counts[name]}
            for name, label in PHASES if name in totals]


CACHE_KEYS = ("inductor_fx_local_cache_hit_count", "inductor_fx_local_cache_miss_count",
              "aotautograd_local_cache_hit_count", "aotautograd_local_cache_miss_count",
              "fx_graph_cache_hit", "fx_graph_cache_miss")


def timings_stage(events: list[dict], metrics: dict, cache_events: list[dict], by_line: dict | None = None) -> Timings:
    """``by_line``: compile time by line (``compiler.stages.compile_time.compile_time_by_line``) where it was sampled."""
    if not events and not metrics:
        return Timings(available=False, reason="torch recorded no timing events for this compile")
    return as_declared(Timings, {  # the metrics are torch's record: checked as on load
        "available": True,
        "phases": phase_totals(events),
        "events": events,
        "metrics": {k: metrics.get(k) for k in ("entire_frame_compile_time_s", "backend_compile_time_s",
                                                 "inductor_compile_time_s", "code_gen_time_s",
                                                 "dynamo_time_before_restart_s", "guard_latency_us",
                                                 "structured_logging_overhead_s") if metrics.get(k) is not None},
        "cache": cache_events,
        **(by_line or {}),
    })
