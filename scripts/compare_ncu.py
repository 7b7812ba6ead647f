"""Estimated bytes against Nsight Compute's measured DRAM bytes, for the ten costliest Triton kernels of a
capture: `python -m scripts.compare_ncu CAPTURE.json NCU.csv` (the capture from `scripts.gpu_models capture`,
the CSV from ncu running `scripts.gpu_models ncu-target`; see compiler.capturing.ncu). Prints one
Markdown table; the costs are recomputed from the saved capture (compiler.stages.assemble.recompute)."""
import sys

import compiler
from compiler.capturing.ncu import read_csv
from compiler.stages.data import plain_data
from compiler.stages.assemble import recompute
from compiler.stages.schema import kernel_rows


def rows(capture: dict, measured: dict, top: int = 10) -> list[dict]:
    before = {(c["compile_id"], k["name"]): dict(k.get("gpu") or {}) for c in capture["compiles"]
              for k in kernel_rows(c) if k.get("language") == "Triton"}
    recompute(capture)
    kernels = [(c["compile_id"], k) for c in capture["compiles"] for k in kernel_rows(c)
               if k.get("language") == "Triton" and k.get("gpu_time_us_per_call")]
    kernels.sort(key=lambda ck: -ck[1]["gpu_time_us_per_call"])
    out = []
    for cid, k in kernels[:top]:
        g, old, ncu = k["gpu"], before.get((cid, k["name"]), {}), measured.get(k["name"])
        per_launch = (lambda v: v / ncu["launches"]) if ncu else None
        # before: Inductor's whole-argument bytes ÷ the same time, as the explorer showed it
        old_bytes = old.get("bytes_args_per_call") or old.get("bytes_per_call")
        peak = capture["gpu_profile"].get("peak_bytes_per_s")
        share_before = (old_bytes / (g["time_us_per_launch"] * 1e-6) / peak
                        if old_bytes and g.get("time_us_per_launch") and peak else None)
        out.append({"kernel": k["name"], "us": g.get("time_us_per_launch"),
                    "share_before": share_before, "share_after": g.get("bandwidth_share"),
                    "served_from": g.get("served_from"), "bytes_before": old_bytes,
                    "read": g.get("bytes_read"), "written": g.get("bytes_written"),
                    "ncu_read": per_launch(ncu["dram_bytes_read"]) if ncu else None,
                    "ncu_written": per_launch(ncu["dram_bytes_written"]) if ncu else None,
                    "method": "source" if g.get("accesses") else "arguments"})
    return out


def markdown(name: str, table: list[dict]) -> str:
    mb = lambda v: f"{v / 1e6:.2f}" if v is not None else "–"  # noqa: E731
    pct = lambda v: f"{v:.0%}" if v is not None else "–"  # noqa: E731
    lines = [f"**{name}**", "", "| kernel | µs | DRAM share before → after | bytes MB before → after (read+written) | "
             "ncu DRAM read MB | est. read ÷ ncu read | ncu written MB |", "|---|---|---|---|---|---|---|"]
    for r in table:
        ratio = r["read"] / r["ncu_read"] if r["ncu_read"] and r["read"] is not None else None
        after = pct(r["share_after"]) if r["served_from"] == "DRAM" else (r["served_from"] and f"served from {r['served_from']}") or "unexplained"
        lines.append(f"| `{r['kernel'][:58]}` | {r['us']:.1f} | {pct(r['share_before'])} → {after} | "
                     f"{mb(r['bytes_before'])} → {mb((r['read'] or 0) + (r['written'] or 0))} ({r['method']}) | "
                     f"{mb(r['ncu_read'])} | {f'{ratio:.2f}' if ratio else '–'} | {mb(r['ncu_written'])} |")
    return "\n".join(lines)


if __name__ == "__main__":
    capture = plain_data(compiler.load(sys.argv[1]))  # every stage whole, as before saving
    measured = read_csv(open(sys.argv[2]).read())
    print(markdown(capture["options"].get("case", sys.argv[1]), rows(capture, measured)))
