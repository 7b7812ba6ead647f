"""Try all the fixes of torchvision's Mask R-CNN (issues 34, 43): the bench row for Try all, on the GPU machine or on CPU.

    python scripts/gpu_try_fixes_maskrcnn.py             # CUDA where there is one, else CPU; results into $OUT

``maskrcnn_resnet50_fpn(weights=None)``, eval, one 256×256 image, compiled with Inductor: ``cap =
compiler.explore(f, x)`` then ``cap.try_fixes(timing=True)`` — every applicable change (one experiment per change)
in worker processes, compiled side by side, each timed interleaved with the baseline and eager, beside an A/A
experiment (the baseline against itself in a second worker: the run's noise floor). Written as it goes, so a run
cut short keeps what it measured:

- stdout (flushed): the explore time, then one row per experiment as soon as it finishes (verdict, before → after,
  the runtime ratio with its interval, each comparison's error, time taken), then the baseline, the noise floor,
  the drift from eager per output, every verdict, the table and the bench row;
- ``$OUT/try_fixes_maskrcnn.jsonl``: one JSON line per event (``explore``, each ``fix``, ``done``);
- ``$OUT/maskrcnn_fixes_table.txt``: the final text (verdicts, noise floor, drift, table, times);
- ``$OUT/maskrcnn_fixes.capture.json.gz``: the capture with the fix results so far (gzip; re-saved after each
  experiment, by an atomic rename), for the Overview's and the Fixes tab's screenshots
  (``scripts/screenshot_fixes.py OUT CAPTURE --report``).

Bounded: the whole run aims at ``TRY_TOTAL_S`` seconds (default 470, within 9 minutes with torch's start-up):
try-all gets what explore left (``deadline_s``: nothing starts after it, running compiles are stopped); the changes
for run time are started first (after the A/A), ``max_autotune``'s compile at most ``TRY_AUTOTUNE_S`` (default
150), any other's at most ``TRY_BUDGET_S`` (default: no budget of its own) — a fix stopped by a budget reads
"Stopped: …; no verdict.", never as a verdict. ``TRY_CONCURRENCY``: compiles side by side (default on CUDA: every
experiment at once, at most cores − 1); ``TRY_SKIP``: fix kinds left out (comma-separated); ``TRY_DEVICE``: cpu or
cuda. For a CPU run that fits a small machine: ``TRY_BACKEND`` (default inductor; e.g. eager: Dynamo's captures and
fixes for real, no Inductor) and ``TRY_SIZE`` (the detector's internal min_size = max_size; default torchvision's
800/1333, which scales the 256×256 image up to 800×800). No IPython, no widgets: the GPU machine has neither.
"""
from __future__ import annotations

import json
import os
import sys
import time

import torch
import torchvision

import compiler
from compiler.analyses.fixes import change_key

OUT = os.environ.get("OUT") or "."
DEVICE = os.environ.get("TRY_DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu")
TOTAL_S = float(os.environ.get("TRY_TOTAL_S") or 470)
BUDGET_S = float(os.environ["TRY_BUDGET_S"]) if os.environ.get("TRY_BUDGET_S") else None
AUTOTUNE_S = float(os.environ.get("TRY_AUTOTUNE_S") or 150)
BACKEND = os.environ.get("TRY_BACKEND") or "inductor"
SIZE = {"min_size": int(os.environ["TRY_SIZE"]), "max_size": int(os.environ["TRY_SIZE"])} \
    if os.environ.get("TRY_SIZE") else {}
WRAP_UP_S = 25.0  # kept back at the end: the last save, the table
JSONL = os.path.join(OUT, "try_fixes_maskrcnn.jsonl")
CAPTURE = os.path.join(OUT, "maskrcnn_fixes.capture.json.gz")
TABLE = os.path.join(OUT, "maskrcnn_fixes_table.txt")

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
            "verdict": result.verdict, "recommended": result.recommended,
            "noise_floor": result.noise_floor, "guard_noise_floor": result.guard_noise_floor,
            "seconds": result.seconds, "error": result.error, "sentence": result.sentence(fix.kind),
            "output_note": result.output_note, "before": b.to_data() if b else None, "after": a.to_data() if a else None,
            "timing": result.timing.to_data() if result.timing else None,
            "guard_timing": result.guard_timing.to_data() if result.guard_timing else None,
            "comparisons": [{"label": c.label, "equal": c.equal, "rel_l2": c.worst()[0], "max_abs": c.worst()[1],
                             "shapes_differ": c.worst()[2], "outputs": len(c.outputs), "note": c.note}
                            for c in result.comparisons]}


