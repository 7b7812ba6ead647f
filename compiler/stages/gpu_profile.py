"""A GPU profile matched to a compile's kernels — plain data in, plain data out: which compiled graph a launch
ran in (``graph_of``), one compile's share of a capture-wide profile (``compile_profile``), each generated
kernel's measured time and launcher details (``match_profile``, ``rematch_times``). The profile itself is taken
live by ``compiler.capturing.gpu``; a saved capture is matched again here on load."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import ClassVar

from compiler.stages.data import Data, Stage, _text_table


# --- declared here, built below (``compiler.stages.schema`` ties the stages into a ``Compile``) ---

@dataclass(repr=False, eq=False)
class ProfiledGraphShare(Data):
    """The part of a profiled kernel's launches made inside one compiled graph's call."""

    gpu_time_us_per_call: float = 0.0
    calls: int = 0  # launches over the profiled calls
    launched_by: dict[str, float] = field(default_factory=dict)


@dataclass(repr=False, eq=False)
class ProfiledKernel(Data):
    name: str = ""
    gpu_time_us: float = 0.0
    calls: int = 0
    gpu_time_us_per_call: float = 0.0
    # the aten op whose launch ran it (the profiler's correlation, outermost aten op) → µs per call
    launched_by: dict[str, float] = field(default_factory=dict)
    # the compiled graph whose call launched it (Inductor's FX graph cache key, from its
    # ``## Call CompiledFxGraph <key> ##`` profiler range) → that part of its launches
    graphs: dict[str, ProfiledGraphShare] = field(default_factory=dict)

    def to_data(self) -> dict:
        out = super().to_data()
        for key in ("launched_by", "graphs"):
            if not out[key]:  # profiles recorded before them: saved as they were
                del out[key]
        return out


@dataclass(repr=False, eq=False)
class GpuProfile(Stage):
    NAME: ClassVar[str] = "gpu_profile"
    iters: int = 0
    kernels: list[ProfiledKernel] = field(default_factory=list)
    gpu_time_us_per_call: float | None = None
    wall_time_us_per_call: float | None = None
    launch_overhead_share: float | None = None
    peak_bytes_per_s: float | None = None  # the GPU's peak DRAM bandwidth
    peak_source: str | None = None  # device query, or the table of known GPUs

    def _text(self):
        return _text_table(self.kernels, ["name", "gpu_time_us_per_call", "calls"])


GRAPH_RANGE = re.compile(r"## Call CompiledFxGraph (\S+) ##")


FRAME_RANGE = re.compile(r"Torch-Compiled Region: (\S+)")


def graph_of(fx_key: str | None, compile_id: str | None) -> str | None:
    """Which compile a launch inside a compiled graph's call belongs to, from the profiler's ranges: Inductor
    wraps each call of a compiled graph in ``## Call CompiledFxGraph <FX graph cache key> ##`` (key ``None``
    without the cache), and Dynamo runs each compiled frame in ``Torch-Compiled Region: <compile id>``. The
    innermost frame range above the graph's names its compile (``compile 0/1``); a graph called outside any —
    a backward, run by autograd — is named by its key (``graph <key>``). Kernel names cannot tell: Inductor
    names kernels per graph, so several compiles have a ``triton_poi_fused_add_0``."""
    if fx_key is None:
        return None
    return f"compile {compile_id}" if compile_id else f"graph {fx_key}"


def graphs_of_compile(compile_id: str, fx_keys: set[str]) -> set[str]:
    """The compiled graphs (``graph_of``) whose launches are one compile's: those run in its frame, and those
    named by its FX graph cache keys (``compiler.stages.caches.graph_keys``)."""
    return {f"compile {compile_id.split('_')[0]}"} | {f"graph {key}" for key in fx_keys}


def compile_profile(profile: dict, mine: set[str]) -> dict:
    """The part of a capture-wide GPU profile launched inside the calls of one compile's graphs (``mine``:
    ``graphs_of_compile``), so that kernels named alike in several compiles each get their own launches; none
    where its graphs did not run in the profiled call (another shape's compile). The whole profile where it did
    not record graphs (profiles before it)."""
    rows = profile.get("kernels") or []
    if not any(r.get("graphs") for r in rows):
        return profile
    out = []
    for row in rows:
        shares = [share for where, share in (row.get("graphs") or {}).items() if where in mine]
        if not shares:
            continue
        launched: dict[str, float] = {}
        for share in shares:
            for op, us in share["launched_by"].items():
                launched[op] = launched.get(op, 0.0) + us
        us = sum(share["gpu_time_us_per_call"] for share in shares)
        out.append({"name": row["name"], "gpu_time_us_per_call": us, "gpu_time_us": us * (profile.get("iters") or 1),
                    "calls": sum(share["calls"] for share in shares), "launched_by": launched})
    return {**profile, "kernels": out, "graphs": sorted(mine)}


def match_profile(kernels: list[dict], profile: dict, details: list[dict] | None = None) -> None:
    """Attach measured GPU time to each generated kernel whose name the profiler saw, and each Triton
    kernel's GPU depth (``attach_gpu_details``; ``details``: ``triton_kernel_details``)."""
    peak = {"bytes_per_s": profile.get("peak_bytes_per_s")}
    for kernel, row in _profiled_rows(kernels, profile):
        if row:
            kernel["gpu_time_us_per_call"] = row["gpu_time_us_per_call"]
            kernel["profiled_calls"] = row["calls"]
        attach_gpu_details(kernel, row, details or [], peak)


def rematch_times(kernels: list[dict], profile: dict) -> None:
    """A saved compile's generated kernels timed again from ``profile`` (``compile_profile``: its own
    launches): GPU time per call, launches, time per launch and achieved bandwidth; none where it has none.
    Extern kernels' times are left out, for ``compiler.stages.kernel_costs.extern_times`` to give again."""
    for kernel in kernels:
        if kernel.get("language") == "extern":
            kernel.pop("gpu_time_us_per_call", None)
    for kernel, row in _profiled_rows([k for k in kernels if k.get("language") != "extern"], profile):
        gpu = kernel.get("gpu")
        if row and row.get("calls"):
            kernel["gpu_time_us_per_call"], kernel["profiled_calls"] = row["gpu_time_us_per_call"], row["calls"]
            if gpu is not None:
                _launch_speed(gpu, row)
            continue
        kernel.pop("gpu_time_us_per_call", None)
        kernel.pop("profiled_calls", None)
        for key in ("time_us_per_launch", "achieved_bytes_per_s", "bandwidth_share", "served_from"):
            (gpu or {}).pop(key, None)


def _profiled_rows(kernels: list[dict], profile: dict):
    """Each kernel with the profiler's row of its name (or the row whose name holds it), or None."""
    by_name = {row["name"]: row for row in profile.get("kernels", [])}
    for kernel in kernels:
        yield kernel, by_name.get(kernel["name"]) or next((r for n, r in by_name.items() if kernel["name"] in n), None)


def attach_gpu_details(kernel: dict, row: dict | None, details: list[dict], peak: dict | None) -> None:
    """Per Triton kernel: the launcher's resources (``details`` of the same name and source), and the
    achieved bandwidth — bytes read + written per launch ÷ profiled time per launch (its share of the
    GPU's ``peak``, or the L2 reading, is ``kernel_costs.add_roofline``'s)."""
    if kernel.get("language") != "Triton":
        return
    gpu = kernel["gpu"] = {**(kernel.get("gpu") or {}), "notes": list((kernel.get("gpu") or {}).get("notes") or [])}
    source = kernel.get("source") or ""
    same_name = [d for d in details if d.get("name") == kernel["name"]]
    # the one with this kernel's source, when Triton kept the source; else the last loaded of that name
    found = [d for d in same_name if d.get("src") and d["src"].strip() in source] or same_name[-1:]
    if found:
        gpu.update({k: v for k, v in found[0].items()
                    if k not in ("name", "src", "notes", "launched", "cache_hash") and v not in (None, {})})
        gpu["notes"] += found[0].get("notes") or []
    if _launch_speed(gpu, row) and peak and peak.get("bytes_per_s"):
        gpu["peak_bytes_per_s"] = peak["bytes_per_s"]


def _launch_speed(gpu: dict, row: dict | None) -> bool:
    """A Triton kernel's time per launch from its profiler ``row``, and its achieved bandwidth — bytes read +
    written per launch ÷ that time; whether the bandwidth was set."""
    if not row or not row.get("calls"):
        return False
    gpu["time_us_per_launch"] = row["gpu_time_us"] / row["calls"]
    if gpu.get("bytes_per_call") and gpu["time_us_per_launch"] > 0:
        gpu["achieved_bytes_per_s"] = gpu["bytes_per_call"] / (gpu["time_us_per_launch"] * 1e-6)
        return True
    return False
