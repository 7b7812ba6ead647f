"""Figure 1 — capture overhead on compile time.

Each run is a fresh process (``bench.compile_child``) compiling one workload once, in one of four
variants: plain ``torch.compile``; under ``compiler.capture()`` (the default: every stage, the
Inductor IR loggers, caches on); with ``TORCH_TRACE=<dir>``; with ``TORCH_COMPILE_DEBUG=1``.

Same cache state for every run:
- a fresh ``TORCHINDUCTOR_CACHE_DIR``, so FX-graph and AOTAutograd caches miss and Inductor really
  lowers, fuses and compiles C++;
- seeded with the CPU ISA probes (``pick_vec_isa``'s dry-compiled ``.so`` files live in the cache
  dir, ≈ 9 s of g++ here): a throwaway process writes them once into a seed dir, each run gets a copy;
- a warm precompiled header: Inductor keeps it in ``default_cache_dir()/precompiled_headers``
  (``/tmp/torchinductor_<user>``), outside ``TORCHINDUCTOR_CACHE_DIR``; one throwaway compile warms it.

Variants are interleaved (the order rotates every run) so drift on a shared machine hits all alike.
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
from .workloads import ALL

REPO = Path(__file__).resolve().parent.parent
VARIANTS = ("plain", "capture", "trace", "debug")
ANCHOR_NAMES = {"plain": "plain torch.compile", "trace": "TORCH_TRACE", "debug": "TORCH_COMPILE_DEBUG=1"}
TARGET = 1.03  # issue 22: the capture at most 1.03× a plain cold compile (it was 1.05)


def _child(args: list[str], cache_dir: Path, cwd: Path, extra_env: dict | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("TORCH_TRACE", "TORCH_COMPILE_DEBUG", "TORCH_LOGS")}
    env.update(TORCHINDUCTOR_CACHE_DIR=str(cache_dir), PYTHONPATH=str(REPO), **(extra_env or {}))
    proc = subprocess.run([sys.executable, "-m", "bench.compile_child", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"bench.compile_child {' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0


def precompiled_header_dir() -> Path:
    """Where Inductor keeps precompiled headers (``torch._inductor.codecache._HEADER_DIR``)."""
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    return Path(default_cache_dir()) / "precompiled_headers"


def warm_up(root: Path, log) -> dict:
    """Seed dir with the ISA probes, then one throwaway compile to warm the precompiled header."""
    seed = root / "isa-seed"
    isa = _child(["warm-isa"], seed, root)
    log(f"  ISA probes into the seed cache dir: {isa['isa']} ({isa['seconds']:.1f} s)")
    throwaway = root / "throwaway"
    shutil.copytree(seed, throwaway / "cache")
    first = _child(["plain", "pointwise"], throwaway / "cache", throwaway)
    shutil.rmtree(throwaway, ignore_errors=True)
    pch = precompiled_header_dir()
    headers = sorted(p.name for p in pch.glob("*.gch")) if pch.exists() else []
    log(f"  throwaway compile {first['compile_s']:.1f} s; precompiled headers in {pch}: {headers or 'none'}")
    return {"isa": isa, "throwaway_compile_s": first["compile_s"], "pch_dir": str(pch), "pch_files": headers}


def one_run(root: Path, seed: Path, variant: str, workload: str) -> dict:
    run_dir = Path(tempfile.mkdtemp(prefix=f"{variant}-{workload}-", dir=root))
    shutil.copytree(seed, run_dir / "cache")
    extra = {}
    if variant == "trace":
        extra["TORCH_TRACE"] = str(run_dir / "trace")
    elif variant == "debug":
        extra["TORCH_COMPILE_DEBUG"] = "1"  # writes ./torch_compile_debug under cwd = run_dir
    result = _child([variant, workload], run_dir / "cache", run_dir, extra)
    result["artifact_bytes"] = _dir_bytes(run_dir / "trace") + _dir_bytes(run_dir / "torch_compile_debug")
    if result["fxgraph_cache_hit"] or not result["fxgraph_cache_miss"]:
        result["warning"] = "not a cold compile: FX graph cache hit"
    shutil.rmtree(run_dir, ignore_errors=True)
    return result


def measure(workloads, runs: int, log) -> dict:
    root = Path(tempfile.mkdtemp(prefix="tcompile-bench-compile-"))
    try:
        warm = warm_up(root, log)
        results = {w: {v: [] for v in VARIANTS} for w in workloads}
        for i in range(runs):
            for workload in workloads:
                order = VARIANTS[i % len(VARIANTS):] + VARIANTS[:i % len(VARIANTS)]
                for variant in order:
                    started = time.perf_counter()
                    r = one_run(root, root / "isa-seed", variant, workload)
                    results[workload][variant].append(r)
                    log(f"  run {i + 1}/{runs} {workload:<17} {variant:<8} compile {r['compile_s']:6.2f} s "
                        f"(cpu {r['cpu_s']:6.2f} s, process {time.perf_counter() - started:5.1f} s)"
                        + (f"  {r['warning']}" if "warning" in r else ""))
        return {"warm_up": warm, "runs": results}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _median(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def _spread(runs: list[dict], key: str) -> str:
    values = [r[key] for r in runs]
    return f"{min(values):.2f}–{max(values):.2f} s"


def rows(measured: dict) -> list[Row]:
    """Per workload: capture vs plain in wall time and in main-process CPU time (both with the
    target), then capture vs the two debug tools (references)."""
    out = []
    for workload, by_variant in measured["runs"].items():
        captured, plain = by_variant["capture"], by_variant["plain"]
        detail = {v: [{k: r.get(k) for k in ("compile_s", "cpu_s", "assemble_s", "capture_json_bytes",
                                             "artifact_bytes", "inductor_ir", "warning") if k in r} for r in runs]
                  for v, runs in by_variant.items()}
        wall = _median(captured, "compile_s") / _median(plain, "compile_s")
        fastest = min(r["compile_s"] for r in captured) / min(r["compile_s"] for r in plain)
        out.append(Row(f"compile wall time: {workload}, capture vs plain torch.compile",
                       seconds(_median(captured, "compile_s")), seconds(_median(plain, "compile_s")), wall,
                       f"≤ {TARGET:.2f}", high=TARGET, detail=detail,
                       note=f"median of {len(plain)} fresh processes each; runs ranged capture "
                            f"{_spread(captured, 'compile_s')}, plain {_spread(plain, 'compile_s')}; "
                            f"ratio of the fastest runs {fastest:.3f}"))
        cpu = _median(captured, "cpu_s") / _median(plain, "cpu_s")
        out.append(Row(f"compile CPU time (main process): {workload}, capture vs plain",
                       seconds(_median(captured, "cpu_s")), seconds(_median(plain, "cpu_s")), cpu,
                       f"≤ {TARGET:.2f}", high=TARGET,
                       note="CPU of the compiling process and the children it waited on; the compile-worker "
                            "pool's g++ is not in it, so this ratio overstates the share of the capture"))
        for anchor in ("trace", "debug"):
            runs = by_variant[anchor]
            out.append(Row(f"compile wall time: {workload}, capture vs {ANCHOR_NAMES[anchor]}",
                           seconds(_median(captured, "compile_s")), seconds(_median(runs, "compile_s")),
                           _median(captured, "compile_s") / _median(runs, "compile_s"), "(reference)",
                           note=f"main-process CPU ratio {_median(captured, 'cpu_s') / _median(runs, 'cpu_s'):.3f}; "
                                f"{ANCHOR_NAMES[anchor]} wrote {runs[0]['artifact_bytes'] / 1e6:.2f} MB, "
                                f"the capture's JSON is {captured[0].get('capture_json_bytes', 0) / 1e6:.2f} MB"))
    if len(measured["runs"]) > 1:
        out += pooled(measured["runs"])
    return out


def pooled(runs: dict) -> list[Row]:
    """Geometric mean over workloads of the capture/plain ratios: one figure less noisy than each."""
    out = []
    for key, what in (("compile_s", "wall time"), ("cpu_s", "CPU time (main process)")):
        ratios = [_median(v["capture"], key) / _median(v["plain"], key) for v in runs.values()]
        mean = statistics.geometric_mean(ratios)
        out.append(Row(f"compile {what}: geometric mean over {len(ratios)} workloads, capture vs plain",
                       "—", "—", mean, f"≤ {TARGET:.2f}", high=TARGET,
                       note="per-workload ratios " + ", ".join(f"{r:.3f}" for r in ratios)))
    return out


def run(quick: bool, log=print) -> tuple[list[Row], dict]:
    workloads = ("mlp",) if quick else ALL
    runs = 3 if quick else 5
    log(f"[1] compile time: {', '.join(workloads)} × {len(VARIANTS)} variants × {runs} runs, fresh processes")
    measured = measure(workloads, runs, log)
    return rows(measured), measured
