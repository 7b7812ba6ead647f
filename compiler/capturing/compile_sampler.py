"""Where compile time goes, by sampling: while torch compiles under a capture, a thread reads the
compiling thread's Python stack every ``interval_s`` and notes what torch is working on.

What one sample holds (``Sample``): the wall time, the seconds since the previous sample, the
compile id, the phase (the innermost torch function on the stack that marks one: ``PHASE_MARKERS``)
and the user's line torch is working on, found from torch's own frames:

- Dynamo tracing: the innermost ``InstructionTranslatorBase.step`` frame's translator — the code
  object it traces (``f_code``) and the line it is at (``lineno``), its ``nn_module_stack``;
- AOTAutograd, graph passes, Inductor lowering: the innermost ``Interpreter.run_node`` /
  ``GraphLowering.run_node`` frame's FX node ``n`` — its ``meta["stack_trace"]`` names the user line,
  ``meta["nn_module_stack"]`` the module; with no such frame (AOTAutograd tracing the backward through
  the autograd engine), ``torch.fx.traceback.current_meta``, the metadata torch gives the nodes it creates;
- code generation: ``Scheduler._codegen``'s current scheduler node, through its FX origins;
- C++/Triton compilation and waiting for it: the phase only (one file compiles all kernels on CPU).

Observe only: the thread samples only between torch's compile-start and compile-end callbacks
(``torch._dynamo.callback.callback_handler``: the whole Dynamo compile, and a lazily compiled
backward), only the thread that started that compile, and only compiles its capture receives
(``compiler.capturing.records.receives``). ``install`` registers the two callbacks and starts the
thread; ``uninstall`` removes both callbacks and joins the thread — on exit, error or interrupt.
Reading a running frame's ``f_locals`` copies its locals into a dict (Python ≤ 3.12); nothing is written.

Garbage collection: Python's cycle collector runs on the compiling thread when allocation counts say so,
and a full pass over a big process's objects takes up to seconds (0.78 s seen in a 1.6 s compile, in a
plain script). That pause is the heap's cost, not the line's: a ``gc.callbacks`` hook times every pass on
the compiling thread (exactly: its start and stop), and each sample's interval is split — the collector's
part becomes its own sample (phase ``GC_PHASE``), the rest stays with the line.

How exact: the line read is the one Dynamo is at — the samples of a 600-step unrolled loop matched Dynamo's
own line changes (timed at ``starts_line`` in a probe) to 1 % of the tracing time, rms over ~250 compiles
under load 3–7. A sample stands for the time since the previous one, so a row of n samples is measured
to about ± interval × √n — with intervals that vary, ± √(Σ interval²): the sampler wakes only when the
compiling thread releases the GIL and the OS runs it (on a loaded machine gaps of 50–100 ms happen, and
such a gap's time goes to the line where it ends), and it samples every ``WAITING_INTERVAL_S`` while that
thread only waits for g++ or the compile workers (``mean_interval_s`` says what the interval was).
Gaps also come from the GIL itself: Dynamo's fake-tensor ops release and retake it (torch's bindings drop it
around each op), and every retake moves the GIL's switch number, so the waiting sampler never asks for it and gets
it only when it wins a microseconds-wide race. Seen on Python 3.11: a 600-step unrolled loop traced in 0.35 s got
8–11 samples (gaps of 0.1–0.3 s, each given whole to the line where it ended). So the compiling thread samples
itself where the sampler is late: at the start of each pass of the collector (``gc.callbacks``, which runs on
the thread that allocates — Dynamo's tracing allocates all the time), when the last sample is over
``LATE_AFTER_S`` old, it reads its own stack (``sys._getframe``: no other thread's frames) the same way;
``method()["own_samples"]`` counts them. With it that loop's later compiles got 24–35 samples, not 8–11, and
their gaps over 20 ms summed to 0.07–0.2 s of the 0.35 s, not 0.15–0.39 s (the passes come every ~16 ms there).
"""
from __future__ import annotations

import gc
import sys
import threading
import time
from typing import NamedTuple

