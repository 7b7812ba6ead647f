"""The one timer: eager and compiled timed in alternating samples, on copies of the arguments.

Every path that times a compiled function — ``explore``, ``%%tcompile``/``%tcompile``, ``compare``,
the torch.jit.trace input, the CUDA-graph comparison — measures through ``time_interleaved`` (or,
for any two callables, ``interleaved``), after the capture (nothing of tcompile is on the hot path).

Alternating samples let both variants see the same machine load: timed one after the other on a
busy machine, either can look several times slower. The load average at the end is recorded, and
``busy`` warns when it exceeded 3/4 of the cores.
"""
from __future__ import annotations

import contextlib
import io
import os
import statistics
import time

WARMUP_CALLS = 3
MIN_SAMPLE_S = 0.002  # each sample times enough calls to last this long (clock resolution)
MAX_CALLS_PER_SAMPLE = 1 << 16


def _sync(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def device_of(args, kwargs=None) -> str:
    """"cuda" when any tensor argument (at any depth) is on a CUDA device, else "cpu"."""
    import torch
    from torch.utils._pytree import tree_leaves

    leaves = tree_leaves((tuple(args), dict(kwargs or {})))
    return "cuda" if any(isinstance(a, torch.Tensor) and a.is_cuda for a in leaves) else "cpu"


def copy_arguments(args, kwargs=None):
    """Copies of the tensor arguments (``tree_map``, any depth), so repeated calls never update the
    caller's tensors in place. Made once per run, by the run (``compiler.capturing.run``, a ``compare``
    configuration, a jit-trace exploration), and handed to every re-run: the timer, kernel times, GPU
    profiles; none of those copies again. Parameters stay Parameters (a plain tensor would fail a guard and
    recompile); other tensor subclasses and non-tensors are passed as they are."""
    import torch
    from torch.utils._pytree import tree_map

    def copy(value):
        if type(value) is torch.Tensor:
            return value.detach().clone().requires_grad_(value.requires_grad)
        if type(value) is torch.nn.Parameter:
            return torch.nn.Parameter(value.detach().clone(), requires_grad=value.requires_grad)
        return value

    return tuple(tree_map(copy, tuple(args))), tree_map(copy, dict(kwargs or {}))


def warm_up(fn, args, kwargs, device: str) -> None:
    """``WARMUP_CALLS`` calls, then the device synchronized."""
    for _ in range(WARMUP_CALLS):
        fn(*args, **kwargs)
    _sync(device)


def calls_per_sample(fn, args, kwargs, device: str) -> int:
    """How many calls one sample times: doubled until they last ``MIN_SAMPLE_S`` (at most ``MAX_CALLS_PER_SAMPLE``)."""
    number = 1
    while number < MAX_CALLS_PER_SAMPLE:
        if sample(fn, args, kwargs, number, device) * number >= MIN_SAMPLE_S:
            break
        number *= 2
    return number


def sample(fn, args, kwargs, number: int, device: str) -> float:
    """One sample: ``number`` calls, the device synchronized → seconds per call."""
    start = time.perf_counter()
    for _ in range(number):
        fn(*args, **kwargs)
    _sync(device)
    return (time.perf_counter() - start) / number


def _stats(values: list[float], number: int) -> dict:
    quartiles = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return {"median_s": statistics.median(values), "min_s": min(values), "max_s": max(values),
            "q1_s": quartiles[0], "q3_s": quartiles[2], "samples": len(values), "calls_per_sample": number}


def interleaved(fns: list, args, kwargs=None, *, device: str = "cpu", repeat: int = 15) -> list[dict]:
    """Time each callable in ``fns`` on the run's copies of the arguments (``copy_arguments``), in alternating samples
    (after ``WARMUP_CALLS`` warm-up calls each) → one stats dict per callable (median, quartiles,
    min, max, samples, calls per sample), in seconds per call."""
    kwargs = kwargs or {}
    for fn in fns:
        warm_up(fn, args, kwargs, device)
    numbers = [calls_per_sample(fn, args, kwargs, device) for fn in fns]
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, number, values in zip(fns, numbers, samples):
            values.append(sample(fn, args, kwargs, number, device))
    return [_stats(values, number) for values, number in zip(samples, numbers)]


def machine_load() -> dict:
    """Threads, cores, the 1-minute load average and whether the machine was busy (> 3/4 of the cores)."""
    import torch

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    cores = os.cpu_count() or 1
    return {"threads": torch.get_num_threads(), "cpu_count": cores, "load_average": load,
            "busy": load is not None and load > 0.75 * cores}


def _frames_compiled() -> int:
    from torch._dynamo.utils import counters

    return counters["frames"]["total"]


def time_interleaved(eager, compiled, args, kwargs=None, *, device: str | None = None, repeat: int = 15,
                     first_call_s: float | None = None, stance: str | None = None) -> dict:
    """Eager vs compiled → the capture's ``runtime``: medians and spreads, speedup, machine load.

    The function is re-run many times on the run's copies of the tensor arguments (``copy_arguments``:
    the caller copies once, this never does) with its output (stdout,
    stderr) discarded, under ``torch.compiler.set_stance(stance)`` when given. Compiles that happen
    while timing (guards failing on objects the code creates each run) are counted and noted.
    Never raises: a failure gives ``{"available": False, "reason": …}``.
    """
    import torch

    kwargs = kwargs or {}
    device = device or device_of(args, kwargs)
    frames_before = _frames_compiled()
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
                (torch.compiler.set_stance(stance) if stance else contextlib.nullcontext()):
            try:
                eager_t, compiled_t = interleaved([eager, compiled], args, kwargs, device=device, repeat=repeat)
            except Exception:
                eager_error = _eager_error(eager, args, kwargs)
                if eager_error:
                    return {"available": False, "reason": f"not timed: the eager call failed: {eager_error}"}
                raise
    except Exception as exc:  # noqa: BLE001 — timing is optional; say why it is missing
        return {"available": False, "reason": f"timing failed: {type(exc).__name__}: {exc}"}
    result = {"available": True, "device": device, "eager": eager_t, "compiled": compiled_t,
              **machine_load(),
              "speedup": eager_t["median_s"] / compiled_t["median_s"] if compiled_t["median_s"] else None,
              "first_call_s": first_call_s,
              "method": f"median of {repeat} samples, eager and compiled alternating, after {WARMUP_CALLS} "
                        "warm-up calls each, on copies of the tensor arguments"
                        + (", CUDA-synchronized" if device == "cuda" else ""),
              "note": "the code was re-run for timing (its output discarded, tensor arguments copied)",
              "wall_s": time.perf_counter() - start}
    recompiled = _frames_compiled() - frames_before
    if recompiled:
        result["recompiles_while_timing"] = recompiled
        result["note"] += (f"; it compiled {recompiled} more frame(s) while being timed, so the compiled "
                           "timing includes recompiles (guards on objects the code creates each run?)")
    return result


def _eager_error(eager, args, kwargs) -> str | None:
    try:
        eager(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001
        return f"{type(exc).__name__}: {exc}"
    return None


FRAME_TIME_CALLS = 3


def frame_times(fn, args, kwargs, frames: list[tuple], *, device: str = "cpu", calls: int = FRAME_TIME_CALLS) -> dict:
    """Time spent in given Python functions (``frames``: (file, first line, name) of their code objects)
    during calls of ``fn``, per call, next to the whole call's time: how much of a compiled call runs in
    frames Dynamo skipped (``compiler.stages.skipped``). Measured with ``sys.setprofile`` (call and return
    events only), outermost entry of each function counted once; both times include the profiler's small
    overhead. Returns ``{"available", "call_s", "frames": {"file:line:name": seconds}}``."""
    import sys

    wanted = {(file, int(line), name) for file, line, name in frames if file and line and name}
    if not wanted:
        return {"available": False, "reason": "no frame to time"}
    spent = {key: 0.0 for key in wanted}
    depth = {key: 0 for key in wanted}
    started: dict = {}

    def profile(frame, event, _arg):
        if event not in ("call", "return"):
            return
        code = frame.f_code
        key = (code.co_filename, code.co_firstlineno, code.co_name)
        if key not in spent:
            return
        if event == "call":
            depth[key] += 1
            if depth[key] == 1:
                started[key] = time.perf_counter()
        else:
            depth[key] -= 1
            if depth[key] == 0:
                spent[key] += time.perf_counter() - started.pop(key)

    with contextlib.redirect_stdout(io.StringIO()):
        fn(*args, **(kwargs or {}))  # warm: compiled code already cached, nothing left to compile
        _sync(device)
        previous = sys.getprofile()
        sys.setprofile(profile)
        try:
            start = time.perf_counter()
            for _ in range(calls):
                fn(*args, **(kwargs or {}))
            _sync(device)
            total = time.perf_counter() - start
        finally:
            sys.setprofile(previous)
    return {"available": True, "call_s": total / calls, "calls": calls,
            "frames": {f"{file}:{line}:{name}": seconds / calls for (file, line, name), seconds in spent.items()}}
