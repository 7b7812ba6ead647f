"""The one run path: compile a function, call it under capture, time it, profile it, build the
Capture once.

``explore``, ``%%tcompile``/``%tcompile``, ``compare`` (each configuration), the torch.jit.trace
input and the labs all go through ``run``:

1. ``torch.compile(fn, **compile_kwargs)`` (``torch._dynamo.reset()`` first when ``reset``).
2. Under a ``Recorder`` (every hook removed again on exit, error or interrupt): the first call on the
   caller's own arguments (its result is ``cap.live.result``), and — on CUDA, when the
   configuration wants CUDA graphs — two more calls on copies of the arguments, so the capture
   shows the whole warm-up / record / replay life cycle.
3. Measured after the compile: eager vs compiled with the one timer (``compiler.capturing.runtime``), and on
   CUDA the per-kernel GPU profile, the CUDA-graph memory and the same function without CUDA graphs.
4. ``Recorder.build(measurements)``: the Capture, built once, with the compiled function in
   ``cap.live.compiled_fn``.
"""
from __future__ import annotations

import contextlib
import io
import time
import warnings

from compiler.stages.base import unavailable
from compiler.stages.capture import Capture, LiveState
from compiler.reference.options import check_compile_kwargs, check_stance, jsonable
from compiler.capturing import ncu
from compiler.capturing.runtime import copy_arguments, device_of, time_interleaved
from compiler.capturing.session import Recorder

AFTER_RUN: list = []  # callables handed each capture compiler.run builds (python -m compiler minify / bisect SCRIPT)
TIMING_OFF = "timing was turned off (timing=False / --no-timing)"

TORCHSCRIPT_NOT_COMPILED = ("a TorchScript module's forward runs in the TorchScript interpreter (C++), so there is "
                            "no Python frame to compile — calls run as TorchScript, uncompiled, and a speed ratio "
                            "would compare two runs of the same code; compile the original module instead")


