"""Try all the fixes of torchvision's Mask R-CNN (issue 34): the bench row for Try all, on the GPU machine or on CPU.

    python scripts/gpu_try_fixes_maskrcnn.py             # CUDA where there is one, else CPU; results into $OUT

``maskrcnn_resnet50_fpn(weights=None)``, eval, one 256×256 image, compiled with Inductor: ``cap =
compiler.explore(f, x)`` then ``cap.try_fixes(timing=True)`` — every applicable fix in worker processes, compiled
side by side, each timed interleaved with the baseline and eager. Written as it goes, so a run cut short keeps what
it measured:

- stdout (flushed): the explore time, then one row per fix as soon as it finishes (verdict, before → after, the
  runtime ratio with its interval, each comparison's error, time taken), then the table and the bench row;
- ``$OUT/try_fixes_maskrcnn.jsonl``: one JSON line per event (``explore``, each ``fix``, ``done``);
- ``$OUT/maskrcnn_fixes.capture.json``: the capture with the fix results so far (re-saved after each fix, by
  an atomic rename), for the Fixes tab's screenshots.

Bounded: the whole run aims at ``TRY_TOTAL_S`` seconds (default 450, within the device's 8 minutes): try-all gets
what explore left (``deadline_s``: nothing starts after it, running compiles are stopped); ``max_autotune``'s
compile at most ``TRY_AUTOTUNE_S`` (default 120: on the H200 it ran to the 5× stop, ~7.5 min, benchmarking kernels
on the GPU the others are timed on), any other's at most ``TRY_BUDGET_S`` (default: no budget of its own) — a fix
stopped by a budget reads "Stopped: …; no verdict.", never as a verdict. ``TRY_CONCURRENCY``: compiles side by
side (default on CUDA: every fix at once, at most cores − 1 — the H200 machine's 16 cores; on the earlier runs at 8
the second wave of compiles did not finish in time); ``TRY_SKIP``: fix kinds left out (comma-separated);
``TRY_DEVICE``: cpu or cuda. For a CPU run that
fits a small machine: ``TRY_BACKEND`` (default inductor; e.g. eager: Dynamo's captures and fixes for real, no
Inductor) and ``TRY_SIZE`` (the detector's internal min_size = max_size; default torchvision's 800/1333, which
scales the 256×256 image up to 800×800). No IPython, no widgets: the GPU machine has neither.
"""
from __future__ import annotations

import json
import os
import sys
import time

import torch
import torchvision

import compiler

OUT = os.environ.get("OUT") or "."
DEVICE = os.environ.get("TRY_DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu")
TOTAL_S = float(os.environ.get("TRY_TOTAL_S") or 450)
BUDGET_S = float(os.environ["TRY_BUDGET_S"]) if os.environ.get("TRY_BUDGET_S") else None
AUTOTUNE_S = float(os.environ.get("TRY_AUTOTUNE_S") or 120)
BACKEND = os.environ.get("TRY_BACKEND") or "inductor"
SIZE = {"min_size": int(os.environ["TRY_SIZE"]), "max_size": int(os.environ["TRY_SIZE"])} \
    if os.environ.get("TRY_SIZE") else {}
WRAP_UP_S = 25.0  # kept back at the end: the last save, the table
JSONL = os.path.join(OUT, "try_fixes_maskrcnn.jsonl")
CAPTURE = os.path.join(OUT, "maskrcnn_fixes.capture.json")

def model_and_input():
    torch.manual_seed(0)
    m = torchvision.models.detection.maskrcnn_resnet50_fpn(weights=None, weights_backbone=None,
                                                               **SIZE).eval().to(DEVICE)
    return m, [torch.rand(3, 256, 256, device=DEVICE)]


def _num(value) -> str:
    return "–" if value is None else f"{value:.2g}"


def row_of(fix, result) -> dict:
    """One fix's result as a JSON row: verdict, counts before and after, the timed ratio, the three comparisons."""
    b, a = result.before, result.after
    return {"id": fix.id, "kind": fix.kind, "cost": fix.cost_text, "status": result.status,
            "verdict": "recommended" if result.recommended else result.status, "recommended": result.recommended,
            "seconds": result.seconds, "error": result.error, "sentence": result.sentence(fix.kind),
            "output_note": result.output_note, "before": b.to_data() if b else None, "after": a.to_data() if a else None,
            "timing": result.timing.to_data() if result.timing else None,
            "guard_timing": result.guard_timing.to_data() if result.guard_timing else None,
            "comparisons": [{"label": c.label, "equal": c.equal, "rel_l2": c.worst()[0], "max_abs": c.worst()[1],
                             "shapes_differ": c.worst()[2], "outputs": len(c.outputs), "note": c.note}
                            for c in result.comparisons]}


HEAD = (f"{'fix':<6} {'kind':<36} {'verdict':<15} {'graphs':>7} {'breaks':>7} {'recomp':>7} {'skip':>5} "
        f"{'after/before (95%)':>20} {'eager ms':>8} {'w/o~eager':>10} {'with~eager':>10} {'with~w/o':>9} {'s':>5}")


def line_of(row: dict) -> str:
    b, a, t = row["before"], row["after"], row["timing"]
    counts = [f"{b[k]}→{a[k]}" if b and a else "–" for k in ("graphs", "graph_breaks", "recompiles", "frames_skipped")]
    ratio = f"{t['ratio']:.2f} ({t['low']:.2f}–{t['high']:.2f})" if t else "–"
    eager = f"{t['eager_s'] * 1e3:.1f}" if t and t.get("eager_s") else "–"
    errors = [f"{_num(c['rel_l2'])}{'/shape' if c['shapes_differ'] else ''}" for c in row["comparisons"]] or ["–"] * 3
    text = (f"{row['id']:<6} {row['kind'][:36]:<36} {row['verdict']:<15} {counts[0]:>7} {counts[1]:>7} {counts[2]:>7} "
            f"{counts[3]:>5} {ratio:>20} {eager:>8} {errors[0]:>10} {errors[1]:>10} {errors[2]:>9} "
            f"{row['seconds'] or 0:>5.0f}")
    if row["error"]:
        text += f"\n       {row['error'][:300]}"
    return text


