"""``capture()``: watch torch.compile while a block runs (``Recorder`` installs and removes the hooks,
``Recorder.build`` makes the Capture once).

Everything installed on entry — log handlers, the bytecode hook, config patches — is removed on
exit, also when the block raises. Capturing never changes what torch computes or runs.
"""
from __future__ import annotations

import contextlib
import traceback
from collections.abc import Iterable

from compiler.stages.assemble import assemble
from compiler.capturing.autotune import AutotuneRecorder
from compiler.capturing import compile_sampler
from compiler.capturing.compile_sampler import CompileSampler
from compiler.stages.bytecode import transformation
from compiler.stages.environment import environment, recompile_limits, warn_if_untested_torch
from compiler.stages.capture import METHODS, Capture, LiveState
from compiler.stages.schema import CaptureData
from compiler.capturing.records import RecordCollector, receives


class _BytecodeRecorder:
    """Torch's bytecode hooks are process-wide: this one keeps the transformations that belong to its
    capture by the records' rule (``compiler.capturing.records.receives``) — two threads capturing at once both
    see compile ``0/0`` when each reset Dynamo."""

    def __init__(self, live: LiveState, collector: RecordCollector):
        self.pairs: dict[str, tuple] = {}  # compile id → (code, transformed code), listed at the build
        self.live = live
        self.collector = collector
        self.handle = None

    def hook(self, code, new_code):
        from torch._guards import CompileContext

        compile_id = CompileContext.current_compile_id()
        compile_id = str(compile_id) if compile_id is not None else None
        if not receives(self.collector, compile_id):
            return None
        key = compile_id or f"?/{len(self.pairs)}"
        self.pairs[key] = (code, new_code)  # code objects are immutable: listing them can wait for the build
        self.live.codes[key] = code
        return None  # observe only: torch keeps its own transformed code

    def by_compile(self) -> dict[str, dict]:
        """Each compile's transformation (``compiler.stages.bytecode.transformation``)."""
        return {key: transformation(code, new_code) for key, (code, new_code) in self.pairs.items()}

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


class Recorder:
    """The hooks that watch torch.compile, as one context manager: on entry it installs the log
    handlers, the bytecode hook, the autotune hook, the compile sampler (``sample_compile``: torch's
    compile callbacks and a thread that samples only while torch compiles) and (``fresh``) the
    cache-disabling config patch;
    on exit — normal, error or KeyboardInterrupt — it removes every one of them, in reverse order.
    An exception raised in the block is classified into ``error`` (and swallowed only when
    ``suppress_errors`` and it is an ``Exception``). ``build(measurements)`` then makes the Capture,
    once."""

    def __init__(self, *, fresh: bool = False, artifact_logs: bool | Iterable[str] = True, suppress_errors: bool = False,
                 options: dict | None = None, live: LiveState | None = None, sample_compile: bool | None = None):
        import torch
        import torch._inductor.config as inductor_config

        warn_if_untested_torch()
        self.fresh, self.suppress_errors = fresh, suppress_errors
        self.live = live if live is not None else LiveState()
        self.collector = RecordCollector(with_artifact_logs=artifact_logs)
        self.bytecode = _BytecodeRecorder(self.live, self.collector)
        self.autotune = AutotuneRecorder(self.collector)
        # compile time by line of user code (compiler.capturing.compile_sampler); None: not sampled
        self.sampling_off = compile_sampler.OFF_BY_DEFAULT if sample_compile is None and not compile_sampler.SAFE_BY_DEFAULT \
            else None
        if sample_compile is None:
            sample_compile = compile_sampler.SAFE_BY_DEFAULT
        self.sampler = CompileSampler(lambda compile_id: receives(self.collector, compile_id)) if sample_compile else None
        self.options = {**(options or {}), "fresh": fresh,
                        "caches_enabled": (not fresh) and bool(inductor_config.fx_graph_cache),
                        "autograd_cache_enabled": (not fresh) and bool(torch._functorch.config.enable_autograd_cache),
                        "pgo_job_id": getattr(torch.compiler.config, "job_id", None)}  # Dynamo PGO reads profiles under it
        self.error: dict | None = None
        self.counters: dict = {}
        self.recompile_limits: dict = {}
        self.environment: dict | None = None
        self._before: dict = {}
        self._stack: contextlib.ExitStack | None = None

    def __enter__(self) -> "Recorder":
        import torch._inductor.config as inductor_config

        self._before = _counters_snapshot()
        stack = contextlib.ExitStack()
        try:
            stack.callback(lambda: self.collector.uninstall(reported=self.error is not None))
            stack.callback(self.bytecode.uninstall)
            stack.callback(self.autotune.uninstall)
            if self.sampler is not None:
                stack.callback(self.sampler.uninstall)
            self.collector.listeners.append(self.autotune.install)
            self.collector.install()
            self.bytecode.install()
            self.autotune.install()
            if self.sampler is not None:
                self.sampler.install()
            if self.fresh:
                stack.enter_context(inductor_config.patch(force_disable_caches=True))
        except BaseException:
            stack.close()
            raise
        self._stack = stack
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        try:
            if exc is not None:
                self.error = classify_error(exc, self.collector.records)
        finally:
            self._stack.close()
            if self.error is not None and self.collector.logged:  # held off the user's stderr, kept here
                self.error["logged"] = "\n".join(self.collector.logged)[-8000:]
            self.counters = _counters_delta(self._before, _counters_snapshot())
            self.recompile_limits = recompile_limits()  # the limits this capture ran under
            try:  # read now: the build may come later (``capture``), when threads or devices may have changed
                self.environment = {**environment(), "recompile_limits": self.recompile_limits}
            except Exception:  # noqa: BLE001 — a tcompile bug must never break the user's code: the build retries
                self.environment = None
        return exc is not None and self.suppress_errors and isinstance(exc, Exception)

    def build(self, measurements: dict | None = None, into: Capture | None = None) -> Capture:
        """The Capture of what was recorded, plus what was measured after the compile
        (``assemble``'s ``measurements``). A failure here is a tcompile bug: it becomes the
        capture's error instead of reaching the user's code. ``into``: the ``Capture.pending`` a
        ``with capture()`` block holds, made now."""
        self.live.records = self.collector.records
        if self.collector.overlapping_captures:
            self.options["overlapping_captures"] = self.collector.overlapping_captures
        try:
            samples = (self.sampler.samples, self.sampler.method()) if self.sampler is not None else None
            if samples is not None:
                self.options["compile_sampling"] = samples[1]  # interval, samples, the sampler's own busy_s
            elif self.sampling_off:
                self.options["compile_sampling_off"] = self.sampling_off
            hooks = self.bytecode.by_compile()
            saved = assemble(self.collector.records, self.collector.strings, hooks, self.options,
                             self.environment or {**environment(), "recompile_limits": self.recompile_limits},
                             self.error, self.counters, self.autotune.results, measurements, compile_samples=samples)
            return new_capture(saved, self.live, into)
        except Exception as exc:  # noqa: BLE001 — a tcompile bug must never break the user's code
            return Capture.from_error(exc, stage="tcompile assembling the capture (a tcompile bug; the raw "
                                                 "records are in capture.live.records)",
                                      options=self.options, live=self.live, into=into)


