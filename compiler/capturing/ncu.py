"""Measured DRAM traffic per kernel from Nsight Compute (opt-in; issue 26).

Run the captured call's script under ``ncu`` (``command``: ``--profile-from-start off``, so only the part
between ``cudaProfilerStart``/``Stop`` is measured, e.g. ``scripts/gpu_models.py ncu-target``) and read its
CSV with ``read_csv``: per kernel name, launches, DRAM bytes read and written (``dram__bytes_read.sum``,
``dram__bytes_write.sum``) and duration. ncu flushes the caches before each kernel it replays, so its reads
are cold-cache DRAM reads — what the estimate of ``compiler.stages.kernel_costs`` counts (each byte once);
writes smaller than the L2 can stay in it when the kernel ends and read low.
"""
from __future__ import annotations

import csv
import io

METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum")
_UNITS = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "KB": 1e3, "MB": 1e6, "GB": 1e9,
          "nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1, "ns": 1e-9, "us": 1e-6, "ms": 1e-3}


def command(argv: list[str], ncu: str = "ncu") -> list[str]:
    """The ncu command line measuring ``METRICS`` for every kernel of ``argv``'s profiled range, as CSV."""
    return [ncu, "--profile-from-start", "off", "--target-processes", "all", "--metrics", ",".join(METRICS),
            "--csv", "--page", "raw", *argv]


def read_csv(text: str) -> dict[str, dict]:
    """ncu's ``--csv --page raw`` output → ``{kernel name: {"launches", "dram_bytes_read", "dram_bytes_written",
    "seconds"}}``, summed over the kernel's launches (lines before the header, ncu's own, are skipped)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return {}
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header, units, body = rows[0], rows[1], rows[2:]
    column = {name: i for i, name in enumerate(header)}
    out: dict[str, dict] = {}
    for row in body:
        if len(row) != len(header) or not row[column["Kernel Name"]]:
            continue
        entry = out.setdefault(row[column["Kernel Name"]], {"launches": 0, "dram_bytes_read": 0.0,
                                                           "dram_bytes_written": 0.0, "seconds": 0.0})
        entry["launches"] += 1
        for metric, key in zip(METRICS, ("dram_bytes_read", "dram_bytes_written", "seconds")):
            if metric in column:
                value = row[column[metric]].replace(",", "")
                entry[key] += float(value or 0) * _UNITS.get(units[column[metric]], 1)
    return out


def attach(data: dict, measured: dict[str, dict], launches_per_call: float = 1.0) -> int:
    """Put ncu's DRAM bytes beside each Triton kernel's estimate (per call: ``cost.measured_dram_bytes``; per
    launch: ``gpu.measured_dram_bytes_read`` / ``_written``) in a
    capture dict; ``measured`` is ``read_csv``'s result for ``launches_per_call`` calls of the function.
    → how many kernels got a measurement."""
    found = 0
    for c in data.get("compiles", []):
        for k in (c.get("kernels") or {}).get("kernels") or []:
            row = measured.get(k["name"])
            if row is None or k.get("language") != "Triton" or not k.get("cost"):
                continue
            k["cost"]["measured_dram_bytes"] = (row["dram_bytes_read"] + row["dram_bytes_written"]) / launches_per_call
            if k.get("gpu") is not None:  # per launch, beside the estimate's bytes_read / bytes_written
                k["gpu"]["measured_dram_bytes_read"] = row["dram_bytes_read"] / row["launches"]
                k["gpu"]["measured_dram_bytes_written"] = row["dram_bytes_written"] / row["launches"]
            k["cost"]["measured_method"] = (f"Nsight Compute (ncu): dram__bytes_read.sum + dram__bytes_write.sum of "
                                            f"{row['launches']} launch(es), caches flushed before each; "
                                            f"read {row['dram_bytes_read'] / launches_per_call:,.0f} B, written "
                                            f"{row['dram_bytes_written'] / launches_per_call:,.0f} B (writes that "
                                            f"stay in L2 at the kernel's end are not counted)")
            found += 1
    return found
