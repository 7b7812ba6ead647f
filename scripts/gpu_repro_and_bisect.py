"""On a CUDA machine: a Triton kernel's reproducer (GPT-2) and the bisection of Mask R-CNN's eager-vs-compiled drift.

    OUT=/tmp/out python scripts/gpu_repro_and_bisect.py [--budget 480]

1. GPT-2 (``scripts.gpu_models.gpt2``: transformers ``GPT2LMHeadModel``, 2 layers, random weights, no_grad) is captured with
   Inductor (``compiler.explore``: GPU kernel times measured by torch.profiler); the Triton kernels with the most
   captured GPU time get a reproducer (``kernel.reproducer()``), each saved to ``$OUT`` and run in a fresh process:
   did it run standalone, did it write what the compiled launch wrote, its µs per launch against the captured µs.
2. Mask R-CNN (torchvision ``maskrcnn_resnet50_fpn(weights=None)``, eval, one 480×640 image) is bisected with
   ``compiler.analyses.bisect_drift`` (torch's ``CompilerBisector`` in a child process) for the rest of the budget:
   eager-vs-eager first, then backend, subsystem and pass where the compiled outputs first differ from eager.

Everything lands in ``$OUT`` (≤ 8 files): ``summary.json`` (every figure), ``gpt2_capture.json.gz``, the
reproducers ``repro_*.py``, ``bisect_maskrcnn.json``, ``log.txt``. Bounded by ``--budget`` seconds in total: the
bisection gets what the reproducers left (its child is stopped at the deadline and says how far it got).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

START = time.monotonic()
OUT = os.environ.get("OUT") or "gpu_repro_out"
LOG: list[str] = []


def say(text: str) -> None:
    line = f"[{time.monotonic() - START:6.1f} s] {text}"
    print(line, flush=True)
    LOG.append(line)


def write(name: str, data) -> None:
    with open(os.path.join(OUT, name), "w", encoding="utf-8") as f:
        if isinstance(data, str):
            f.write(data)
        else:
            json.dump(data, f, indent=1, default=str)


def gpt2_reproducers(summary: dict, top: int, deadline: float, device: str) -> None:
    import torch

    import compiler
    from scripts import gpu_models

    if device == "cuda":
        forward, (ids,) = gpu_models.gpt2(layers=2)  # the model of assets/gpu/gpt2_2layer.json
    else:  # a CPU check of this script: the same model, smaller
        from transformers import GPT2Config, GPT2LMHeadModel

        config = GPT2Config(n_layer=2, n_embd=256, n_head=4, vocab_size=8192, n_positions=256, bos_token_id=0,
                            eos_token_id=0)
        model = GPT2LMHeadModel(config).eval()
        ids = torch.randint(0, config.vocab_size, (4, 128))

        def forward(ids):
            with torch.no_grad():
                return model(ids).logits

    say("GPT-2: capturing with Inductor (compiler.explore, GPU kernel times)")
    cap = compiler.explore(forward, ids)
    cap.save(os.path.join(OUT, "gpt2_capture.json.gz"))
    language = "triton" if device == "cuda" else "c++"
    kernels = [(c, k) for c in cap.compiles if c.kernels.available for k in c.kernels.kernels
               if k.language.lower() == language]
    kernels.sort(key=lambda ck: -(ck[1].gpu_time_us_per_call or ck[1].reproducer().captured_us or 0))
    say(f"GPT-2: {len(cap.compiles)} compiles, {len(kernels)} {language} kernels; reproducing the {top} slowest")
    rows = []
    for c, kernel in kernels[:top]:
        if rows and time.monotonic() > deadline:  # the slowest kernel always; the others while the share lasts
            rows.append({"kernel": kernel.name, "skipped": "out of the reproducers' time budget"})
            continue
        made = kernel.reproducer()
        name = f"repro_{kernel.name}.py"
        made.save(os.path.join(OUT, name))
        result = made.run(timeout=max(30.0, min(240.0, deadline - time.monotonic() + 60)))
        result.pop("output", None)
        rows.append({"kernel": kernel.name, "compile": c.compile_id, "script": name, "notes": made.notes,
                     "captured_us_per_launch": made.captured_us, "captured_method": made.captured_method, **result})
        say(f"  {kernel.name}: ran={result.get('ran')} matched={result.get('matched')} "
            f"identical={result.get('identical')} {result.get('us_per_launch') or 0:.2f} µs/launch "
            f"({result.get('time_method')}) vs captured {made.captured_us or 0:.2f} µs ({made.captured_method}); "
            f"config {result.get('triton_config')} {result.get('error') or ''}")
    summary["gpt2"] = {"compiles": len(cap.compiles), "kernels": len(kernels), "language": language, "reproducers": rows,
                       "runtime": cap.runtime.as_text() if cap.runtime.available else None}


def maskrcnn_case():
    """Mask R-CNN on one 480 × 640 image (``scripts.gpu_models.maskrcnn``, random weights, seed 0): what the
    bisection's child process builds for itself (``build=``: no dill on the GPU machine)."""
    import torch

    from scripts import gpu_models

    torch.manual_seed(0)
    f, args = gpu_models.maskrcnn(images=1)
    return f, [(args, {})]


