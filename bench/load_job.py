"""Figure — reading a job's traces at tlparse's speed (issue 35, item 3): ``compiler.load_job`` of a
multi-rank TORCH_TRACE directory against ``tlparse DIR --all-ranks-html`` on the same directory, each in
a fresh process on the same machine: wall seconds (interpreter start and imports included — what a user
waits for) and peak RSS (``/usr/bin/time``-style maximum resident set of the process and its children).

    python -m bench.load_job [DIR ...] [--repeat 3]

Default inputs: tlparse's own multi-rank test logs (../shared/tlparse_inputs: multi_rank_logs, 4 ranks;
multi_rank_runtime, 7 ranks), where present, and a 2-rank directory made of the shipped recorded log
(tests/assets/traces, torch 2.14.1) twice. The median of ``--repeat`` runs is reported, runs interleaved
(tlparse, tcompile, tlparse, …) so both see the same machine load. Budget: ≤ 2× tlparse's wall time
and ≤ 200 MB.
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

from .table import Row, megabytes, seconds

REPO = Path(__file__).resolve().parent.parent
INPUTS = REPO.parent.parent / "shared" / "tlparse_inputs"  # /work/shared next to /work/<checkout>
if not INPUTS.is_dir():
    INPUTS = Path("/work/shared/tlparse_inputs")
LOG = REPO / "tests" / "assets" / "traces" / "torch_2_14_1_break_recompile.log"
TLPARSE = shutil.which("tlparse") or str(Path(sys.executable).parent / "tlparse")
RATIO, BUDGET_BYTES = 2.0, 200_000_000

LOAD = r"""
import sys, time, warnings
sys.path.insert(0, sys.argv[1])
warnings.simplefilter("ignore")
import compiler
job = compiler.load_job(sys.argv[2])
print(len(job.captures), len(job.divergences), "torch" in sys.modules)
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


def compare(folder: Path, repeat: int, log=print) -> dict:
    out = Path(tempfile.mkdtemp(prefix="tc-tlparse-"))
    tl_cmd = [TLPARSE, str(folder), "--all-ranks-html", "-o", str(out), "--overwrite", "--no-browser"]
    tc_cmd = [sys.executable, "-c", LOAD, str(REPO), str(folder)]
    runs = {"tlparse": [], "tcompile": []}
    for _ in range(repeat):
        runs["tlparse"].append(measure(tl_cmd))
        runs["tcompile"].append(measure(tc_cmd))
    shutil.rmtree(out, ignore_errors=True)
    result = {name: {"wall_s": statistics.median(r["wall"] for r in found),
                     "peak_bytes": max(r["peak"] for r in found), "walls": [round(r["wall"], 3) for r in found]}
              for name, found in runs.items()}
    ranks, divergences, torch_loaded = runs["tcompile"][-1]["out"].split()
    result.update(folder=str(folder), bytes=sum(p.stat().st_size for p in folder.iterdir() if p.is_file()),
                  ranks=int(ranks), divergences=int(divergences), torch_imported=torch_loaded == "True")
    log(f"load_job {folder.name}: {result['ranks']} ranks, {megabytes(result['bytes'])}: tcompile "
        f"{seconds(result['tcompile']['wall_s'])} {megabytes(result['tcompile']['peak_bytes'])}, tlparse "
        f"{seconds(result['tlparse']['wall_s'])} {megabytes(result['tlparse']['peak_bytes'])}")
    return result


def default_inputs(tmp: Path) -> list[Path]:
    made = tmp / "shipped_log_x2"
    made.mkdir(exist_ok=True)
    for rank in (0, 1):
        shutil.copy(LOG, made / f"dedicated_log_torch_trace_rank_{rank}.log")
    return [made] + [INPUTS / name for name in ("multi_rank_logs", "multi_rank_runtime") if (INPUTS / name).is_dir()]


def rows_for(result: dict) -> list[Row]:
    tc, tl = result["tcompile"], result["tlparse"]
    name = f"load_job {Path(result['folder']).name} ({result['ranks']} ranks, {megabytes(result['bytes'])})"
    return [Row(f"{name}: wall time vs tlparse --all-ranks-html", seconds(tc["wall_s"]),
                f"tlparse {seconds(tl['wall_s'])}", tc["wall_s"] / tl["wall_s"], f"≤ {RATIO:g}", high=RATIO,
                note="fresh processes, imports included; torch imported: " + str(result["torch_imported"])),
            Row(f"{name}: peak RSS", megabytes(tc["peak_bytes"]),
                f"tlparse {megabytes(tl['peak_bytes'])}; budget 200 MB", tc["peak_bytes"] / BUDGET_BYTES,
                "≤ 1 (≤ 200 MB)", high=1.0)]


def run(quick: bool, log=print, folders: list[Path] | None = None,
        repeat: int | None = None) -> tuple[list[Row], dict]:
    if not Path(TLPARSE).exists():
        return [Row("load_job vs tlparse", "not available", "tlparse not installed", None, "")], {}
    with tempfile.TemporaryDirectory() as tmp:
        results = [compare(folder, repeat or (1 if quick else 3), log)
                   for folder in (folders or default_inputs(Path(tmp)))]
    return [row for result in results for row in rows_for(result)], {"runs": results}


def main(argv=None) -> int:
    import argparse

    from .table import format_table

    parser = argparse.ArgumentParser(prog="python -m bench.load_job", description=__doc__.split("\n\n")[1])
    parser.add_argument("folders", nargs="*", type=Path, help="TORCH_TRACE job directories (default: see above)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    rows, details = run(False, folders=args.folders or None, repeat=args.repeat)
    print(format_table(rows))
    print(json.dumps(details))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
