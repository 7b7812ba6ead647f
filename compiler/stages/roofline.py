"""A kernel's place on the roofline (``compiler.stages.kernel_costs`` works out its FLOPs and bytes): its verdict —
memory-bound, compute-bound, or near neither — and the same rules again on a saved kernel whose figures an older
version worked out otherwise. Needs none of the schema, so ``KernelCost`` re-reads an old verdict on load."""
from __future__ import annotations


def above_dram_peak(achieved: float, peak_bytes: float, l2: int | None, working_set: float | None,
                    bytes_read: float | None = None, write_share: float | None = None) -> tuple[str | None, str | None]:
    """Where a kernel whose bytes ÷ time (``achieved``) beats the DRAM peak got its data — the one rule for its
    bandwidth (``_bandwidth``) and its roofline verdict (``roofline``). ``("L2", None)``: its working set per launch
    fits the L2; ``("L2", why)``: the whole set does not, but what it reads per launch does (the kernel before it,
    typically the one that wrote it, may have left it there) and its writes alone — ``write_share`` of its bytes —
    stay under the DRAM peak; ``(None, None)``: unexplained."""
    if l2 and working_set and working_set <= l2:
        return "L2", None
    if l2 and bytes_read and bytes_read <= l2 and (write_share or 0.0) * achieved <= peak_bytes:
        return "L2", (f"above the DRAM peak with a working set over L2, but the {bytes_read / 1e6:.1f} MB it reads fit "
                      f"in L2 ({l2 / 1e6:.0f} MB), where the kernel before it may have left them; its writes alone move "
                      f"{(write_share or 0.0) * achieved / peak_bytes:.0%} of the DRAM peak")
    return None, None


def _reads(gpu: dict | None) -> dict:
    """A Triton kernel's bytes read per launch and its writes' share of its bytes, for ``above_dram_peak``."""
    if not gpu or not gpu.get("bytes_read") or not gpu.get("bytes_per_call"):
        return {}
    return {"bytes_read": gpu["bytes_read"], "write_share": (gpu.get("bytes_written") or 0) / gpu["bytes_per_call"]}


def roofline(cost: dict, time_s: float | None, peaks: dict | None, peak_bytes_per_s: float | None,
             gpu: dict | None = None) -> None:
    """Intensity, ridge point and a verdict for one kernel's ``cost`` (``flops``/``bytes`` per call of the
    module, ``dtype``), given its measured GPU time per call; ``gpu``: a Triton kernel's bytes read and written per
    launch, for the L2 reading above the DRAM peak."""
    flops, nbytes = cost.get("flops"), cost.get("bytes")
    if flops is not None and nbytes:
        cost["intensity"] = flops / nbytes
    peak_flops = (peaks or {}).get(cost.get("dtype") or "fp32") or (peaks or {}).get("fp32")
    if peak_flops and peak_bytes_per_s:
        cost["peak_flops_per_s"], cost["peak_bytes_per_s"] = peak_flops, peak_bytes_per_s
        cost["ridge"] = peak_flops / peak_bytes_per_s
        cost["peak_source"] = (peaks or {}).get("source")
    if peaks:
        cost["l2_bytes"] = peaks.get("l2_bytes")
    if not time_s:
        cost["verdict"] = "no GPU time measured"
        return
    cost["time_s"] = time_s
    if flops is not None:
        cost["achieved_flops_per_s"] = flops / time_s
    if nbytes:
        cost["achieved_bytes_per_s"] = nbytes / time_s
    if cost.get("ridge") is None or cost.get("intensity") is None:
        cost["verdict"] = "no roofline: " + ("the device's peaks are unknown" if not cost.get("ridge")
                                             else "FLOPs or bytes unknown")
        return
    if cost["intensity"] < cost["ridge"]:
        cost["bound"] = "memory"
        achieved, working_set = cost["achieved_bytes_per_s"], cost.get("working_set_bytes") or nbytes
        if achieved <= peak_bytes_per_s:
            cost["share"] = achieved / peak_bytes_per_s
            cost["served_from"] = "DRAM"
            cost["verdict"] = (f"memory-bound at {cost['share']:.0%} of the DRAM peak" if cost["share"] >= FAR_BELOW
                               else far_below(cost, peak_flops, peak_bytes_per_s))
        elif (reading := above_dram_peak(achieved, peak_bytes_per_s, cost.get("l2_bytes"), working_set,
                                         **_reads(gpu)))[0] == "L2":
            cost["served_from"] = "L2"
            cost["verdict"] = (f"memory-bound, served from L2: {achieved / 1e12:.2f} TB/s effective ("
                               + (reading[1] if reading[1] else
                                  f"working set {working_set / 2**20:.1f} MiB ≤ {cost['l2_bytes'] / 2**20:.0f} MiB L2; "
                                  f"above the {peak_bytes_per_s / 1e12:.2f} TB/s DRAM peak") + ")")
        elif "ideal reuse" in (cost.get("bytes_method") or ""):  # the least it must move: not an overestimate
            cost["verdict"] = (f"memory-bound; bytes ÷ time ({achieved / 1e12:.2f} TB/s) is above the DRAM peak with a "
                               "working set larger than L2: part of its operands were still in L2 from the kernels "
                               "before it (its bytes are the least it must move), or its GPU time is too low")
        else:
            cost["verdict"] = (f"memory-bound; bytes ÷ time ({achieved / 1e12:.2f} TB/s) is above the DRAM peak with a "
                               "working set larger than L2: part of its data was still in L2 from the kernels before "
                               "it, or the byte estimate is too high")
    else:
        cost["bound"] = "compute"
        cost["share"] = cost["achieved_flops_per_s"] / peak_flops
        cost["verdict"] = f"compute-bound at {cost['share']:.0%} of the {cost.get('dtype') or 'fp32'} peak FLOP/s"
        if cost["share"] > 1:
            cost["verdict"] += " — above peak: the FLOP count is too high"
        elif cost["share"] < FAR_BELOW:
            cost["verdict"] = far_below(cost, peak_flops, peak_bytes_per_s)


