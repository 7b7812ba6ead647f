"""Drift bisected: where compiled outputs first differ from eager, found by torch's own ``CompilerBisector``.

``bisect_drift(cap)`` (``cap.bisect_drift()``, ``python -m compiler bisect``) replays the captured calls in a child
process (``compiler.analyses.child_runs``: bounded in time, progress as it goes, Stop) that:

1. runs the function eagerly twice on the same inputs and seed — when eager differs from itself, the drift is
   nondeterminism, not the compiler, and the bisection stops there;
2. runs ``torch._inductor.compiler_bisector.CompilerBisector.do_bisect(check)``, where ``check`` compiles the
   function afresh (``torch._dynamo.reset()``; torch.compile takes the backend the bisector is testing) and
   compares every output with eager's (``fix_experiments.outputs_match``: the dtype's ``assert_close`` tolerance,
   or a relative L2 bound). The bisector tries the backends in order (eager, aot_eager,
   aot_eager_decomp_partition, inductor), then the failing backend's subsystems (decompositions; pre-grad,
   joint-graph and post-grad passes, config changes, lowerings), then bisects the applications of a subsystem
   down to the first one that makes the outputs differ — its debug info names the pass (or the lowered node);
3. checks that answer alone: with ``TORCH_BISECT_MAX`` at the culprit's number the outputs differ, one below
   they match — and hands back the environment that reproduces it.

The answer is saved with the capture (``cap.drift_bisection``, ``compiler.stages.repro_results.DriftBisection``).
``prepare``: Python source the child runs before compiling — what the user's process had set up that the
function alone does not carry (a custom pass in the Inductor config, a registered backend, a seed).
"""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile

DEFAULT_TIMEOUT_S = 300.0
SUBSYSTEM_WORDS = {"decomposition": "an AOTAutograd decomposition", "pre_grad_passes": "a pre-grad FX pass",
                   "joint_graph_passes": "a joint-graph FX pass", "post_grad_passes": "a post-grad FX pass",
                   "lowerings": "a lowering of an ATen op to Inductor IR", "cudagraphs": "CUDA-graph wrapping",
                   "pre_grad_graph": "the pre-grad graph"}
BACKEND_WORDS = {"eager": "Dynamo's graph capture itself (the eager backend runs the captured graph as is)",
                 "aot_eager": "AOTAutograd's tracing (no decompositions, no partitioner)",
                 "aot_eager_decomp_partition": "AOTAutograd with Inductor's decompositions and the partitioner",
                 "aot_eager_decomp_partition_crossref": "AOTAutograd under CrossRefFakeMode",
                 "inductor": "Inductor"}


def bisect_drift(cap, fn=None, calls=None, prepare: str | None = None, timeout: float = DEFAULT_TIMEOUT_S,
                 tolerance: dict | None = None, progress=None, should_stop=None, own_cache: bool = True,
                 backends: list[str] | None = None, build: str | None = None):
    """Bisect the captured calls' eager-vs-compiled difference (see the module); → a ``DriftBisection``, kept as
    ``cap.drift_bisection``. Needs the live function (or ``fn`` and ``calls``). ``own_cache=False``: the child
    reuses this process's Inductor cache (kernels already compiled); ``backends``: the bisector's backends to try
    (default all; eager is always tried first), e.g. without ``aot_eager_decomp_partition_crossref`` to save time.
    ``build``: ``"module:function"`` the child imports and calls for ``(fn, calls)`` instead of receiving them by dill
    (compiled with the capture's options, or Inductor's defaults)."""
    from compiler.analyses.child_runs import run_child, write_payload
    from compiler.analyses.fix_experiments import Replay, replay_of
    from compiler.stages.repro_results import DriftBisection

    if build:
        options = cap.options or {}
        replay = Replay(None, [], {"backend": options.get("backend") if isinstance(options.get("backend"), str)
                                   else "inductor"}, from_capture=False)
    else:
        replay = replay_of(cap, fn, calls)
    with tempfile.TemporaryDirectory(prefix="tcompile-bisect-") as work:
        why = write_payload(work, replay.fn, replay.calls, replay.compile_kwargs, replay.no_grad,
                            {"prepare": prepare, "tolerance": tolerance, "backends": backends, "build": build})
        if why:
            result = DriftBisection(available=False, reason=why)
        else:
            outcome = run_child("compiler.analyses.bisect_drift", work, timeout, progress, should_stop, own_cache)
            data = outcome.result or {}
            if not data:
                said = [line for line in outcome.lines if line.startswith(("The issue is", "Disabling", "Bisecting",
                                                                           "Moving", "check "))]
                data = {"available": False,
                        "reason": (outcome.stopped or f"the bisection process failed (exit {outcome.returncode}): "
                                   + " ".join(outcome.stderr_tail.strip().splitlines()[-1:])[:500])
                                  + (f"; the bisector had said: {' | '.join(said[-3:])}" if said else "")}
            data.update(seconds=outcome.seconds, stopped=outcome.stopped, log=outcome.lines[-60:])
            result = DriftBisection.from_data(data)
    cap.drift_bisection = result
    return result