def run(fn, *args, kwargs: dict | None = None, compile_kwargs: dict | None = None, fresh: bool = False,
        timing: bool | str = True, repeat: int = 15, stance: str | None = None, errors: str = "raise",
        reset: bool = True, options: dict | None = None, eager_fn=None, dynamo_config: dict | None = None,
        cudagraph_comparison: bool = True, progress=None, sample_compile: bool | None = None) -> Capture:
    """Compile ``fn`` with ``torch.compile(**compile_kwargs)``, call it as ``fn(*args, **kwargs)`` under
    capture, time and (on CUDA) profile it; → the Capture. Like ``explore``, ``fn``'s arguments follow it
    spread out (``run(fn, x, y)``); a tuple of them (``run(fn, (x, y))``) is refused in one line.

    - ``timing``: True times eager (``eager_fn``, default ``fn``) against compiled in alternating
      samples (``repeat`` each); False, or a string saying why, skips timing.
    - ``stance``: calls and timing run under ``torch.compiler.set_stance(stance)``.
    - ``errors="return"`` keeps an error of the compiled call in ``cap.error``; ``"raise"`` re-raises
      it. torch.compile rejecting its arguments always raises (nothing was compiled).
    - ``options``: extra facts recorded in ``cap.options`` (a label, the configuration, the magic).
    - ``dynamo_config``: a ``torch._dynamo.config.patch`` for compiling, calling and timing.
    - ``cudagraph_comparison``: on CUDA with a CUDA-graph mode, also time the function without them.
    - ``progress(text)``: told what runs next (timing, profiling), for a progress display.
    - ``sample_compile``: compile time by line (``compiler.capture``'s; None: on from Python 3.12, off on 3.11).
    """
    import torch

    if errors not in ("raise", "return"):
        raise ValueError("errors must be 'raise' or 'return'")
    if not callable(fn):
        raise TypeError(f"tcompile: nothing to compile: fn must be a function, method or nn.Module, got "
                        f"{type(fn).__name__} {_short_repr(fn)}")
    compile_kwargs = dict(compile_kwargs or {})
    check_compile_kwargs(compile_kwargs)
    check_stance(stance)
    if timing is True and (not isinstance(repeat, int) or repeat < 1):
        raise ValueError(f"repeat must be a whole number of timing samples, at least 1, got {repeat!r}")
    if not isinstance(kwargs, (dict, type(None))):
        raise TypeError(f"kwargs must be a dict of keyword arguments for fn, got {type(kwargs).__name__}")
    if isinstance(compile_kwargs.get("options"), dict):
        compile_kwargs["options"] = dict(compile_kwargs["options"])  # torch.compile pops keys from it
    args, kwargs = tuple(args), dict(kwargs or {})
    check_spread(fn, args, kwargs)
    device = device_of(args, kwargs)
    recorded = {"backend": "inductor", **jsonable(compile_kwargs), "stance": stance, **(options or {})}
    from compiler.stages.cudagraphs import wants_cudagraphs

    # CUDA graphs warm up on the first call and record on the second: make both (and one replay)
    # under capture, so the CUDA-graph stage shows the whole life cycle.
    calls = 3 if device == "cuda" and wants_cudagraphs(recorded) else 1
    recorded["calls_under_capture"] = calls
    measuring = ncu.measuring()  # python -m compiler gpu-profile: this call is the one ncu measures
    if measuring:
        timing = ncu.NOT_TIMED
    live = LiveState(args=args, kwargs=kwargs)
    # every call after the captured one (CUDA-graph replays, timing, kernel times, GPU profiles) runs on
    # one copy of the arguments, made here once, so none of them updates the caller's tensors; a run that
    # calls nothing again (no timing, no replays) copies nothing
    reruns = calls > 1 or timing is True or measuring
    rerun_args, rerun_kwargs = copy_arguments(args, kwargs) if reruns else (args, kwargs)
    measurements: dict = {"first_call_s": None}
    with torch._dynamo.config.patch(**(dynamo_config or {})):
        if reset:
            torch._dynamo.reset()
        compiled = torch.compile(fn, **compile_kwargs)
        live.compiled_fn = compiled
        memory_before = torch.cuda.memory_reserved() if device == "cuda" else None
        recorder = Recorder(fresh=fresh, suppress_errors=errors == "return", options=recorded, live=live,
                            sample_compile=sample_compile)
        phase = "the compile or the first call"
        try:
            with recorder, _stance(stance):
                start = time.perf_counter()
                live.result = compiled(*args, **kwargs)
                measurements["first_call_s"] = time.perf_counter() - start
                if calls > 1:
                    live.result = _keep(live.result)  # a later replay may overwrite CUDA-graph outputs
                    with contextlib.redirect_stdout(io.StringIO()):
                        for _ in range(calls - 1):
                            compiled(*rerun_args, **rerun_kwargs)
            if memory_before is not None and recorder.error is None:
                measurements["cudagraph_memory"] = {
                    "reserved_growth_bytes": torch.cuda.memory_reserved() - memory_before,
                    "note": "CUDA memory reserved while warming up and recording"}
            if measuring and recorder.error is None:
                phase = "the call measured under Nsight Compute"
                ncu.measured_call(compiled, rerun_args, rerun_kwargs)
            phase = "timing eager vs compiled"
            empty = nothing_compiled(fn, live) if recorder.error is None and not stance else None
            if empty:
                warnings.warn(f"tcompile: {empty}", stacklevel=3)
                timing = f"not timed: {empty}"
            if progress and timing is True and recorder.error is None:
                progress("timing eager vs compiled (re-running the code)")
            measurements["runtime"] = _runtime(recorder.error, timing, eager_fn or fn, compiled, rerun_args, rerun_kwargs,
                                               device=device, repeat=repeat, stance=stance,
                                               first_call_s=measurements["first_call_s"])
            phase = "measuring kernel times"
            if device == "cpu" and timing is True and recorder.error is None:
                measurements["kernel_times"] = _kernel_times(compiled, rerun_args, rerun_kwargs, live.codes, stance)
            phase = "timing the frames Dynamo skipped"
            skipped = failed_frames(recorder.collector.records)
            if timing is True and recorder.error is None and skipped:
                measurements["frame_times"] = _frame_times(compiled, rerun_args, rerun_kwargs, skipped, device, stance)
            phase = "profiling the GPU kernels"
            if device == "cuda" and timing is True and recorder.error is None:
                if progress:
                    progress("profiling the GPU kernels")
                measurements.update(_measure_gpu(fn, compiled, rerun_args, rerun_kwargs, recorded, cudagraph_comparison))
        except KeyboardInterrupt as exc:
            # every hook is already restored (Recorder's and the config patches' own exits): keep
            # what was captured, marked interrupted, and let the interrupt go on with it attached
            recorder.error = interrupted_error(exc, phase, recorder)
            measurements.setdefault("runtime", unavailable(f"not timed: interrupted during {phase}"))
            raise CaptureInterrupted(recorder.build(measurements), phase) from None
    cap = recorder.build(measurements)
    ncu.after_run(cap)  # gpu-profile's plain run keeps the first capture
    for hook in AFTER_RUN:
        hook(cap)
    return cap