# a kernel under this share of the roof its intensity puts it under is near neither bound: it is held back by
# something else (launch overhead, latency, occupancy) — its verdict says so instead of naming a bound
FAR_BELOW = 0.25


def far_below(cost: dict, peak_flops: float, peak_bytes_per_s: float) -> str:
    """The verdict of a kernel far below both roofs: both shares, and what limits such a kernel instead."""
    flops_share = (cost.get("achieved_flops_per_s") or 0.0) / peak_flops
    bytes_share = (cost.get("achieved_bytes_per_s") or 0.0) / peak_bytes_per_s
    return (f"near neither bound: {bytes_share:.0%} of the DRAM peak and {flops_share:.0%} of the "
            f"{cost.get('dtype') or 'fp32'} peak FLOP/s (intensity {cost['intensity']:.3g} FLOP/B, ridge "
            f"{cost['ridge']:.3g}) — launch overhead, latency or occupancy limit it, not bandwidth or arithmetic")


def out_of_bounds(cost) -> bool:
    """A kernel's saved roofline figures that today's rules would not give (``KernelCost``, as saved by an older
    version): a share of the DRAM peak above 100 % (now read against L2, or said to be unexplained), or a bound
    named for a kernel far below it (now "near neither bound")."""
    share, verdict = cost.share, cost.verdict or ""
    if share is None or cost.intensity is None or not cost.ridge or not cost.time_s:
        return False
    if cost.served_from == "DRAM" and share > 1:
        return True
    return share < FAR_BELOW and verdict.startswith(("memory-bound at", "compute-bound at"))


def reread(cost) -> dict:
    """``roofline`` again on a saved kernel's own figures (its FLOPs, bytes, time and the peaks it was read
    against), for one whose saved verdict breaks today's bounds (``out_of_bounds``): the fields it changes."""
    fields = ("intensity", "ridge", "peak_flops_per_s", "peak_bytes_per_s", "peak_source", "l2_bytes",
              "working_set_bytes", "flops", "bytes", "dtype", "bytes_method")
    fresh = {name: getattr(cost, name) for name in fields if getattr(cost, name) is not None}
    peaks = {cost.dtype or "fp32": cost.peak_flops_per_s, "l2_bytes": cost.l2_bytes, "source": cost.peak_source}
    roofline(fresh, cost.time_s, peaks, cost.peak_bytes_per_s)
    fresh["verdict"] = (fresh.get("verdict") or "") + " (re-read on load with today's rules: saved by an older version)"
    return {name: fresh.get(name) for name in ("bound", "share", "served_from", "verdict")}
