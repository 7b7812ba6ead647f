"""Figure — reading a job's traces at tlparse's speed (issue 35, item 3): ``compiler.load_job`` of a
multi-rank TORCH_TRACE directory against ``tlparse DIR --all-ranks-html`` on the same directory, each in
a fresh process on the same machine: wall seconds (interpreter start and imports included — what a user
waits for) and peak RSS (``/usr/bin/time``-style maximum resident set of the process and its children).

    python -m bench.load_job [DIR ...] [--repeat 3] [--processes N] [--ranks64] [--gpt2-ddp DIR]

Default inputs: tlparse's own multi-rank test logs (../shared/tlparse_inputs: multi_rank_logs, 4 ranks;
multi_rank_runtime, 7 ranks), where present, and a 2-rank directory made of the shipped recorded log
(tests/assets/traces, torch 2.14.1) twice. ``--gpt2-ddp DIR``: also a real 2-rank job's traces (a GPT-2
under DDP + Inductor, gloo: ``python -m bench.gpt2_ddp_job --run DIR`` makes them). ``--ranks64``: also a
64-rank directory made of one real rank log (tlparse's multi_rank_runtime rank 0, 1.9 MB) with its rank
rewritten, ~119 MB. tcompile loads each in-process (``load_job(processes=0)``) and, with ``--processes N``
(``--ranks64`` alone: N = the CPUs here), in N worker processes too. The median of ``--repeat`` runs is
reported, runs interleaved (tlparse, tcompile, tcompile in processes, tlparse, …) so all see the same
machine load. Budget: ≤ 2× tlparse's wall time and ≤ 200 MB. A run in processes reports the parent's peak
and the largest worker's; their sum bound is parent + N × worker (workers run side by side).
"""
from __future__ import annotations

import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from compiler.readers.job_processes import cpu_count

from .table import Row, megabytes, seconds

REPO = Path(__file__).resolve().parent.parent
INPUTS = REPO.parent.parent / "shared" / "tlparse_inputs"  # /work/shared next to /work/<checkout>
if not INPUTS.is_dir():
    INPUTS = Path("/work/shared/tlparse_inputs")
LOG = REPO / "tests" / "assets" / "traces" / "torch_2_14_1_break_recompile.log"
TLPARSE = shutil.which("tlparse") or str(Path(sys.executable).parent / "tlparse")
RATIO, BUDGET_BYTES = 2.0, 200_000_000

LOAD = r"""
import resource, sys, time, warnings
sys.path.insert(0, sys.argv[1])
warnings.simplefilter("ignore")
import compiler
job = compiler.load_job(sys.argv[2], processes=int(sys.argv[3]))
print(len(job.captures), len(job.divergences), "torch" in sys.modules,
      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
      resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
"""


WRAP = r"""
import json, resource, subprocess, sys, time
start = time.perf_counter()
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
wall = time.perf_counter() - start
print(json.dumps({"wall": wall, "peak": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024,
                  "rc": done.returncode, "out": done.stdout.strip()[-300:], "err": done.stderr[-1500:]}))
"""


def measure(command: list[str]) -> dict:
    """One fresh process (in a wrapper of its own, so its peak RSS is its own)."""
    done = subprocess.run([sys.executable, "-c", WRAP, *command], capture_output=True, text=True, timeout=900)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if result["rc"] != 0:
        raise RuntimeError(f"{' '.join(command[:4])} failed: {result['err']}")
    return result


def compare(folder: Path, repeat: int, log=print, processes: int = 0) -> dict:
    """tlparse, tcompile in-process and (``processes``) tcompile in worker processes on ``folder``, interleaved."""
    out = Path(tempfile.mkdtemp(prefix="tc-tlparse-"))
    commands = {"tlparse": [TLPARSE, str(folder), "--all-ranks-html", "-o", str(out), "--overwrite", "--no-browser"],
                "tcompile": [sys.executable, "-c", LOAD, str(REPO), str(folder), "0"]}
    if processes:
        commands["tcompile_processes"] = [sys.executable, "-c", LOAD, str(REPO), str(folder), str(processes)]
    runs = {name: [] for name in commands}
    for _ in range(repeat):
        for name, command in commands.items():
            runs[name].append(measure(command))
    shutil.rmtree(out, ignore_errors=True)
    result = {name: {"wall_s": statistics.median(r["wall"] for r in found),
                     "peak_bytes": max(r["peak"] for r in found), "walls": [round(r["wall"], 3) for r in found]}
              for name, found in runs.items()}
    for name in commands:
        if name.startswith("tcompile"):
            outs = [r["out"].split() for r in runs[name]]
            result[name].update(parent_peak_bytes=max(int(o[3]) for o in outs),
                                worker_peak_bytes=max(int(o[4]) for o in outs))
    ranks, divergences, torch_loaded = runs["tcompile"][-1]["out"].split()[:3]
    if processes:
        assert runs["tcompile_processes"][-1]["out"].split()[:2] == [ranks, divergences], runs["tcompile_processes"][-1]
        result["tcompile_processes"]["processes"] = processes
    result.update(folder=str(folder), bytes=sum(p.stat().st_size for p in folder.iterdir() if p.is_file()),
                  ranks=int(ranks), divergences=int(divergences), torch_imported=torch_loaded == "True")
    log(f"load_job {folder.name}: {result['ranks']} ranks, {megabytes(result['bytes'])}: "
        + ", ".join(f"{name} {seconds(r['wall_s'])} {megabytes(r['peak_bytes'])} {r['walls']}"
                    for name, r in result.items() if isinstance(r, dict)))
    return result


