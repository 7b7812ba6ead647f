"""Checkers for the teaching labs: each one reads a ``compiler.Capture`` (or a student's answer),
prints one ``✓`` line when the answer is right, and otherwise raises ``CheckFailed`` — an
``AssertionError`` — whose message says what was found and gives a hint.

    from tcompile_labs.checks import *  # shipped with tcompile
    cap = compiler.explore(f, x, backend="eager")
    check_no_graph_breaks(cap)          # ✓ f compiles with zero graph breaks (1 graph)

A check returns None (so a notebook shows only its ✓ line); in a notebook a failed check shows as
two lines (``✗ …`` and ``hint: …``), not as a traceback.

Checks read only the capture's plain data (and, for the what-if checks, its live guards), so they
work on captures loaded from files too — except ``check_no_recompile`` / ``check_would_recompile``,
which need a live capture.
"""
from __future__ import annotations

import contextlib
import math
import re

__all__ = [
    "CheckFailed", "check_answered", "check_warm_compile", "check_allclose", "check_answer", "check_close", "check_compiled", "check_cudagraphs", "check_matches_eager", "check_recompiling_input", "check_reuses_compile",
    "check_reuses_for_new_values", "check_decomposed", "check_ranks_compile_alike", "check_backend_rewrite", "check_stance_runs_eagerly",
    "check_still_prints", "check_trace_bakes_in", "check_unbacked",
    "check_dynamic", "check_fix_prediction", "check_fused", "check_graph_breaks", "check_graph_count", "check_guard_on",
    "check_inference", "check_kernel_count", "check_no_graph_breaks", "check_no_guard_on", "check_no_recompile",
    "check_op", "check_recompile_count", "check_static", "check_training", "check_would_recompile", "graph_ops",
    "saved_for_backward",
    "check_attribute_updates", "check_every_name", "check_no_breaks_by_default",
    "check_only_guard_dropped", "check_polyfilled", "check_runtime_assert",
    "check_no_input_mutation", "check_recomputed", "check_regional", "mutated_inputs",
    "check_collectives_in_backward", "job_records", "job_results",
    "graded_output", "as_count", "check_payback_behaves", "check_marks_dynamic_if_possible",
]

RED, RESET = "\x1b[31m", "\x1b[0m"


class CheckFailed(AssertionError):
    """A check that did not pass: ``message`` says what was found, ``hint`` how to get there."""

    def __init__(self, message: str, hint: str | None = None):
        self.message, self.hint = message, hint
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"✗ {self.message}" + (f"\n  hint: {self.hint}" if self.hint else "")

    def _render_traceback_(self) -> list[str]:
        """IPython shows this instead of a traceback: the ✗ line in red, then the hint."""
        first, *rest = str(self).split("\n")
        return [f"{RED}{first}{RESET}", *rest]


def as_count(value):
    """``value`` as a count: an int, or a float (or numpy number) with a whole value (``0.0`` is 0); None for
    anything else (a bool, a string, ``...``, 1.5, inf)."""
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    try:
        whole = int(value)
    except (OverflowError, ValueError):
        return None
    return whole if whole == value else None


@contextlib.contextmanager
def graded_output():
    """A graded cell's output on stdout only: Python warnings printed as a line, torch's log handlers and file
    descriptor 2 pointed at stdout while the block runs. nbgrader scores a test cell that wrote anything to stderr 0
    (``nbgrader.utils.determine_grade``), so a right answer that makes torch warn must not lose its points."""
    import logging
    import os
    import sys
    import warnings

    out = sys.stdout
    err = sys.stderr

    def show(message, category, filename, lineno, file=None, line=None):
        print(f"(a warning, not an error) {category.__name__}: {str(message).splitlines()[0][:300]}", file=out)

    handlers = []
    for logger in [logging.getLogger()] + [logging.getLogger(n) for n in list(logging.Logger.manager.loggerDict)]:
        for handler in getattr(logger, "handlers", []):
            if isinstance(handler, logging.StreamHandler) and handler.stream in (err, sys.__stderr__):
                try:
                    handlers.append((handler, handler.setStream(out)))
                except AttributeError:  # logging's lastResort: its stream is always sys.stderr (redirected below)
                    pass
    saved_fd = None
    try:
        err.flush()
        out.flush()
        saved_fd = os.dup(2)
        os.dup2(1, 2)
    except (OSError, ValueError, AttributeError):  # no descriptors (an embedded interpreter): Python-level only
        saved_fd = None
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(out):
            warnings.simplefilter("default")
            warnings.showwarning = show
            yield
    finally:
        if saved_fd is not None:
            try:
                sys.stdout.flush()
                os.dup2(saved_fd, 2)
            finally:
                os.close(saved_fd)
        for handler, stream in handlers:
            handler.setStream(stream)


@contextlib.contextmanager
def pristine_torch():
    """torch as a fresh process has it while the block runs: the default stance (``torch.compiler.set_stance``
    switched by a student's cell is undone: ``torch._dynamo.eval_frame._set_stance``) and every Dynamo, Inductor
    and AOTAutograd config a cell set back to its default (``ConfigModule._config[name].user_override``). The
    graded tests compile under it, so a stance or a config switch in an answer does not reach them."""
    import torch
    import torch._functorch.config
    import torch._inductor.config
    from torch._dynamo import eval_frame
    from torch.utils._config_module import _UNSET_SENTINEL

    prior = eval_frame._set_stance(eval_frame.DynamoStance())
    with contextlib.ExitStack() as stack:
        for config in (torch._dynamo.config, torch._inductor.config, torch._functorch.config):
            changed = {name: entry.default for name, entry in config._config.items()
                       if entry.alias is None and not entry.deprecated
                       and entry.user_override.get() is not _UNSET_SENTINEL and entry.user_override.get() != entry.default}
            if changed:
                stack.enter_context(config.patch(changed))
        try:
            yield
        finally:
            eval_frame._set_stance(prior)


@contextlib.contextmanager
def graded_test(exercise: str):
    """The hidden test of ``exercise``: a failure reads as one line that names the exercise and what was wrong
    (a bare ``assert`` of the test, or a name the answer did not define), not ``AssertionError: 1``."""
    try:
        yield
    except CheckFailed as exc:
        raise CheckFailed(f"Exercise {exercise} (graded): {exc.message}", exc.hint) from None
    except AssertionError as exc:
        detail = str(exc).strip() or "a graded check failed"
        raise CheckFailed(f"Exercise {exercise} (graded): {detail[:600]}") from None
    except NameError as exc:
        raise CheckFailed(f"Exercise {exercise} (graded): {exc} — define it in the exercise's cell") from None
    except Exception as exc:  # noqa: BLE001 - the answer's own error, named
        first = (str(exc).strip().splitlines() or [""])[0]
        raise CheckFailed(f"Exercise {exercise} (graded): the answer raised {type(exc).__name__}: {first[:400]}") \
            from None


def _pass(message: str) -> None:
    print(f"✓ {message}")


def _fail(message: str, hint: str | None = None):
    raise CheckFailed(message, hint)


# --- what a capture holds -----------------------------------------------------------------------


def _name(cap) -> str:
    names = [c.name for c in cap.compiles if c.name and not c.name.startswith("torch_dynamo_resume_in_")]
    return ", ".join(dict.fromkeys(names)) or "the function"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _require_no_error(cap) -> None:
    if cap.error:
        message = (cap.error.message or "").strip().splitlines()
        _fail(f"the capture ended with an error: {cap.error.type} in {cap.error.stage}: {message[0] if message else ''}",
              "fix the error first (with fullgraph=True, the first graph break is an error)")
    if not cap.compiles:
        _fail("nothing was compiled in this capture",
              "call the torch.compile'd function inside the capture (or use compiler.explore / %%tcompile)")


def _break_lines(cap, limit: int = 3) -> str:
    items = cap.breaks.items
    shown = [f"line {b.line}: {b.code or '?'} ({b.gb_code or '?'}: "
             f"{(b.registry.type if b.registry else None) or b.headline})" for b in items[:limit]]
    return "; ".join(shown) + (" …" if len(items) > limit else "")


def graph_ops(cap, graph: str = "dynamo") -> list[str]:
    """The call targets of every node of ``graph`` in every compile of ``cap``, as printed by FX.

    ``graph`` is ``"dynamo"`` (Dynamo's FX graph), an AOTAutograd graph (``"forward"``,
    ``"backward"``, ``"joint"``, ``"inference"``) or an Inductor graph (``"post_grad"``, ``"pre_grad"``).
    """
    targets = []
    for c in cap.compiles:
        for graph_stage in _graphs_named(c, graph):
            targets += [n.target or "" for n in graph_stage.nodes if n.op not in ("placeholder", "output", "alias")]
    return targets


_AOT = ("forward", "backward", "joint", "inference")
_INDUCTOR = ("post_grad", "pre_grad")


def _graphs_named(compile, graph: str) -> list:
    """The ``compiler.stages.schema.Graph`` stages of ``compile`` called ``graph``."""
    if graph == "dynamo":
        return [compile.graph] if compile.graph.available else []
    if graph in _AOT:
        graphs = compile.aot.graphs if compile.aot.available else {}
        return [g for role, g in graphs.items() if role.split("_")[0] == graph and g.available]
    if graph in _INDUCTOR:
        runs = compile.inductor.runs if compile.inductor.available else []
        return [getattr(r, graph) for r in runs if getattr(r, graph).available]
    raise ValueError(f"unknown graph {graph!r}: use 'dynamo', {', '.join(map(repr, _AOT + _INDUCTOR))}")


