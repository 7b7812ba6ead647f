"""Experiments that show what a torch.compile knob does, each by compiling for real: guards removed
by a guard filter, graph breaks changed by ``torch.compiler.disable`` / ``allow_in_graph`` /
``substitute_in_graph``, the recompile limit hit. Unlike ``compiler.reference.knobs`` (reference data) these
change process state while they run (Dynamo's caches, a global swapped for one compile, a
process-wide polyfill registration) and undo what can be undone.

    from compiler import experiments
    experiments.guard_filter_effects(model, x)   # which guards each torch.compiler.*_unsafe filter removes
    experiments.graph_break_effects(f, x, target="helper")   # disable / allow_in_graph on a helper f calls
    experiments.recompile_limit_effect(f, [(x1,), (x2,), (x3,)], limit=1)
"""
from __future__ import annotations

import contextlib
import functools
import io

from compiler.reference.knobs import GUARD_FILTERS, _quiet_logs


def guard_filter_effects(fn, *args, filters=GUARD_FILTERS, backend: str = "eager", **compile_kwargs) -> dict:
    """Compile ``fn`` without a guard filter, then once per ``torch.compiler.<filter>`` passed as
    ``options={"guard_filter_fn": …}`` (torch.compile pops it from ``options``; any backend), and
    list which guards each filter removed (a diff of the guard tables of the first compile).

    → ``{"baseline": {"guards", "capture"}, "filters": [{"name", "guards", "removed", "added", "capture"}]}``
    """
    import torch

    from compiler.analyses.diff import guard_diff
    from compiler.capturing.run import explore

    def run(options):
        kwargs = dict(compile_kwargs, backend=backend)
        if options:
            kwargs["options"] = {**(compile_kwargs.get("options") or {}), **options}
        return explore(fn, *args, timing=False, errors="return", **kwargs)

    baseline = run(None)
    out = {"baseline": {"guards": baseline.summary.guards, "capture": baseline}, "filters": []}
    for name in filters:
        filter_fn = getattr(torch.compiler, name) if isinstance(name, str) else name
        label = name if isinstance(name, str) else getattr(name, "__name__", repr(name))
        cap = run({"guard_filter_fn": filter_fn})
        diff = guard_diff(baseline, cap)
        out["filters"].append({"name": label, "guards": cap.summary.guards, "removed": diff["removed"],
                               "added": diff["added"], "kept": diff["common"], "capture": cap,
                               "error": cap.error})
    return out


