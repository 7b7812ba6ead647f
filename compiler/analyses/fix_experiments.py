"""Trying a fix: re-run the captured calls with the change applied and measure before → after.

``try_fix(cap, fix)`` (``Fix.try_()``) and ``try_fixes(cap)`` (``Capture.try_fixes()``: each fix alone,
then the recommended ones together) replay the same function on the same arguments — for recompiles
the same sequence of calls (``cap.live.calls``, or ``calls=``) — compiled with the capture's
``torch.compile`` options, under the fix's ``torch._dynamo.config`` patch, compile keyword arguments
and ``mark_dynamic`` marks, with every call recorded by the capture engine (``compiler.capturing.session.Recorder``).

Each run starts from a fresh Dynamo state (``torch._dynamo.reset()``, as ``compiler.run`` does: the
caches of earlier compiles, and so a live capture's what-if guards, are dropped) and puts back what it
changed — the config patch, the stance, every hook — also when the run fails or is interrupted.
Marks go on copies of the arguments (``compiler.capturing.runtime.copy_arguments``), never on the caller's
tensors; what the function prints is discarded.

Outputs are judged like for like (``compiler.analyses.fix_verdicts``): the compile without the fix against
eager, with it against eager, and with against without; a fix ``changes results`` only where it moves the
outputs further from eager than compiling without it did (or where ``check=``, your own comparison, says so).
``failed`` and ``changes results`` are never recommended. Untimed, the experiments run one after the other in
this process; timed (``timing=True``, or any fix for run time or guards) each runs in a worker process, compiled
side by side and timed interleaved with the baseline and eager (``compiler.analyses.fix_workers``).

    cap = compiler.analyses.fix_experiments.capture_calls(model, [(x4,), (x8,)], backend="eager")
    cap.try_fixes()          # → cap.fixes(), each with .result; .combined for the fixes together
"""
from __future__ import annotations

import builtins
import contextlib
import importlib
import inspect
import io
import time

from compiler.stages.fix_schema import (CHANGES_RESULTS, FAILED, FINDINGS, GUARDS, INTERRUPTED, MEASURED, RUNTIME,
                                       STOPPED, FixMeasure, FixResult)
from compiler.reference.options import COMPILE_KWARGS
from compiler.stages.capture import METHODS

TIMING_REPEAT = 5


class Replay:
    """What an experiment re-runs: ``fn``, its calls as ``(args, kwargs)``, the ``torch.compile`` options."""

    def __init__(self, fn, calls, compile_kwargs: dict, from_capture: bool, no_grad: bool = False):
        self.fn, self.calls, self.compile_kwargs, self.from_capture = fn, calls, compile_kwargs, from_capture
        self.no_grad = no_grad  # the capture's graphs were all inference graphs: replay under torch.no_grad()
        self.eager_outputs = None

    def grad_mode(self):
        import torch

        return torch.no_grad() if self.no_grad else contextlib.nullcontext()


def normalize_calls(calls) -> list[tuple[tuple, dict]]:
    """``[(x,), (y,)]`` (argument tuples) or ``[((x,), {"k": v}), …]`` → ``[(args, kwargs), …]``."""
    out = []
    for call in calls:
        if isinstance(call, tuple) and len(call) == 2 and isinstance(call[0], tuple) and isinstance(call[1], dict):
            out.append((call[0], dict(call[1])))
        elif isinstance(call, tuple):
            out.append((call, {}))
        else:
            out.append(((call,), {}))
    return out


def replay_of(cap, fn=None, calls=None, overrides: dict | None = None) -> Replay:
    """The function, calls and compile options an experiment replays for ``cap`` (see the module);
    ``overrides``: torch.compile options that replace the capture's."""
    from compiler.analyses.whatif import _original

    live = cap.live
    own = fn is None and calls is None
    if fn is None:
        fn = _original(live.compiled_fn) if live is not None and live.compiled_fn is not None else None
    if calls is None and live is not None:
        calls = live.calls or ([(tuple(live.args), dict(live.kwargs or {}))] if live.args is not None else None)
    if fn is None or calls is None:
        raise RuntimeError("trying a fix re-runs the captured calls, which needs the live function: this capture "
                           + ("was loaded from a file" if live is None else "was made with compiler.capture()")
                           + " — pass fn= and calls= (a list of argument tuples), or capture with compiler.explore / "
                           "compiler.analyses.fix_experiments.capture_calls")
    options = cap.options or {}
    compile_kwargs = {k: options[k] for k in COMPILE_KWARGS if k in options and options[k] is not None
                      and isinstance(options[k], (str, bool, int, dict))}
    compile_kwargs.setdefault("backend", "inductor")
    backend = compile_kwargs.get("backend")
    if (not overrides or "backend" not in overrides) and isinstance(backend, str) and "." in backend:
        raise RuntimeError(f"the capture was compiled with a backend function ({backend}); the capture keeps only "
                           "its name: pass compile_kwargs={'backend': <that function>}")
    if overrides:  # torch.compile options instead of the capture's (e.g. a backend object)
        own = False
        compile_kwargs.update(overrides)
    aot = [c.aot for c in cap.compiles if c.aot.available]
    no_grad = bool(aot) and not any(a.training for a in aot)  # the captured calls ran without autograd
    return Replay(fn, normalize_calls(calls), compile_kwargs, from_capture=own and live.compiled_fn is not None,
                  no_grad=no_grad)


