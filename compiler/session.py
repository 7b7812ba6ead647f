"""``capture()``: watch torch.compile while a block runs; ``explore()``: compile and call one function.

Everything installed on entry — log handlers, the bytecode hook, config patches — is removed on
exit, also when the block raises. Capturing never changes what torch computes or runs.
"""
from __future__ import annotations

import contextlib
import copy
import time
import traceback

from .assemble import assemble
from .autotune import AutotuneRecorder
from .bytecode import transformation
from .environment import environment
from .model import Capture
from .records import RecordCollector
from .whatif import LiveState

COMPILE_KWARGS = ("backend", "mode", "dynamic", "fullgraph", "options", "disable", "recompile_limit", "name",
                  "isolate_recompiles", "shapes_spec")


class _BytecodeRecorder:
    def __init__(self, live: LiveState):
        self.by_compile: dict[str, dict] = {}
        self.live = live
        self.handle = None

    def hook(self, code, new_code):
        from torch._guards import CompileContext

        compile_id = CompileContext.current_compile_id()
        key = str(compile_id) if compile_id is not None else f"?/{len(self.by_compile)}"
        self.by_compile[key] = transformation(code, new_code)
        self.live.codes[key] = code
        return None  # observe only: torch keeps its own transformed code

    def install(self):
        from torch._dynamo.convert_frame import register_bytecode_hook

        self.handle = register_bytecode_hook(self.hook)

    def uninstall(self):
        if self.handle is not None:
            self.handle.remove()
            self.handle = None


def _counters_snapshot() -> dict:
    from torch._dynamo.utils import counters

    return {group: dict(values) for group, values in counters.items()}


def _counters_delta(before: dict, after: dict) -> dict:
    delta = {}
    for group, values in after.items():
        changed = {k: v - before.get(group, {}).get(k, 0) for k, v in values.items()
                   if v != before.get(group, {}).get(k, 0)}
        if changed:
            delta[group] = {str(k): v for k, v in changed.items()}
    return delta


def classify_error(exc: BaseException, records) -> dict:
    """Which stage an exception came from, in the user's terms."""
    import torch._dynamo.exc as dexc

    name = type(exc).__name__
    cause = exc
    if isinstance(exc, dexc.BackendCompilerFailed):
        stage = "backend compile"
        cause = getattr(exc, "inner_exception", None) or exc.__cause__ or exc
    elif isinstance(exc, dexc.Unsupported):
        stage = "Dynamo tracing (a graph break under fullgraph=True)"
    elif isinstance(exc, (dexc.TorchRuntimeError, dexc.InternalTorchDynamoError)):
        stage = "Dynamo tracing"
    elif "Inductor" in name:
        stage = "Inductor"
    elif "overwritten by a subsequent" in str(exc):
        stage = ("CUDA graphs: an output was overwritten by a later replay (call "
                 "torch.compiler.cudagraph_mark_step_begin() before each iteration, or clone the output)")
    elif "stance is 'fail_on_recompile'" in str(exc):
        stage = "guards / recompile (the stance 'fail_on_recompile' forbids compiling)"
    elif "Recompile" in name or "recompile" in str(exc).lower() and "limit" in str(exc).lower():
        stage = "guards / recompile"
    else:
        stage = "running the user's code"
    last = next((r for r in reversed(records) if r.compile_id), None)
    return {"type": name, "module": type(exc).__module__, "message": str(exc)[:4000], "stage": stage,
            "cause": f"{type(cause).__name__}: {str(cause)[:2000]}" if cause is not exc else None,
            "compile_id": last.compile_id if last else None, "last_record": last.kind if last else None,
            "traceback": "".join(traceback.format_exception(exc))[-8000:]}


@contextlib.contextmanager
def capture(*, fresh: bool = False, artifact_logs: bool = True, suppress_errors: bool = False,
            options: dict | None = None):
    """Capture every torch.compile stage while the block runs.

    ``fresh=True`` disables Inductor's and AOTAutograd's caches for the block (a cache hit skips
    lowering and fusion, so IR stages would be missing). ``suppress_errors=True`` keeps an exception
    raised in the block in ``cap.error`` instead of re-raising it. The yielded Capture is filled
    in when the block ends.
    """
    import torch
    import torch._inductor.config as inductor_config

    result = Capture.empty(live=LiveState())
    collector = RecordCollector(with_artifact_logs=artifact_logs)
    bytecode = _BytecodeRecorder(result.live)
    autotune = AutotuneRecorder()
    before = _counters_snapshot()
    recorded_options = dict(options or {})
    recorded_options.update(fresh=fresh, caches_enabled=(not fresh) and bool(inductor_config.fx_graph_cache),
                            autograd_cache_enabled=(not fresh) and bool(torch._functorch.config.enable_autograd_cache))
    error = None
    with contextlib.ExitStack() as stack:
        stack.callback(collector.uninstall)
        stack.callback(bytecode.uninstall)
        stack.callback(autotune.uninstall)
        collector.listeners.append(autotune.install)
        collector.install()
        bytecode.install()
        autotune.install()
        if fresh:
            stack.enter_context(inductor_config.patch(force_disable_caches=True))
        try:
            yield result
        except BaseException as exc:  # noqa: BLE001 — recorded, then re-raised unless suppressed
            error = classify_error(exc, collector.records)
            if not suppress_errors or not isinstance(exc, Exception):
                raise
        finally:
            stack.close()
            result.records = collector.records  # raw records, live only (not saved)
            try:
                result._become(Capture.from_data(
                    assemble(collector.records, collector.strings, bytecode.by_compile, recorded_options,
                             environment(), error, _counters_delta(before, _counters_snapshot()),
                             autotune.results), live=result.live))
            except Exception as exc:  # noqa: BLE001 — a tcompile bug must never break the user's code
                result._become(Capture.from_error(
                    exc, stage="tcompile assembling the capture (a tcompile bug; the raw records are in "
                               "capture.records)", live=result.live))