def _matches_op(target: str, op: str) -> None:
    """``torch.ops.aten.erf.default`` matches ``erf`` and ``aten.erf`` (not ``erfinv``);
    ``l_x_.sin`` matches ``sin``."""
    return re.search(rf"(?<![\w]){re.escape(op)}(?![\w])", target) is not None


def saved_for_backward(cap) -> list[str]:
    """Names of the tensors AOTAutograd's forward graph saves for the backward (its extra outputs)."""
    names = []
    for c in cap.compiles:
        for graph in _graphs_named(c, "forward"):
            names += re.findall(r"^\s*(\w+),\s*# SavedForBackwards", graph.code or "", re.M)
    return names


# --- compiling and graph breaks -----------------------------------------------------------------


def check_compiled(cap) -> None:
    """The capture compiled at least one frame, with no error and no failed compile."""
    _require_no_error(cap)
    failed = [c.compile_id for c in cap.compiles if c.status == "failed"]
    if failed:
        first = next(c for c in cap.compiles if c.status == "failed")
        message = str(first.error.message or "").splitlines() if first.error else []
        _fail(f"compile {', '.join(failed)} failed: {first.error.type if first.error else None}: "
              f"{message[0] if message else ''}",
              "look at the Overview and the failed compile's error")
    return _pass(f"{_name(cap)} compiled ({_plural(len(cap.compiles), 'compile')}, no errors)")


def check_no_graph_breaks(cap) -> None:
    """Everything the capture compiled is one graph per frame: zero graph breaks."""
    _require_no_error(cap)
    breaks = cap.summary.graph_breaks
    if breaks:
        _fail(f"{_name(cap)} still has {_plural(breaks, 'graph break')}: {_break_lines(cap)}",
              "open the Graph breaks tab (or cap.breaks[0]): each entry names the line, "
              "the GB code and torch's hints")
    return _pass(f"{_name(cap)} compiles with zero graph breaks "
                 f"({_plural(cap.summary.graphs, 'graph')})")


def check_graph_breaks(cap, n: int) -> None:
    """The capture has exactly ``n`` graph breaks (the Overview's "graph breaks" card)."""
    found = cap.summary.graph_breaks
    if found != n:
        where = f": {_break_lines(cap)}" if found else ""
        _fail(f"expected {_plural(n, 'graph break')}, found {found}{where}",
              "each graph break ends a graph, runs one piece of Python eagerly, and resumes in a new frame")
    return _pass(f"{_plural(n, 'graph break')}, as expected" + (f": {_break_lines(cap)}" if n else ""))


def check_graph_count(cap, n: int) -> None:
    """Dynamo produced exactly ``n`` FX graphs (over every compile in the capture)."""
    _require_no_error(cap)
    found = cap.summary.graphs
    if found != n:
        _fail(f"expected {_plural(n, 'graph')}, Dynamo produced {found} "
              f"(over {_plural(len(cap.compiles), 'compile')}: {', '.join(c.compile_id for c in cap.compiles)})",
              "graph breaks split a function into several graphs; recompiles add a graph each")
    return _pass(f"Dynamo produced {_plural(n, 'graph')}")


def check_op(cap, op: str, graph: str = "dynamo", present: bool = True) -> None:
    """Operation ``op`` (``"sin"``, ``"aten.erf"``, ``"lab.checksum"`` …) is in ``graph`` of some compile
    (``present=False``: in none). ``graph``: see ``graph_ops``."""
    targets = graph_ops(cap, graph)
    if not targets and not any(_graphs_named(c, graph) for c in cap.compiles):
        _fail(f"the capture has no {graph} graph",
              "AOT graphs need an AOTAutograd backend (aot_eager, inductor); Inductor graphs need inductor")
    hits = [t for t in targets if _matches_op(t, op)]
    if present and not hits:
        shown = ", ".join(dict.fromkeys(t.split("(")[0] for t in targets))
        _fail(f"no {op!r} in the {graph} graph; it calls: {shown[:400]}",
              f"the {graph} graph records what was traced; change the code so that {op} is traced into it")
    if not present and hits:
        _fail(f"the {graph} graph still calls {op!r} ({_plural(len(hits), 'time')}: {hits[0]})",
              f"change the code (or the backend) so that {op} is no longer in the {graph} graph")
    return _pass(f"the {graph} graph {'calls' if present else 'does not call'} {op}"
                 + (f" ({hits[0]})" if present else ""))


# --- guards and recompiles ----------------------------------------------------------------------


def _what_if(cap, fn, args, kwargs):
    if not cap.is_live:
        _fail("this capture was loaded from a file: what-if checks need the live guards",
              "capture in this notebook (compiler.explore / %%tcompile / compiler.capture())")
    if fn is None:
        fn = cap.live.compiled_fn
    return cap.what_if(fn, *args, **kwargs)


def _describe_args(args, kwargs) -> str:
    def one(value):
        shape = getattr(value, "shape", None)
        if shape is not None:
            return f"tensor{list(shape)}"
        if isinstance(value, float):
            return f"{value:.3g}"
        if isinstance(value, (list, tuple)) and len(value) <= 6:
            inner = ", ".join(one(v) for v in value)
            return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
        return repr(value)[:40]
    return ", ".join([one(a) for a in args] + [f"{k}={one(v)}" for k, v in kwargs.items()])


def check_no_recompile(cap, fn, *args, **kwargs) -> None:
    """Calling ``fn(*args, **kwargs)`` would reuse a compile of the capture (what-if on the live guards;
    nothing runs). ``fn`` may be the function, the compiled function or ``None`` (``cap.live.compiled_fn``)."""
    result = _what_if(cap, fn, args, kwargs)
    if result.recompiles:
        _fail(f"calling with ({_describe_args(args, kwargs)}) would recompile: {result.as_text()}",
              "the failing guard names the input and the property it checks; make that property the same "
              "(or symbolic: dynamic shapes, a tensor instead of a Python number)")
    return _pass(f"({_describe_args(args, kwargs)}) reuses compile {result.accepted_by}: no recompile")


def check_would_recompile(cap, fn, *args, **kwargs) -> None:
    """Calling ``fn(*args, **kwargs)`` would NOT be accepted by any compile of the capture: a recompile."""
    result = _what_if(cap, fn, args, kwargs)
    if not result.recompiles:
        _fail(f"({_describe_args(args, kwargs)}) would reuse compile {result.accepted_by}: no recompile",
              "look at the Guards tab: pick an input that makes one of the guards fail")
    failed = next((c.failed_shape_guards or [c.failed_guard] for c in result.checks), [""])
    return _pass(f"({_describe_args(args, kwargs)}) would recompile: {str(failed[0])[:200]}")


def check_recompile_count(cap, n: int) -> None:
    """The capture has exactly ``n`` recompiles (compiles of a frame that was compiled before)."""
    found = len(cap.recompiles)
    if found != n:
        reasons = "; ".join(f"{r.compile_id}: {r.reasons[0].text}" for r in cap.recompiles if r.reasons)
        _fail(f"expected {_plural(n, 'recompile')}, found {found}" + (f" ({reasons[:400]})" if reasons else ""),
              "the Recompiles tab says which guard failed for each recompile")
    return _pass(f"{_plural(n, 'recompile')}, as expected")


def _tensor_params(fn, args) -> list[tuple[str, object]]:
    """(parameter name, tensor) for the tensor arguments of ``fn(*args)``, as Dynamo names them (``L['x']``)."""
    import inspect

    import torch

    try:
        bound = inspect.signature(fn).bind(*args)
    except (TypeError, ValueError):
        return []
    return [(name, value) for name, value in bound.arguments.items() if isinstance(value, torch.Tensor)]


def _other_inputs(args, seed: int = 1234) -> list:
    """Fresh inputs like ``args``: each tensor redrawn (same shape and dtype), other values kept."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(a.shape, generator=generator).to(a.dtype) if isinstance(a, torch.Tensor)
            and a.is_floating_point() else a for a in args]


def check_matches_eager(cap, reference, *args, what: str = "the compiled function") -> None:
    """The capture's compiled function gives ``reference``'s results on inputs the student did not choose:
    ``args`` when given, and inputs redrawn like the captured call's (same shapes and dtypes)."""
    import torch

    _require_no_error(cap)
    if not cap.is_live:
        _fail("this capture was loaded from a file: it has no compiled function to call",
              "use a capture made in this kernel (compiler.explore or compiler.capture)")
    trials = [list(args)] if args else []
    trials.append(_other_inputs(cap.live.args))
    for trial in trials:
        expected = reference(*[t.clone() if isinstance(t, torch.Tensor) else t for t in trial])
        check_allclose(cap.live.compiled_fn(*trial), expected, f"{what} on {_describe_args(trial, {})}",
                       hint="the fix must keep what the function computes: compare with the original on "
                            "the same input")


def check_reuses_compile(cap, fn, *args, **kwargs) -> None:
    """``fn(*args)`` reuses the capture's compile (its guards pass), the guards on the tensor arguments were
    kept (no guard filter dropped them), and the compiled function gives eager ``fn``'s result on them. The
    call that was compiled does not count: ``args`` must differ from it (another value or another shape)."""
    _require_not_the_compiled_call(cap, args, kwargs)
    check_no_recompile(cap, fn, *args, **kwargs)
    _check_tensor_guards_kept(cap, fn, args)
    if kwargs:
        return None
    check_matches_eager(cap, fn, *args, what="the reused compile")


def _signature_of(value):
    """What guards see of a value: a tensor's shape, dtype and strides; anything else itself."""
    import torch

    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), value.dtype, value.stride(), value.requires_grad)
    if isinstance(value, (list, tuple)):
        return type(value).__name__, tuple(_signature_of(v) for v in value)
    return value