def new_capture(saved: CaptureData, live: LiveState | None, into: Capture | None = None) -> Capture:
    """The one place a capture is made from assembled data, with its fixes proposed first so that
    they are part of it (and saved with it; ``compiler.analyses.fixes``): nothing is set after."""
    try:
        fixes = METHODS["propose_fixes"](saved)
    except Exception:  # noqa: BLE001 — a tcompile bug proposing fixes must never lose the capture
        fixes = None
    return Capture.of(saved, live=live, proposed_fixes=fixes, into=into)


@contextlib.contextmanager
def capture(*, fresh: bool = False, artifact_logs: bool | Iterable[str] = True, suppress_errors: bool = False,
            options: dict | None = None, job_dir=None, sample_compile: bool | None = None):
    """Capture every torch.compile stage while the block runs.

    ``fresh=True`` disables Inductor's and AOTAutograd's caches for the block (a cache hit skips
    lowering and fusion, so IR stages would be missing). ``suppress_errors=True`` keeps an exception
    raised in the block in ``cap.error`` instead of re-raising it. The yielded Capture is filled
    in from what was recorded by the time the block ends (with no measurements: ``compiler.run`` / ``explore``
    time and profile); it is built on its first use, so the block's end costs the compile next to nothing.
    ``job_dir``: also save it there as ``tcompile_capture_rank_N.json`` (N: this process's rank
    under torchrun), so ``compiler.load_trace(job_dir)`` loads the whole job (``compiler.readers.job``).
    ``sample_compile``: compile time by line (``compiler.capturing.compile_sampler``); None (the default): on
    from Python 3.12, off on 3.11, where sampling another thread's frames can crash CPython.
    ``artifact_logs``: torch's plain artifact loggers listened to (``compiler.capturing.records.ARTIFACT_LOGGERS``):
    all (True), none, or the kinds named — without ``ir_pre_fusion``/``ir_post_fusion`` the Inductor IR stage is
    missing and Inductor does not format its IR (a third of a warm capture's cost).
    """
    recorder = Recorder(fresh=fresh, artifact_logs=artifact_logs, suppress_errors=suppress_errors,
                        options=options, sample_compile=sample_compile)
    result = Capture.pending(live=recorder.live)
    try:
        with recorder:
            yield result
    finally:
        result._defer(lambda: recorder.build(into=result))  # made on first use: the block ends without assembling
        if job_dir is not None:
            from compiler.readers.job import save_rank

            save_rank(result, job_dir)