def capture_calls(fn, calls, **compile_kwargs):
    """Compile ``fn`` once and call it on each of ``calls`` under capture (as a training or serving loop
    would, e.g. batches of different sizes); the capture keeps the calls, so ``cap.try_fixes()`` replays
    the same sequence."""
    import torch

    from compiler.capturing.session import Recorder
    from compiler.analyses.whatif import LiveState

    calls = normalize_calls(calls)
    live = LiveState(args=calls[0][0], kwargs=calls[0][1], calls=calls)
    torch._dynamo.reset()
    recorder = Recorder(suppress_errors=True, live=live,
                        options={"backend": "inductor", **_jsonable(compile_kwargs), "calls": len(calls)})
    with recorder:
        live.compiled_fn = torch.compile(fn, **compile_kwargs)
        for args, kwargs in calls:
            live.result = live.compiled_fn(*args, **kwargs)
    return recorder.build()


def _jsonable(value):
    from compiler.reference.options import jsonable

    return jsonable(value)


# --- one run --------------------------------------------------------------------------------------

def resolved_config(config: dict) -> dict:
    """A fix's config patch as ``torch._dynamo.config.patch`` takes it: callables named in
    ``reorderable_logging_functions`` looked up and added to the current set."""
    import torch

    out = dict(config)
    if "reorderable_logging_functions" in out:
        functions = set(torch._dynamo.config.reorderable_logging_functions)
        for name in out["reorderable_logging_functions"]:
            functions.add(_named(name))
        out["reorderable_logging_functions"] = functions
    return out


def _named(name: str):
    if "." not in name:
        return getattr(builtins, name)
    module, _, attribute = name.rpartition(".")
    return getattr(importlib.import_module(module), attribute)


class Change:
    """What an experiment applies: the fixes' changes merged (``_merged``)."""

    def __init__(self, config=None, compile_kwargs=None, marks=(), inductor_config=None, matmul_precision=None,
                 tolerance=None):
        self.config, self.compile_kwargs, self.marks = config or {}, compile_kwargs or {}, list(marks)
        self.inductor_config, self.matmul_precision = inductor_config or {}, matmul_precision
        self.tolerance = tolerance or {}


def _merged(fixes) -> Change:
    """The changes of ``fixes`` together: lists joined, the larger limit, ``options`` merged (one guard
    filter: the first fix's, the highest ranked)."""
    change = Change()
    for fix in fixes:
        for key, value in fix.config.items():
            if key == "reorderable_logging_functions":
                change.config[key] = sorted(set(change.config.get(key, [])) | set(value))
            elif key == "recompile_limit":
                change.config[key] = max(change.config.get(key, 0), value)
            else:
                change.config[key] = value
        for key, value in fix.compile_kwargs.items():
            if key == "options":
                options = change.compile_kwargs.setdefault("options", {})
                for name, option in value.items():
                    if name != "guard_filter_fn" or name not in options:
                        options[name] = option
            else:
                change.compile_kwargs[key] = value
        change.inductor_config.update(fix.inductor_config)
        change.matmul_precision = fix.matmul_precision or change.matmul_precision
        for key, value in fix.tolerance.items():
            change.tolerance[key] = max(change.tolerance.get(key, 0.0), value)
        change.marks += [m for m in fix.marks
                         if (m.argument, m.dim, m.static) not in {(n.argument, n.dim, n.static) for n in change.marks}]
    return change


def compile_options(base: dict, change: dict) -> dict:
    """``torch.compile`` keyword arguments: the capture's, then the change's (``options`` merged, a guard
    filter named as ``torch.compiler.<name>`` looked up). torch takes ``mode`` or ``options``, not both: with
    both, the mode becomes its options (``torch._inductor.list_mode_options``), as torch would apply it."""
    import torch

    kwargs = {**base, **{k: v for k, v in change.items() if k != "options"}}
    options = {**(base.get("options") or {}), **(change.get("options") or {})}
    if isinstance(options.get("guard_filter_fn"), str):
        options["guard_filter_fn"] = _named(options["guard_filter_fn"])
    if options:
        mode = kwargs.pop("mode", None)
        if mode and mode != "default":
            options = {**torch._inductor.list_mode_options(mode, kwargs.get("dynamic")), **options}
        kwargs["options"] = options
    return kwargs


def _marked(fn, args, kwargs, marks, statics: dict | None = None):
    """Copies of the arguments, with ``mark_dynamic`` applied to the named ones (the caller's stay unmarked).
    An argument marked static (``mark_static_address``) is copied once per run (``statics``: by the
    caller's tensor), so every call passes the same tensor, as a user marking it once would."""
    import torch

    from compiler.capturing.runtime import copy_arguments
    from compiler.analyses.whatif import target_function

    originals = (list(args), dict(kwargs))
    args, kwargs = copy_arguments(args, kwargs)
    if not marks:
        return args, kwargs
    args = list(args)
    target = target_function(fn)
    signature = inspect.signature(fn if isinstance(fn, torch.nn.Module) else target)
    names = list(signature.parameters)
    for mark in marks:
        if mark.position is not None and mark.position < len(args):
            where = ("args", mark.position)
        elif mark.argument in kwargs:
            where = ("kwargs", mark.argument)
        elif mark.argument in names and names.index(mark.argument) < len(args):
            where = ("args", names.index(mark.argument))
        else:
            raise ValueError(f"no argument {mark.argument!r} in the call to mark "
                             + ("static" if mark.static else "dynamic"))
        holder, original = (args, originals[0]) if where[0] == "args" else (kwargs, originals[1])
        value = holder[where[1]]
        if mark.static and isinstance(value, torch.Tensor):
            if statics is None or id(original[where[1]]) not in statics:
                torch._dynamo.mark_static_address(value)
                if statics is not None:
                    statics[id(original[where[1]])] = value
            holder[where[1]] = statics[id(original[where[1]])] if statics is not None else value
            continue
        if isinstance(value, torch.Tensor):
            if mark.maybe:
                torch._dynamo.maybe_mark_dynamic(value, mark.dim)
            else:
                torch._dynamo.mark_dynamic(value, mark.dim)
    return tuple(args), kwargs