def _require_not_the_compiled_call(cap, args, kwargs) -> None:
    if not cap.is_live or cap.live.args is None or kwargs:
        return
    if len(args) == len(cap.live.args) and all(_signature_of(a) == _signature_of(b)
                                               for a, b in zip(args, cap.live.args)):
        _fail(f"({_describe_args(args, {})}) is the call that was compiled: reusing it proves nothing",
              "compile with the first call, then check another value or size")


def _check_tensor_guards_kept(cap, fn, args) -> None:
    guarded = {row.source for _, row in _guard_rows(cap) if row.kind == "TENSOR_MATCH"}
    for name, _ in _tensor_params(fn, args):
        if f"L['{name}']" not in guarded:
            _fail(f"no TENSOR_MATCH guard on {name!r} is left: the compile would be reused for any input, "
                  "right or wrong",
                  "a guard filter that drops tensor guards makes reuse unsafe; make the size symbolic instead")
    _pass(f"the guards on {', '.join(n for n, _ in _tensor_params(fn, args)) or 'the inputs'} are kept")


def _new_values(value, generator):
    """``value`` with other numbers in it: a float tensor redrawn (same shape and dtype), a Python float
    changed, a list or tuple of them changed item by item; anything else kept."""
    import torch

    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return torch.randn(value.shape, generator=generator).to(value.dtype)
    if isinstance(value, float):
        return value + 0.25 + torch.rand((), generator=generator).item()
    if isinstance(value, int) and not isinstance(value, bool):
        return value + 1 + int(torch.randint(0, 5, (), generator=generator))
    if isinstance(value, (list, tuple)):
        return type(value)(_new_values(item, generator) for item in value)
    return value


def check_reuses_for_new_values(cap, reference) -> None:
    """The captured call again with new values — every float tensor redrawn, every Python number (also in a
    list or tuple) changed — reuses the capture's first compile (its guards pass, and the guards on the tensor
    arguments were kept), and the compiled function gives ``reference``'s result on them. ``reference`` is the
    original function: how the values are passed (floats or a tensor of them) is the student's choice."""
    import torch

    _require_no_error(cap)
    if not cap.is_live or cap.live.args is None:
        _fail("this capture has no call to repeat (loaded from a file, or made with compiler.capture())",
              "capture with compiler.explore(fn, *args) in this notebook")
    new = _new_values(list(cap.live.args), torch.Generator().manual_seed(4321))
    fn = cap.live.compiled_fn
    result = _what_if(cap, fn, new, {})
    if result.recompiles or result.accepted_by != cap.compiles[0].compile_id:
        failed = next((c.failed_shape_guards or [c.failed_guard] for c in result.checks), [""])
        guard = re.split(r"\s+#", str(failed[0]), maxsplit=1)[0].strip()  # without its "# code  # file:line"
        _fail(f"the same call with new values ({_describe_args(new, {})}) would "
              + (f"recompile: {guard[:200]}" if result.recompiles
                 else f"run compile {result.accepted_by}"),
              "a Python number is a constant in the graph, guarded by its value; the values of a tensor are "
              "data, not guarded")
    _pass(f"the same call with new values reuses compile {result.accepted_by}")
    _check_tensor_guards_kept(cap, fn, new)
    check_allclose(fn(*new), reference(*[t.clone() if isinstance(t, torch.Tensor) else t for t in new]),
                   f"the reused compile on ({_describe_args(new, {})})",
                   hint="the result must stay that of the original function, on the new values")


def check_recompiling_input(cap, fn, tensor, *rest) -> None:
    """``fn(tensor, *rest)`` would recompile the capture although ``tensor`` has the dtype and device of the
    compiled call's tensor in the same position, and the same ``requires_grad`` and number of dimensions: so the
    recompile comes from its sizes or strides (the TENSOR_MATCH guard, ``torch._C._dynamo.guards.TensorGuards``,
    checks dispatch keys — dtype, device, requires_grad —, ndim, sizes and strides)."""
    import torch

    if tensor is ... or tensor is None:
        _fail("no input yet", "replace ... with a tensor")
    if not isinstance(tensor, torch.Tensor):
        _fail(f"your input is a {type(tensor).__name__} ({str(tensor)[:60]}), not a tensor",
              "make a tensor of that shape: torch.randn(*shape)")
    if cap.is_live:
        compiled = next((a for a in cap.live.args if isinstance(a, torch.Tensor)), None)
        if compiled is not None and (tensor.dtype, tensor.device) != (compiled.dtype, compiled.device):
            _fail(f"your input is {tensor.dtype} on {tensor.device}; the compile was for {compiled.dtype} on "
                  f"{compiled.device}: a dtype or device change recompiles any compile, dynamic or not",
                  "keep the dtype and device; which sizes can a symbolic dimension not take?")
        if compiled is not None and tensor.requires_grad != compiled.requires_grad:
            _fail(f"your input has requires_grad={tensor.requires_grad}, the compile's {compiled.requires_grad}: "
                  "that recompiles through the tensor's dispatch keys, not its sizes or strides",
                  "keep requires_grad; which sizes can a symbolic dimension not take?")
        if compiled is not None and tensor.dim() != compiled.dim():
            _fail(f"your input has {tensor.dim()} dimensions, the compile's {compiled.dim()}: a change of rank "
                  "recompiles any compile; the exercise asks for sizes or strides",
                  "keep the number of dimensions; which sizes can a symbolic dimension not take?")
    check_would_recompile(cap, fn, tensor, *rest)


def _guard_rows(cap) -> list[tuple[str, object]]:
    return [(c.compile_id, row) for c in cap.compiles if c.guards.available for row in c.guards.rows]


def check_guard_on(cap, text: str, kind: str | None = None) -> None:
    """Some guard of the capture mentions ``text`` (in its guarded value or its condition) — a guard of
    ``kind`` (e.g. ``"TENSOR_MATCH"``) when given."""
    hits = [(cid, r) for cid, r in _guard_rows(cap) if (text in (r.source or "") or text in r.condition)
            and (kind is None or r.kind == kind)]
    if not hits:
        _fail(f"no {kind + ' ' if kind else ''}guard mentions {text!r}",
              "Dynamo guards what the traced code read: make the code read it (or remove the guard filter)")
    cid, row = hits[0]
    return _pass(f"compile {cid} guards on {text}: {row.kind} {row.condition[:120]}")


def check_no_guard_on(cap, text: str) -> None:
    """No guard of the capture mentions ``text``."""
    hits = [(cid, r) for cid, r in _guard_rows(cap) if text in (r.source or "") or text in r.condition]
    if hits:
        cid, row = hits[0]
        _fail(f"compile {cid} still guards on {text!r}: {row.kind} {row.condition[:160]} "
              f"({_plural(len(hits), 'guard')} in all)",
              "a guard_filter_fn (options={'guard_filter_fn': …}) drops guards; or stop reading the value")
    return _pass(f"no guard mentions {text} ({_plural(len(_guard_rows(cap)), 'guard')} checked)")


def _symbols(cap) -> list:
    return [s for c in cap.compiles if c.shapes.available for s in c.shapes.symbols]


def check_dynamic(cap, input: str | None = None) -> None:
    """Some compile has symbolic (dynamic) sizes — for input ``input`` (e.g. ``"x"``) when given."""
    _require_no_error(cap)
    symbols = [s for s in _symbols(cap) if s.kind == "backed"]
    if input is not None:
        symbols = [s for s in symbols if f"L['{input}']" in (s.source or "")]
    unbacked = _unbacked_of(cap, input)
    if not symbols and unbacked:  # mark_unbacked: a symbol with no value, dynamic too
        return _pass(f"dynamic shapes: unbacked {', '.join(sorted(unbacked))}" + (f" in {input}'s shape" if input else ""))
    if not symbols:
        _fail(f"no dynamic size{f' for {input!r}' if input else ''}: every shape was compiled as a constant",
              "dynamic=True, torch._dynamo.mark_dynamic(x, dim) before the first call, or a second call "
              "with another size (automatic dynamic) makes a size symbolic")
    shown = ", ".join(f"{s.symbol} = {s.source} (range {s.range})" for s in symbols[:3])
    return _pass(f"dynamic shapes: {shown}")


def check_static(cap) -> None:
    """No compile of the capture has symbolic sizes: every shape is a constant."""
    _require_no_error(cap)
    symbols = [s for s in _symbols(cap) if s.kind == "backed"]
    if symbols:
        _fail(f"{_plural(len(symbols), 'size')} compiled as symbols: "
              + ", ".join(f"{s.symbol} = {s.source}" for s in symbols[:3]),
              "dynamic=False specializes every size (a new size recompiles instead)")
    return _pass(f"every shape is static ({_plural(len(cap.compiles), 'compile')})")


# --- AOTAutograd --------------------------------------------------------------------------------


def _aot_roles(cap) -> set[str]:
    return {role.split("_")[0] for c in cap.compiles if c.aot.available for role in c.aot.graphs}


def check_training(cap) -> None:
    """AOTAutograd made a training capture: a forward and a backward graph."""
    _require_no_error(cap)
    roles = _aot_roles(cap)
    if not {"forward", "backward"} <= roles:
        _fail(f"no forward/backward pair: AOTAutograd graphs found: {sorted(roles) or 'none'}",
              "an input (or parameter) must require grad and grad mode must be on when the forward compiles "
              "(AOTAutograd then partitions the joint graph into forward and backward); use an AOTAutograd "
              "backend (aot_eager, inductor)")
    saved = saved_for_backward(cap)
    return _pass(f"training capture: forward + backward graphs, {_plural(len(saved), 'tensor')} saved for backward")