from compiler.stages.compile_time import DEFAULT_INTERVAL_S, GC_PHASE, LATE_AFTER_S

# On CPython 3.11, walking another running thread's frames (sys._current_frames(), f_back, f_locals) can crash
# the interpreter when the GIL changes hands mid-walk: CPython gh-111363 (3.11.5, open), the same segfaults in
# Sentry's and Datadog's sampling profilers; here too, twice under load 14 (a GPT-2 capture's compiles). So
# captures sample only where asked to on 3.11 (``capture(sample_compile=True)``) and by default from 3.12 on.
SAFE_BY_DEFAULT = sys.version_info >= (3, 12)
OFF_BY_DEFAULT = (f"compile time by line is off by default on Python {sys.version_info.major}.{sys.version_info.minor}: "
                  "sampling the compiling thread's frames from another thread can crash CPython 3.11 (gh-111363); "
                  "capture(sample_compile=True) turns it on")
# While the compiling thread only waits (for g++ or the compile workers) a sample every 50 ms is as good as
# every 5 ms — those seconds go to no line either way — and costs a tenth: a cold compile waits for g++ for
# most of its time, where 5 ms sampling took 184 ms of CPU from the compile's 2 cores (MLP, fresh process).
WAITING_INTERVAL_S = 0.05
WAITING_PHASES = ("C++ compile", "Waiting for kernel compiles")

# innermost function on the stack (its co_qualname) → the phase, labelled as compiler.stages.timings does
PHASE_MARKERS = {
    "InstructionTranslatorBase.step": "Dynamo tracing",
    "CheckFunctionManager.__init__": "Guard building",
    "OutputGraph.call_user_compiler": "Backend compile",
    "aot_module_simplified": "AOTAutograd",
    "aot_stage1_graph_capture": "AOTAutograd",
    "aot_stage2_compile": "AOTAutograd",
    "_recursive_pre_grad_passes": "Pre-grad passes",
    "_recursive_joint_graph_passes": "Joint-graph passes",
    "_recursive_post_grad_passes": "Post-grad passes",
    "compile_fx_inner": "Inductor",
    "_compile_fx_inner": "Inductor",
    "GraphLowering.run": "Lowering to IR",
    "Scheduler.__init__": "Scheduling & fusion",
    "GraphLowering.codegen": "Code generation",
    "CppCodeCache.load_async": "C++ compile",
    "run_compile_cmd": "C++ compile",
    "AsyncCompile.wait": "Waiting for kernel compiles",
}
# functions whose frame says which user line is being worked on (co_qualname → the local to read)
LINE_SOURCES = {
    "InstructionTranslatorBase.step": "self",
    "Interpreter.run_node": "n",
    "GraphLowering.run_node": "n",
    "Scheduler._codegen": "node",
}
OTHER_PHASE = "Other (compile)"
GC_DETAIL = "Python's cycle collector: a pass over the whole process's objects, not this line's cost"
# one-time work no line is to blame for, by the function on the stack (inside any line source)
SUBPROCESS = "waiting for a subprocess (compiler, ISA probe)"
DETAILS = {
    "_find_and_load": "importing Python modules",  # a first compile in a process imports much of torch
    "Popen.communicate": SUBPROCESS,
    "Popen.wait": SUBPROCESS,
}
_TORCH_DIR: str | None = None  # torch's own source directory (set by install): not the user's code


class Sample(NamedTuple):
    time: float  # time.time() when taken (the clock of torch's chromium events)
    seconds: float  # the time this sample stands for: since the previous sample
    compile_id: str | None
    phase: str
    file: str | None
    line: int | None
    module: str | None  # the nn.Module path, where torch knows it
    detail: str | None = None  # what a sample with no line was doing (importing modules)