def _kept(output):
    """A copy of a call's tensors: with CUDA graphs (reduce-overhead, max-autotune) the next replay writes
    its output into the same memory, so the outputs of every call are compared as they came."""
    import torch
    import torch.utils._pytree as pytree

    return pytree.tree_map(lambda t: t.detach().clone() if isinstance(t, torch.Tensor) else t, output)


@contextlib.contextmanager
def _matmul_precision(precision: str | None):
    """``torch.set_float32_matmul_precision`` for the run, the previous one put back after."""
    import torch

    previous = torch.get_float32_matmul_precision()
    try:
        if precision:
            torch.set_float32_matmul_precision(precision)
        yield
    finally:
        if torch.get_float32_matmul_precision() != previous:
            torch.set_float32_matmul_precision(previous)


# the artifact loggers an experiment listens to: recompile reasons and CUDA-graph skips, not the Inductor IR
EXPERIMENT_ARTIFACT_LOGS = ("recompiles", "cudagraphs_trees", "cudagraphs_utils")


class Run:
    """One compile-and-call of a replay, still inside its config patches (``compiled_run``): the capture, the
    outputs, the compiled function and the arguments to time it on."""

    def __init__(self):
        self.cap = self.recorder = self.compiled = None
        self.outputs: list = []
        self.args: tuple = ()
        self.kwargs: dict = {}

    @property
    def error(self) -> str | None:
        cap = self.cap
        if cap is None or not cap.error:
            return None
        error = f"{cap.error.type}: {cap.error.message.splitlines()[0] if cap.error.message else ''}"
        if cap.error.cause:
            error += f" — caused by {cap.error.cause.splitlines()[0]}"
        return error

    def measure(self, runtime: dict | None = None) -> FixMeasure:
        measure = measure_of(self.cap, self.recorder.counters, runtime)
        measure.__dict__["_capture"] = self.cap  # for the before/after diff (diff_of); kept in memory, never saved
        return measure


@contextlib.contextmanager
def compiled_run(replay: Replay, change: Change | None = None):
    """Compile and call ``replay`` with the change, fresh Dynamo state, under capture; yields a ``Run`` while the
    change is still applied (so the compiled function can be timed as compiled). Everything is put back on the
    way out (context managers), Dynamo reset."""
    import torch

    from compiler.capturing.session import Recorder
    from compiler.analyses.whatif import LiveState

    change = change or Change()
    kwargs = compile_options(replay.compile_kwargs, change.compile_kwargs)
    run = Run()
    # no compile-by-line sampling and no Inductor IR: an experiment compares counts and torch's own compile
    # seconds; the sampler's thread and Inductor's formatting of its IR would only add to the compile it measures
    run.recorder = Recorder(suppress_errors=True, live=LiveState(), options=_jsonable({**kwargs, "experiment": True}),
                            sample_compile=False, artifact_logs=EXPERIMENT_ARTIFACT_LOGS)
    statics: dict = {}
    torch._dynamo.reset()
    # torch's AOTAutograd cache key leaves out mark_static_address (torch 2.11 and 2.13): a run with an input
    # marked static hits the entry of the run without the mark, which was compiled for a changing address
    # (its CUDA graphs skipped for the "mutated input" the mark is there to fix)
    uncached = {"enable_autograd_cache": False} if any(m.static for m in change.marks) else {}
    try:
        with torch._dynamo.config.patch(**resolved_config(change.config)), \
                torch._inductor.config.patch(change.inductor_config), _matmul_precision(change.matmul_precision), \
                torch._functorch.config.patch(uncached), replay.grad_mode(), contextlib.redirect_stdout(io.StringIO()):
            with run.recorder:
                run.compiled = torch.compile(replay.fn, **kwargs)
                for args, call_kwargs in replay.calls:
                    args, call_kwargs = _marked(replay.fn, args, call_kwargs, change.marks, statics)
                    run.outputs.append(_kept(run.compiled(*args, **call_kwargs)))
            run.cap = run.recorder.build()
            run.args, run.kwargs = _marked(replay.fn, *replay.calls[-1], change.marks, statics)
            yield run
    finally:
        torch._dynamo.reset()