def verdict_of(found, nondeterministic: bool, config_change: bool = False) -> str:
    if nondeterministic:
        return ("eager differs from itself on the same inputs and seed: the drift is nondeterminism (atomics, "
                "unseeded randomness), not a compiler pass — nothing to bisect")
    if found is None:
        return "no drift reproduced: every backend's outputs match eager within the tolerance"
    where = BACKEND_WORDS.get(found.backend, found.backend)
    if found.backend == "eager":
        return ("the difference begins before any compiler: Dynamo with the eager backend already differs from eager "
                "(graph capture, or randomness Dynamo replays differently)")
    if not found.subsystem:
        return f"the difference begins in the {found.backend} backend ({where}); no subsystem of it was singled out"
    what = SUBSYSTEM_WORDS.get(found.subsystem, found.subsystem)
    if config_change:
        return f"the difference begins in {found.backend}: the config change {what} removes it"
    return (f"the difference begins in {found.backend} — {found.subsystem} ({what}), application #{found.bisect_number}"
            + (f": {found.debug_info}" if found.debug_info else ""))


def command_of(found, config_change: bool) -> str | None:
    if found is None or found.backend in (None, "eager"):
        return None
    if config_change:
        return (f"torch.compile(fn, options={{...}}) with the bisector's config change {found.subsystem!r} removes it; "
                f"or: python -m torch._inductor.compiler_bisector run python YOUR_CHECK.py (exit 1 on drift)")
    if found.subsystem and found.bisect_number is not None:
        n = found.bisect_number
        return (f"TORCH_BISECT_BACKEND={found.backend} TORCH_BISECT_SUBSYSTEM={found.subsystem} TORCH_BISECT_MAX={n} "
                f"python YOUR_SCRIPT.py  # differs; TORCH_BISECT_MAX={n - 1} matches eager"
                + (f"; or torch._inductor.config.disabled_passes = {found.debug_info!r}"
                   if found.subsystem.endswith("_passes") and found.debug_info else ""))
    if found.subsystem:
        return (f"TORCH_BISECT_BACKEND={found.backend} TORCH_BISECT_SUBSYSTEM={found.subsystem} TORCH_BISECT_MAX=-1 "
                f"python YOUR_SCRIPT.py  # that subsystem off: matches eager")
    return f"torch.compile(fn, backend={found.backend!r}) already differs from eager"


# --- the child process ----------------------------------------------------------------------------