def _fresh_wrapper(fn):
    """A new function object calling ``fn``: decorators that register functions globally
    (``allow_in_graph``) mark this wrapper, never the user's own function."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    wrapper.__wrapped__ = fn
    return wrapper


@contextlib.contextmanager
def swapped_global(fn, name: str, replacement):
    """Temporarily make the global ``name`` that ``fn`` calls refer to ``replacement``."""
    namespace = fn.__globals__
    if name not in namespace:
        raise KeyError(f"{getattr(fn, '__name__', fn)} has no global {name!r} to replace")
    original = namespace[name]
    namespace[name] = replacement
    try:
        yield original
    finally:
        namespace[name] = original


def break_counts(fn, *args, backend: str = "eager", **compile_kwargs) -> dict:
    """Graph breaks and graphs of one compile, from the capture and from ``torch._dynamo.explain``."""
    import torch

    from compiler.capturing.run import explore

    cap = explore(fn, *args, timing=False, errors="return", backend=backend, **compile_kwargs)
    torch._dynamo.reset()
    with _quiet_logs(), contextlib.redirect_stdout(io.StringIO()):
        explained = torch._dynamo.explain(fn)(*args)
    torch._dynamo.reset()
    return {"graph_breaks": cap.summary.graph_breaks, "graphs": cap.summary.graphs,
            "explain_graph_breaks": explained.graph_break_count, "explain_graphs": explained.graph_count,
            "reasons": [item.headline for item in cap.breaks.items],
            "explain_reasons": [str(b.reason).strip().splitlines()[0] for b in explained.break_reasons],
            "capture": cap}


def graph_break_effects(fn, *args, target: str, how=("disable", "allow_in_graph"), backend: str = "eager") -> list[dict]:
    """How wrapping the helper ``target`` (a global function ``fn`` calls) changes graph breaks.

    Row "as is" compiles ``fn`` unchanged; then, for each of ``torch.compiler.disable`` /
    ``torch.compiler.allow_in_graph``, the global is swapped (for the duration of that compile only)
    for a fresh wrapper with the decorator applied. Each row has the capture's and
    ``torch._dynamo.explain``'s counts (``consistent`` when they agree).

    - ``disable``: Dynamo does not trace the helper; it graph-breaks around the call, so whatever
      broke inside the helper no longer splits its graph (fewer breaks when the helper broke many times).
    - ``allow_in_graph``: the helper is put in the graph as one opaque call, traced only through
      fake tensors: its Python side effects (print) run at graph run time, not at trace time.
    """
    import torch

    decorators = {"disable": torch.compiler.disable, "allow_in_graph": torch.compiler.allow_in_graph}
    rows = [{"variant": "as is", **break_counts(fn, *args, backend=backend)}]
    for name in how:
        helper = fn.__globals__.get(target)
        with swapped_global(fn, target, decorators[name](_fresh_wrapper(helper))):
            rows.append({"variant": f"torch.compiler.{name}({target})", **break_counts(fn, *args, backend=backend)})
    for row in rows:
        row["consistent"] = (row["graph_breaks"] == row["explain_graph_breaks"] and row["graphs"] == row["explain_graphs"])
    return rows


def substitute_effect(fn, *args, original, polyfill, backend: str = "eager", skip_signature_check: bool = False) -> list[dict]:
    """Graph breaks of ``fn`` before and after ``torch.compiler.substitute_in_graph(original)(polyfill)``.

    The registration is process-wide and cannot be undone (torch keeps one polyfill per function);
    registering a function twice is refused by torch, and the second row then says it was already
    registered.
    """
    import torch

    before = {"variant": "as is", **break_counts(fn, *args, backend=backend)}
    note = None
    try:
        torch.compiler.substitute_in_graph(original, skip_signature_check=skip_signature_check)(polyfill)
    except ValueError as exc:  # "Duplicate polyfilled object"
        note = f"already registered: {exc}"
    name = getattr(original, "__qualname__", repr(original))
    after = {"variant": f"substitute_in_graph({getattr(original, '__module__', '') or ''}.{name})".replace("(.", "("),
             **break_counts(fn, *args, backend=backend), "note": note}
    for row in (before, after):
        row["consistent"] = (row["graph_breaks"] == row["explain_graph_breaks"] and row["graphs"] == row["explain_graphs"])
    return [before, after]


def recompile_limit_effect(fn, calls: list[tuple], limit: int = 1, backend: str = "eager", **compile_kwargs) -> dict:
    """Call ``torch.compile(fn)`` on each argument tuple in ``calls`` with
    ``torch._dynamo.config.recompile_limit = limit`` and say, per call, whether it compiled, reused a
    cached compile, hit the limit, or ran eagerly because the frame gave up compiling.

    Before each call the live guards are asked which cached compile would accept the arguments
    (``what_if``), so the verdict is torch's own, not a guess from counters.
    """
    import torch
    from torch._dynamo.utils import counters

    from compiler.capturing.session import capture
    from compiler.analyses.whatif import LiveState, what_if

    torch._dynamo.reset()
    rows = []
    limit_hit = False
    with torch._dynamo.config.patch(recompile_limit=limit), _quiet_logs():
        with capture(suppress_errors=True, options={"backend": backend, **compile_kwargs,
                                                     "recompile_limit": limit}) as cap:
            compiled = torch.compile(fn, backend=backend, **compile_kwargs)
            for index, call_args in enumerate(calls):
                verdict = what_if(LiveState(), compiled, call_args, {})
                total, ok = counters["frames"]["total"], counters["frames"]["ok"]
                compiled(*call_args)
                new_total, new_ok = counters["frames"]["total"] - total, counters["frames"]["ok"] - ok
                if verdict.accepted_by:
                    status = f"reused compile {verdict.accepted_by}"
                elif new_ok:
                    status = "compiled" if index == 0 else "recompiled"
                elif new_total:
                    status, limit_hit = "hit the recompile limit: ran eagerly", True
                else:
                    status = "ran eagerly (the frame stopped compiling after the limit)" if limit_hit else "ran eagerly"
                rows.append({"call": index, "shapes": [list(a.shape) for a in call_args if hasattr(a, "shape")],
                             "status": status, "new_compiles": new_ok})
    torch._dynamo.reset()
    hit = cap.recompile_limits[0] if cap.recompile_limits else None
    return {"limit": limit, "calls": rows, "compiles": cap.summary.compiles,
            "recompiles": cap.summary.recompiles, "limit_hit": limit_hit,
            "message": hit.message if hit else None, "gb_code": hit.gb_code if hit else None,
            "capture": cap}