def run_once(replay: Replay, change: Change | None = None, timing: bool = False):
    """``compiled_run`` → (FixMeasure, outputs, error text or None); ``timing``: the compiled and the eager call
    timed interleaved (``time_interleaved``) while the change is applied."""
    with compiled_run(replay, change) as run:
        runtime = None
        if timing and run.cap.error is None:
            from compiler.capturing.runtime import time_interleaved

            runtime = time_interleaved(replay.fn, run.compiled, run.args, run.kwargs, repeat=TIMING_REPEAT)
    return run.measure(runtime), run.outputs, run.error


def measure_of(cap, counters: dict, runtime: dict | None = None) -> FixMeasure:
    s = cap.summary
    measure = FixMeasure(
        graphs=s.graphs, graph_breaks=s.graph_breaks, recompiles=s.recompiles, compiles=s.compiles,
        frames_skipped=sum(c.status in ("skipped", "failed") for c in cap.compiles), guards=s.guards,
        compile_s=round(s.compile_time_s, 4),
        recompile_limit_hit=bool(cap.recompile_limits)
        or any("recompile limit" in (b.headline or "").lower() for b in cap.breaks.items),
        counters=counter_summary(counters))
    latencies = [c.guards.latency_us for c in cap.compiles if c.guards.available and c.guards.latency_us is not None]
    measure.guard_latency_us = round(sum(latencies), 3) if latencies else None
    cudagraphs = getattr(cap, "cudagraphs", None)
    if cudagraphs is not None and cudagraphs.available:
        measure.cudagraph_skips = len(cudagraphs.skip_reasons)
    if runtime and runtime.get("available"):
        measure.runtime_s = runtime["compiled"]["median_s"]
        measure.eager_runtime_s = runtime["eager"]["median_s"]
        measure.busy = bool(runtime.get("busy"))
    return measure


def counter_summary(counters: dict) -> dict:
    """torch's dynamo counters of one run, the parts a fix changes: frames, graphs, graph breaks."""
    return {"frames": dict(counters.get("frames", {})), "unique_graphs": counters.get("stats", {}).get("unique_graphs", 0),
            "graph_break": sum(counters.get("graph_break", {}).values()),
            "unimplemented": sum(counters.get("unimplemented", {}).values())}


def outputs_match(actual, expected, tolerance: dict | None = None) -> tuple[bool, str]:
    """Equal within the dtype's tolerance (``torch.testing.assert_close`` defaults, NaN equal to NaN), or,
    for a change that rounds by design (``tolerance={"relative_norm": r}``, TF32), each tensor's
    ‖actual − expected‖₂ / ‖expected‖₂ at most r, with shapes and dtypes equal."""
    import torch

    if tolerance and "relative_norm" in tolerance:
        return _relative_norm_match(actual, expected, tolerance["relative_norm"])
    try:
        torch.testing.assert_close(actual, expected, equal_nan=True)
    except AssertionError as exc:
        return False, str(exc).strip().splitlines()[0][:300]
    except Exception as exc:  # noqa: BLE001 — outputs of kinds assert_close does not compare
        try:
            return bool(actual == expected), f"compared with == ({type(exc).__name__} from assert_close)"
        except Exception:  # noqa: BLE001
            return False, f"outputs could not be compared: {type(exc).__name__}: {exc}"
    return True, "torch.testing.assert_close at the dtype's default tolerance"


def _relative_norm_match(actual, expected, limit: float) -> tuple[bool, str]:
    import torch
    import torch.utils._pytree as pytree

    got, want = pytree.tree_leaves(actual), pytree.tree_leaves(expected)
    if len(got) != len(want):
        return False, f"{len(got)} outputs, eager gave {len(want)}"
    worst = 0.0
    for a, b in zip(got, want):
        if not isinstance(b, torch.Tensor):
            if a != b:
                return False, f"a non-tensor output differs: {a!r} vs eager {b!r}"
            continue
        if not isinstance(a, torch.Tensor) or a.shape != b.shape or a.dtype != b.dtype:
            return False, "an output's shape or dtype differs from eager's"
        a64, b64 = a.detach().double(), b.detach().double()
        scale = b64.norm().item()
        error = (a64 - b64).norm().item()
        worst = max(worst, error / scale if scale else (0.0 if error == 0 else float("inf")))
    verdict = "within" if worst <= limit else "beyond"
    return worst <= limit, (f"largest relative error ‖after − eager‖₂/‖eager‖₂ = {worst:.2e}, {verdict} the fix's "
                            f"stated tolerance {limit:g}")


def eager_outputs(replay: Replay) -> list:
    from compiler.capturing.runtime import copy_arguments

    if replay.eager_outputs is None:
        outputs = []
        with contextlib.redirect_stdout(io.StringIO()), replay.grad_mode():
            for args, kwargs in replay.calls:
                args, kwargs = copy_arguments(args, kwargs)
                outputs.append(replay.fn(*args, **kwargs))
        replay.eager_outputs = outputs
    return replay.eager_outputs


class Baseline:
    """The compile without any fix: its counts (``measure``), where they come from, and its outputs."""

    def __init__(self, measure: FixMeasure | None, source: str, outputs=None, error: str | None = None):
        self.measure, self.source, self.outputs, self.error = measure, source, outputs, error


