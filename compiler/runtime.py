"""Runtime of eager vs compiled calls, measured after capture (nothing of tcompile on the hot path)."""
from __future__ import annotations

import contextlib
import io
import statistics
import time


def _sync(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def time_calls(fn, args, kwargs, *, device: str = "cpu", warmup: int = 3, repeat: int = 15,
               min_sample_s: float = 0.002) -> dict:
    """Median and spread of one call, in seconds: after warm-up, each sample times enough calls
    to last ``min_sample_s`` (so clock resolution does not dominate tiny functions)."""
    for _ in range(warmup):
        fn(*args, **kwargs)
    _sync(device)
    number = 1
    while True:
        start = time.perf_counter()
        for _ in range(number):
            fn(*args, **kwargs)
        _sync(device)
        if time.perf_counter() - start >= min_sample_s or number >= 1 << 16:
            break
        number *= 2
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn(*args, **kwargs)
        _sync(device)
        samples.append((time.perf_counter() - start) / number)
    quartiles = statistics.quantiles(samples, n=4) if len(samples) > 1 else [samples[0]] * 3
    return {"median_s": statistics.median(samples), "min_s": min(samples), "max_s": max(samples),
            "q1_s": quartiles[0], "q3_s": quartiles[2], "samples": len(samples), "calls_per_sample": number}


def _copies(args, kwargs):
    """Timing runs on copies of tensor arguments, so in-place updates never reach the caller's."""
    import torch
    from torch.utils._pytree import tree_map

    def copy(value):
        return value.detach().clone().requires_grad_(value.requires_grad) if isinstance(value, torch.Tensor) else value

    return tree_map(copy, args), tree_map(copy, kwargs)


def compare(eager, compiled, args, kwargs, *, device: str, first_call_s: float | None, repeat: int = 15,
            quiet: bool = True) -> dict:
    """Eager vs compiled; ``quiet`` drops what the function prints while it is timed."""
    args, kwargs = _copies(args, kwargs)
    with contextlib.redirect_stdout(io.StringIO()) if quiet else contextlib.nullcontext():
        eager_t = time_calls(eager, args, kwargs, device=device, repeat=repeat)
        compiled_t = time_calls(compiled, args, kwargs, device=device, repeat=repeat)
    import os

    import torch

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    cores = os.cpu_count() or 1
    return {"available": True, "device": device, "eager": eager_t, "compiled": compiled_t,
            "threads": torch.get_num_threads(), "cpu_count": cores, "load_average": load,
            "busy": load is not None and load > 0.75 * cores,
            "speedup": eager_t["median_s"] / compiled_t["median_s"] if compiled_t["median_s"] else None,
            "first_call_s": first_call_s,
            "method": f"median of {repeat} samples after 3 warm-up calls, on copies of the tensor arguments"
                      + (", CUDA-synchronized" if device == "cuda" else "")}