def check_inference(cap) -> None:
    """AOTAutograd made an inference capture: one graph, no backward."""
    _require_no_error(cap)
    roles = _aot_roles(cap)
    if "inference" not in roles or "backward" in roles:
        _fail(f"not an inference capture: AOTAutograd graphs found: {sorted(roles) or 'none'}",
              "compile and call under torch.no_grad() (or with no input that requires grad)")
    return _pass("inference capture: one AOTAutograd graph, no backward")


# --- Inductor -----------------------------------------------------------------------------------


def _kernels(cap) -> list:
    return [k for c in cap.compiles if c.kernels.available for k in c.kernels.kernels if k.language != "extern"]


def _kernel_ops(kernel) -> set[str]:
    ops = set(kernel.ops_from_name) | set(kernel.ir_ops)
    for name in kernel.aten_ops + kernel.source_nodes:
        ops.add(name.split(".")[-1] if not name.startswith("aten.") else name.split(".")[1])
    return {op.strip("_") for op in ops}


def _ir_runs(cap) -> list:
    return [run for c in cap.compiles if c.inductor.available for run in c.inductor.runs if run.ir.available]


def _fusions(cap) -> list:
    return [f for run in _ir_runs(cap) for f in run.ir.fusion if f.is_fusion]


def check_fused(cap, ops=None, fused: bool = True) -> None:
    """Inductor fused: with ``ops`` (e.g. ``["sin", "cos"]``), one generated kernel computes all of them;
    without, some scheduler node after fusion is made of several nodes before fusion. ``fused=False``:
    the scheduler fused nothing."""
    _require_no_error(cap)
    kernels = _kernels(cap)
    if not kernels:
        _fail("the capture has no Inductor kernels",
              "use backend='inductor' (the default); if Inductor's cache was hit, capture with fresh=True")
    if ops:
        wanted = {op.strip("_") for op in ([ops] if isinstance(ops, str) else ops)}
        together = [k for k in kernels if wanted <= _kernel_ops(k)]
        if not together:
            per_kernel = "; ".join(f"{k.name}: {', '.join(sorted(_kernel_ops(k)))}" for k in kernels[:4])
            _fail(f"no single kernel computes all of {sorted(wanted)} ({per_kernel})",
                  "ops in different graphs (a graph break between them) can never share a kernel")
        return _pass(f"{together[0].name} computes {', '.join(sorted(wanted))} in one kernel")
    if not _ir_runs(cap):
        _fail("no Inductor IR in this capture (Inductor's cache was hit, or Inductor did not run)",
              "capture with fresh=True (%%tcompile's default; not --cached) so Inductor lowers and fuses again")
    fusions = _fusions(cap)
    if fused and not fusions:
        _fail("Inductor's scheduler fused nothing: every node after fusion is one node before fusion",
              "fusion joins loops that can share an iteration (pointwise ops, a reduction and its epilogue)")
    if not fused and fusions:
        _fail(f"Inductor fused {', '.join(fusions[0].members)} into {fusions[0].fused}"
              + (f" (and {_plural(len(fusions) - 1, 'more fused node')})" if len(fusions) > 1 else ""),
              "Inductor's options (torch._inductor.list_options()) include limits on fusion")
    if not fused:
        nodes = sum(len(run.ir.fusion) for run in _ir_runs(cap))
        if nodes < 2:
            _fail(f"{_plural(nodes, 'scheduler node')}: nothing could have fused, so this shows no option at work",
                  "compile the exercise's function, which has several ops fusion would join")
        return _pass(f"no fusion: {_plural(nodes, 'scheduler node')} after fusion, each one node before fusion")
    first = fusions[0]
    return _pass(f"Inductor fused {', '.join(first.members)} into {first.fused}"
                 + (f" (+{_plural(len(fusions) - 1, 'more fused node')})" if len(fusions) > 1 else ""))


def check_kernel_count(cap, n: int, at_most: bool = False) -> None:
    """Inductor generated exactly ``n`` kernels (``at_most=True``: at most ``n``); library calls such as
    ``extern_kernels.mm`` do not count."""
    _require_no_error(cap)
    kernels = _kernels(cap)
    ok = len(kernels) <= n if at_most else len(kernels) == n
    if not ok:
        _fail(f"expected {'at most ' if at_most else ''}{_plural(n, 'generated kernel')}, found {len(kernels)}: "
              + ", ".join(k.name for k in kernels[:6]),
              "fewer kernels means more fusion; graph breaks and extern calls split kernels")
    return _pass(f"{_plural(len(kernels), 'generated kernel')}: " + ", ".join(k.name for k in kernels[:4]))


# --- CUDA graphs --------------------------------------------------------------------------------


def check_cudagraphs(cap, used: bool = True) -> None:
    """CUDA graphs were used (``used=False``: requested but skipped) — live or from a shipped capture."""
    stage = cap.cudagraphs
    if not stage.available:
        _fail(f"no CUDA-graph activity in this capture: {stage.reason}",
              "CUDA graphs need a CUDA device and mode='reduce-overhead' (or options={'triton.cudagraphs': True})")
    if used and not stage.used:
        _fail(f"CUDA graphs were skipped: {'; '.join(stage.skip_reasons_user or stage.skip_reasons)}",
              "remove what the skip reason names (e.g. mutate a copy instead of an input)")
    if not used and stage.used:
        _fail(f"CUDA graphs were used ({_plural(stage.recorded, 'graph')} recorded), not skipped",
              "a skipped capture's CUDA graphs tab names the skip reason and the line that caused it")
    if used:
        return _pass(f"CUDA graphs used: {_plural(stage.recorded, 'graph')} recorded, "
                     f"{_plural(stage.replays, 'replay')} under capture")
    return _pass(f"CUDA graphs skipped: {'; '.join(stage.skip_reasons)}")


# --- answers ------------------------------------------------------------------------------------


def check_allclose(actual, expected, what: str = "the result", rtol: float = 1e-4, atol: float = 1e-5,
                   hint: str | None = None) -> None:
    """Two tensors have the same shape and (within ``rtol``/``atol``) the same values."""
    import torch

    actual, expected = torch.as_tensor(actual), torch.as_tensor(expected)
    if actual.shape != expected.shape:
        _fail(f"{what}: shape {list(actual.shape)}, expected {list(expected.shape)}", hint)
    if not torch.allclose(actual.double(), expected.double(), rtol=rtol, atol=atol):
        worst = (actual.double() - expected.double()).abs().max().item()
        _fail(f"{what} differs from the expected values (largest difference {worst:.3g})",
              hint or "compare with the original (eager) function on the same input")
    return _pass(f"{what} matches ({list(actual.shape)}, within rtol={rtol:g})")


def _normal(value):
    if isinstance(value, str):
        return " ".join(value.strip().strip("'\"").casefold().split())
    if isinstance(value, (list, tuple, set)):
        return sorted(map(str, map(_normal, value))) if isinstance(value, set) else [_normal(v) for v in value]
    return value


def check_answer(answer, expected, what: str = "the answer", hint: str | None = None) -> None:
    """``answer == expected`` (strings compared without case and surrounding spaces or quotes)."""
    if answer is ... or answer is None:
        _fail(f"{what}: no answer yet", hint or "replace ... with your answer")
    if _normal(answer) != _normal(expected):
        _fail(f"{what}: {answer!r} is not right", hint)
    return _pass(f"{what}: {answer!r} is right")


def check_close(answer, expected: float, rel: float = 0.05, what: str = "the answer",
                hint: str | None = None) -> None:
    """A number within ``rel`` (relative) of ``expected``."""
    if answer is ... or answer is None:
        _fail(f"{what}: no answer yet", hint or "replace ... with your answer")
    try:
        value = float(answer)
    except (TypeError, ValueError):
        _fail(f"{what}: {answer!r} is not a number", hint)
    if not math.isclose(value, float(expected), rel_tol=rel, abs_tol=1e-12):
        _fail(f"{what}: {value:.4g} is not within {rel:.0%} of the expected value", hint)
    return _pass(f"{what}: {value:.4g} (expected {float(expected):.4g})")


# --- fixes (compiler.analyses.fixes, compiler.analyses.fix_experiments) -----------------------------------------------


def check_fix_prediction(result, predicted, what: str = "graph_breaks") -> None:
    """The student's prediction of a tried fix's effect (``result = cap.fixes()[i].try_()``): ``predicted``
    is the number of ``what`` (graph_breaks, recompiles, graphs) left after the change, as measured. With
    ``result=None`` (the prediction asked before the fix is tried) only its form is checked."""
    if predicted is None:
        _fail("no prediction yet", f"read the fix (its findings and snippet), then set your prediction of the {what.replace('_', ' ')} left")
    if as_count(predicted) is None:
        _fail(f"your prediction {predicted!r} is not a number of {what.replace('_', ' ')}", "a whole number, e.g. 0")
    predicted = as_count(predicted)
    if result is None:  # asked before the fix is tried: only recorded here, checked once it is measured
        return _pass(f"prediction recorded: {predicted} {what.replace('_', ' ')} (checked once the fix is tried)")
    if result.after is None:
        _fail(f"the fix was not measured ({getattr(result, 'status', 'not tried')})",
              "try it: result = cap.fixes()[i].try_()")
    before, after = getattr(result.before, what), getattr(result.after, what)
    label = what.replace("_", " ")
    if predicted != after:
        _fail(f"you predicted {predicted} {label} after the change; measured: {before} → {after}",
              "a fix only addresses the findings it lists: the others are still there")
    equal = "outputs equal eager" if result.outputs_equal else "outputs differ from eager"
    _pass(f"predicted and measured: {label} {before} → {after} ({equal})")