def baseline(cap, replay: Replay, before: str = "measure") -> Baseline:
    """The before numbers and outputs, measured by the same replay without a change (the same process state as the
    experiments, so compile seconds compare). ``before="capture"``: the capture's own counts, where the
    experiment replays exactly its calls (the outputs are still those of a compile without the fix)."""
    measure, outputs, error = run_once(replay)
    if before == "capture" and replay.from_capture and cap.error is None:
        captured = measure_of(cap, cap.counters)
        captured.__dict__["_capture"] = cap
        return Baseline(captured, "the capture", outputs)
    return Baseline(measure, "measured", outputs, error)


def goal_of(fixes) -> str:
    """What a set of fixes is for: their common goal, else findings (any fix for findings is judged on them)."""
    goals = {f.goal for f in fixes}
    return goals.pop() if len(goals) == 1 else FINDINGS


def needs_timing(fixes) -> bool:
    """A fix for runtime or guards is judged on the timed run: never recommended unmeasured."""
    return any(f.goal != FINDINGS for f in fixes)


def judged(result: FixResult, after: FixMeasure, outputs, base: Baseline, expected, change: Change, check=None):
    """``result`` with its after counts, the three comparisons and the verdict on outputs."""
    from compiler.analyses.fix_verdicts import CHANGES_RULE, three_way

    result.after = after
    if base.outputs is None:  # no compile without the fix to compare with: against eager only
        result.outputs_equal, result.output_note = outputs_match(outputs, expected, change.tolerance)
    else:
        result.outputs_equal, result.output_note, result.comparisons = three_way(
            base.outputs, outputs, expected, change.tolerance, check)
    result.output_rule = "your check= (instead of the default)" if check is not None else CHANGES_RULE
    result.status = MEASURED if result.outputs_equal else CHANGES_RESULTS
    return result


def experiment(replay: Replay, fixes, base: Baseline, timing: bool = False, check=None) -> FixResult:
    """One experiment in this process: the fixes' changes merged, compiled and called in a fresh Dynamo state."""
    change = _merged(fixes)
    start = time.perf_counter()
    result = FixResult(before=base.measure, before_from=base.source, calls=len(replay.calls),
                       fixes=[f.id for f in fixes], goal=goal_of(fixes), where="this process")
    try:
        expected = eager_outputs(replay)
        measure, outputs, error = run_once(replay, change, timing=timing)
    except KeyboardInterrupt:
        result.status, result.error = INTERRUPTED, "interrupted (KeyboardInterrupt); torch state was put back"
        result.seconds = time.perf_counter() - start
        raise
    except Exception as exc:  # noqa: BLE001 — a change that fails is a result
        result.status, result.error = FAILED, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        result.seconds = time.perf_counter() - start
        return result
    result.seconds = round(time.perf_counter() - start, 4)
    if error:  # what a failed run counted is not an "after" to compare
        return _failed(result, error)
    return judged(result, measure, outputs, base, expected, change, check)


def _failed(result: FixResult, error: str) -> FixResult:
    result.status, result.error = FAILED, error
    if result.goal == GUARDS:
        result.error += (" (with these guards skipped, a compile may have run for a module or value it was not "
                         "compiled for: what the filter gives up)")
    return result


# --- the API --------------------------------------------------------------------------------------

def try_fix(cap, fix, fn=None, calls=None, timing: bool = False, before: str = "measure",
            compile_kwargs: dict | None = None, check=None, progress=None) -> FixResult:
    """Try one fix (``Fix.try_()``): its result is kept on the fix (and so saved with the capture). ``check``: your
    own comparison ``check(actual, expected) → bool`` per replayed call, instead of the default (see
    ``fix_verdicts``)."""
    if not fix.applicable:
        raise ValueError(f"{fix.id} is a code change ({fix.title}): apply it yourself; it is never applied "
                         "behind your back")
    replay = replay_of(cap, fn, calls, compile_kwargs)
    results = _run(cap, replay, [[fix]], timing or needs_timing([fix]), before, check, progress, None)
    return results[0]


class _Holder:
    """Marks a fix interrupted when an interrupt leaves it without a result."""

    def __init__(self, fix):
        self.fix, self.previous = fix, fix.result

    def keep_interrupted(self):
        if self.fix.result is self.previous:
            self.fix.result = FixResult(status=INTERRUPTED, error="interrupted before it finished")