HEAD = (f"{'fix':<6} {'kind':<36} {'verdict':<16} {'graphs':>7} {'breaks':>7} {'recomp':>7} {'skip':>5} "
        f"{'after/before (95%)':>20} {'guards (95%)':>18} {'eager ms':>8} {'with~eager':>10} {'with~w/o':>9} "
        f"{'compile s':>11} {'s':>5}")


def line_of(row: dict) -> str:
    b, a, t = row["before"], row["after"], row["timing"]
    counts = [f"{b[k]}→{a[k]}" if b and a else "–" for k in ("graphs", "graph_breaks", "recompiles", "frames_skipped")]
    ratio = f"{t['ratio']:.2f} ({t['low']:.2f}–{t['high']:.2f})" if t else "–"
    g = row["guard_timing"]
    guards = f"{g['ratio']:.2f} ({g['low']:.2f}–{g['high']:.2f})" if g else "–"
    eager = f"{t['eager_s'] * 1e3:.1f}" if t and t.get("eager_s") else "–"
    errors = [f"{_num(c['rel_l2'])}{'/shape' if c['shapes_differ'] else ''}" for c in row["comparisons"]] or ["–"] * 3
    compile_s = (f"{b['compile_s']:.0f}→{a['compile_s']:.0f}" if b and a and b.get("compile_s") is not None
                 and a.get("compile_s") is not None else "–")
    text = (f"{row['id']:<6} {row['kind'][:36]:<36} {row['verdict']:<16} {counts[0]:>7} {counts[1]:>7} {counts[2]:>7} "
            f"{counts[3]:>5} {ratio:>20} {guards:>18} {eager:>8} {errors[1]:>10} {errors[2]:>9} {compile_s:>11} "
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
        row = row_of(group[0], result)
        if len(group) > 1:  # one experiment for several fixes of the same change, or the recommended together
            same = len({change_key(x) for x in group}) == 1
            row.update(id="+".join(x.id for x in group), kind=" = ".join(x.kind for x in group) if same else "together",
                       sentence=result.sentence(group[0].kind if same else "together"))
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
    lines = ["", *fixes.verdicts(), *fixes.context_lines(), f"note: {fixes.note}"]
    if fixes.drift is not None:
        lines += ["", "Drift from eager (the compile without any fix, per output):", fixes.drift.as_text()]
    lines += ["", HEAD]
    if fixes.noise is not None:
        lines.append(line_of({**row_of(fixes[0], fixes.noise), "id": "A/A", "kind": "baseline against itself"}))
    for fix in fixes:
        if fix.result is None:
            lines.append(f"{fix.id:<6} {fix.kind[:36]:<36} {'code change' if not fix.applicable else 'not tried'}")
        else:
            lines.append(line_of(row_of(fix, fix.result)))
    if fixes.combined is not None:
        lines.append(line_of({**row_of(fixes[0], fixes.combined), "id": "+".join(fixes.combined.fixes),
                              "kind": "together"}))
    applicable = [x for x in fixes if x.applicable]
    verdicts = [x for x in applicable if x.result is not None]
    bench = (f"Try all on Mask R-CNN — a verdict for {len(verdicts)} of {len(applicable)} fixes "
             f"({sum(x.result.status == 'stopped' for x in verdicts)} stopped) in {try_s:.0f} s (explore "
             f"{explored_s:.0f} s, total wall {total_s:.0f} s) on {device_name}, torch {torch.__version__}, {setup}"
             + (f"; {fixes.noise_text()}" if fixes.noise_text() else ""))
    lines += ["", f"bench row: {bench}"]
    print("\n".join(lines), flush=True)
    with open(TABLE, "w", encoding="utf-8") as out:
        out.write(f"explore: {explored_s:.1f} s on {device_name}, torch {torch.__version__}, {setup} — {cap.summary}\n"
                  + "\n".join(lines) + "\n")
    emit({"event": "done", "verdicts": fixes.verdicts(), "note": fixes.note, "explore_s": explored_s,
          "try_fixes_s": try_s, "total_s": total_s, "bench": bench,
          "noise": fixes.noise.to_data() if fixes.noise else None,
          "drift": fixes.drift.to_data() if fixes.drift else None,
          "combined": fixes.combined.to_data() if fixes.combined else None})
    save(cap)


if __name__ == "__main__":
    sys.exit(main())