# --- answers read from a capture: the expected value is computed here, not written in the exercise ----


def _decomposition_ops(op: str) -> set[str]:
    """The ATen operators torch's decomposition of ``aten.<op>`` (one float tensor in) is made of."""
    import torch
    from torch._decomp import get_decompositions
    from torch.fx.experimental.proxy_tensor import make_fx

    target = getattr(torch.ops.aten, op).default
    graph = make_fx(lambda t: target(t), decomposition_table=get_decompositions([target]))(torch.randn(4))
    return {n.target.overloadpacket.__name__ for n in graph.graph.nodes
            if n.op == "call_function" and hasattr(n.target, "overloadpacket")} - {op}


def check_decomposed(cap, op: str, graph: str = "forward") -> None:
    """``graph`` has no ``op`` left and holds the operators torch's decomposition of ``op`` is made of (so
    ``op`` was decomposed, not removed)."""
    _require_no_error(cap)
    targets = graph_ops(cap, graph)
    if not targets:
        _fail(f"no {graph} graph in the capture", "compile with an AOTAutograd backend and run the call")
    if any(_matches_op(t, op) for t in targets):
        _fail(f"the {graph} graph still calls {op!r}", "which backend runs Inductor's decompositions "
              "without Inductor's code generation?")
    parts = sorted(_decomposition_ops(op))
    missing = [p for p in parts if not any(_matches_op(t, p) for t in targets)]
    if missing:
        _fail(f"no {op!r} in the {graph} graph, but none of what it decomposes into either "
              f"({', '.join(missing)} missing): was it removed rather than decomposed?",
              f"keep the model computing {op}; choose the backend, not the model")
    if not any(_matches_op(t, op) for t in graph_ops(cap, "dynamo")):
        _fail(f"your code no longer calls {op!r} (Dynamo's graph has none): the backend is to decompose it, "
              "not your code", "keep the model as it is; change how it is compiled")
    return _pass(f"{op} is decomposed in the {graph} graph, into {', '.join(parts)}")


def check_ranks_compile_alike(job) -> None:
    """No divergence of ``job`` has severity ``"error"`` (the ranks compiled and recompiled alike)."""
    if len(getattr(job, "captures", {})) < 2:
        _fail("this is not a job of several ranks", "load the job's trace directory with compiler.load_trace")
    errors = [d for d in job.divergences if d.severity == "error"]
    if errors:
        _fail(f"{_plural(len(errors), 'divergence')} that stall ranks remain: "
              + ", ".join(f"{d.kind} ({d.explanation[:120]})" for d in errors),
              "the divergence names the guard that failed on some ranks only")
    return _pass(f"the {len(job.captures)} ranks compiled alike ({_plural(len(job.divergences), 'divergence')}, "
                 "none of severity 'error')")


# --- the exercises added for issue 24: each computes what it expects from torch or the capture -----


def check_trace_bakes_in(traced, reference, x) -> None:
    """``traced`` (a ``torch.jit.trace`` of ``reference``) gives another result than ``reference`` on ``x``: the
    trace recorded one path through a data-dependent branch and replays it for every input."""
    import torch

    if x is ... or x is None:
        _fail("no input yet", "replace ... with a tensor")
    expected, replayed = reference(x.clone()), traced(x.clone())
    if expected.shape == replayed.shape and torch.allclose(expected.double(), replayed.double()):
        _fail("on this input the trace gives the function's result: it takes the branch the example input took",
              "pick an input for which the `if` goes the other way")
    return _pass("the trace replays the example's branch: it differs from the function on this input "
                 f"(largest difference {(expected.double() - replayed.double()).abs().max().item():.3g})")


def _target_name(node) -> str:
    target = node.target
    return target if isinstance(target, str) else getattr(target, "__name__", str(target))


def _rewritten_graph(backend, fn, args):
    """Runs ``fn(*args)`` through Dynamo once more with ``backend`` and returns the GraphModule it ran (the
    one ``backend`` returned, or the one it was given, rewritten in place). A copy of ``fn``'s code is
    compiled, so the capture's cache entries and the recompile limit are not touched."""
    import types

    import torch

    graphs = []

    def spy(gm, example_inputs):
        result = backend(gm, example_inputs)
        owner = result if isinstance(result, torch.fx.GraphModule) else getattr(result, "__self__", None)
        graphs.append(owner if isinstance(owner, torch.fx.GraphModule) else gm)
        return result

    code = fn.__code__.replace(co_name=fn.__code__.co_name)  # a new code object: a cache of its own
    copy = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    torch.compile(copy, backend=spy)(*args)
    if not graphs:
        _fail("the backend was not called", "torch.compile(fn, backend=your_backend) calls it with each graph")
    return graphs[0]


def check_backend_rewrite(cap, backend, fn, removed: str, added: str) -> None:
    """``backend`` (a function ``(gm, example_inputs) -> callable``) rewrites the graph Dynamo captured: the
    graph in ``cap`` (captured with that backend) still calls ``removed``; the graph the backend runs calls
    ``added`` and not ``removed``; and the compiled function gives ``fn``'s results on inputs drawn here."""
    _require_no_error(cap)
    if not cap.is_live:
        _fail("this capture was loaded from a file", "capture in this notebook with compiler.explore")
    captured = graph_ops(cap)
    if not any(_matches_op(t, removed) for t in captured):
        _fail(f"the graph Dynamo captured has no {removed!r}: the function was changed",
              "keep the function as it is; the rewrite belongs in the backend, on the FX graph it receives")
    graph = _rewritten_graph(backend, fn, cap.live.args)
    ops = [_target_name(n) for n in graph.graph.nodes if n.op in ("call_function", "call_method")]
    if any(_matches_op(op, removed) for op in ops):
        _fail(f"the graph your backend runs still calls {removed!r}: {', '.join(ops)}",
              "change node.target (and node.args) of the matching nodes, then gm.recompile()")
    if not any(_matches_op(op, added) for op in ops):
        _fail(f"the graph your backend runs has no {added!r}: {', '.join(ops) or 'no calls'}",
              f"replace each {removed} node by a {added} node with the same meaning")
    _pass(f"your backend rewrote {removed} into {added}: the graph it runs calls {', '.join(ops)}")
    check_matches_eager(cap, fn, what="the compiled function (your backend's graph)")


def check_still_prints(cap, text: str) -> None:
    """Calling the capture's compiled function still prints ``text`` (the log line was kept, not deleted)."""
    import contextlib
    import io

    _require_no_error(cap)
    if not cap.is_live:
        _fail("this capture was loaded from a file", "capture in this notebook with compiler.explore")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cap.live.compiled_fn(*cap.live.args)
    printed = out.getvalue()
    if text not in printed:
        _fail(f"the compiled function no longer prints {text!r} (it printed {printed.strip()[:120]!r})",
              "keep the log: Dynamo can move a print of tensors after the graph "
              "(torch._dynamo.config.reorderable_logging_functions)")
    return _pass(f"the compiled function still prints: {printed.strip().splitlines()[-1][:120]}")


def _no_answer(answer, what: str) -> None:
    if answer is ... or answer is None:
        _fail(f"{what}: no answer yet", "replace ... with your answer")


def check_answered(*answers) -> None:
    """Each answer is given (not ``...`` or ``None``). A student release checks no more than this for a question
    whose answer is read from a capture: the grader's hidden tests check its value."""
    for answer in answers:
        _no_answer(answer, "your answer")
    return _pass("answered (its value is checked when the notebook is graded)")


def check_payback_behaves(break_even) -> None:
    """What a student release checks of Exercise 7.1's function, without the formula: on made-up timings it never
    pays (``math.inf``) when the compiled call is not faster, it is a finite number of calls when it is, more calls
    for a costlier first call, fewer for a larger saving per call, and the compiled time matters (not only eager's).
    The graded test checks the value itself."""
    if break_even is ... or not callable(break_even):
        _fail("break_even: no function yet", "define break_even(first_call_s, eager_s, compiled_s)")

    def value(first, eager, compiled):
        try:
            got = float(break_even(first, eager, compiled))
        except Exception as exc:  # noqa: BLE001 - the student's function failing, named
            _fail(f"break_even({first:g}, {eager:g}, {compiled:g}) raised {type(exc).__name__}: {exc}",
                  "return a number of calls (math.inf when the compile never pays)")
        if math.isnan(got):
            _fail(f"break_even({first:g}, {eager:g}, {compiled:g}) is NaN", "return a number of calls")
        return got

    for first, eager, compiled in ((2.0, 1e-3, 2e-3), (2.0, 1e-3, 1e-3), (0.5, 4e-3, 5e-3)):
        if not math.isinf(value(first, eager, compiled)):
            _fail(f"break_even({first:g}, {eager:g}, {compiled:g}): the compiled call is not faster, yet it pays "
                  "after a finite number of calls", "when compiled_s >= eager_s the compile never pays: math.inf")
    base = value(2.0, 3e-3, 1e-3)
    if not (math.isfinite(base) and base > 0):
        _fail(f"break_even(2, 0.003, 0.001) = {base:g}: a faster compiled call pays after a finite, positive number "
              "of calls", "count the calls until the time saved repays the first call")
    if not value(4.0, 3e-3, 1e-3) > base:
        _fail("a costlier first call does not take more calls to repay", "the first call's cost is what is repaid")
    if not value(2.0, 5e-3, 1e-3) < base:
        _fail("a larger saving per call does not repay sooner", "what does each later call save?")
    if value(2.0, 3e-3, 2e-3) == value(2.0, 3e-3, 1e-3):
        _fail("the compiled call's time changes nothing", "each later call saves eager_s - compiled_s")
    once, twice = value(100.0, 1.1e-3, 1e-3), value(100.0, 1.2e-3, 1e-3)
    if not math.isclose(twice, once / 2, rel_tol=0.05):
        _fail("twice the saving per call does not repay in half the calls", "each later call saves eager_s - compiled_s")
    return _pass("break_even behaves like a break-even count on made-up timings (its values are graded)")


