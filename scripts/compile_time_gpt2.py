"""GPT-2-small from its transformers config (random weights, CPU): where the compile time goes (by module),
what regional compilation and warm caches save, measured (``cap.try_compile_fixes()``, ``cap.measure_caches()``).

    python -m scripts.compile_time_gpt2 [--backend inductor] [--layers 12] [--tokens 64] [--out DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import time

import torch


class Logits(torch.nn.Module):
    """The model's logits only (a plain tensor to compare with eager)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(ids, use_cache=False).logits


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="inductor")
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--only", default="regional_compile,warm_caches")
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    args = parser.parse_args()
    from transformers import GPT2Config, GPT2LMHeadModel

    from compiler.analyses.fix_experiments import capture_calls

    torch.manual_seed(0)
    model = Logits(GPT2LMHeadModel(GPT2Config(n_layer=args.layers)).eval().requires_grad_(False))
    ids = torch.randint(0, 50257, (1, args.tokens))
    start = time.perf_counter()
    cap = capture_calls(model, [(ids,)], backend=args.backend)
    print(f"captured in {time.perf_counter() - start:.1f} s: {cap}; compile {cap.summary.compile_time_s:.2f} s")
    table = cap.compile_time_table(by="module", depth=4)
    print(table.head(20).to_string())
    print(cap.compile_time_table(by="phase").to_string())
    print(cap.cache_table()[["compile_id", "cache", "state", "detail"]].to_string())
    fixes = cap.compile_fixes()
    only = [f.id for f in fixes if f.kind in args.only.split(",")]
    start = time.perf_counter()
    cap.try_compile_fixes(only=only, progress=lambda d, t, s: print(f"[{d}/{t}] {s}", flush=True))
    print(f"tried in {time.perf_counter() - start:.1f} s")
    print(fixes.as_text())
    if cap.cache_runs is not None:
        print(cap.cache_runs.as_text())
        warm = cap.cache_runs.run("warm")
        for c in warm.compiles if warm else []:
            for e in c.entries:
                print("warm", c.compile_id, e.cache, e.state, e.detail or e.reason or "", e.saved_s or "")
    cap.save(os.path.join(args.out, f"gpt2_{args.layers}l_{args.backend}.json"))
    print(json.dumps({f.id: {"kind": f.kind, "before_s": f.result.before.compile_s if f.result and f.result.before else None,
                             "after_s": f.result.after.compile_s if f.result and f.result.after else None,
                             "runtime_before_s": f.result.before.runtime_s if f.result and f.result.before else None,
                             "runtime_after_s": f.result.after.runtime_s if f.result and f.result.after else None,
                             "outputs_equal": f.result.outputs_equal if f.result else None}
                      for f in fixes}, indent=1))


if __name__ == "__main__":
    main()
