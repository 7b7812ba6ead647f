"""Figure — Try all (``cap.try_fixes(timing=True)``): every applicable fix in worker processes, compiled side by
side and timed interleaved with the baseline and eager (issue 34).

Two rows. Here: a transformers GPT-2 from a config (2 layers, no weights) with a ``print`` inserted and two batch
sizes, captured with ``backend="eager"`` (graph breaks, recompiles: real fixes to try) — the wall time of Try all
against the same compiles run by hand one after the other in this process (the baseline and each fix's change:
``torch._dynamo.reset()``, the config patched, the model compiled and called on both batches), the anchor a user
would otherwise pay; no target (the ratio is the cost of the workers, their interleaved timing and the three
comparisons, on this machine's cores and load). Recorded: Mask R-CNN on the GPU machine
(``scripts/gpu_try_fixes_maskrcnn.py``'s ``try_fixes_maskrcnn.jsonl``, kept under ``assets/gpu/``) against the
issue's 10 minutes, where the file is there.
"""
from __future__ import annotations

import contextlib
import io
import json
import sys
import time
from pathlib import Path

from .table import Row, seconds, unavailable

ROOT = Path(__file__).resolve().parent.parent
RECORDED = ROOT / "assets" / "gpu" / "try_fixes_maskrcnn.jsonl"
GPU_BUDGET_S = 600.0


def by_hand(model, calls, changes) -> float:
    """The baseline and each change compiled and called by hand, one after the other: seconds."""
    import torch

    from compiler.analyses.fix_experiments import compile_options, resolved_config

    start = time.perf_counter()
    for change in [None, *changes]:
        torch._dynamo.reset()
        config = resolved_config(change.config) if change else {}
        kwargs = compile_options({"backend": "eager"}, change.compile_kwargs if change else {})
        with torch._dynamo.config.patch(**config), torch.no_grad(), contextlib.redirect_stdout(io.StringIO()):
            compiled = torch.compile(model, **kwargs)
            for args in calls:
                compiled(*args)
    torch._dynamo.reset()
    return time.perf_counter() - start


def recorded_row() -> Row:
    figure = "Try all: Mask R-CNN on the GPU machine (recorded), all applicable fixes"
    if not RECORDED.exists():
        return unavailable(figure, f"not recorded yet: run scripts/gpu_try_fixes_maskrcnn.py on the GPU machine and "
                                   f"keep its try_fixes_maskrcnn.jsonl as {RECORDED.relative_to(ROOT)}",
                           "≤ 1 (≤ 10 min)")
    events = [json.loads(line) for line in RECORDED.read_text().splitlines() if line.strip()]
    done = next((e for e in events if e["event"] == "done"), None)
    explore = next((e for e in events if e["event"] == "explore"), {})
    fixes = [e for e in events if e["event"] == "fix"]
    if done is None:
        return unavailable(figure, f"the recorded run was cut short after {len(fixes)} fixes", "≤ 1 (≤ 10 min)")
    total = done["total_s"]
    return Row(figure, seconds(total), seconds(GPU_BUDGET_S), total / GPU_BUDGET_S, "≤ 1 (≤ 10 min)", high=1.0,
               note=f"{done['bench']}; explore {explore.get('seconds', 0):.0f} s",
               detail={"fixes": [{k: e.get(k) for k in ("id", "kind", "verdict", "seconds", "error")} for e in fixes],
                       "explore_s": explore.get("seconds"), "try_fixes_s": done["try_fixes_s"], "total_s": total})


def run(quick: bool, log=print):
    import importlib.util

    rows, details = [], {}
    if importlib.util.find_spec("transformers") is None:
        rows.append(unavailable("Try all: GPT-2 (print, 2 batch sizes), eager backend", "transformers not installed"))
    else:
        import torch

        sys.path.insert(0, str(ROOT / "tests"))
        from compiler.analyses.fix_experiments import Change, capture_calls
        from test_fixes_transformers import gpt2_with_print

        model, calls = gpt2_with_print()
        log("try_all: capturing GPT-2 with a print and two batch sizes")
        with contextlib.redirect_stdout(io.StringIO()), torch.no_grad():
            cap = capture_calls(model, calls, backend="eager")
        todo = [f for f in cap.fixes() if f.applicable][:2 if quick else None]  # quick: the two ranked first
        log(f"try_all: trying {len(todo)} fixes ({', '.join(f.kind for f in todo)}) in worker processes")
        start = time.perf_counter()
        with torch.no_grad():
            fixes = cap.try_fixes(timing=True, only=[f.id for f in todo])
        tried_s = time.perf_counter() - start
        hand_s = by_hand(model, calls, [Change(config=f.config, compile_kwargs=f.compile_kwargs) for f in todo])
        log(f"try_all: {tried_s:.1f} s; by hand {hand_s:.1f} s — " + " | ".join(fixes.verdicts()))
        details["gpt2"] = {"fixes": len(todo), "try_all_s": tried_s, "by_hand_s": hand_s, "verdicts": fixes.verdicts()}
        rows.append(Row(f"Try all: GPT-2 (print, 2 batch sizes), eager backend, {len(todo)} fixes, timed, vs the same "
                        "compiles by hand one after the other", seconds(tried_s), seconds(hand_s), tried_s / hand_s,
                        "(reference)", detail=details["gpt2"]))
    rows.append(recorded_row())
    return rows, details