def module_path(nn_module_stack) -> str | None:
    """The innermost module of torch's ``nn_module_stack`` (``{key: (source name, type)}``) as a
    dotted path: ``L['self'].layers[0]`` / ``L['self']._modules['layers']._modules['0']`` → ``layers.0``."""
    if not nn_module_stack:
        return None
    try:
        entry = list(nn_module_stack.values())[-1]
    except (AttributeError, TypeError):
        return None
    name = entry[0] if isinstance(entry, tuple) else entry
    return clean_module_name(str(name))


def clean_module_name(name: str) -> str | None:
    import re

    name = re.sub(r"\._modules\[['\"]([^'\"]+)['\"]\]", r".\1", name)
    name = re.sub(r"\[['\"]?([^'\"\]]+)['\"]?\]", r".\1", name)
    for head in ("L.self.", "L.self", "self."):  # the compiled module itself: its children by their paths
        if name.startswith(head):
            name = name[len(head):]
            break
    else:
        name = name[2:] if name.startswith(("L.", "G.")) else name
    return name or None


def stack_trace_line(stack_trace: str | None) -> tuple[str | None, int | None]:
    """The innermost ``File "…", line N`` of an FX node's ``meta["stack_trace"]``."""
    if not stack_trace:
        return None, None
    at = stack_trace.rfind('File "')
    if at < 0:
        return None, None
    end = stack_trace.find('"', at + 6)
    comma = stack_trace.find("line ", end)
    if end < 0 or comma < 0:
        return None, None
    digits = stack_trace[comma + 5:].split(",", 1)[0].split("\n", 1)[0].strip()
    return stack_trace[at + 6:end], int(digits) if digits.isdigit() else None


def _node_where(node) -> tuple[str | None, int | None, str | None]:
    meta = getattr(node, "meta", None) or {}
    file, line = stack_trace_line(meta.get("stack_trace"))
    return file, line, module_path(meta.get("nn_module_stack"))


def _scheduler_node_where(node) -> tuple[str | None, int | None, str | None]:
    """A scheduler node (maybe fused) → the first FX origin that names a user line."""
    for part in node.get_nodes():
        for origin in getattr(getattr(part, "node", None), "origins", None) or ():
            where = _node_where(origin)
            if where[1] is not None:
                return where
    return None, None, None


def _user_translator(tx):
    """The innermost translator tracing the user's code: Dynamo inlines torch's own functions
    (``F.linear`` inside ``nn.Linear.forward``) in translators whose ``parent`` traced the call."""
    found = tx
    while found is not None:
        if _TORCH_DIR is None or not found.f_code.co_filename.startswith(_TORCH_DIR):
            return found
        found = getattr(found, "parent", None)
    return tx


def _traced_meta_where() -> tuple[str | None, int | None, str | None]:
    """Where no frame names a node: the metadata torch gives the FX nodes it creates right now
    (``torch.fx.traceback.current_meta`` under ``preserve_node_meta``). AOTAutograd traces the backward
    through the autograd engine, and its hooks set the forward node's ``stack_trace`` there."""
    traceback = sys.modules.get("torch.fx.traceback")
    if traceback is None or not getattr(traceback, "should_preserve_node_meta", False):
        return None, None, None
    meta = traceback.current_meta
    file, line = stack_trace_line(meta.get("stack_trace"))
    return file, line, module_path(meta.get("nn_module_stack")) if line is not None else None


def read_stack(frame) -> tuple[str, str | None, int | None, str | None, str | None]:
    """(phase, file, line, module, detail) of the compiling thread's innermost frame ``frame``."""
    source = detail = None
    while frame is not None:
        name = frame.f_code.co_qualname
        if source is None and name in LINE_SOURCES:
            source = (name, frame)
        elif detail is None and source is None and name in DETAILS:
            detail = DETAILS[name]
        phase = PHASE_MARKERS.get(name)
        if phase is not None:
            break
        frame = frame.f_back
    else:
        phase = OTHER_PHASE
    if detail is not None:
        return phase, None, None, None, detail
    if source is None:  # the nodes' metadata only while AOTAutograd traces: elsewhere it may be a stale node's
        return (phase, *(_traced_meta_where() if phase == "AOTAutograd" else (None, None, None)), None)
    name, found = source
    value = found.f_locals.get(LINE_SOURCES[name])
    if value is None:
        return phase, None, None, None, detail
    if name == "InstructionTranslatorBase.step":
        user = _user_translator(value)
        return (phase, user.f_code.co_filename, user.lineno, module_path(getattr(value, "nn_module_stack", None)),
                None)
    if name == "Scheduler._codegen":
        return (phase, *_scheduler_node_where(value), None)
    return (phase, *_node_where(value), None)