def try_fixes(cap, fn=None, calls=None, timing: bool = False, only=None, progress=None, before: str = "measure",
              compile_kwargs: dict | None = None, should_stop=None, check=None, concurrency: int | None = None,
              on_result=None, budget_s=None, deadline_s: float | None = None):
    """Each applicable fix alone, then the recommended ones together (``Fixes.combined``, when more than one is
    recommended — reported also when it fails, and never recommended then); the fixes then listed recommended
    first, by measured gain. ``only``: fix ids to try. ``progress(done, total, text)`` is told which fix, the
    time spent and an estimate of the time left. ``should_stop()`` is asked before each experiment (the
    explorer's Stop): once true, the fixes left are not tried, nothing is combined, and what finished is kept.
    ``check``: your own output comparison (see ``try_fix``). ``timing`` (or any fix for run time or guards): the
    experiments run in worker processes, compiled side by side (``concurrency`` at once) and timed one at a
    time, interleaved with the baseline and eager (``compiler.analyses.fix_workers``).

    Bounds, for a model whose compiles are long (each stop says so in its result, never as a verdict):
    ``budget_s`` — the seconds one experiment's compile may take in its worker (a number for every fix, or
    {fix kind or id: seconds}), besides the stop at 5× the baseline's compile; ``deadline_s`` — the seconds the
    whole try may take: then nothing more starts, running compiles are stopped and the combination is left out.
    ``on_result(fixes, result)``: told as each experiment finishes (the fixes it applied, its FixResult)."""
    begun = time.perf_counter()
    fixes = cap.fixes()
    todo = [f for f in fixes.items if f.applicable and (only is None or f.id in only)]
    replay = replay_of(cap, fn, calls, compile_kwargs)
    timing = timing or needs_timing(todo)
    groups = experiments_of(todo)
    info: dict = {"notes": []}
    results = _run(cap, replay, groups, timing, before, check, progress, should_stop, concurrency,
                   on_result=on_result, budgets=_budgets(groups, budget_s), deadline_s=deadline_s, info=info)
    fixes.noise, fixes.drift = info.get("noise"), info.get("drift")
    _with_floors([r for r in results if r is not None], fixes.noise)
    _one_guard_filter(todo)
    out_of_time = deadline_s is not None and time.perf_counter() - begun > deadline_s
    stopped = [f for group, r in zip(groups, results)  # not tried, or cut off by the deadline
               if r is None or (out_of_time and r.status == STOPPED) for f in group]
    if stopped:
        fixes.combined = None
        why = f"the time budget of {deadline_s:.0f} s ran out" if out_of_time else "stopped"
        fixes.note = (f"{why} after {len(todo) - len(stopped)} of {len(todo)} changes: "
                      f"{', '.join(f.id for f in stopped)} not tried or stopped; nothing combined")
        _noted(fixes, info["notes"])
        if progress:
            progress(1, 1, "stopped")
        _rerank(fixes)
        return fixes
    chosen = [f for f in todo if f.result and f.result.recommended and f.result.fixes[:1] == [f.id]]
    fixes.combined = None
    left = None if deadline_s is None else deadline_s - (time.perf_counter() - begun)
    if len(chosen) > 1 and left is not None and left < max(f.result.seconds or 0.0 for f in chosen):
        fixes.note = (f"{len(chosen)} changes recommended; not tried together: {max(left, 0):.0f} s left of the time "
                      f"budget of {deadline_s:.0f} s, less than they took alone")
    elif len(chosen) > 1:
        if progress:
            progress(len(todo), len(todo) + 1, "trying the recommended fixes together")
        together: dict = {"notes": []}
        fixes.combined = _run(cap, replay, [chosen], timing, before, check, None, None, concurrency,
                              keep=False, on_result=on_result, deadline_s=left, info=together)[0]
        info["notes"] += together["notes"]
        _with_floors([fixes.combined] if fixes.combined else [], fixes.noise)
        if fixes.combined is None:
            fixes.note = (f"{len(chosen)} changes recommended; not tried together: the time budget of "
                          f"{deadline_s:.0f} s ran out")
        elif fixes.combined.status == STOPPED:
            fixes.note = "the recommended fixes together: stopped — no verdict"
        else:
            fixes.note = ("the recommended fixes together: " + fixes.combined.status
                          + ("" if fixes.combined.recommended else " — not recommended together"))
    elif chosen:
        fixes.note = f"one change recommended: {chosen[0].id}"
    else:
        fixes.note = "no change measured better with outputs no further from eager" if todo else "no change to try"
    _noted(fixes, info["notes"])
    _rerank(fixes)
    if progress:
        progress(1, 1, "done")
    return fixes


def experiments_of(todo: list) -> list[list]:
    """The experiments to run: fixes that apply the same change (``fixes.change_key``) are one, listing them all;
    changes for run time first (their compiles are the longest, and a deadline must not leave them last), then
    the rest in their ranking."""
    from compiler.analyses.fixes import change_key

    by_change: dict = {}
    for fix in todo:
        by_change.setdefault(change_key(fix) or fix.id, []).append(fix)
    groups = list(by_change.values())
    return sorted(groups, key=lambda group: group[0].goal != RUNTIME)


def _noted(fixes, notes: list) -> None:
    if notes:
        fixes.note = "; ".join([fixes.note or "", *notes]).lstrip("; ")


def _with_floors(results: list, noise) -> None:
    """Every timed result judged against the run's noise floor (the A/A experiment's)."""
    from compiler.analyses.fix_verdicts import noise_floor

    if noise is None or noise.timing is None:
        return
    runtime, guards = noise_floor(noise.timing), noise_floor(noise.guard_timing)
    noise.noise_floor, noise.guard_noise_floor = runtime, guards
    for result in results:
        result.noise_floor, result.guard_noise_floor = runtime, guards


def _one_guard_filter(todo: list) -> None:
    """torch.compile takes one guard filter: of those recommended, the one whose guard check measured fastest
    stays recommended, the others say why not."""
    filters = [f for f in todo if f.result and f.result.recommended and f.goal == GUARDS]
    if len(filters) < 2:
        return
    best = min(filters, key=lambda f: f.result.guard_timing.ratio)
    for fix in filters:
        if fix is not best:
            fix.result.outranked = (f"torch.compile takes one guard filter and {best.id} ({best.kind}) measured a "
                                    f"faster guard check ({best.result.guard_timing.ratio:.2f}× against "
                                    f"{fix.result.guard_timing.ratio:.2f}×)")