def check_stance_runs_eagerly(stance, fn, *args) -> None:
    """Under ``torch.compiler.set_stance(stance)`` a ``torch.compile``d copy of ``fn`` — compiled once before,
    for ``args`` — runs no compiled code and compiles nothing, for ``args`` and for a new shape, and gives
    ``fn``'s results: the stance ignores torch.compile, cached compiles included."""
    import types

    import torch

    import compiler

    from compiler.reference import knobs

    what = "the stance"
    _no_answer(stance, what)
    names = [row["name"] for row in knobs.stances()]
    if stance not in names:  # checked here: torch raises only inside a compiled call, and leaks its config then
        _fail(f"{what} {stance!r} is not a torch.compiler.set_stance name", f"the stances: {', '.join(names)}")
    code = fn.__code__.replace(co_name=fn.__code__.co_name)  # a new code object: a cache of its own
    copy = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    runs = []

    def counting(gm, example_inputs):
        def run(*inputs):
            runs.append(1)
            return gm.forward(*inputs)
        return run

    compiled = torch.compile(copy, backend=counting, dynamic=False)
    compiled(*args)  # compiled once, before the stance: a cached compile
    runs.clear()
    calls = [args, [torch.cat([a, a]) if isinstance(a, torch.Tensor) else a for a in args]]
    # a call that raises inside torch.compile can leave dynamic=False's config patch in place (eval_frame.py,
    # make_set_enable_dynamic: automatic_dynamic_shapes=False, assume_static_by_default=True): put it back
    patched = ("automatic_dynamic_shapes", "assume_static_by_default")
    saved = {key: getattr(torch._dynamo.config, key) for key in patched}
    try:
        with compiler.capture() as cap, torch.compiler.set_stance(stance):
            results = [compiled(*call) for call in calls]
    except Exception as exc:  # noqa: BLE001 — fail_on_recompile raising
        _fail(f"{what} {stance!r}: the calls raised {type(exc).__name__}: {str(exc).splitlines()[0][:160]}",
              f"the stances: {', '.join(names)}")
    finally:
        for key, value in saved.items():
            setattr(torch._dynamo.config, key, value)
    if cap.compiles:
        _fail(f"under {stance!r} torch.compile still compiled ({_plural(len(cap.compiles), 'compile')} in "
              f"{len(calls)} calls)", "which stance ignores torch.compile altogether?")
    if runs:
        _fail(f"under {stance!r} the compile cached before the stance still ran ({_plural(len(runs), 'call')})",
              "this stance only stops new compiles; which one ignores the cached compiles too?")
    for call, result in zip(calls, results):
        check_allclose(result, fn(*call), f"the result under {stance!r}")
    return _pass(f"under {stance!r}: no compile and no cached compiled code ran — torch.compile is ignored")


def _unbacked_of(cap, input: str | None = None) -> set[str]:
    """The unbacked size symbols of ``cap`` — in ``input``'s shape (its placeholder in the FX graph) when given."""
    unbacked = {s.symbol for s in _symbols(cap) if s.kind == "unbacked"}
    if input is not None:
        placeholders = [n for c in cap.compiles if c.graph.available for n in c.graph.nodes
                        if n.op == "placeholder" and n.name == f"L_{input}_"]
        unbacked = {u for u in unbacked for n in placeholders
                    if any(re.search(rf"\b{u}\b", str(size)) for size in n.shape or [])}
    return unbacked


def check_unbacked(cap, input: str | None = None) -> None:
    """Some compile has an unbacked size (a symbol with no value to guard on: ``u0``) — for input ``input``
    when given (a size of its placeholder in the FX graph)."""
    _require_no_error(cap)
    unbacked = _unbacked_of(cap, input)
    if not unbacked:
        _fail(f"no unbacked size{f' for {input!r}' if input else ''}",
              "torch._dynamo.decorators.mark_unbacked(t, dim) before the first call makes a size unbacked; "
              "mark_dynamic makes it backed (and 0/1-specialized)")
    return _pass(f"unbacked size{'s' if len(unbacked) > 1 else ''}: {', '.join(sorted(unbacked))}"
                 + (f" in {input}'s shape" if input else ""))


# --- checks that compile the student's code again, from torch's own counters (issue 39) ----------------


def _counting_backend():
    """A backend that records each graph it compiles and each run of a compiled graph: (backend, compiles, runs).
    Code that runs eagerly — a stance, a disabled frame, a recompile limit hit — adds no run."""
    compiles, runs = [], []

    def backend(gm, example_inputs):
        compiles.append(gm)
        index = len(compiles) - 1

        def run(*args):
            runs.append(index)
            return gm.forward(*args)
        return run
    return backend, compiles, runs


@contextlib.contextmanager
def _stance_kept():
    """Whatever stance the code in the block switches to, the caller's stance after it."""
    from torch._dynamo import eval_frame

    prior = eval_frame._stance
    try:
        yield
    finally:
        eval_frame._set_stance(prior)


def check_attribute_updates(module_cls, set_value, x, values=(2.0, 3.0, 4.0, 5.0)) -> None:
    """A fresh ``module_cls()``, compiled once and called on ``x`` after ``set_value(module, v)`` for each of
    ``values``: one frame compiled in all (no recompile), the compiled graph run on every call (no call left to
    eager code: a stance, a disabled frame or a recompile limit would), and ``x * v`` returned each time."""
    import torch

    if module_cls is ... or set_value is ...:
        _fail("no answer yet", "define the class and the function that sets its value")
    module = module_cls()
    backend, compiles, runs = _counting_backend()
    torch._dynamo.reset()
    with _stance_kept():
        compiled = torch.compile(module, backend=backend)
        for i, v in enumerate(values):
            set_value(module, v)
            got = compiled(x)
            if not torch.allclose(torch.as_tensor(got), x * v):
                _fail(f"after setting the value to {v}, the compiled module does not return x * {v}",
                      "the update must reach the compiled model: a new value, used")
            if len(runs) != i + 1:
                _fail(f"call {i + 1} (value {v}) did not run compiled code ({len(runs)} compiled runs in {i + 1} calls):"
                      " it ran eagerly", "every call must run the compile; a stance or a config that falls back "
                      "to eager only hides the recompile")
    torch._dynamo.reset()
    if len(compiles) != 1:
        _fail(f"{len(values)} values compiled {_plural(len(compiles), 'graph')}: "
              f"{len(compiles) - 1} recompile(s)",
              "a Python float attribute is a constant until automatic dynamic makes it a symbol, after one "
              "recompile; what kind of value do guards never check?")
    return _pass(f"{len(values)} values, 1 compile, every call ran it (counted by a backend of the check's), "
                 "the new value used each time")


def check_marks_dynamic_if_possible(mark, flexible, fixed, width: int = 4) -> None:
    """``mark(batch)`` called on each batch before its call: ``flexible`` compiled afresh serves batches of 8, 9 and
    10 rows in one compile, every call running it, and ``fixed`` (which specializes the rows to 8) compiles and runs
    on batches of 8 — no error. ``mark`` must not change torch's configs or stance (only the batch): a hint such as
    ``torch._dynamo.maybe_mark_dynamic`` does it, the promise ``mark_dynamic`` fails on ``fixed``."""
    import torch
    from torch._dynamo import eval_frame

    if mark is ... or not callable(mark):
        _fail("no mark function yet", "define mark(batch)")
    configs = (torch._dynamo.config, torch._inductor.config)
    for fn, sizes in ((flexible, (8, 9, 10)), (fixed, (8, 8))):
        backend, compiles, runs = _counting_backend()
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend=backend)
        with _stance_kept():
            for n in sizes:
                batch = torch.randn(n, width, generator=torch.Generator().manual_seed(n))
                before = ([c.get_config_copy() for c in configs], eval_frame._stance)
                mark(batch)
                if ([c.get_config_copy() for c in configs], eval_frame._stance) != before:
                    _fail("mark changed torch's config or stance, not only the batch",
                          "mark the batch's dimension: torch._dynamo has a hint for that")
                try:
                    got = compiled(batch)
                except Exception as exc:  # noqa: BLE001 - the compile's error, named
                    _fail(f"{_name_of(fn)} on a marked batch of {n} rows raised {type(exc).__name__}: "
                          f"{(str(exc).strip().splitlines() or [''])[0][:200]}",
                          f"{_name_of(fn)} specializes the rows; a promise that they are dynamic fails — a hint does not")
                check_allclose(got, fn(batch), f"{_name_of(fn)} on {n} rows")
        torch._dynamo.reset()
        if fn is flexible and (len(compiles) != 1 or len(runs) != len(sizes)):
            _fail(f"{_name_of(fn)} on batches of {', '.join(map(str, sizes))} rows: {_plural(len(compiles), 'compile')}, "
                  f"{len(runs)} compiled runs", "mark the rows dynamic from the first call: no recompile")
    return _pass(f"{_name_of(flexible)}: one compile for 8, 9 and 10 rows; {_name_of(fixed)} specialized without an error")


