"""Captures of any number of compiles, for the size bounds (tests/test_bounded_sizes.py, bench): a real
recorded trace (tests/assets/traces, torch 2.14.1: a graph break and a recompile, 4 compiles) loaded
once, its capture JSON's compiles, breaks and recompiles repeated with fresh compile ids (and each
copy's break on a line of its own, so the breaks do not fold into one) — every value in them is what
torch logged."""
from __future__ import annotations

import copy
import json
import re
import warnings
from pathlib import Path

SEED = Path(__file__).resolve().parent / "assets" / "traces" / "torch_2_14_1_break_recompile.log"
_ID = re.compile(r'"(\d+)/(\d+)"')


def seed_data() -> dict:
    """The seed trace's capture, as its JSON data."""
    import compiler
    from compiler.readers.trace import TraceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceWarning)
        cap = compiler.load_trace(SEED)
    return json.loads(json.dumps(cap.to_data()))


def replicated_data(data: dict, compiles: int) -> dict:
    """``data`` with its compiles repeated until there are ``compiles`` of them (frame ids moved past
    the previous copy's), and its breaks and recompiles with them."""
    seed = data["compiles"]
    frames = max(c["frame_id"] for c in seed) + 1
    out = copy.deepcopy(data)
    out["compiles"], out["recompiles"], items = [], [], []
    for k in range((compiles + len(seed) - 1) // len(seed)):
        def moved(value, k=k):
            text = _ID.sub(lambda m: f'"{int(m[1]) + k * frames}/{m[2]}"', json.dumps(value))
            return json.loads(text)
        for c in seed:
            if len(out["compiles"]) < compiles:
                c = moved(c)
                c["frame_id"] += k * frames
                out["compiles"].append(c)
        kept = {c["compile_id"] for c in out["compiles"]}
        out["recompiles"] += [r for r in map(moved, data["recompiles"]) if r["compile_id"] in kept]
        for item in map(moved, data["breaks"]["items"]):
            item["line"] = (item.get("line") or 0) + k * 1000
            if item["compile_id"] in kept:
                items.append(item)
    out["breaks"] = {**out["breaks"], "items": items, "total": sum(i.get("count", 1) for i in items)}
    summary = out["summary"]
    summary.update(compiles=len(out["compiles"]), frames=summary["frames"] * (len(out["compiles"]) // len(seed) or 1),
                   graph_breaks=out["breaks"]["total"], unique_graph_breaks=len(items),
                   recompiles=len(out["recompiles"]))
    return out


def replicated_capture(compiles: int, data: dict | None = None):
    from compiler.stages.capture import Capture

    return Capture.from_data(replicated_data(data or seed_data(), compiles))