def default_inputs(tmp: Path) -> list[Path]:
    made = tmp / "shipped_log_x2"
    made.mkdir(exist_ok=True)
    for rank in (0, 1):
        shutil.copy(LOG, made / f"dedicated_log_torch_trace_rank_{rank}.log")
    return [made] + [INPUTS / name for name in ("multi_rank_logs", "multi_rank_runtime") if (INPUTS / name).is_dir()]


RANK_LOG = INPUTS / "multi_rank_runtime" / "dedicated_log_torch_trace_rank_0.log"


def ranks64(tmp: Path, source: Path = RANK_LOG, ranks: int = 64) -> Path:
    """``ranks`` copies of one real rank log, each with its records' ``"rank": 0`` rewritten to its rank."""
    made = tmp / f"{ranks}_ranks_of_{source.parent.name}"
    made.mkdir(exist_ok=True)
    lines = source.read_text().splitlines(keepends=True)
    for rank in range(ranks):
        text = "".join(line if line.startswith("\t") else line.replace('"rank": 0,', f'"rank": {rank},', 1)
                       for line in lines)
        (made / f"dedicated_log_torch_trace_rank_{rank}.log").write_text(text)
    return made


def _pair(name: str, how: str, tc: dict, tl: dict, peak: int, wall_note: str, peak_note: str) -> list[Row]:
    """The wall-time and peak-RSS rows of one way of loading, against tlparse's."""
    return [Row(f"{name}, {how}: wall time vs tlparse --all-ranks-html", seconds(tc["wall_s"]),
                f"tlparse {seconds(tl['wall_s'])}", tc["wall_s"] / tl["wall_s"], f"≤ {RATIO:g}", high=RATIO,
                note=wall_note),
            Row(f"{name}, {how}: peak RSS", megabytes(peak), f"tlparse {megabytes(tl['peak_bytes'])}; budget 200 MB",
                peak / BUDGET_BYTES, "≤ 1 (≤ 200 MB)", high=1.0, note=peak_note)]


def rows_for(result: dict) -> list[Row]:
    tl, tc = result["tlparse"], result["tcompile"]
    name = f"load_job {Path(result['folder']).name} ({result['ranks']} ranks, {megabytes(result['bytes'])})"
    rows = _pair(name, "in-process", tc, tl, tc["peak_bytes"],
                 f"fresh processes, imports included; runs {tc['walls']} vs tlparse {tl['walls']}; torch imported: "
                 f"{result['torch_imported']}", "")
    tp = result.get("tcompile_processes")
    if tp is not None:  # workers run side by side: the sum bound, parent + N × the largest worker
        n = tp["processes"]
        rows += _pair(name, f"{n} worker processes", tp, tl, tp["parent_peak_bytes"] + n * tp["worker_peak_bytes"],
                      f"runs {tp['walls']} vs tlparse {tl['walls']}",
                      f"parent {megabytes(tp['parent_peak_bytes'])} + {n} × largest worker "
                      f"{megabytes(tp['worker_peak_bytes'])} (a bound on the sum: workers run side by side)")
        rows.append(Row(f"{name}: {n} worker processes vs in-process, wall", seconds(tp["wall_s"]),
                        f"in-process {seconds(tc['wall_s'])}", tp["wall_s"] / tc["wall_s"], "< 1 pays", high=1.0,
                        note=f"{cpu_count()} CPUs here"))
    return rows


def run(quick: bool, log=print, folders: list[Path] | None = None, repeat: int | None = None,
        processes: int = 0, ranks_64: bool = False, gpt2_ddp: Path | None = None,
        only_extra: bool = False) -> tuple[list[Row], dict]:
    if not Path(TLPARSE).exists():
        return [Row("load_job vs tlparse", "not available", "tlparse not installed", None, "")], {}
    with tempfile.TemporaryDirectory() as tmp:
        inputs = [] if only_extra else [(folder, processes) for folder in (folders or default_inputs(Path(tmp)))]
        if gpt2_ddp is not None:
            inputs.append((gpt2_ddp, processes))
        if ranks_64:
            inputs.append((ranks64(Path(tmp)), processes or cpu_count()))
        results = [compare(folder, repeat or (1 if quick else 3), log, n) for folder, n in inputs]
    return [row for result in results for row in rows_for(result)], {"runs": results}


def main(argv=None) -> int:
    import argparse

    from .table import format_table

    parser = argparse.ArgumentParser(prog="python -m bench.load_job", description=__doc__.split("\n\n")[1])
    parser.add_argument("folders", nargs="*", type=Path, help="TORCH_TRACE job directories (default: see above)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--processes", type=int, default=0, help="also load_job(processes=N): N worker processes")
    parser.add_argument("--ranks64", action="store_true", help="also 64 ranks made of one real rank log (~119 MB)")
    parser.add_argument("--gpt2-ddp", type=Path, metavar="DIR", help="also this 2-rank GPT-2 DDP trace directory "
                        "(python -m bench.gpt2_ddp_job --run DIR)")
    parser.add_argument("--only-extra", action="store_true", help="only the --ranks64 / --gpt2-ddp inputs")
    args = parser.parse_args(argv)
    if args.gpt2_ddp is not None and not args.gpt2_ddp.is_dir():
        parser.error(f"{args.gpt2_ddp}: no such directory (make it: python -m bench.gpt2_ddp_job --run {args.gpt2_ddp})")
    rows, details = run(False, folders=args.folders or None, repeat=args.repeat, processes=args.processes,
                        ranks_64=args.ranks64, gpt2_ddp=args.gpt2_ddp, only_extra=args.only_extra)
    print(format_table(rows))
    print(json.dumps(details))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
