"""Try all the fixes of torchvision's Mask R-CNN on the GPU machine (issue 34): the bench row for Try all.

    python scripts/gpu_try_fixes_maskrcnn.py            # writes $OUT/try_fixes_maskrcnn.json (+ the capture)

``maskrcnn_resnet50_fpn(weights=None)``, eval, one 256×256 image on CUDA, compiled with Inductor:
``cap = compiler.explore(f, x)`` then ``cap.try_fixes(timing=True)`` — every applicable fix in worker processes,
compiled side by side, each timed interleaved with the baseline and eager. Prints one row per fix (verdict,
before → after, the runtime ratio with its interval, each comparison's error, time taken) and the total wall
time. No IPython, no widgets: the GPU machine has neither.
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


def model_and_input():
    torch.manual_seed(0)
    m = torchvision.models.detection.maskrcnn_resnet50_fpn(weights=None, weights_backbone=None).eval().cuda()
    return m, [torch.rand(3, 256, 256, device="cuda")]


MODEL, IMAGES = None, None


def f(images):
    return MODEL(images)


def _num(value) -> str:
    return "–" if value is None else f"{value:.2g}"


def main() -> None:
    global MODEL, IMAGES
    start = time.perf_counter()
    MODEL, IMAGES = model_and_input()
    with torch.no_grad():
        cap = compiler.explore(f, IMAGES)
    explored_s = time.perf_counter() - start
    print(f"explore: {explored_s:.1f} s — {cap.summary}", flush=True)
    fixes = cap.fixes()
    print("ranked before trying:", ", ".join(f"{x.id} {x.kind} ({x.cost_text})" for x in fixes), flush=True)
    tried_at = time.perf_counter()

    def progress(done, total, text):
        print(f"  [{time.perf_counter() - start:5.0f} s] {text}", flush=True)

    with torch.no_grad():
        # TRY_CONCURRENCY: compiles side by side (default: a quarter of the cores; 4 on the 16-core GPU machine)
        concurrency = int(os.environ["TRY_CONCURRENCY"]) if os.environ.get("TRY_CONCURRENCY") else None
        # TRY_SKIP: fix kinds left out of this run (comma-separated), e.g. max_autotune, whose compile runs to the 5×
        # stop on this model and alone outlasts the device's 10-minute call
        skip = set(filter(None, os.environ.get("TRY_SKIP", "").split(",")))
        only = [x.id for x in fixes if x.kind not in skip] if skip else None
        fixes = cap.try_fixes(timing=True, progress=progress, concurrency=concurrency, only=only)
    try_s = time.perf_counter() - tried_at
    rows = []
    for fix in fixes:
        result = fix.result
        row = {"id": fix.id, "kind": fix.kind, "cost": fix.cost_text, "applicable": fix.applicable}
        if result is not None:
            b, a = result.before, result.after
            row.update(status=result.status, recommended=result.recommended, seconds=result.seconds,
                       error=result.error, sentence=result.sentence(fix.kind), output_note=result.output_note,
                       before=b.to_data() if b else None, after=a.to_data() if a else None,
                       timing=result.timing.to_data() if result.timing else None,
                       comparisons=[{"label": c.label, "equal": c.equal, "rel_l2": c.worst()[0],
                                     "max_abs": c.worst()[1], "shapes_differ": c.worst()[2],
                                     "outputs": len(c.outputs), "note": c.note} for c in result.comparisons])
        rows.append(row)
    total_s = time.perf_counter() - start
    print("\n" + "\n".join(fixes.verdicts()))
    print(f"\n{'fix':<6} {'kind':<40} {'verdict':<16} {'graphs':>9} {'breaks':>8} {'recomp':>8} {'skipped':>8} "
          f"{'ratio (95% interval)':>22} {'eager ms':>9} {'w/o vs eager':>14} {'with vs eager':>14} "
          f"{'with vs w/o':>12} {'time s':>7}")
    for fix in fixes:
        result = fix.result
        if result is None:
            print(f"{fix.id:<6} {fix.kind:<40} {'code change' if not fix.applicable else 'not tried'}")
            continue
        b, a, t = result.before, result.after, result.timing
        counts = [f"{getattr(b, k)}→{getattr(a, k)}" if b and a else "–"
                  for k in ("graphs", "graph_breaks", "recompiles", "frames_skipped")]
        ratio = f"{t.ratio:.2f} ({t.low:.2f}–{t.high:.2f})" if t else "–"
        errors = [f"{_num(c.worst()[0])}/{c.worst()[2]}sh" for c in result.comparisons] or ["–"] * 3
        verdict = "recommended" if result.recommended else result.status
        print(f"{fix.id:<6} {fix.kind:<40} {verdict:<16} {counts[0]:>9} {counts[1]:>8} {counts[2]:>8} {counts[3]:>8} "
              f"{ratio:>22} {(t.eager_s * 1e3 if t and t.eager_s else float('nan')):>9.1f} {errors[0]:>14} "
              f"{errors[1]:>14} {errors[2]:>12} {result.seconds or 0:>7.0f}")
        if result.error:
            print(f"       {result.error[:200]}")
    if fixes.combined is not None:
        print(f"together: {fixes.combined.sentence('+'.join(fixes.combined.fixes))}")
    print(f"\nbench row: Try all on Mask R-CNN — {sum(f.applicable for f in fixes)} fixes tried in {try_s:.0f} s "
          f"(explore {explored_s:.0f} s, total wall {total_s:.0f} s) on {torch.cuda.get_device_name()}, "
          f"torch {torch.__version__}")
    with open(os.path.join(OUT, "try_fixes_maskrcnn.json"), "w", encoding="utf-8") as out:
        json.dump({"rows": rows, "verdicts": fixes.verdicts(), "note": fixes.note,
                   "combined": fixes.combined.to_data() if fixes.combined else None, "explore_s": explored_s,
                   "try_fixes_s": try_s, "total_s": total_s, "device": torch.cuda.get_device_name(),
                   "torch": torch.__version__}, out, indent=1, default=str)
    cap.save(os.path.join(OUT, "maskrcnn_fixes.capture.json"))  # for the Fixes tab's screenshots


if __name__ == "__main__":
    sys.exit(main())
