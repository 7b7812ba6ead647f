"""Measured DRAM traffic per kernel from Nsight Compute (opt-in; issue 26).

Run the captured call's script under ``ncu`` (``command``: ``--profile-from-start off``, so only the part
between ``cudaProfilerStart``/``Stop`` is measured — ``python -m compiler gpu-profile SCRIPT`` does it all, see
``profile_script``) and read its CSV with ``read_csv``: per kernel name, launches, DRAM bytes read and written
(``dram__bytes_read.sum``, ``dram__bytes_write.sum``), bytes the SMs wrote into L2 (``lts__t_sectors_srcunit_tex_op_write.sum`` × 32)
and duration. ncu flushes the caches before each kernel it replays, so its reads are cold-cache DRAM reads — what
the estimate of ``compiler.stages.kernel_costs`` counts (each byte once). Its DRAM writes count only what leaves
L2 while the kernel runs (output smaller than the L2 stays in it), so the estimate's writes are compared with the
sectors written into L2, which every store reaches.
"""
from __future__ import annotations

import csv
import io
import os
import shutil
import sys

# Bytes written into L2 by the SMs' stores: the sectors from the TEX unit. The sectors of every source
# (lts__t_sectors_op_write, read in CSVs recorded with it) also count the copies between the H100's two L2
# partitions: 1.5 × the bytes stored in every pointwise kernel of this round's H100 runs.
L2_WRITES = "lts__t_sectors_srcunit_tex_op_write.sum"
L2_WRITES_ALL_SOURCES = "lts__t_sectors_op_write.sum"
METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum", L2_WRITES)
_KEYS = ("dram_bytes_read", "dram_bytes_written", "seconds", "l2_bytes_written")
_UNITS = {"byte": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "second": 1, "nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3,
          "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "sector": 32}  # a sector is 32 bytes: sector counts become bytes
_PREFIXES = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def _scale(unit: str) -> float:
    """ncu's unit (``byte``, ``Mbyte``, ``usecond``, ``sector``, ``Ksector`` …) → the factor to bytes or seconds."""
    if unit in _UNITS:
        return _UNITS[unit]
    if unit[:1] in _PREFIXES and unit[1:] in _UNITS:
        return _PREFIXES[unit[0]] * _UNITS[unit[1:]]
    return 1


def command(argv: list[str], ncu: str = "ncu", log_file: str | None = None, metrics: tuple = METRICS) -> list[str]:
    """The ncu command line measuring ``metrics`` for every kernel of ``argv``'s profiled range, as CSV (into
    ``log_file`` when given, apart from the program's own output)."""
    return [ncu, "--profile-from-start", "off", "--target-processes", "all", "--metrics", ",".join(metrics),
            *(["--log-file", log_file] if log_file else []), "--csv", "--page", "raw", *argv]


def read_csv(text: str) -> dict[str, dict]:
    """ncu's ``--csv --page raw`` output → ``{kernel name: {"launches", "dram_bytes_read", "dram_bytes_written",
    "seconds", "l2_bytes_written"}}``, summed over the kernel's launches (lines before the header, ncu's own, are
    skipped; a metric the CSV lacks is None)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return {}
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    if len(rows) < 2 or "Kernel Name" not in rows[0]:
        return {}
    header, units, body = rows[0], rows[1], rows[2:]
    column = {name: i for i, name in enumerate(header)}
    if L2_WRITES not in column and L2_WRITES_ALL_SOURCES in column:
        column[L2_WRITES] = column[L2_WRITES_ALL_SOURCES]
    out: dict[str, dict] = {}
    for row in body:
        if len(row) != len(header) or not row[column["Kernel Name"]]:
            continue
        entry = out.setdefault(row[column["Kernel Name"]], {"launches": 0, **{
            key: 0.0 if metric in column else None for metric, key in zip(METRICS, _KEYS)},
            "l2_metric": L2_WRITES if L2_WRITES in header else L2_WRITES_ALL_SOURCES if L2_WRITES_ALL_SOURCES in header
            else None})
        entry["launches"] += 1
        for metric, key in zip(METRICS, _KEYS):
            if metric in column:
                value = row[column[metric]].replace(",", "")
                try:
                    entry[key] += float(value or 0) * _scale(units[column[metric]])
                except ValueError:  # "n/a": no reading for this launch
                    pass
    return out


def attach(data: dict, measured: dict[str, dict], launches_per_call: float = 1.0) -> int:
    """Put ncu's DRAM bytes beside each Triton kernel's estimate (per call: ``cost.measured_dram_bytes``; per
    launch: ``gpu.measured_dram_bytes_read`` / ``_written``) in a
    capture dict; ``measured`` is ``read_csv``'s result for ``launches_per_call`` calls of the function.
    → how many kernels got a measurement."""
    from compiler.stages.schema import kernel_rows

    found = 0
    for c in data.get("compiles", []):
        for k in kernel_rows(c):
            row = measured.get(k["name"])
            if row is None or k.get("language") != "Triton" or not k.get("cost"):
                continue
            k["cost"]["measured_dram_bytes"] = (row["dram_bytes_read"] + row["dram_bytes_written"]) / launches_per_call
            l2 = row.get("l2_bytes_written")
            if k.get("gpu") is not None:  # per launch, beside the estimate's bytes_read / bytes_written
                k["gpu"]["measured_dram_bytes_read"] = row["dram_bytes_read"] / row["launches"]
                k["gpu"]["measured_dram_bytes_written"] = row["dram_bytes_written"] / row["launches"]
                if l2 is not None:
                    k["gpu"]["measured_l2_bytes_written"] = l2 / row["launches"]
            k["cost"]["measured_method"] = (f"Nsight Compute (ncu): dram__bytes_read.sum + dram__bytes_write.sum of "
                                            f"{row['launches']} launch(es), caches flushed before each; "
                                            f"read {row['dram_bytes_read'] / launches_per_call:,.0f} B, written "
                                            f"{row['dram_bytes_written'] / launches_per_call:,.0f} B (writes that "
                                            f"stay in L2 at the kernel's end are not counted)"
                                            + (f"; written into L2 ({row.get('l2_metric')} × 32 B): "
                                               f"{l2 / launches_per_call:,.0f} B" if l2 is not None else ""))
            found += 1
    return found


# --- python -m compiler gpu-profile: the script's captured call, measured -----------------------------

ENV = "TCOMPILE_GPU_PROFILE"  # set by gpu-profile for the script it runs: "record:PATH" or "measure"
NOT_TIMED = "not timed: this run only measured one call under Nsight Compute (python -m compiler gpu-profile)"
_seen = {"runs": 0}  # captured calls (compiler.run) of this process so far


class GpuProfileError(Exception):
    """Why ``gpu-profile`` could not measure: one line."""


def measuring() -> bool:
    """This ``compiler.run`` is the call ncu measures: the first captured call of a script that
    ``gpu-profile`` runs under ncu (``TCOMPILE_GPU_PROFILE=measure``)."""
    return os.environ.get(ENV) == "measure" and _seen["runs"] == 0


def measured_call(compiled, args, kwargs) -> None:
    """Two warm-up calls (CUDA graphs record on the second), then one call between cudaProfilerStart and
    cudaProfilerStop: the only kernels ``ncu --profile-from-start off`` measures."""
    import torch

    cuda = torch.cuda.is_available()  # (a CPU run only walks the same steps: nothing is measured)
    for _ in range(2):
        compiled(*args, **kwargs)
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
    try:
        compiled(*args, **kwargs)
        if cuda:
            torch.cuda.synchronize()
    finally:
        if cuda:
            torch.cuda.profiler.stop()


def after_run(cap) -> None:
    """Called by ``compiler.run`` with each capture it built: in gpu-profile's plain pass
    (``TCOMPILE_GPU_PROFILE=record:PATH``) the first one is saved to PATH for the measurement."""
    mode = os.environ.get(ENV, "")
    first = _seen["runs"] == 0
    _seen["runs"] += 1
    if mode.startswith("record:") and first:
        cap.save(mode[len("record:"):])
    elif mode and not first:
        print("tcompile gpu-profile: only the script's first captured call is measured; this one is not",
              file=sys.stderr)


def find_ncu(ncu: str | None = None) -> str | None:
    """The ncu executable: ``ncu`` as given (a path or a name on PATH), else on PATH, else where the CUDA
    toolkit puts it."""
    for candidate in ([ncu] if ncu else ["ncu", "/usr/local/cuda/bin/ncu"]):
        found = shutil.which(candidate)
        if found:
            return found
    return None


def preflight(ncu: str | None = None) -> str:
    """The ncu to run; ``GpuProfileError`` naming each missing piece (no CUDA GPU, no ncu)."""
    problems = []
    import torch

    if not torch.cuda.is_available():
        problems.append("no CUDA GPU here (torch.cuda.is_available() is False; Nsight Compute measures GPU kernels)")
    found = find_ncu(ncu)
    if found is None:
        problems.append(f"Nsight Compute not found ({ncu!r} is not an executable)" if ncu else
                        "Nsight Compute (ncu) not found on PATH or in /usr/local/cuda/bin (install Nsight Compute "
                        "or pass --ncu PATH)")
    if problems:
        raise GpuProfileError("; ".join(problems))
    return found


def profile_script(script: str, script_args: list[str], output: str, ncu: str | None = None,
                   keep_csv: str | None = None, timeout: float | None = None) -> dict:
    """Run ``script`` twice: plainly, saving its first captured call (``compiler.run``/``explore``/
    ``%%tcompile``'s capture, with its measured times), then under ncu, measuring one call of the same
    compiled function (``measured_call``); attach ncu's DRAM bytes to the capture and save it to ``output``.
    → a summary (kernels measured, Triton kernels matched, the agreement rows)."""
    import tempfile
    from pathlib import Path

    if not Path(script).is_file():
        raise GpuProfileError(f"{script}: no such script")
    tool = preflight(ncu)
    root = str(Path(__file__).resolve().parent.parent.parent)  # so the script imports this tcompile
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    argv = [sys.executable, script, *script_args]
    with tempfile.TemporaryDirectory(prefix="tcompile-gpu-profile-") as tmp:
        recorded, log = Path(tmp) / "capture.json", Path(tmp) / "ncu.csv"
        _pass("the plain run", argv, {**env, ENV: f"record:{recorded}"}, timeout)
        if not recorded.is_file():
            raise GpuProfileError(f"{script} made no captured call: gpu-profile measures the first call that "
                                  "compiler.run, compiler.explore or %%tcompile makes (a `with compiler.capture()` "
                                  "block calls the function itself, so tcompile cannot call it again)")
        for metrics in (METRICS, METRICS[:3]):  # the L2 metric again left out if this ncu does not know it
            measured, text, stdout, failed = _measure(argv, tool, log, metrics, env, timeout)
            said = [line for line in (text or stdout).splitlines() if line.startswith("==")]
            if measured or not any("lts__" in line for line in said):
                break
        if keep_csv:
            Path(keep_csv).write_text(text if read_csv(text) else stdout)
        if not measured:
            if failed is not None:
                raise failed
            raise GpuProfileError(f"ncu measured no kernel of {script}'s captured call"
                                  + (f" (ncu: {' | '.join(said[-3:])})" if said else ""))
        from compiler.stages.capture import Capture
        from compiler.stages.data import plain_data
        from compiler.stages.schema import kernel_rows

        data = plain_data(Capture.load(recorded))
    matched = attach(data, measured)
    triton = [k for c in data["compiles"] for k in kernel_rows(c) if k.get("language") == "Triton"]
    summary = {"tool": "Nsight Compute (ncu)", "metrics": list(metrics), "kernels_measured": len(measured),
               "launches_measured": sum(r["launches"] for r in measured.values()), "triton_kernels": len(triton),
               "triton_matched": matched, "script": script}
    data.setdefault("options", {})["gpu_profile"] = summary
    path = Capture.from_data(data).save(output)
    return {**summary, "output": str(path), "rows": agreement(data)}


def _measure(argv: list[str], tool: str, log, metrics: tuple, env: dict, timeout: float | None):
    """The script run once under ncu → (measured, ncu's log text, the script's output, the error or None)."""
    for old in log.parent.glob(log.name + "*"):
        old.unlink()
    failed, stdout = None, ""
    try:
        stdout = _pass("the run under ncu", command(argv, tool, log_file=str(log), metrics=metrics),
                       {**env, ENV: "measure"}, timeout, keep_stdout=True)
    except GpuProfileError as exc:
        failed = exc
    logs = sorted(log.parent.glob(log.name + "*"))  # (the name ncu was given, or with a suffix it added)
    text = logs[0].read_text(errors="replace") if logs else ""
    return read_csv(text) or read_csv(stdout), text, stdout, failed


def _pass(what: str, argv: list[str], env: dict, timeout: float | None, keep_stdout: bool = False) -> str:
    import subprocess

    try:
        done = subprocess.run(argv, env=env, timeout=timeout, text=True, errors="replace",
                              stdout=subprocess.PIPE if keep_stdout else None)
    except subprocess.TimeoutExpired:
        raise GpuProfileError(f"{what} took longer than {timeout:g} s and was stopped") from None
    except OSError as exc:
        raise GpuProfileError(f"{what} could not start {argv[0]}: {exc.strerror or exc}") from None
    if keep_stdout and done.stdout:
        sys.stdout.write("".join(line + "\n" for line in done.stdout.splitlines() if not line.startswith('"')))
    if done.returncode != 0:
        raise GpuProfileError(f"{what} of the script exited with code {done.returncode} (its output is above)")
    return done.stdout or ""


def agreement(data: dict, top: int = 10) -> list[dict]:
    """The ``top`` Triton kernels by GPU time: estimated bytes read and written per launch beside ncu's, the
    estimate's reads ÷ ncu's DRAM reads, and its reads + writes ÷ ncu's DRAM reads + bytes written into L2
    (``None`` where ncu measured nothing for the kernel)."""
    from compiler.stages.schema import kernel_rows

    kernels = [k for c in data.get("compiles", []) for k in kernel_rows(c)
               if k.get("language") == "Triton" and k.get("gpu")]
    kernels.sort(key=lambda k: -(k.get("gpu_time_us_per_call") or 0))
    rows = []
    for k in kernels[:top]:
        g = k["gpu"]
        read, ncu_read = g.get("bytes_read"), g.get("measured_dram_bytes_read")
        written, l2_written = g.get("bytes_written"), g.get("measured_l2_bytes_written")
        moved = (read or 0) + (written or 0) if read is not None else None
        measured = ncu_read + l2_written if ncu_read is not None and l2_written is not None else None
        rows.append({"kernel": k["name"], "us_per_call": k.get("gpu_time_us_per_call"), "read": read,
                     "written": written, "ncu_read": ncu_read, "ncu_written": g.get("measured_dram_bytes_written"),
                     "ncu_l2_written": l2_written,
                     "read_ratio": read / ncu_read if read is not None and ncu_read else None,
                     "moved_ratio": moved / measured if moved is not None and measured else None,
                     "method": "loads/stores" if g.get("accesses") else "whole arguments"})
    return rows
