"""``python -m bench [--quick] [--out bench/results.json] [--only compile,fresh,breakdown,sampler,steady,timing,load_trace,load_job,fresh_kernel,gpt2,fixes,try_all,watch,rendering]``

What exploring costs, as ratios against plain torch.compile and the debug tools. Prints a table
(figure, tcompile, anchor, ratio, target, met?) and writes it, with machine and versions, as JSON.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from . import (breakdown, compare_accounting, compile_time, fixes, fresh_kernel, fresh_vs_cached, gpt2_explorer, load_job,
               load_trace, rendering, sampler_overhead, steady_state, timing_accuracy, try_all, watch_overhead)
from .machine import load_average, machine
from .table import Row, format_table, markdown_table

FIGURES = {"compile": compile_time, "fresh": fresh_vs_cached, "breakdown": breakdown, "sampler": sampler_overhead,
           "steady": steady_state, "timing": timing_accuracy, "compare": compare_accounting, "load_trace": load_trace,
           "load_job": load_job, "fresh_kernel": fresh_kernel, "gpt2": gpt2_explorer, "fixes": fixes, "try_all": try_all, "watch": watch_overhead,
           "rendering": rendering}  # rendering last: the views are still being written


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[1])
    parser.add_argument("--quick", action="store_true", help="fewer runs and workloads (a few minutes)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results.json",
                        help="where to write the JSON results (default: bench/results.json)")
    parser.add_argument("--only", default=",".join(FIGURES),
                        help=f"comma-separated figures to run, of {','.join(FIGURES)} (default: all)")
    parser.add_argument("--markdown", action="store_true", help="also print the table as Markdown")
    args = parser.parse_args(argv)
    args.only = [f.strip() for f in args.only.split(",") if f.strip()]
    unknown = set(args.only) - set(FIGURES)
    if unknown:
        parser.error(f"unknown figure(s) {sorted(unknown)}; choose from {list(FIGURES)}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    info = machine()
    print(f"tcompile bench ({'quick' if args.quick else 'full'}): {info['cpu_model']}, {info['cores']} cores, "
          f"torch {info['versions']['torch']}, load average {info['load_average_start']}", flush=True)
    rows: list[Row] = []
    details = {}
    log = lambda message: print(message, flush=True)  # noqa: E731
    for name in args.only:
        figure_started = time.perf_counter()
        figure_rows, details[name] = FIGURES[name].run(args.quick, log=log)
        rows += figure_rows
        details[name + "_seconds"] = time.perf_counter() - figure_started
    info["load_average_end"] = load_average()
    elapsed = time.perf_counter() - started
    print("\n" + format_table(rows))
    if args.markdown:
        print("\n" + markdown_table(rows))
    print(f"\n{sum(r.met is True for r in rows)} of {sum(r.met is not None for r in rows)} targets met; "
          f"{elapsed / 60:.1f} min; load average {info['load_average_start']} → {info['load_average_end']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"mode": "quick" if args.quick else "full", "elapsed_s": elapsed,
                                    "machine": info, "rows": [r.to_json() for r in rows], "details": details},
                                   indent=1, default=str))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