def emit(event: dict) -> None:
    with open(JSONL, "a", encoding="utf-8") as out:
        out.write(json.dumps(event, default=str) + "\n")


def save(cap) -> None:
    """The capture with the fix results so far, by an atomic rename (a run cut off mid-save keeps the last one)."""
    try:
        cap.save(CAPTURE + ".part")
        os.replace(CAPTURE + ".part", CAPTURE)
    except Exception as exc:  # noqa: BLE001 — the rows stand without it
        print(f"  (capture not saved: {type(exc).__name__}: {exc})", flush=True)


def main() -> None:
    start = time.perf_counter()
    os.makedirs(OUT, exist_ok=True)
    open(JSONL, "w").close()
    device_name = torch.cuda.get_device_name() if DEVICE == "cuda" else f"CPU ({os.cpu_count()} cores)"
    setup = f"backend {BACKEND}" + (f", min_size = max_size = {SIZE['min_size']}" if SIZE else "")
    model, images = model_and_input()

    def f(images):  # a closure: the worker processes get the model with it (dill), however this script is run
        return model(images)

    with torch.no_grad():
        cap = compiler.explore(f, images, backend=BACKEND)
    explored_s = time.perf_counter() - start
    compile_s = cap.summary.compile_time_s
    sampling = cap.options.get("compile_sampling") or {}
    parts = {"first_call_s": cap.first_call_s, "compile_time_s": compile_s,
             "sampler_busy_s": sampling.get("busy_s") if isinstance(sampling, dict) else None}
    print(f"explore: {explored_s:.1f} s on {device_name}, torch {torch.__version__}, {setup} — first call (the "
          f"compile) {cap.first_call_s or 0:.1f} s, torch's compile time {compile_s:.1f} s, after it (timing, "
          f"profiles) {explored_s - (cap.first_call_s or 0):.1f} s — {cap.summary}", flush=True)
    fixes = cap.fixes()
    print("ranked before trying:", ", ".join(f"{x.id} {x.kind} ({x.cost_text})" for x in fixes), flush=True)
    emit({"event": "explore", "seconds": explored_s, **parts, "summary": str(cap.summary),
          "device": device_name, "torch": torch.__version__, "setup": setup,
          "ranked": [{"id": x.id, "kind": x.kind, "cost": x.cost_text, "applicable": x.applicable} for x in fixes]})
    save(cap)
    tried_at = time.perf_counter()
    deadline_s = max(60.0, TOTAL_S - (tried_at - start) - WRAP_UP_S)
    each = f"each compile at most {BUDGET_S:.0f} s" if BUDGET_S else "no budget per compile"
    print(f"try-all: {deadline_s:.0f} s left of the run's {TOTAL_S:.0f} s; {each} (max_autotune {AUTOTUNE_S:.0f} s)"
          f"\n{HEAD}", flush=True)

    def progress(done, total, text):
        print(f"  [{time.perf_counter() - start:5.0f} s] {text}", flush=True)

    def on_result(group, result):
        if len(group) == 1:
            row = row_of(group[0], result)
        else:
            row = {**row_of(group[0], result), "id": "+".join(x.id for x in group),
                   "kind": "together", "sentence": result.sentence("together")}
        row["at_s"] = time.perf_counter() - start
        print(line_of(row), flush=True)
        emit({"event": "fix", **row})
        save(cap)

    with torch.no_grad():
        skip = set(filter(None, os.environ.get("TRY_SKIP", "").split(",")))
        todo = [x for x in fixes if x.applicable and x.kind not in skip]
        concurrency = int(os.environ["TRY_CONCURRENCY"]) if os.environ.get("TRY_CONCURRENCY") else \
            (max(1, min(len(todo), (os.cpu_count() or 2) - 1)) if DEVICE == "cuda" else None)
        budgets = {x.kind: BUDGET_S for x in todo if BUDGET_S} | {"max_autotune": AUTOTUNE_S}
        fixes = cap.try_fixes(timing=True, progress=progress, concurrency=concurrency, only=[x.id for x in todo],
                              on_result=on_result, budget_s=budgets, deadline_s=deadline_s)
    try_s = time.perf_counter() - tried_at
    total_s = time.perf_counter() - start
    print("\n" + "\n".join(fixes.verdicts()))
    print(f"note: {fixes.note}\n\n{HEAD}")
    for fix in fixes:
        if fix.result is None:
            print(f"{fix.id:<6} {fix.kind[:36]:<36} {'code change' if not fix.applicable else 'not tried'}")
        else:
            print(line_of(row_of(fix, fix.result)))
    tried = sum(1 for x in fixes if x.result is not None and x.applicable)
    bench = (f"Try all on Mask R-CNN — {tried} of {sum(x.applicable for x in fixes)} fixes tried in {try_s:.0f} s "
             f"(explore {explored_s:.0f} s, total wall {total_s:.0f} s) on {device_name}, torch {torch.__version__}, "
             f"{setup}")
    print(f"\nbench row: {bench}", flush=True)
    emit({"event": "done", "verdicts": fixes.verdicts(), "note": fixes.note, "explore_s": explored_s,
          "try_fixes_s": try_s, "total_s": total_s, "bench": bench,
          "combined": fixes.combined.to_data() if fixes.combined else None})
    save(cap)


if __name__ == "__main__":
    sys.exit(main())
