"""GPU measurements made after capture: per-kernel GPU time from torch.profiler (matched to the
kernels of the generated code) and the same function with and without CUDA graphs."""
from __future__ import annotations

import time


def profile_kernels(fn, args, kwargs=None, *, warmup: int = 3, iters: int = 10) -> dict:
    """GPU time per kernel over ``iters`` calls, plus total GPU time vs wall time."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    kwargs = kwargs or {}
    for _ in range(warmup):
        fn(*args, **kwargs)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        start = time.perf_counter()
        for _ in range(iters):
            fn(*args, **kwargs)
        torch.cuda.synchronize()
        wall = time.perf_counter() - start
    kernels: dict[str, dict] = {}
    for event in prof.events():
        if str(getattr(event, "device_type", "")).endswith("CPU") or _device_time(event) <= 0:
            continue
        entry = kernels.setdefault(event.name, {"name": event.name, "gpu_time_us": 0.0, "calls": 0})
        entry["gpu_time_us"] += _device_time(event)
        entry["calls"] += 1
    rows = sorted(kernels.values(), key=lambda k: -k["gpu_time_us"])
    for row in rows:
        row["gpu_time_us_per_call"] = row["gpu_time_us"] / iters
    total_gpu_us = sum(r["gpu_time_us"] for r in rows) / iters
    return {"available": True, "iters": iters, "kernels": rows, "gpu_time_us_per_call": total_gpu_us,
            "wall_time_us_per_call": wall / iters * 1e6,
            "launch_overhead_share": max(0.0, 1 - total_gpu_us / (wall / iters * 1e6)) if wall else None}


def _device_time(event) -> float:
    for attr in ("device_time_total", "cuda_time_total", "self_device_time_total"):
        value = getattr(event, attr, None)
        if value:
            return float(value)
    return 0.0


def match_profile(kernels: list[dict], profile: dict) -> None:
    """Attach measured GPU time to each generated kernel whose name the profiler saw."""
    by_name = {row["name"]: row for row in profile.get("kernels", [])}
    for kernel in kernels:
        row = by_name.get(kernel["name"]) or next(
            (r for n, r in by_name.items() if kernel["name"] in n), None)
        if row:
            kernel["gpu_time_us_per_call"] = row["gpu_time_us_per_call"]
            kernel["profiled_calls"] = row["calls"]


def cudagraph_memory() -> dict:
    import torch

    return {"reserved_bytes": torch.cuda.memory_reserved(), "allocated_bytes": torch.cuda.memory_allocated()}


def with_and_without_cudagraphs(fn, args, *, mode: str = "reduce-overhead", repeat: int = 15) -> dict:
    """Compile ``fn`` twice — with ``mode`` (CUDA graphs on) and with CUDA graphs turned off — and
    time both with the one timer (alternating samples), so the launch overhead CUDA graphs remove
    is measured, not asserted. Memory growth is what warming up and recording the graphs reserved."""
    import torch

    from .runtime import copy_arguments, interleaved

    with_graphs = torch.compile(fn, mode=mode)
    # the same mode's options, with only CUDA graphs turned off
    without_graphs = torch.compile(fn, options={**torch._inductor.list_mode_options(mode),
                                                "triton.cudagraphs": False})
    before = cudagraph_memory()
    warm_args, _ = copy_arguments(args)
    for _ in range(3):  # warm-up, record, replay
        with_graphs(*warm_args)
    torch.cuda.synchronize()
    after = cudagraph_memory()
    timed_with, timed_without = interleaved([with_graphs, without_graphs], args, {}, device="cuda", repeat=repeat)
    return {"available": True, "mode": mode, "with_cudagraphs": timed_with, "without_cudagraphs": timed_without,
            "speedup": timed_without["median_s"] / timed_with["median_s"],
            "memory_reserved_growth_bytes": after["reserved_bytes"] - before["reserved_bytes"]}