def check_no_breaks_by_default(fn, *args) -> None:
    """``fn(*args)`` compiles with torch.compile's defaults (no fullgraph, ``.item()`` not captured) with
    no graph break, counted by torch, and gives ``fn``'s eager result."""
    import torch

    from torch._dynamo.utils import counters

    backend, compiles, _ = _counting_backend()
    torch._dynamo.reset()
    counters.clear()
    with torch._dynamo.config.patch(capture_scalar_outputs=False, capture_dynamic_output_shape_ops=False):
        output = torch.compile(fn, backend=backend)(*args)
    breaks = sum(counters["graph_break"].values())
    torch._dynamo.reset()
    if breaks:
        _fail(f"with torch.compile's defaults, {_name_of(fn)} still has {_plural(breaks, 'graph break')} "
              "(fullgraph=True or a config flag hides a break; it does not remove it)",
              "rewrite the code so that nothing leaves tensor land")
    check_allclose(output, fn(*args), f"{_name_of(fn)} compiled with the defaults")
    return _pass(f"{_name_of(fn)} compiles with the defaults in one graph ({_plural(len(compiles), 'graph')})")


def _name_of(fn) -> str:
    return getattr(fn, "__name__", "the function")


def check_every_name(fn, reference, x, names) -> None:
    """``fn(x, name)`` compiles with ``fullgraph=True`` and equals ``reference(x, name)`` for every name."""
    import torch

    for name in names:
        torch._dynamo.reset()
        try:
            got = torch.compile(fn, backend="eager", fullgraph=True)(x, name)
        except Exception as exc:  # noqa: BLE001 - the student's code: say what failed
            _fail(f"{_name_of(fn)}(x, {name!r}) does not compile with fullgraph=True: {type(exc).__name__}",
                  "every name must compile in one graph")
        check_allclose(got, reference(x, name), f"{_name_of(fn)}(x, {name!r})")


def check_polyfilled(original_fn) -> None:
    """Dynamo traces ``original_fn`` through a registered substitute (``torch.compiler.substitute_in_graph``
    records it in ``torch._dynamo.trace_rules._polyfilled_function_ids``)."""
    from torch._dynamo import trace_rules

    if id(original_fn) not in trace_rules._polyfilled_function_ids:
        _fail(f"{_name_of(original_fn)} has no substitute registered for Dynamo",
              "the exercise asks for torch.compiler.substitute_in_graph on the function the code calls")
    return _pass(f"{_name_of(original_fn)} is traced through its registered substitute")


def check_only_guard_dropped(cap, fn, *args, dropped: str) -> None:
    """Compared with ``fn(*args)`` compiled without a guard filter, ``cap`` dropped the guards on ``dropped``
    (a guard source such as ``"G['LR']"``) and kept every other guard."""
    import torch

    import compiler

    _require_no_error(cap)
    mine = {(row.source or "", row.kind) for _, row in _guard_rows(cap)}
    torch._dynamo.reset()
    reference = compiler.explore(fn, *args, backend="eager", timing=False)
    everything = {(row.source or "", row.kind) for _, row in _guard_rows(reference)}
    lost = sorted(f"{source or '(global)'} {kind}" for source, kind in everything - mine if dropped not in source)
    if lost:
        _fail(f"your filter also dropped {', '.join(lost[:5])}" + (" …" if len(lost) > 5 else ""),
              f"keep every guard except those on {dropped}: each one you drop is a change the compile ignores")
    return _pass(f"only the guards on {dropped} are dropped ({len(mine)} kept)")


def _run_without_checks(fn, *args):
    """``fn(*args)`` run eagerly with ``torch._check`` and its kin made no-ops (in torch and in ``fn``'s globals):
    what the function computes when the facts it states are not enforced."""
    import types
    from unittest import mock

    import torch

    names = ("_check", "_check_is_size", "_check_with", "_check_value", "_check_index")
    originals = {id(getattr(torch, n)) for n in names if hasattr(torch, n)}

    def noop(*a, **k):
        return None

    scope = {k: (noop if id(v) in originals else v) for k, v in fn.__globals__.items()}
    copy = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    with mock.patch.multiple(torch, **{n: noop for n in names if hasattr(torch, n)}):
        return copy(*args)


def check_runtime_assert(cap, fn, reference) -> None:
    """``fn`` still computes what ``reference`` (the function before the change) computes for every batch size —
    an empty batch included, run eagerly with ``torch._check`` not enforced (so the empty-batch branch must still
    be there and taken: its result, not a comment, is checked) — and some FX graph of ``cap`` checks a fact about a
    size at run time (``torch._check`` becomes an ``_assert_scalar`` node: ``ShapeEnv.defer_runtime_assert``,
    ``torch/fx/experimental/symbolic_shapes.py``)."""
    import torch

    _require_no_error(cap)
    if not cap.is_live or not cap.live.args:
        _fail("this capture has no call to take the batch's shape from", "capture with compiler.explore(fn, batch)")
    batch = next(a for a in cap.live.args if isinstance(a, torch.Tensor))
    for rows in (0, 1, 5):
        x = torch.randn(rows, *batch.shape[1:], generator=torch.Generator().manual_seed(rows)).to(batch.dtype)
        try:
            got = _run_without_checks(fn, x.clone())
        except Exception as exc:  # noqa: BLE001 - the student's function failing on a size
            _fail(f"{_name_of(fn)} raised {type(exc).__name__} on a batch of {rows} (run eagerly, torch._check "
                  f"not enforced): {str(exc).splitlines()[0][:160] if str(exc) else ''}",
                  "keep the function's result for every batch, the empty one included; state facts with torch._check")
        want = reference(x.clone())
        if not torch.allclose(torch.as_tensor(got), want, equal_nan=True) or torch.as_tensor(got).shape != want.shape:
            _fail(f"{_name_of(fn)} no longer computes the original's result for a batch of {rows}"
                  + (" (the empty-batch branch is gone)" if rows == 0 else ""),
                  "keep the branch for an empty batch; tell the compiler which way it goes instead")
    asserts = [t for t in graph_ops(cap) if "assert" in t or "_check" in t]
    if not asserts:
        _fail("no run-time check of a size in the graph: nothing tells the compiler which branch is taken",
              "torch._check(...) records a fact the compiler may use, checked when the graph runs")
    return _pass(f"the original's result for batches of 0, 1 and 5 (the empty-batch branch kept) and the graph "
                 f"checks at run time: {asserts[0]}")


def check_warm_compile(settings, fn, *args) -> None:
    """``fn(*args)`` compiled twice with Inductor under ``torch._inductor.config.patch(**settings)``, with
    ``torch._dynamo.reset()`` in between: the first compile may miss the FX graph cache, the second must hit it
    (``torch._dynamo.utils.counters["inductor"]["fxgraph_cache_hit"]``, counted by torch), and both give
    ``fn``'s eager result."""
    import torch
    from torch._dynamo.utils import counters

    if not isinstance(settings, dict):
        _fail(f"{settings!r} is not a dict of Inductor options", "e.g. {'fx_graph_cache': True}")
    hits = []
    for _ in range(2):
        torch._dynamo.reset()
        counters.clear()
        try:
            with torch._inductor.config.patch(**settings):
                out = torch.compile(fn)(*args)
        except (AttributeError, TypeError, ValueError) as exc:
            _fail(f"these settings do not apply: {type(exc).__name__}: {exc}", "names from torch._inductor.config")
        check_allclose(out, fn(*args), f"{_name_of(fn)} compiled with {settings}")
        hits.append(counters["inductor"]["fxgraph_cache_hit"])
    if not hits[1]:
        _fail(f"the second compile did not hit the FX graph cache ({hits[1]} hits; "
              f"{counters['inductor']['fxgraph_cache_miss']} misses, {counters['inductor']['fxgraph_cache_bypass']} "
              "bypasses)", "which option turns every cache off? and which one is the FX graph cache's own?")
    return _pass(f"the second compile is warm: {hits[1]} FX graph cache hit(s) (the first: {hits[0]})")