class CompileSampler:
    """Samples the compiling thread while torch compiles (see the module docstring). ``accepts(compile_id)``
    is called on the compiling thread at compile start: whether this capture wants that compile."""

    def __init__(self, accepts=None, interval_s: float = DEFAULT_INTERVAL_S):
        self.interval_s = interval_s
        self.accepts = accepts or (lambda compile_id: True)
        self.samples: list[Sample] = []
        self.errors = 0  # samples that could not be read (a frame changed under us): counted, skipped
        self.busy_s = 0.0  # time spent taking samples (holding the GIL the compile needs)
        # the sampler thread's whole CPU time: its samples and its waking up (a warm MLP compile: ~3× busy_s; the
        # compiling thread loses about as much again to handing the GIL over, measured as process CPU)
        self.thread_cpu_s = 0.0
        self._target: tuple | None = None  # (thread id, compile id, which start, when) while compiling
        self._last = 0.0  # perf_counter of the last sample of the compile being sampled (its start before one)
        self._taking = threading.Lock()  # one sample at a time: the sampling thread's or the compiling thread's own
        self.own_samples = 0  # samples the compiling thread took itself, the sampler being late
        self._starts = 0  # compiles started: a new one must not count the time since the last one's end
        self._wake = threading.Condition()
        self._stop = False
        self._stopping = threading.Event()  # set by uninstall: wakes the thread from its pause at once
        self._thread: threading.Thread | None = None
        # the collector's passes on the compiling thread while it compiles: [start, stop or None], oldest first;
        # appended by ``_on_gc`` (compiling thread), read and pruned by the sampling thread, both under the GIL
        self._gc_passes: list[list] = []
        self.gc_s = 0.0  # time the collector took from sampled compiles (its samples' seconds)

    # --- torch's callbacks, on the compiling thread -----------------------------------------------
    def _on_start(self, args) -> None:
        compile_id = getattr(args, "compile_id", None)
        compile_id = None if compile_id in (None, "None") else str(compile_id)
        try:
            if not self.accepts(compile_id):
                return
        except Exception:  # noqa: BLE001 — never break torch's compile: this compile is not sampled
            return
        with self._taking, self._wake:  # not while a sample of the last compile is being taken
            self._starts += 1
            self._last = time.perf_counter()
            self._target = (threading.get_ident(), compile_id, self._starts, self._last)
            self._wake.notify()

    def _on_end(self, args) -> None:
        with self._wake:
            self._target = None

    def _on_gc(self, phase: str, info: dict) -> None:
        """``gc.callbacks``: time each pass of the collector on the compiling thread, while it compiles."""
        target = self._target
        if phase == "start":
            if target is not None and target[0] == threading.get_ident():
                now = time.perf_counter()
                if now - self._last > LATE_AFTER_S and self._taking.acquire(blocking=False):
                    try:  # the frame that allocated: this callback's caller
                        if self._take(sys._getframe(1), now, target[1], target[2]) is not None:
                            self.own_samples += 1
                    finally:
                        self._taking.release()
                self._gc_passes.append([time.perf_counter(), None])
        elif self._gc_passes and self._gc_passes[-1][1] is None:
            self._gc_passes[-1][1] = time.perf_counter()

    def _gc_seconds(self, start: float, end: float) -> float:
        """The collector's time on the compiling thread between ``start`` and ``end``; forgets the passes
        that ended before ``end``."""
        passes = list(self._gc_passes)  # the compiling thread may append meanwhile, only ever at the end
        spent = sum(max(0.0, min(end if stopped is None else stopped, end) - max(began, start))
                    for began, stopped in passes)
        done = 0
        while done < len(passes) and passes[done][1] is not None and passes[done][1] <= end:
            done += 1
        del self._gc_passes[:done]
        return spent

    # --- the sampling thread --------------------------------------------------------------------------
    def _loop(self) -> None:
        started_cpu = time.thread_time()
        try:
            self._sample_while_compiling()
        finally:
            self.thread_cpu_s += time.thread_time() - started_cpu

    def _sample_while_compiling(self) -> None:
        current, pause = None, self.interval_s
        while True:
            with self._wake:
                while self._target is None and not self._stop:
                    self._wake.wait()
                if self._stop:
                    return
                thread, compile_id, which, _ = self._target
            if which != current:
                current, pause = which, self.interval_s
            if self._stopping.wait(pause):  # a pause that uninstall cuts short (a join, not a 50 ms sleep)
                return
            with self._taking:
                now = time.perf_counter()
                frame = sys._current_frames().get(thread)
                if frame is None:
                    continue
                try:
                    sample = self._take(frame, now, compile_id, which)
                finally:
                    del frame
            waiting = sample is not None and (sample.phase in WAITING_PHASES or sample.detail == SUBPROCESS)
            pause = max(self.interval_s, WAITING_INTERVAL_S) if waiting else self.interval_s

    def _take(self, frame, now: float, compile_id, which: int) -> Sample | None:
        """One sample of the compiling thread's stack at ``frame``, standing for the time since the last one (the
        line's sample, also where the collector's part was split off), or None where it was not taken. Under
        ``_taking``."""
        if self._target is None or self._target[2] != which:  # that compile ended meanwhile
            return None
        try:
            phase, file, line, module, detail = read_stack(frame)
        except Exception:  # noqa: BLE001 — a frame torch changed mid-read: skip this sample
            self.errors += 1
            self.busy_s += time.perf_counter() - now
            return None
        last, self._last = self._last, now
        seconds = now - last
        collecting = self._gc_seconds(last, now) if self._gc_passes else 0.0
        when = time.time()
        if collecting > 0.0:
            collecting = min(collecting, seconds)
            seconds -= collecting
            self.gc_s += collecting
            self.samples.append(Sample(when, collecting, compile_id, GC_PHASE, None, None, None, GC_DETAIL))
        sample = Sample(when, seconds, compile_id, phase, file, line, module, detail)
        self.samples.append(sample)
        self.busy_s += time.perf_counter() - now
        return sample

    def install(self) -> None:
        global _TORCH_DIR
        import os

        import torch
        from torch._dynamo.callback import callback_handler

        _TORCH_DIR = os.path.dirname(torch.__file__) + os.sep

        self._stop = False
        self._stopping.clear()
        callback_handler.register_start_callback(self._on_start)
        try:
            callback_handler.register_end_callback(self._on_end)
            gc.callbacks.append(self._on_gc)
            self._thread = threading.Thread(target=self._loop, name="tcompile-compile-sampler", daemon=True)
            self._thread.start()
        except BaseException:
            self.uninstall()
            raise

    def uninstall(self) -> None:
        from torch._dynamo.callback import callback_handler

        for callbacks, callback in ((callback_handler.start_callbacks, self._on_start),
                                    (callback_handler.end_callbacks, self._on_end)):
            if callback in callbacks:
                callbacks.remove(callback)
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)
        with self._wake:
            self._stop, self._target = True, None
            self._wake.notify()
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def method(self) -> dict:
        """How the samples were taken, for the stage's ``method``."""
        seconds = [s.seconds for s in self.samples if s.phase != GC_PHASE]  # a split interval counts once
        return {"interval_s": self.interval_s, "samples": len(seconds), "errors": self.errors,
                "mean_interval_s": (sum(seconds) + self.gc_s) / len(seconds) if seconds else None, "busy_s": self.busy_s,
                "thread_cpu_s": self.thread_cpu_s, "gc_s": self.gc_s, "own_samples": self.own_samples}
