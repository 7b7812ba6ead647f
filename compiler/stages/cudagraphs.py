"""CUDA graphs: Inductor's cudagraph loggers (``cudagraph_trees`` / ``cudagraph_utils``) and
counters. On CPU, or without a CUDA-graph mode, the stage says why it is empty."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from compiler.stages.breaks import Location, traceback_frames
from compiler.stages.data import Data, Stage


# --- declared here, built below (``compiler.stages.schema`` ties the stages into a ``Compile``) ---

@dataclass(repr=False, eq=False)
class CudaGraphEvent(Data):
    kind: str = ""
    message: str | None = None
    compile_id: str | None = None
    function: str | None = None
    graph_id: int | None = None
    key: str | None = None
    reason: str | None = None
    user_reason: str | None = None
    found_from: Location | None = None
    time: float | None = None


@dataclass(repr=False, eq=False)
class CudaGraphMemory(Data):
    reserved_growth_bytes: int = 0
    note: str | None = None


@dataclass(repr=False, eq=False)
class CudaGraphs(Stage):
    NAME: ClassVar[str] = "cudagraphs"
    used: bool = False
    skipped: bool = False
    warmups: int = 0
    recorded: int = 0
    replays: int = 0
    re_recordings: int = 0
    trees: list[str] = field(default_factory=list)
    events: list[CudaGraphEvent] = field(default_factory=list)
    skip_reasons: list[str] = field(default_factory=list)
    skip_reasons_user: list[str] = field(default_factory=list)
    skip_locations: list[Location] = field(default_factory=list)
    counters: dict[str, Any] = field(default_factory=dict)
    calls_under_capture: int | None = None
    memory: CudaGraphMemory | None = None

    def _text(self):
        lines = [f"warm-ups {self.warmups}, recordings {self.recorded}, replays {self.replays}, "
                 f"re-recordings {self.re_recordings}"]
        lines += [f"skipped: {r}" for r in self.skip_reasons_user or self.skip_reasons]
        return "\n".join(lines)

    def _summary(self):
        return "skipped" if self.skipped else f"{self.recorded} recorded, {self.replays} replays"


_RECORDING = re.compile(r"Recording function=(?P<fn>\S+), cuda_graph_id=(?P<id>\d+)")
_WARMUP = re.compile(r"Running warmup function=(?P<fn>\S+)")
_NEW_TREE = re.compile(r"Recording cudagraph tree for (?P<key>.*)")
_SKIP = re.compile(r"skipping cudagraphs due to (?P<reason>[^\n]*?)(?:\s*Found from\s*:)?\s*(?:\n|$)", re.IGNORECASE)

# torch's skip reasons, said the way a user would look for them
USER_TERMS = [
    ("mutated inputs", "an input tensor is mutated in place (CUDA graphs replay fixed memory, so in-place "
                       "updates of inputs that are not static would be lost)"),
    ("cpu device", "some tensors are on the CPU (CUDA graphs only capture GPU work)"),
    ("non gpu", "some tensors are not on the GPU"),
    ("dynamic shape", "dynamic shapes without a symint-keyed tree"),
    ("incompatible op", "an operator that cannot be captured in a CUDA graph"),
    ("complex", "complex tensors"),
    ("multiple devices", "inputs on several devices"),
]


def wants_cudagraphs(options: dict) -> bool:
    mode = options.get("mode") or ""
    inductor_options = options.get("options") or {}
    return mode in ("reduce-overhead", "max-autotune") or bool(inductor_options.get("triton.cudagraphs"))


def in_user_terms(reason: str) -> str:
    lowered = reason.lower()
    return next((text for key, text in USER_TERMS if key in lowered), reason)


def _event(record) -> dict:
    text = record.payload or ""
    event = {"compile_id": record.compile_id, "message": text.strip(), "time": record.time, "kind": "info"}
    if (m := _RECORDING.search(text)):
        event.update(kind="record", function=m["fn"], graph_id=int(m["id"]))
    elif (m := _WARMUP.search(text)):
        event.update(kind="warmup", function=m["fn"])
    elif (m := _NEW_TREE.search(text)):
        event.update(kind="new_tree", key=m["key"].strip())
    elif (m := _SKIP.search(text)):
        event.update(kind="skip", reason=m["reason"].strip().rstrip("."), user_reason=in_user_terms(m["reason"]))
        found = traceback_frames(text)
        if found:
            event["found_from"] = dict(found[0], code=found[0]["code"] or "")
    return event


def cudagraphs_stage(records, counters: dict, options: dict, environment: dict, calls: int | None = None) -> dict:
    messages = [r for r in records if r.kind in ("log:cudagraphs_trees", "log:cudagraphs_utils")]
    inductor_counters = (counters or {}).get("inductor", {})
    if not messages:
        if not environment.get("cuda_available"):
            return {"available": False, "reason": "CUDA graphs need a CUDA device; this capture ran on CPU"}
        if not wants_cudagraphs(options):
            return {"available": False, "reason": "CUDA graphs are off: use mode='reduce-overhead' "
                    "(or 'max-autotune', or options={'triton.cudagraphs': True})"}
        return {"available": False, "reason": "CUDA graphs were requested but torch logged no CUDA-graph activity"}
    events = [_event(r) for r in sorted(messages, key=lambda r: r.time)]
    skips = [e for e in events if e["kind"] == "skip"]
    recorded = sum(e["kind"] == "record" for e in events)
    warmups = sum(e["kind"] == "warmup" for e in events)
    trees = [e["key"] for e in events if e["kind"] == "new_tree"]
    stage = {"available": True, "used": not skips and (recorded > 0 or warmups > 0), "events": events,
             "recorded": recorded, "warmups": warmups, "trees": trees,
             "re_recordings": max(0, len(trees) - 1), "skipped": bool(skips),
             "skip_reasons": [e["reason"] for e in skips], "skip_reasons_user": [e["user_reason"] for e in skips],
             "skip_locations": [e.get("found_from") for e in skips],
             "counters": {k: v for k, v in inductor_counters.items() if "cudagraph" in k},
             "calls_under_capture": calls, "memory": None}
    if calls is not None and not skips:
        stage["replays"] = max(0, calls - warmups - recorded)
    return stage