def mutated_inputs(fn, *args) -> list[int]:
    """The positions of the inputs ``fn(*args)`` mutates, as AOTAutograd records them when it compiles ``fn``
    (``ViewAndMutationMeta.input_info[i].mutates_data``, read from ``TracingContext.fw_metadata``; Inductor's
    CUDA-graph check ``cudagraph_utils.check_for_mutation`` skips a graph with such inputs: "mutated inputs")."""
    import torch
    from torch._dynamo.backends.common import aot_autograd

    seen = []

    def forward_compiler(gm, example_inputs):
        seen.append([info.mutates_data for info in torch._guards.TracingContext.try_get().fw_metadata.input_info])
        return gm

    torch._dynamo.reset()
    torch.compile(fn, backend=aot_autograd(fw_compiler=forward_compiler), fullgraph=True)(
        *[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
    torch._dynamo.reset()
    return sorted({i for flags in seen for i, mutated in enumerate(flags) if mutated})


def check_no_input_mutation(fn, reference, *args) -> None:
    """``fn`` mutates none of its inputs (as AOTAutograd records it: ``mutated_inputs``) and returns what
    ``reference`` returns, followed by the new value of each input ``reference`` updates in place."""
    import torch

    if fn is ... or fn is None:
        _fail("no answer yet", "define the rewritten function")
    before = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    ref_args = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    expected = reference(*ref_args)
    updated = [i for i, (a, b) in enumerate(zip(before, ref_args))
               if isinstance(a, torch.Tensor) and not torch.equal(a, b)]
    mutated = mutated_inputs(fn, *args)
    if mutated:
        _fail(f"{_name_of(fn)} still updates input {', '.join(str(i) for i in mutated)} in place "
              "(AOTAutograd records it as mutated: Inductor skips CUDA graphs for 'mutated inputs')",
              "compute the new value into a new tensor and give it back to the caller")
    got = fn(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
    want = (expected, *[ref_args[i] for i in updated])
    got = got if isinstance(got, tuple) else (got,)
    if len(got) != len(want):
        _fail(f"{_name_of(fn)} returns {_plural(len(got), 'value')}; the caller needs {len(want)}: the result and "
              f"the new value of each updated input ({_plural(len(updated), 'input')})",
              "return the result, then the updated buffer")
    for i, (g, w) in enumerate(zip(got, want)):
        check_allclose(g, w, f"{_name_of(fn)}'s output {i}")
    return _pass(f"{_name_of(fn)} mutates no input (AOTAutograd's metadata) and returns the result and the "
                 f"{_plural(len(updated), 'updated value')}")


def _op_nodes(gm) -> int:
    return sum(n.op not in ("placeholder", "output", "get_attr") for n in gm.graph.nodes)


def compiled_runs(model, x):
    """What ``model(x)`` runs compiled, observed from torch: with Dynamo's caches cleared and every
    ``torch.compile`` forced to a counting backend (``torch.compiler.set_stance(force_backend=...)``, whatever
    backend the code chose), under ``torch.no_grad()``: (the graphs compiled, the index of the graph each compiled
    run ran). A module only made to look compiled (an attribute set) runs nothing compiled."""
    import torch

    backend, compiles, runs = _counting_backend()
    torch._dynamo.reset()
    with _stance_kept(), torch.compiler.set_stance("default", force_backend=backend), torch.no_grad():
        model(x)
    torch._dynamo.reset()
    return compiles, runs


def check_regional(cap, model, x) -> None:
    """Regional compilation, from what torch runs (``compiled_runs``): ``model(x)`` runs one compiled graph per
    block — the same graph, one compile, holding as many ops as one block traced alone
    (``torch._dynamo.testing.EagerAndRecordGraphs``): not the whole model's graph —; ``cap`` made one frame compile
    of one block's ops; and ``model(x)`` equals the blocks run eagerly. How each block was compiled is the student's
    choice (``block.compile()``, ``torch.compile(block)``, ``block.forward = torch.compile(block.forward)``)."""
    import copy

    import torch
    from torch._dynamo.testing import EagerAndRecordGraphs

    blocks = list(model.blocks)
    _require_no_error(cap)
    recorder = EagerAndRecordGraphs()
    block = copy.deepcopy(getattr(blocks[0], "_orig_mod", blocks[0]))
    block._compiled_call_impl = None  # the block's own code, however it was compiled
    block.__dict__.pop("forward", None)
    with torch.no_grad(), _stance_kept():
        torch.compile(block, backend=recorder)(x)
    one_block = sum(_op_nodes(g) for g in recorder.graphs)
    compiles, runs = compiled_runs(model, x)
    sizes = [_op_nodes(g) for g in compiles]
    if any(n > one_block for n in sizes):
        _fail(f"the model runs a compiled graph of {max(sizes)} ops; one block traced alone has {one_block}: the whole "
              "model (or more than a block) is compiled", "compile each repeated block, not the model around them")
    if len(runs) != len(blocks):
        _fail(f"the model ran compiled code {_plural(len(runs), 'time')} for {len(blocks)} blocks: "
              f"{len(blocks) - len(runs) if len(runs) < len(blocks) else 'some'} block(s) ran eagerly",
              "compile every block (block.compile(), or torch.compile on each); a module only made to look compiled "
              "runs eagerly")
    if len(compiles) != 1 or sizes[0] != one_block:
        _fail(f"the blocks ran {_plural(len(compiles), 'compiled graph')} ({sizes} ops); one block traced alone has "
              f"{one_block}", "one compile of the block, reused by every block")
    ops = len(graph_ops(cap))
    if len(cap.compiles) != 1 or ops != one_block:
        _fail(f"the capture made {_plural(len(cap.compiles), 'compile')} with {ops} ops in all; one block "
              f"traced alone has {one_block}",
              "one compile of the block, reused by every block (call the model under torch.no_grad())")
    with torch.no_grad():
        got = model(x)
        with _stance_kept(), torch.compiler.set_stance("force_eager"):  # every torch.compile ignored: eager
            want = model(x)
    check_allclose(got, want, "the regionally compiled model")
    return _pass(f"{len(blocks)} blocks ran one compile of {one_block} ops (observed at check time); the results "
                 "equal eager")


def check_recomputed(cap, op: str) -> None:
    """Activation checkpointing under torch.compile: ``cap`` is a training capture whose forward graph saves only
    graph inputs for the backward (``primals_*``: parameters and inputs, no intermediate) and whose backward
    graph computes ``op`` again (the forward op itself, e.g. ``aten.gelu``, not its ``_backward``): the partitioner
    chose to recompute what the checkpointed region made (``min_cut_rematerialization_partition`` honours the
    ``tag_activation_checkpoint`` region's recompute tags)."""
    _require_no_error(cap)
    check_training(cap)
    saved = saved_for_backward(cap)
    kept = [name for name in saved if not name.startswith("primals")]
    if kept:
        _fail(f"the forward still saves {len(kept)} intermediate tensor(s) for the backward: {', '.join(kept[:6])}",
              "torch.utils.checkpoint.checkpoint(fn, *args, use_reentrant=False) around the part whose activations "
              "should be recomputed, inside the compiled function")
    if not any(_matches_op(t, op) and "backward" not in t for t in graph_ops(cap, "backward")):
        _fail(f"the backward graph does not compute {op} again: nothing of the checkpointed region is recomputed",
              f"checkpoint the part of the model that contains {op}")
    return _pass(f"the forward saves only inputs ({len(saved)}: {', '.join(saved)}); the backward recomputes {op}")


# --- lab 8's DDP job (tcompile_labs/ddp_job.py): read from its TORCH_TRACE logs and result files -----------


def job_records(job_dir) -> dict[int, list]:
    """Each rank's TORCH_TRACE records of a run of ``ddp_job.py`` (``job_dir/trace``, one log per rank), read by
    tcompile's trace reader: ``record.kind``, ``record.compile_id``, ``record.metadata`` (torch's envelope),
    ``record.payload``."""
    from pathlib import Path

    from compiler.readers.trace import read_records

    logs = sorted((Path(job_dir) / "trace").glob("*rank_*.log"))
    return {int(re.search(r"rank_(\d+)", p.name).group(1)): list(read_records(p)) for p in logs}


def job_results(job_dir) -> dict[int, dict]:
    """Each rank's ``result_rank_N.json``; a job that did not finish fails here with torch's error (``job.log``)."""
    import json
    from pathlib import Path

    files = sorted(Path(job_dir).glob("result_rank_*.json"))
    if len(files) < 2:
        log = Path(job_dir) / "job.log"
        errors = re.findall(r"^(?:\[rank\d+\]: )?(\w+(?:Error|Exception): .*)$", log.read_text() if log.exists() else "",
                            re.M)
        _fail(f"the job did not finish: {errors[-1][:300] if errors else 'no result files in ' + str(job_dir)}",
              "read the error: torch says which setting it needs")
    return {int(re.search(r"rank_(\d+)", p.name).group(1)): json.loads(p.read_text()) for p in files}


ALL_REDUCE = re.compile(r"_c10d_functional\.all_reduce(?:_)?\.default\(")


def check_collectives_in_backward(job_dir) -> None:
    """In every rank of a run of lab 8's DDP job, the backward that compiled autograd traced — the graph Dynamo
    compiled from it (its records carry a ``compiled_autograd_id``) — calls the gradient all_reduces
    (``_c10d_functional.all_reduce``), and the compiled run's weights equal eager DDP's after the same steps."""
    results = job_results(job_dir)
    records = job_records(job_dir)
    if sorted(records) != sorted(results):
        _fail(f"trace logs for ranks {sorted(records)}, results for ranks {sorted(results)}",
              "run the job with TORCH_TRACE set (run_ddp_job does)")
    found = {}
    for rank, recs in sorted(records.items()):
        backward = [r for r in recs if "compiled_autograd_id" in r.metadata and r.payload
                    and r.kind in ("aot_inference_graph", "aot_forward_graph")]
        if not any(r.kind == "compiled_autograd_graph" for r in recs):
            hooks = sorted({r.compile_id for r in recs if r.kind == "dynamo_start"
                            and (r.metadata["dynamo_start"].get("stack") or [{}])[-1].get("name")
                            == "compiled_accum_grad_hook"})
            where = (f"the all_reduces ran in {_plural(len(hooks), 'compile')} of DDP's gradient hook "
                     f"(compiled_accum_grad_hook: {', '.join(hooks)}), each a graph of its own") if hooks else \
                "DDP's C++ reducer ran the all_reduces from autograd hooks"
            _fail(f"rank {rank}: no backward graph from compiled autograd — {where}, outside any compiled backward",
                  "the backward is traced into a graph only with compiled autograd on")
        calls = sum(len(ALL_REDUCE.findall(r.payload)) for r in backward)
        if not calls:
            _fail(f"rank {rank}: the compiled backward graph calls no all_reduce",
                  "which reducer does DDP use? The C++ one is not traceable")
        found[rank] = calls
    for rank, result in sorted(results.items()):
        losses, eager = result["losses"], result["eager_losses"]
        if result["max_weight_difference"] > 1e-5 or any(abs(a - b) > 1e-5 * max(1.0, abs(b))
                                                         for a, b in zip(losses, eager)):
            _fail(f"rank {rank}: the compiled run's training differs from eager DDP's (weights differ by up to "
                  f"{result['max_weight_difference']:.3g}; losses {losses} vs {eager})",
                  "the gradients must be averaged over the ranks, as DDP does")
    return _pass(f"the compiled backward of every rank calls all_reduce ({', '.join(f'rank {r}: {n}' for r, n in found.items())}"
                 ") and the training equals eager DDP's")
