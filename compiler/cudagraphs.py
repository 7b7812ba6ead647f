"""CUDA graphs: Inductor's cudagraph loggers (``cudagraph_trees`` / ``cudagraph_utils``) and
counters. On CPU, or without a CUDA-graph mode, the stage says why it is empty."""
from __future__ import annotations

import re

_RECORDING = re.compile(r"Recording function=(?P<fn>\S+), cuda_graph_id=(?P<id>\d+)")
_WARMUP = re.compile(r"Running warmup function=(?P<fn>\S+)")
_SKIP = re.compile(r"skipping cudagraphs due to (?P<reason>.*)", re.IGNORECASE)


def wants_cudagraphs(options: dict) -> bool:
    mode = options.get("mode") or ""
    inductor_options = options.get("options") or {}
    return mode in ("reduce-overhead", "max-autotune") or bool(inductor_options.get("triton.cudagraphs"))


def cudagraphs_stage(records, counters: dict, options: dict, environment: dict) -> dict:
    messages = [r for r in records if r.kind in ("log:cudagraphs_trees", "log:cudagraphs_utils")]
    inductor_counters = (counters or {}).get("inductor", {})
    if not messages:
        if not environment.get("cuda_available"):
            return {"available": False, "reason": "CUDA graphs need a CUDA device; this capture ran on CPU"}
        if not wants_cudagraphs(options):
            return {"available": False, "reason": "CUDA graphs are off: use mode='reduce-overhead' "
                    "(or 'max-autotune', or options={'triton.cudagraphs': True})"}
        return {"available": False, "reason": "CUDA graphs were requested but torch logged no CUDA-graph activity"}
    events = []
    for record in messages:
        text = record.payload or ""
        event = {"compile_id": record.compile_id, "message": text.strip(), "time": record.time}
        if (m := _RECORDING.search(text)):
            event.update(kind="record", function=m["fn"], graph_id=int(m["id"]))
        elif (m := _WARMUP.search(text)):
            event.update(kind="warmup", function=m["fn"])
        elif (m := _SKIP.search(text)):
            event.update(kind="skip", reason=m["reason"].strip())
        else:
            event["kind"] = "info"
        events.append(event)
    skips = [e for e in events if e["kind"] == "skip"]
    return {"available": True, "events": events,
            "recorded": sum(e["kind"] == "record" for e in events),
            "warmups": sum(e["kind"] == "warmup" for e in events),
            "skipped": bool(skips), "skip_reasons": [e["reason"] for e in skips],
            "counters": {k: v for k, v in inductor_counters.items() if "cudagraph" in k}}