def _budgets(groups: list, budget_s) -> dict:
    """{experiment index: compile seconds} from ``try_fixes``' ``budget_s`` (a number, or by fix kind or id)."""
    if budget_s is None:
        return {}
    if isinstance(budget_s, dict):
        found = {n: next((budget_s[k] for f in group for k in (f.id, f.kind) if k in budget_s), None)
                 for n, group in enumerate(groups)}
        return {n: float(s) for n, s in found.items() if s is not None}
    return {n: float(budget_s) for n in range(len(groups))}


# the order of the list once tried (``_rerank``), by verdict; within one, recommended by measured gain, else by cost
ORDER = ("Recommended", "Not chosen", "No gain", "Worse", "Changes results", "Failed", "Stopped", "Interrupted",
         "Not tried")
ORDER_TEXT = ("recommended first, by measured gain; then not chosen, no gain, worse, changes results, failed, "
              "stopped, not tried — each in its ranking by cost")


def _rerank(fixes) -> None:
    """Once tried, in ``ORDER``: the recommended first, by measured gain (``fix_verdicts.gain_score``); then each
    verdict in turn, in the ranking by cost; code changes last. Ids stay as proposed."""
    from compiler.analyses.fix_verdicts import gain_score

    order = {id(f): n for n, f in enumerate(fixes.items)}

    def key(fix):
        verdict = fix.result.verdict if fix.result else "Not tried"
        rank = ORDER.index(verdict) if verdict in ORDER else len(ORDER)
        return (not fix.applicable, rank, -(gain_score(fix.result) if verdict == "Recommended" else 0.0),
                order[id(fix)])

    fixes.items.sort(key=key)


def _run(cap, replay: Replay, groups: list, timing: bool, before: str, check, progress, should_stop,
         concurrency=None, keep: bool = True, on_result=None, budgets: dict | None = None,
         deadline_s: float | None = None, info: dict | None = None) -> list:
    """Each group of fixes tried together → its FixResult (None: not tried, stopped); ``keep``: each one-fix
    group's result set on its fix; ``on_result(group, result)`` told as each finishes. ``budgets`` ({group index:
    seconds of compile}) and ``deadline_s`` bound the worker processes; in this process a compile cannot be cut
    off, so there the deadline only keeps the next experiment from starting."""
    info = {"notes": []} if info is None else info
    if timing:
        return _run_in_workers(replay, groups, check, progress, should_stop, concurrency, keep, on_result, budgets,
                               deadline_s, info)
    start = time.perf_counter()
    if deadline_s is not None:
        asked = should_stop
        should_stop = lambda: time.perf_counter() - start > deadline_s or (asked is not None and asked())  # noqa: E731
    if progress:
        progress(0, len(groups) + 1, "compiling the baseline (no fix)")
    base = baseline(cap, replay, before)
    if base.error:
        base.outputs = None  # a baseline that failed is no reference: compare with eager only
    else:
        info["drift"] = _drift(base.outputs, replay)
    results = []
    for done, group in enumerate(groups):
        if should_stop is not None and should_stop():
            results += [None] * (len(groups) - done)
            break
        if progress:
            spent = time.perf_counter() - start
            left = f", about {spent / done * (len(groups) - done):.0f} s left" if done else ""
            progress(done, len(groups) + 1, f"trying {'+'.join(f.id for f in group)} ({group[0].kind}) — {done} of "
                                            f"{len(groups)} done, {spent:.0f} s spent{left}")
        holders = [_Holder(f) for f in group] if keep else []
        try:
            result = experiment(replay, group, base, False, check)
            for holder in holders:
                holder.fix.result = result
        finally:
            for holder in holders:
                holder.keep_interrupted()
        results.append(result)
        if on_result is not None:
            on_result(group, result)
    if base.source == "measured" and len(groups) > 1 and any(results):
        # compile seconds vary with what ran before (lazy imports, warm caches) and with the machine's load:
        # the baseline is compiled again after the experiments, and the lower of its two times is "before"
        again, _, _ = run_once(replay)
        if again.compile_s is not None and base.measure.compile_s is not None and \
                again.compile_s < base.measure.compile_s:
            base.measure.compile_s = again.compile_s
        for result in results:
            if result is not None and result.before is base.measure:
                result.before_from = "measured (compile time: the lower of 2 runs)"
    return results


# compiler.analyses.fix_workers puts its run_pool and default_concurrency here when imported (compiler/__init__
# imports it): its worker processes run this module's compiled_run, so this module never imports it
WORKERS: dict = {}


def _drift(outputs, replay: Replay):
    """The compile without any fix against eager, per output (``compiler.analyses.drift``); None if it cannot be
    measured."""
    from compiler.analyses.drift import measure

    if outputs is None:
        return None
    try:
        return measure(outputs, eager_outputs(replay))
    except Exception:  # noqa: BLE001 — outputs of kinds it cannot compare: no drift finding, the verdicts stand
        return None


AA = "aa"  # the A/A experiment's key: the baseline against itself in a second worker


