"""Issue 26's verification on the GPU machine, in two steps.

On the GPU (one command per batch of models, each under the device's 10-minute limit)::

    python -m scripts.verify_gpu_models measure OUT LABEL NAME [NAME …] [--timeout S]

runs, for each model of ``scripts/gpu_models.py``, ``python -m compiler gpu-profile`` (the model captured by
``compiler.run`` with a fresh Inductor cache, then one call measured by Nsight Compute) and packs the captures,
ncu's CSVs and the logs into ``OUT/LABEL.tar.gz`` (rewritten after each model, so a batch cut short keeps what
finished) with a summary ``OUT/LABEL.json``. Nothing here imports the explorer (no IPython on that machine).

On any machine, from what came back::

    python -m scripts.verify_gpu_models table LABEL.tar.gz [… .tar.gz | DIR]

prints the per-model table (kernels, compiles, over-peak before → after, ncu agreement of the ten costliest
Triton kernels, break-even calls, JSON MB before → after, static copy MB) and each model's agreement rows.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def measure(out: Path, label: str, names: list[str], timeout: float) -> None:
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"verify-{label}-"))
    summary = []
    for name in names:
        start = time.perf_counter()
        argv = [sys.executable, "-m", "compiler", "gpu-profile", "--timeout", str(timeout), "-o",
                str(work / f"{name}.json"), "--keep-csv", str(work / f"{name}.csv"),
                str(REPO / "scripts" / "gpu_models.py"), "run", name]
        with open(work / f"{name}.log", "w") as log:
            done = subprocess.run(argv, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, text=True)
        row = {"model": name, "rc": done.returncode, "seconds": round(time.perf_counter() - start, 1),
               "bytes": (work / f"{name}.json").stat().st_size if (work / f"{name}.json").exists() else None}
        summary.append(row)
        print(json.dumps(row), flush=True)
        print((work / f"{name}.log").read_text()[-3000:], flush=True)
        (out / f"{label}.json").write_text(json.dumps(summary, indent=1))
        partial = out / f"{label}.partial"  # replaced whole: a run stopped mid-write keeps the last one
        with tarfile.open(partial, "w:gz") as tar:
            for path in sorted(work.iterdir()):
                tar.add(path, arcname=path.name)
        os.replace(partial, out / f"{label}.tar.gz")


# --- the table (any machine) ----------------------------------------------------------------------

def _captures(paths: list[Path]) -> dict[str, tuple[bytes, str | None]]:
    """model → (capture JSON bytes, ncu CSV text) from .tar.gz files and folders."""
    found: dict[str, list] = {}
    for path in paths:
        if path.is_dir():
            files = {p.name: p.read_bytes() for p in path.iterdir() if p.is_file()}
        else:
            with tarfile.open(path) as tar:
                files = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
        for file, data in files.items():
            stem, _, ext = file.rpartition(".")
            if ext == "json":
                found.setdefault(stem, [None, None])[0] = data
            elif ext == "csv":
                found.setdefault(stem, [None, None])[1] = data.decode(errors="replace")
    return {k: (v[0], v[1]) for k, v in found.items() if v[0]}


def size_before(cap) -> int:
    """The JSON bytes the capture took before this round's compaction: the Kernels stage saved again in full,
    kernels' source and comments, provenance nodes' kernels and bytecode instructions kept (the schema's to_data of
    that time)."""
    from compiler.stages import schema
    from compiler.stages.data import Data

    def compile_data(self):
        out = Data.to_data(self)
        out.pop("kernels_from_inductor"), out.pop("kernel_extras")
        out["kernels"] = self.kernels.to_data()  # the Kernels stage saved whole beside the runs (as they are saved now)
        if self.kernels.available and not any(k.gpu_time_us_per_call is not None or k.cost or k.gpu
                                              for k in self.kernels.kernels):
            del out["kernels"]  # CPU captures: the old exact-equality dedup
            out["kernels_from_inductor"] = True
        return out

    def plain(flag):
        def to_data(self):
            out = Data.to_data(self)
            out.pop(flag)
            return out
        return to_data

    saved = schema.Compile.to_data, schema.GeneratedCode.to_data, schema.Provenance.to_data, schema.CodeListing.to_data
    schema.Compile.to_data = compile_data
    schema.GeneratedCode.to_data = plain("texts_from_module")
    schema.Provenance.to_data = plain("node_kernels_derived")
    schema.CodeListing.to_data = plain("instructions_from_text")
    try:
        return len(cap.to_json().encode())
    finally:
        (schema.Compile.to_data, schema.GeneratedCode.to_data, schema.Provenance.to_data,
         schema.CodeListing.to_data) = saved


def model_row(name: str, raw: bytes, csv_text: str | None) -> tuple[dict, list[dict]]:
    from compiler.capturing.ncu import agreement
    from compiler.stages.capture import Capture
    from compiler.stages.data import plain_data

    cap = Capture.from_json(raw)
    data = plain_data(cap)
    peak = (cap.gpu_profile.peak_bytes_per_s if cap.gpu_profile is not None else None) or 0
    kernels = [k for c in cap.compiles if c.kernels.available for k in c.kernels.kernels]
    triton = [k for k in kernels if k.language == "Triton" and k.gpu is not None]
    over_before = [k for k in triton if k.gpu.time_us_per_launch and peak and (k.gpu.bytes_args_per_call or 0)
                   / (k.gpu.time_us_per_launch * 1e-6) > peak]
    above = [k for k in triton if k.gpu.achieved_bytes_per_s and peak and k.gpu.achieved_bytes_per_s > peak]
    unexplained = [k for k in above if k.gpu.served_from != "L2"]
    over_flops = [k for k in kernels if k.cost and (k.cost.share or 0) > 1]
    rows = agreement(data)
    measured = [r for r in rows if r["ncu_read"] is not None]
    within = [r for r in measured if r["read_ratio"] is not None and abs(r["read_ratio"] - 1) <= 0.25]
    within_total = [r for r in measured if r["moved_ratio"] is not None and abs(r["moved_ratio"] - 1) <= 0.25]
    # a kernel reading less than 1 MB is read by the 32-byte sector and ncu's cache flush: a ratio says little
    big = [r for r in measured if (r["ncu_read"] or 0) >= 1e6]
    runtime = cap.runtime
    saving = (runtime.eager.median_s - runtime.compiled.median_s) if runtime.available and runtime.eager else None
    compile_s = sum(c.amortization.compile_s or 0 for c in cap.compiles if c.amortization.available)
    per_compile = [c.amortization.break_even_calls for c in cap.compiles if c.amortization.available]
    from compiler.stages.kernel_costs import gpu_time_accounted

    accounted = gpu_time_accounted(cap)  # each launch once, in the compile whose graph made it
    claimed = accounted.kernels_us if accounted else 0.0
    profiled = cap.gpu_profile.gpu_time_us_per_call if cap.gpu_profile is not None else None
    try:
        from explorer.page import render_static

        static = len(render_static(cap, fallback=True).encode())
    except ImportError:
        static = None
    row = {"model": name, "compiles": len(cap.compiles), "triton": len(triton),
           "extern": sum(k.language == "extern" for k in kernels),
           "error": cap.error.as_text() if cap.error else None,
           "over_before": len(over_before),
           "max_before": max(((k.gpu.bytes_args_per_call or 0) / (k.gpu.time_us_per_launch * 1e-6) / peak
                              for k in over_before), default=None),
           "above_peak_after": len(above), "served_from_l2": len(above) - len(unexplained),
           "unexplained_after": len(unexplained), "compute_over_peak": len(over_flops),
           "ncu_measured": len(measured), "ncu_within_25_reads": len(within), "ncu_within_25_total": len(within_total),
           "ncu_big": len(big), "ncu_big_within_25_reads": len([r for r in big if r in within]),
           "speedup": runtime.speedup if runtime.available else None, "saving_s": saving, "compile_s": compile_s,
           "break_even_calls": compile_s / saving if saving and saving > 0 else None,
           "break_even_per_compile": per_compile, "kernel_time_share": claimed / profiled if profiled else None,
           "in_graphs_share": (accounted.in_graphs_us / profiled
                               if accounted and accounted.in_graphs_us is not None and profiled else None),
           "json_mb_before": size_before(cap) / 1e6, "json_mb_after": len(cap.to_json().encode()) / 1e6,
           "json_mb_file": len(raw) / 1e6, "static_mb": static / 1e6 if static else None,
           "csv": bool(csv_text)}
    return row, rows


def table(paths: list[Path]) -> str:
    found = _captures(paths)
    f = lambda v, spec="": "–" if v is None else format(v, spec)  # noqa: E731
    head = ("| model | compiles | Triton / extern kernels | over DRAM peak before (max) | above peak after: L2 / "
            "unexplained | ncu: reads within 25 % (read + written within 25 %) of top 10; of those reading ≥ 1 MB | speedup | break-even calls | "
            "kernel time ÷ profiled | JSON MB before → after | static copy MB |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    details = []
    for name in sorted(found):
        raw, csv_text = found[name]
        row, rows = model_row(name, raw, csv_text)
        lines.append(
            f"| {name} | {row['compiles']} | {row['triton']} / {row['extern']} | {row['over_before']} "
            f"({f(row['max_before'], '.2f')}×) | {row['served_from_l2']} / {row['unexplained_after']} | "
            f"{row['ncu_within_25_reads']} of {row['ncu_measured']} ({row['ncu_within_25_total']}); "
            f"{row['ncu_big_within_25_reads']} of {row['ncu_big']} | "
            f"{f(row['speedup'], '.2f')} | {f(row['break_even_calls'], ',.0f')} | {f(row['kernel_time_share'], '.3f')}"
            f"{'' if row['in_graphs_share'] is None else ' (in graphs ' + format(row['in_graphs_share'], '.3f') + ')'} | "
            f"{row['json_mb_before']:.2f} → {row['json_mb_after']:.2f} | {f(row['static_mb'], '.2f')} |")
        details.append(f"\n**{name}**" + (f" (error: {row['error']})" if row["error"] else "")
                       + "\n\n| kernel | µs / call | est. read MB | ncu DRAM read MB | read est ÷ ncu | est. written MB | "
                         "ncu DRAM written MB | ncu written into L2 MB | (read + written) est ÷ ncu | bytes from |"
                         "\n|---|---|---|---|---|---|---|---|---|---|")
        mb = lambda v: f"{v / 1e6:.2f}" if v is not None else "–"  # noqa: E731
        for r in rows:
            details.append(f"| `{r['kernel'][:60]}` | {f(r['us_per_call'], '.1f')} | {mb(r['read'])} | {mb(r['ncu_read'])} | "
                           f"{f(r['read_ratio'], '.2f')} | {mb(r['written'])} | {mb(r['ncu_written'])} | "
                           f"{mb(r['ncu_l2_written'])} | {f(r['moved_ratio'], '.2f')} | {r['method']} |")
    return "\n".join(lines + details)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m scripts.verify_gpu_models")
    commands = parser.add_subparsers(dest="command", required=True)
    m = commands.add_parser("measure")
    m.add_argument("out", type=Path)
    m.add_argument("label")
    m.add_argument("names", nargs="+")
    m.add_argument("--timeout", type=float, default=280, help="seconds each run of a model's script may take")
    t = commands.add_parser("table")
    t.add_argument("paths", nargs="+", type=Path)
    args = parser.parse_args(argv)
    if args.command == "measure":
        measure(args.out, args.label, args.names, args.timeout)
    else:
        print(table(args.paths))


if __name__ == "__main__":
    main()