def maskrcnn_bisect(summary: dict, deadline: float) -> None:
    import compiler
    from compiler.analyses.bisect_drift import bisect_drift

    budget = deadline - time.monotonic()
    say(f"Mask R-CNN: bisecting eager-vs-compiled drift with CompilerBisector ({budget:.0f} s left)")
    found = bisect_drift(compiler.Capture.empty(), build="scripts.gpu_repro_and_bisect:maskrcnn_case",
                         timeout=max(30.0, budget),
                         own_cache=False, progress=lambda line: say(f"  bisect: {line}"),
                         backends=["eager", "aot_eager", "aot_eager_decomp_partition", "inductor"])
    data = found.to_data()
    write("bisect_maskrcnn.json", data)
    summary["maskrcnn_bisect"] = {k: v for k, v in data.items() if k != "log"}
    say(f"Mask R-CNN bisect: {found.as_text() if found.available else found.reason}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=480.0, help="seconds in all (default 480)")
    parser.add_argument("--top", type=int, default=2, help="Triton kernels to reproduce (default 2)")
    parser.add_argument("--repro-share", type=float, default=0.35, help="share of the budget for GPT-2 (default 0.35)")
    parser.add_argument("--device", default="cuda", help="cuda (default); cpu runs the GPT-2 part on C++ kernels (a check)")
    parser.add_argument("--parts", default="gpt2,maskrcnn", help="which parts (default gpt2,maskrcnn)")
    options = parser.parse_args()
    os.makedirs(OUT, exist_ok=True)
    import torch

    from torch._inductor import compiler_bisector

    summary = {"torch": torch.__version__, "cuda": torch.cuda.is_available(),
               "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
               "bisector": {"do_bisect": hasattr(compiler_bisector.CompilerBisector, "do_bisect"),
                            "backends": list(compiler_bisector.BACKENDS),
                            "inductor_subsystems": [s.name for s in compiler_bisector.BACKENDS.get("inductor", [])]}}
    say(f"torch {summary['torch']} on {summary['device']}; bisector {summary['bisector']}")
    if options.device == "cuda" and not torch.cuda.is_available():
        say("no CUDA GPU: nothing to do")
        write("summary.json", summary)
        return 2
    end = START + options.budget
    for name, part in (("gpt2", lambda: gpt2_reproducers(summary, options.top, START + options.budget * options.repro_share,
                                                          options.device)),
                       ("maskrcnn", lambda: maskrcnn_bisect(summary, end))):
        if name not in options.parts.split(","):
            continue
        try:
            part()
        except Exception as exc:  # noqa: BLE001 — one part's failure is reported; the other still runs
            summary[f"{name}_error"] = f"{type(exc).__name__}: {exc}"
            say(f"{name} failed: {type(exc).__name__}: {exc}\n{traceback.format_exc()[-2000:]}")
        write("summary.json", summary)
    summary["wall_s"] = round(time.monotonic() - START, 1)
    write("summary.json", summary)
    write("log.txt", "\n".join(LOG) + "\n")
    say(f"done in {summary['wall_s']} s; results in {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