def _run_in_workers(replay: Replay, groups: list, check, progress, should_stop, concurrency, keep: bool,
                    on_result=None, budgets: dict | None = None, deadline_s: float | None = None,
                    info: dict | None = None) -> list:
    """Each group's FixResult, judged (and kept on its fixes, and handed to ``on_result``) as soon as its worker is
    done; None where it never started (stopped by the user or the deadline). With more than one experiment the
    first is an A/A experiment (no change: the baseline against itself in a second worker), its result in
    ``info["noise"]``: the run's noise floor. ``info["notes"]``: what went wrong cleaning up; ``info["drift"]``."""
    info = {"notes": []} if info is None else info
    plans = [(n, f"{'+'.join(f.id for f in group)} ({'+'.join(f.kind for f in group)})", _merged(group))
             for n, group in enumerate(groups)]
    if keep and groups:
        plans.insert(0, (AA, "the baseline again (A/A: the noise floor)", Change()))
    expected = eager_outputs(replay)
    where = (f"worker processes ({WORKERS['default_concurrency'](len(plans)) if concurrency is None else concurrency}"
             " compiling at once, each with an empty Inductor cache directory: every compile cold)")
    results: dict = {}
    baseline_of: dict = {}

    def done(n, outcome, base_outcome):
        if "base" not in baseline_of:
            baseline_of["base"] = _worker_baseline(base_outcome)
            if baseline_of["base"] is not None:
                info["drift"] = _drift(baseline_of["base"].outputs, replay)
        if n == AA:
            result = _worker_result(outcome, baseline_of["base"], base_outcome, [], Change(), len(replay.calls),
                                    where, expected, check)
            result.baseline_only, result.goal = True, RUNTIME
            info["noise"] = result
            _with_floors([r for r in results.values()], result)
            return
        group = groups[n]
        result = _worker_result(outcome, baseline_of["base"], base_outcome, group, _merged(group), len(replay.calls),
                                where, expected, check)
        _with_floors([result], info.get("noise"))
        if keep:
            for fix in group:
                fix.result = result
        results[n] = result
        if on_result is not None:
            on_result(group, result)

    base, _ = WORKERS["run_pool"](replay, plans, timing=True, progress=progress, should_stop=should_stop,
                                  concurrency=concurrency, budgets={n: budgets[n] for n in budgets or {}},
                                  deadline_s=deadline_s, on_done=done)
    info["notes"] += base.notes
    return [results.get(n) for n in range(len(groups))]


def _worker_baseline(base_outcome) -> Baseline | None:
    if not base_outcome.compiled or base_outcome.error:
        return None
    before = FixMeasure.from_data(base_outcome.compiled["measure"])
    before.__dict__["_capture"] = base_outcome.compiled.get("capture_value")
    return Baseline(before, "measured (a worker process, beside the experiments)",
                    base_outcome.compiled.get("outputs_value"))


def _worker_result(outcome, base: Baseline | None, base_outcome, group: list, change: Change, calls: int, where: str,
                   expected, check) -> FixResult:
    """One worker's outcome judged: stopped, failed, or its counts, interleaved timing and three comparisons."""
    from compiler.analyses.fix_verdicts import ratio_of

    before = base.measure if base else None
    result = FixResult(before=before, before_from=base.source if base else None, calls=calls,
                       fixes=[f.id for f in group], goal=goal_of(group), where=where, seconds=round(outcome.seconds, 3))
    if outcome.stopped:
        result.status, result.error = STOPPED, outcome.stopped
    elif base is None:
        result.status, result.error = FAILED, f"the baseline (no fix) failed: {base_outcome.error}"
    elif outcome.error:
        _failed(result, outcome.error)
    else:
        after = FixMeasure.from_data(outcome.compiled["measure"])
        after.__dict__["_capture"] = outcome.compiled.get("capture_value")
        if outcome.samples.get("before"):
            result.timing = ratio_of(outcome.samples["before"], outcome.samples["after"], outcome.samples.get("eager"))
            result.before = FixMeasure.from_data(before.to_data())  # this experiment's own before timing
            result.before.__dict__["_capture"] = before.__dict__.get("_capture")
            result.before.runtime_s, result.before.eager_runtime_s = result.timing.before_s, result.timing.eager_s
            after.runtime_s, after.eager_runtime_s = result.timing.after_s, result.timing.eager_s
            if outcome.samples.get("guards_before"):
                result.guard_timing = ratio_of(
                    outcome.samples["guards_before"], outcome.samples["guards_after"],
                    method=f"every compile's guards checked once on the locals they were built on (torch's "
                           f"guard_manager_testing_hook_fn), with and without the fix, interleaved with the calls; "
                           f"median ratio over {len(outcome.samples['guards_before'])} rounds, 95 % bootstrap interval")
        elif outcome.timing_error:
            result.error = outcome.timing_error if outcome.timing_error.startswith("not timed") else \
                f"not timed: {outcome.timing_error}"
        judged(result, after, outcome.compiled.get("outputs_value"), base, expected, change, check)
    return result


def diff_of(result, labels=None):
    """The stage-by-stage diff (``compiler.analyses.diff``) of an experiment's before and after captures,
    as the explorer shows it side by side; None when they are not in memory (a result loaded from a file,
    or from a run of an earlier session)."""
    from compiler.analyses.diff import diff

    before = result.before.__dict__.get("_capture") if result and result.before else None
    after = result.after.__dict__.get("_capture") if result and result.after else None
    if before is None or after is None:
        return None
    return diff(before, after, labels=labels or ("before", "after " + "+".join(result.fixes)))


METHODS.update(try_fix=try_fix, try_fixes=try_fixes)  # Capture.try_fix / try_fixes (compiler.stages.capture)