def _child(work: str) -> None:
    from compiler.analyses.child_runs import read_payload, run_prepare, write_result

    payload, spec = read_payload(work)
    run_prepare(spec.get("prepare"))
    import torch

    from compiler.analyses.fix_experiments import outputs_match
    from compiler.capturing.runtime import copy_arguments

    try:
        from torch._inductor import compiler_bisector
        from torch._inductor.compiler_bisector import CompilerBisector
    except ImportError as exc:
        write_result(work, {"available": False, "reason": f"this torch ({torch.__version__}) has no CompilerBisector: {exc}"})
        return
    if not hasattr(CompilerBisector, "do_bisect"):
        write_result(work, {"available": False, "reason": f"this torch ({torch.__version__})'s CompilerBisector has no "
                                                          "do_bisect"})
        return
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config

    # a cached graph would hide what the bisector switches off (the kernels' own compile cache stays: keyed by source)
    inductor_config.fx_graph_cache = False
    functorch_config.enable_autograd_cache = False
    fn, calls, compile_kwargs = payload["fn"], payload["calls"], dict(payload["compile_kwargs"])
    tolerance = spec.get("tolerance")
    grad = torch.no_grad if payload["no_grad"] else contextlib.nullcontext

    def outputs(callable_):
        out = []
        with grad():
            for args, kwargs in calls:
                args, kwargs = copy_arguments(args, kwargs)
                torch.manual_seed(0)
                out.append(callable_(*args, **kwargs))
        return out

    expected = outputs(fn)
    base = {"available": True, "torch_version": torch.__version__,
            "tolerance": (f"relative L2 ≤ {tolerance['relative_norm']}" if tolerance and "relative_norm" in tolerance
                          else "torch.testing.assert_close at the dtype's default tolerance")}
    same, note = outputs_match(outputs(fn), expected, tolerance)
    if not same:
        write_result(work, {**base, "found": True, "nondeterministic": True, "difference": note,
                            "verdict": verdict_of(None, True), "checks": 0})
        return
    state = {"checks": 0, "last_note": None, "notes": {}}

    def check() -> bool:
        torch._dynamo.reset()
        backend = CompilerBisector.get_backend() or "inductor"
        subsystem = CompilerBisector.get_subsystem()
        state["checks"] += 1
        try:
            got = outputs(torch.compile(fn, **compile_kwargs))
            ok, note = outputs_match(got, expected, tolerance)
        except Exception as exc:  # noqa: BLE001 — a compile that fails under a setting counts as differing
            ok, note = False, f"{type(exc).__name__}: {str(exc)[:200]}"
        if not ok and "got" in locals():
            note = f"{note} (largest relative L2 {_relative_l2(got, expected):.3g})"
        if not ok:
            state["notes"].setdefault(backend, note)
        print(f"check {state['checks']}: backend {backend}" + (f", {subsystem}" if subsystem else "")
              + (" — matches eager" if ok else f" — differs: {note[:160]}"), flush=True)
        return ok

    if spec.get("backends"):
        for name in [name for name in compiler_bisector.BACKENDS if name != "eager" and name not in spec["backends"]]:
            del compiler_bisector.BACKENDS[name]  # (this child's copy of torch only)
    found = CompilerBisector.do_bisect(check)
    subsystem_obj = None
    if found is not None and found.subsystem:
        subsystem_obj = next((s for s in compiler_bisector.BACKENDS.get(found.backend, []) if s.name == found.subsystem),
                             None)
    config_change = isinstance(subsystem_obj, compiler_bisector.ConfigChange)
    result = {**base, "found": found is not None, "verdict": verdict_of(found, False, config_change), "checks": state["checks"],
              "command": command_of(found, config_change)}
    if found is not None:
        debug = found.debug_info
        result.update(backend=found.backend, subsystem=found.subsystem, bisect_number=found.bisect_number,
                      pass_name=debug if debug != found.subsystem else None,
                      difference=state["notes"].get(found.backend))
        if isinstance(subsystem_obj, compiler_bisector.BisectSubsystem) and found.bisect_number is not None:
            try:
                result["confirmed"] = _confirm(found, check)
            except (ImportError, AttributeError) as exc:  # another torch's bisector: the answer stands unchecked
                result["confirmed"] = f"not checked ({type(exc).__name__}: {exc})"
    write_result(work, result)


def _relative_l2(got, expected) -> float:
    """The largest ‖compiled − eager‖₂ / ‖eager‖₂ over the floating-point outputs (inf where shapes differ)."""
    import torch
    import torch.utils._pytree as pytree

    worst = 0.0
    for a, b in zip(pytree.tree_leaves(got), pytree.tree_leaves(expected)):
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and b.is_floating_point():
            if a.shape != b.shape:
                return float("inf")
            scale = b.detach().double().norm().item()
            error = (a.detach().double() - b.detach().double()).norm().item()
            worst = max(worst, error / scale if scale else (0.0 if error == 0 else float("inf")))
    return worst


def _confirm(found, check) -> str:
    """Re-run the check with torch's environment switches: the culprit's application on (differs) and off (matches)."""
    from torch._inductor import compiler_bisector
    from torch._inductor.compiler_bisector import CompilerBisector, get_env_val

    import gc

    gc.collect()  # do_bisect's own cleanup (an object's __del__) turns bisection off: let it run before, not during
    n, seen = found.bisect_number, {}
    enabled = CompilerBisector.bisection_enabled
    try:
        CompilerBisector.bisection_enabled = True
        for limit in (n, n - 1):
            os.environ.update(TORCH_BISECT_BACKEND=found.backend, TORCH_BISECT_SUBSYSTEM=found.subsystem,
                              TORCH_BISECT_MAX=str(limit))
            get_env_val.cache_clear()
            compiler_bisector.subsystem_call_counter.clear()  # each run counts the applications from 0
            seen[limit] = check()
    finally:
        for key in ("TORCH_BISECT_BACKEND", "TORCH_BISECT_SUBSYSTEM", "TORCH_BISECT_MAX"):
            os.environ.pop(key, None)
        get_env_val.cache_clear()
        CompilerBisector.bisection_enabled = enabled
    if not seen[n] and seen[n - 1]:
        return f"yes: TORCH_BISECT_MAX={n} differs from eager, TORCH_BISECT_MAX={n - 1} matches"
    return (f"no: TORCH_BISECT_MAX={n} {'matches' if seen[n] else 'differs'}, TORCH_BISECT_MAX={n - 1} "
            f"{'matches' if seen[n - 1] else 'differs'} (the drift may depend on more than one application)")


def _bisect_method(cap, fn=None, calls=None, **kwargs):
    return bisect_drift(cap, fn=fn, calls=calls, **kwargs)


from compiler.stages.capture import METHODS  # noqa: E402

METHODS["bisect_drift"] = _bisect_method  # Capture.bisect_drift (compiler.stages.capture)


if __name__ == "__main__":
    _child(sys.argv[1])