def check_spread(fn, args: tuple, kwargs: dict) -> None:
    """``run`` and ``explore`` take ``fn``'s arguments spread out: a lone tuple (or list) that ``fn`` cannot
    take as one argument, but could as its arguments, is the other convention — refused, naming the right
    call. A function whose signature Python cannot read is not checked."""
    import inspect

    import torch

    if len(args) != 1 or not isinstance(args[0], (tuple, list)) or not args[0]:
        return
    try:
        signature = inspect.signature(fn.forward if isinstance(fn, torch.nn.Module) else fn)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(*args, **kwargs)
        return  # fn takes the tuple itself
    except TypeError:
        pass
    try:
        signature.bind(*args[0], **kwargs)
    except TypeError:
        return  # neither: the call fails as it would without tcompile
    raise TypeError(f"tcompile: explore and run take fn's arguments spread out — explore(fn, x, y), run(fn, x, y) "
                    f"— not as one {type(args[0]).__name__} (explore(fn, (x, y))), which fn cannot take: pass "
                    "explore(fn, *args)")


def _short_repr(value) -> str:
    text = repr(value)
    return f"({text[:60]}…)" if len(text) > 60 else f"({text})"


def nothing_compiled(fn, live: LiveState) -> str | None:
    """Why the first call compiled nothing, or compiled code that did not run (None: it compiled and ran)."""
    import inspect

    import torch

    frames = sorted({code.co_name for code in live.codes.values()})
    compiled = (f"Dynamo compiled {len(frames)} frame(s) ({', '.join(frames)})" if frames
                else "Dynamo compiled nothing")
    if isinstance(fn, (torch.jit.ScriptModule, torch.jit.ScriptFunction)) and not frames:
        return f"{compiled}: {TORCHSCRIPT_NOT_COMPILED}"
    try:
        target = target_function(fn)
    except Exception:  # noqa: BLE001
        return None
    name = getattr(target, "__name__", type(fn).__name__)
    if inspect.isgeneratorfunction(target) or inspect.isasyncgenfunction(target):
        return (f"{compiled}: {name} is a generator function — calling it only creates a generator, whose body "
                "runs later, when it is iterated, and torch.compile does not compile generators (Dynamo: "
                "'Attempt to trace generator'); compile a plain function that consumes the generator")
    if inspect.iscoroutinefunction(target):
        return (f"{compiled}: {name} is an async function — the call returned a coroutine that was never "
                "awaited, so its body did not run here and timing would only measure creating coroutines; "
                "compile a plain function that does the work")
    if not frames and not has_cached_compiles(target):
        return (f"{compiled}: no Python frame of this call was compiled (torch skipped every frame it "
                "entered — see the Graph breaks view and cap.counters)")
    return None


def has_cached_compiles(target) -> bool:
    """The call reused compiles made before the capture (nothing new to capture, but compiled code ran)."""
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list

    code = getattr(getattr(target, "__func__", target), "__code__", None)
    return code is not None and bool(_debug_get_cache_entry_list(code))


class CaptureInterrupted(KeyboardInterrupt):
    """A KeyboardInterrupt during ``compiler.run`` / ``explore``, carrying what was captured until then
    (``.capture``: its ``error`` says where it stopped; ``capture.interrupted`` is True)."""

    def __init__(self, capture: Capture, phase: str):
        super().__init__(f"interrupted during {phase}; the capture keeps what was recorded (exc.capture)")
        self.capture, self.phase = capture, phase


def interrupted_error(exc: BaseException, phase: str, recorder: Recorder) -> dict:
    from compiler.capturing.session import classify_error

    error = classify_error(exc, recorder.collector.records)
    first_call = "completed" if phase != "the compile or the first call" else "did not complete"
    return {**error, "stage": f"interrupted (KeyboardInterrupt) during {phase}",
            "message": f"interrupted during {phase}; the first compiled call {first_call}"}