def _jsonable_options(kwargs: dict) -> dict:
    out = {}
    for key, value in kwargs.items():
        if key == "backend" and not isinstance(value, str):
            value = getattr(value, "__name__", type(value).__name__)
        out[key] = copy.deepcopy(value) if isinstance(value, (dict, list, str, int, float, bool, type(None))) else repr(value)
    return out


def _measure_gpu(cap: Capture, fn, compiled, args, kwargs, cudagraph_comparison: bool) -> None:
    """Per-kernel GPU time (profiler) and, for CUDA-graph modes, the same function without them."""
    from .cudagraphs import wants_cudagraphs
    from .gpu import match_profile, profile_kernels, with_and_without_cudagraphs

    profile = profile_kernels(compiled, args, kwargs)
    cap.data["gpu_profile"] = profile
    for c in cap.data["compiles"]:
        match_profile(c["kernels"].get("kernels", []), profile)
    if cudagraph_comparison and wants_cudagraphs(cap.options) and not kwargs:
        cap.data["cudagraph_comparison"] = with_and_without_cudagraphs(fn, args, mode=cap.options.get("mode")
                                                                       or "reduce-overhead")


def explore(fn, *args, fresh: bool = False, timing: bool = True, repeat: int = 15, reset: bool = True,
            errors: str = "raise", stance: str | None = None, kwargs: dict | None = None,
            cudagraph_comparison: bool = True, **compile_kwargs) -> Capture:
    """Compile ``fn`` with ``torch.compile(**compile_kwargs)``, call it on ``args``, capture every
    stage, and (``timing=True``) time eager vs compiled calls afterwards.

    On CUDA it also profiles each kernel's GPU time and, for CUDA-graph modes
    (``cudagraph_comparison=True``), times the function compiled without CUDA graphs.
    ``reset=True`` clears Dynamo's caches first (``torch._dynamo.reset()``) so the compile is
    really observed; ``errors="return"`` keeps a failure in ``capture.error`` instead of raising.
    """
    import torch

    unknown = set(compile_kwargs) - set(COMPILE_KWARGS)
    if unknown:
        raise TypeError(f"explore() got unknown torch.compile option(s) {sorted(unknown)}; "
                        f"torch.compile takes {list(COMPILE_KWARGS)}")
    if errors not in ("raise", "return"):
        raise ValueError("errors must be 'raise' or 'return'")
    kwargs = kwargs or {}
    if reset:
        torch._dynamo.reset()
    if isinstance(compile_kwargs.get("options"), dict):
        compile_kwargs["options"] = dict(compile_kwargs["options"])  # torch.compile pops keys from it
    options = {"backend": "inductor", **_jsonable_options(compile_kwargs), "stance": stance}
    compiled = torch.compile(fn, **compile_kwargs)
    first_call_s = None
    device = "cuda" if any(getattr(a, "is_cuda", False) for a in args) else "cpu"
    from .cudagraphs import wants_cudagraphs

    # CUDA graphs warm up on the first call and record on the second: make both (and one replay)
    # under capture, so the CUDA-graph stage shows the whole life cycle.
    calls = 3 if device == "cuda" and wants_cudagraphs(options) else 1
    options["calls_under_capture"] = calls
    memory_before = torch.cuda.memory_reserved() if device == "cuda" else None
    with capture(fresh=fresh, suppress_errors=(errors == "return"), options=options) as cap:
        with torch.compiler.set_stance(stance) if stance else contextlib.nullcontext():
            start = time.perf_counter()
            compiled(*args, **kwargs)
            first_call_s = time.perf_counter() - start
            for _ in range(calls - 1):
                compiled(*args, **kwargs)
    if memory_before is not None and cap.cudagraphs.available:
        cap.data["cudagraphs"]["memory"] = {"reserved_growth_bytes": torch.cuda.memory_reserved() - memory_before,
                                            "note": "CUDA memory reserved while warming up and recording"}
    if timing and cap.error is None:
        from .runtime import compare

        cap.data["runtime"] = compare(fn, compiled, args, kwargs, device=device,
                                      first_call_s=first_call_s, repeat=repeat, quiet=True)
        if device == "cuda":
            _measure_gpu(cap, fn, compiled, args, kwargs, cudagraph_comparison)
    elif not timing:
        cap.data["runtime"] = {"available": False, "reason": "timing was turned off (timing=False / --no-timing)"}
    else:
        cap.data["runtime"] = {"available": False, "reason": "not timed: the compiled call failed"}
    cap.data["first_call_s"] = first_call_s
    cap.compiled_fn = compiled
    return cap
