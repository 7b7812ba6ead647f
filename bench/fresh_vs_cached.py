"""Figure — what ``%%tcompile``'s cache-free default costs (issue 16 item 5).

``%%tcompile`` compiles with Inductor's and AOTAutograd's caches off (``fresh=True``) so the IR before
and after fusion is always captured; ``--cached`` lets the caches work. On a rerun of a cell, a warm
cache skips lowering, fusion and the C++ compile, so the cache-free default costs that much more:

- cache-free vs cached, warm cache: ``compiler.run(fresh=True)`` against ``compiler.run(fresh=False)``
  whose FX-graph cache already holds this graph (what ``--cached`` gives when a cell runs again);
- cache-free vs cached, cold cache: the same against the first cached compile (an empty cache), which
  also writes the cache entries: what a cell's first run pays either way.

One child process (``python -m bench.fresh_vs_cached child WORKLOAD ROUNDS``) with its own empty
``TORCHINDUCTOR_CACHE_DIR``: a throwaway compile of another workload first (imports, the CPU ISA probe,
the precompiled header), then the cold cached compile, then rounds of cache-free and warm cached
compiles, alternating. Each is timed from ``compiler.run`` to its return with ``timing=False`` (the
compile, the first call and assembling the capture), after ``torch._dynamo.reset()`` as a rerun of a
cell compiles anew. Reference rows: the cost is torch's, not the capture's.
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .table import Row, seconds

REPO = Path(__file__).resolve().parent.parent


def _compile(fn, args, fresh: bool) -> dict:
    import torch

    import compiler

    torch._dynamo.reset()
    start = time.perf_counter()
    cap = compiler.run(fn, *args, fresh=fresh, timing=False, reset=False)
    wall = time.perf_counter() - start
    inductor = cap.counters.get("inductor", {})
    return {"fresh": fresh, "wall_s": wall, "fxgraph_cache_hit": inductor.get("fxgraph_cache_hit", 0),
            "fxgraph_cache_miss": inductor.get("fxgraph_cache_miss", 0),
            "ir_captured": any(run.ir.available for c in cap.compiles for run in c.inductor.runs),
            "error": f"{cap.error.type}: {cap.error.message}" if cap.error else None}


def child(workload: str, rounds: int) -> dict:
    import torch

    from .workloads import make

    with torch.no_grad():
        throwaway_fn, throwaway_args = make("pointwise" if workload != "pointwise" else "mlp")
        throwaway = _compile(throwaway_fn, throwaway_args, fresh=True)
        fn, args = make(workload)
        cold = _compile(fn, args, fresh=False)
        runs = []
        for i in range(rounds):
            for fresh in ((True, False) if i % 2 == 0 else (False, True)):
                runs.append(_compile(fn, args, fresh=fresh))
    return {"workload": workload, "throwaway_s": throwaway["wall_s"], "cold_cached": cold, "runs": runs}


def measure(workload: str, rounds: int, log) -> dict:
    cache = Path(tempfile.mkdtemp(prefix="tcompile-bench-fresh-"))
    try:
        env = {k: v for k, v in os.environ.items() if k not in ("TORCH_TRACE", "TORCH_COMPILE_DEBUG", "TORCH_LOGS")}
        env.update(TORCHINDUCTOR_CACHE_DIR=str(cache), PYTHONPATH=str(REPO))
        proc = subprocess.run([sys.executable, "-m", "bench.fresh_vs_cached", "child", workload, str(rounds)],
                              cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
        if proc.returncode != 0:
            raise RuntimeError(f"bench.fresh_vs_cached child failed:\n{proc.stderr[-3000:]}")
        result = json.loads(proc.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    for r in [result["cold_cached"], *result["runs"]]:
        log(f"  {workload:<17} {'cache-free' if r['fresh'] else 'cached':<10} {r['wall_s']:6.2f} s  "
            f"FX graph cache hit {r['fxgraph_cache_hit']} miss {r['fxgraph_cache_miss']}, "
            f"IR captured {r['ir_captured']}" + (f"  ERROR {r['error']}" if r["error"] else ""))
    return result


def rows(result: dict) -> list[Row]:
    workload = result["workload"]
    fresh = [r["wall_s"] for r in result["runs"] if r["fresh"]]
    warm = [r["wall_s"] for r in result["runs"] if not r["fresh"]]
    cold = result["cold_cached"]["wall_s"]
    hits = sum(r["fxgraph_cache_hit"] > 0 for r in result["runs"] if not r["fresh"])
    ir = sum(r["ir_captured"] for r in result["runs"] if r["fresh"])
    fresh_s, warm_s = statistics.median(fresh), statistics.median(warm)
    detail = {**result, "fresh_median_s": fresh_s, "cached_warm_median_s": warm_s}
    return [
        Row(f"%%tcompile cache-free (default) vs --cached, warm cache: {workload}, Inductor", seconds(fresh_s),
            seconds(warm_s), fresh_s / warm_s, "(reference)",
            note=f"{seconds(fresh_s - warm_s)} more per compile; cache-free {min(fresh):.2f}–{max(fresh):.2f} s "
                 f"(IR captured in {ir}/{len(fresh)}), cached {min(warm):.2f}–{max(warm):.2f} s (FX graph cache hit "
                 f"in {hits}/{len(warm)}, so no IR)", detail=detail),
        Row(f"%%tcompile cache-free (default) vs --cached, cold cache (first run): {workload}, Inductor",
            seconds(fresh_s), seconds(cold), fresh_s / cold, "(reference)",
            note="the cold cached compile also writes the cache entries"),
    ]


def run(quick: bool, log=print) -> tuple[list[Row], dict]:
    log("[fresh] %%tcompile's cache-free default vs --cached (Inductor caches warm and cold)")
    out, details = [], {}
    for workload in (["mlp"] if quick else ["mlp", "transformer_block"]):
        result = measure(workload, 3 if quick else 5, log)
        details[workload] = result
        out += rows(result)
    return out, details


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        print(json.dumps(child(sys.argv[2], int(sys.argv[3]))))
    else:
        from .table import format_table

        measured_rows, _ = run(quick="--quick" in sys.argv)
        print(format_table(measured_rows))