def explore(fn, *args, fresh: bool = False, timing: bool = True, repeat: int = 15, reset: bool = True,
            errors: str = "raise", stance: str | None = None, kwargs: dict | None = None,
            cudagraph_comparison: bool = True, job_dir=None, sample_compile: bool | None = None,
            **compile_kwargs) -> Capture:
    """Compile ``fn`` with ``torch.compile(**compile_kwargs)``, call it as ``fn(*args, **kwargs)``, capture
    every stage, and (``timing=True``) time eager vs compiled calls afterwards (``compiler.run``, which takes
    the arguments the same way: spread out, never as one tuple). ``sample_compile=True``: compile time by
    line also on Python 3.11, where it is off by default (``compiler.capture``).

    On CUDA it also profiles each kernel's GPU time and, for CUDA-graph modes
    (``cudagraph_comparison=True``), times the function compiled without CUDA graphs.
    ``reset=True`` clears Dynamo's caches first (``torch._dynamo.reset()``) so the compile is
    really observed; ``errors="return"`` keeps a failure in ``capture.error`` instead of raising.
    The compiled function is ``cap.live.compiled_fn``. ``job_dir``: also save the capture there as
    ``tcompile_capture_rank_N.json`` (N: this process's rank under torchrun; ``compiler.readers.job``).
    """
    cap = run(fn, *args, kwargs=kwargs, compile_kwargs=compile_kwargs, fresh=fresh, timing=timing, repeat=repeat,
              stance=stance, errors=errors, reset=reset, cudagraph_comparison=cudagraph_comparison,
              sample_compile=sample_compile)
    if job_dir is not None:
        from compiler.readers.job import save_rank

        save_rank(cap, job_dir)
    return cap


def _stance(name: str | None):
    if not name:
        return contextlib.nullcontext()
    import torch

    return torch.compiler.set_stance(name)


def _keep(result):
    """Clones of the tensors in ``result`` (CUDA-graph outputs live in a pool a replay reuses)."""
    import torch
    from torch.utils._pytree import tree_map

    return tree_map(lambda v: v.clone() if isinstance(v, torch.Tensor) else v, result)


def _runtime(error, timing, eager, compiled, args, kwargs, **how) -> dict:
    if error is not None:
        return unavailable("not timed: the compiled call failed")
    if timing is not True:
        return unavailable(timing if isinstance(timing, str) else TIMING_OFF)
    return time_interleaved(eager, compiled, args, kwargs, **how)


def _kernel_times(compiled, args, kwargs, codes, stance) -> dict:
    """CPU time per kernel (``compiler.stages.run_costs``), re-running the code quietly; a failure here is a
    missing measurement, never a failed run."""
    try:
        from compiler.stages.run_costs import measure_kernel_times

        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), _stance(stance):
            return measure_kernel_times(compiled, args, kwargs, live_codes=codes)
    except Exception as exc:  # noqa: BLE001
        return unavailable(f"kernel times not measured: {type(exc).__name__}: {exc}")


def failed_frames(records) -> list[tuple]:
    """(file, first line, name) of each frame whose compile failed: torch runs those eagerly."""
    found = []
    for record in records:
        metrics = record.metadata.get("compilation_metrics") if record.kind == "compilation_metrics" else None
        if metrics and metrics.get("fail_type") and metrics.get("co_filename") and metrics.get("co_firstlineno"):
            found.append((metrics["co_filename"], metrics["co_firstlineno"], metrics.get("co_name")))
    return list(dict.fromkeys(found))


def _frame_times(compiled, args, kwargs, frames, device, stance) -> dict:
    """Time per call in the frames torch ran eagerly (``compiler.capturing.runtime.frame_times``); a failure
    here is a missing measurement, never a failed run."""
    from compiler.capturing.runtime import frame_times

    try:
        with contextlib.redirect_stderr(io.StringIO()), _stance(stance):
            return frame_times(compiled, args, kwargs, frames, device=device)
    except Exception as exc:  # noqa: BLE001
        return unavailable(f"frame times not measured: {type(exc).__name__}: {exc}")


def _measure_gpu(fn, compiled, args, kwargs, recorded: dict, cudagraph_comparison: bool) -> dict:
    """Per-kernel GPU time (profiler) and, for CUDA-graph modes, the same function without them."""
    from compiler.stages.cudagraphs import wants_cudagraphs
    from compiler.capturing.gpu import profile_kernels, with_and_without_cudagraphs

    out = {"gpu_profile": profile_kernels(compiled, args, kwargs)}
    if cudagraph_comparison and wants_cudagraphs(recorded) and not kwargs:
        out["cudagraph_comparison"] = with_and_without_cudagraphs(fn, args, mode=recorded.get("mode") or "reduce-overhead")
    return out


def target_function(fn):
    """The plain function (or code object) Dynamo compiles for ``fn``: a compiled function, an
    ``OptimizedModule`` and an ``nn.Module`` lead to the user's own function."""
    import inspect
    import types

    import torch

    if isinstance(fn, types.CodeType):
        return fn
    fn = getattr(fn, "_orig_mod", fn)  # torch.compile(module)
    if isinstance(fn, torch.nn.Module):
        fn = fn.forward
    fn = getattr(fn, "_torchdynamo_orig_callable", fn)
    return inspect.unwrap(fn)
