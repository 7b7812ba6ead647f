"""Checkers for lab 10 (the modern torch.compile toolbox): each one measures the behaviour the exercise teaches
from torch's own state — a cache hit counted by the FX graph cache, the graph ``torch.export`` makes, what
``torch.library.opcheck`` and ``gradcheck`` say, what a compiled optimizer step updates — and prints one ``✓`` line, or
raises ``CheckFailed`` with a hint (see ``tcompile_labs.checks``).

    from tcompile_labs.checks_modern import *  # shipped with tcompile, next to tcompile_labs.checks
"""
from __future__ import annotations

import contextlib

from tcompile_labs.checks import _fail, _pass, _stance_kept

__all__ = ["check_portable_cache", "check_cond_export", "check_custom_op", "check_compiled_step"]


def _count(group: str, name: str) -> int:
    from torch._dynamo.utils import counters

    return int(counters[group][name])


def _cache_bytes(artifacts):
    """The bytes of ``torch.compiler.save_cache_artifacts()``: its (bytes, CacheInfo) pair or the bytes alone."""
    if artifacts is ... or artifacts is None:
        _fail("no artifacts: save_cache_artifacts() returned None, or no answer yet",
              "it returns None when nothing was compiled since the process started: compile first, then save")
    if isinstance(artifacts, tuple) and artifacts and isinstance(artifacts[0], (bytes, bytearray)):
        artifacts = artifacts[0]
    if not isinstance(artifacts, (bytes, bytearray)):
        _fail(f"artifacts is a {type(artifacts).__name__}, not the bytes save_cache_artifacts() returns",
              "artifacts = torch.compiler.save_cache_artifacts() (a (bytes, CacheInfo) pair) or its [0]")
    return bytes(artifacts)


def check_portable_cache(artifacts, fn, x) -> None:
    """A cold start carried by ``artifacts``: in a fresh, empty cache directory (``torch._inductor.utils.fresh_cache``)
    with Dynamo reset, ``torch.compiler.load_cache_artifacts(artifacts)`` then ``torch.compile(fn)(x)`` (Inductor)
    must find its graph in the FX graph cache — torch's counters ``fxgraph_cache_hit`` up and ``fxgraph_cache_miss``
    not — and compute ``fn(x)``. The check's own compile is recorded apart (``CacheArtifactManager.with_fresh_cache``),
    so it never adds to what this process's next ``save_cache_artifacts()`` returns."""
    import torch
    from torch._inductor.utils import fresh_cache
    from torch.compiler._cache import CacheArtifactManager

    data = _cache_bytes(artifacts)
    with CacheArtifactManager.with_fresh_cache(), fresh_cache(), _stance_kept():
        torch._dynamo.reset()
        try:
            info = torch.compiler.load_cache_artifacts(data)
        except Exception as exc:  # noqa: BLE001 - not artifacts of this torch: named
            _fail(f"load_cache_artifacts could not read these bytes: {type(exc).__name__}: {str(exc)[:200]}",
                  "pass what torch.compiler.save_cache_artifacts() returned, unchanged")
        hits, misses = _count("inductor", "fxgraph_cache_hit"), _count("inductor", "fxgraph_cache_miss")
        got = torch.compile(fn)(x)
        hits, misses = _count("inductor", "fxgraph_cache_hit") - hits, _count("inductor", "fxgraph_cache_miss") - misses
        torch._dynamo.reset()
    if info is None:
        _fail("load_cache_artifacts found no artifacts in these bytes", "save after the compile, not before")
    if misses or not hits:
        _fail(f"a cold compile of {getattr(fn, '__name__', 'the function')} after loading the artifacts: "
              f"{hits} FX graph cache hit(s), {misses} miss(es) — Inductor compiled it again",
              "the artifacts must hold an Inductor compile of this very function on inputs of this shape and dtype "
              "(torch.compile(fn)(x), default backend), saved after it ran")
    if not torch.allclose(got, fn(x), atol=1e-5):
        _fail("the compile loaded from the cache does not compute fn(x)")
    kinds = ", ".join(f"{k}: {len(v)}" for k, v in sorted(info.artifacts.items()))
    return _pass(f"a cold start in an empty cache directory: {hits} FX graph cache hit, 0 misses "
                 f"(the artifacts hold {kinds})")


def _cond_nodes(gm) -> int:
    import torch

    return sum(1 for m in gm.modules() for n in m.graph.nodes
               if n.op == "call_function" and n.target is torch.ops.higher_order.cond)


def check_cond_export(ep, model_cls, reference_cls, x) -> None:
    """``ep`` is an ``ExportedProgram`` whose graph holds a ``torch.cond``; and a fresh ``model_cls()`` given the
    weights of a ``reference_cls()`` exports (``torch.export.export``, under the check) to a graph with a
    ``cond`` that computes the reference on inputs taking either branch (``x.abs()`` and ``-x.abs()``)."""
    import torch

    if ep is ... or model_cls is ...:
        _fail("no answer yet", "ep = torch.export.export(Gate(), (x,))")
    if not isinstance(ep, torch.export.ExportedProgram):
        _fail(f"ep is a {type(ep).__name__}, not an ExportedProgram", "ep = torch.export.export(Gate(), (x,))")
    if not _cond_nodes(ep.graph_module):
        _fail("ep's graph has no torch.cond: one branch was baked in (or both are computed)",
              "torch.cond(pred, true_fn, false_fn, operands) keeps both branches in the graph")
    reference = reference_cls()
    model = model_cls()
    try:
        model.load_state_dict(reference.state_dict())
    except (RuntimeError, TypeError) as exc:
        _fail(f"Gate's parameters differ from the reference's: {str(exc).splitlines()[0][:200]}",
              "keep __init__ as it is; change only forward")
    try:
        fresh = torch.export.export(model, (x,))
    except Exception as exc:  # noqa: BLE001 - the export error, named
        _fail(f"torch.export.export(Gate(), (x,)) failed: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}",
              "a branch on a tensor's value needs torch.cond")
    if not _cond_nodes(fresh.graph_module):
        _fail("a fresh export of Gate has no torch.cond")
    runnable = fresh.module()
    for name, inp in (("positive", x.abs() + 0.1), ("negative", -x.abs() - 0.1)):
        with torch.no_grad():
            if not torch.allclose(runnable(inp), reference(inp), atol=1e-5):
                _fail(f"the exported program is wrong on a {name} input (the other branch)",
                      "each branch of torch.cond must compute what the reference's branch computes")
    return _pass("the exported graph holds a torch.cond, and it computes the reference on both branches")


def check_custom_op(op, reference, x) -> None:
    """``op`` is a custom operator (``torch.library.custom_op``, or an ``OpOverload`` made with
    ``torch.library``) computing ``reference(x, scale)``; ``torch.library.opcheck`` passes its default tests
    (schema, autograd registration, fake tensor, AOT dispatch) with and without gradients; ``gradcheck`` passes
    (the registered backward is the true derivative); and ``torch.compile(fullgraph=True, backend="aot_eager")`` of
    a loss through it runs with the reference's gradient."""
    import torch
    from torch._library.custom_ops import CustomOpDef

    if op is ...:
        _fail("no answer yet", "define the op with @torch.library.custom_op")
    if not isinstance(op, (CustomOpDef, torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        _fail(f"{getattr(op, '__name__', op)!r} is a {type(op).__name__}, not a custom operator",
              "@torch.library.custom_op('lab10::name', mutates_args=()) makes one")
    xd = x.double().detach().requires_grad_()
    for args in ((xd, 1.5), (x.detach(), 0.5)):
        try:
            torch.library.opcheck(op, args)
        except Exception as exc:  # noqa: BLE001 - opcheck's OpCheckError (or the op's own error), named
            _fail(f"torch.library.opcheck failed: {str(exc).splitlines()[0][:300]}",
                  "register_fake (shape and dtype only, no data) and register_autograd")
    with torch.no_grad():
        if not torch.allclose(op(x, 1.5), reference(x, 1.5), atol=1e-5):
            _fail("op(x, 1.5) does not compute the reference")
    try:
        ok = torch.autograd.gradcheck(lambda t: op(t, 1.5), (xd,))
    except Exception as exc:  # noqa: BLE001 - a wrong or missing backward
        _fail(f"gradcheck: {str(exc).splitlines()[0][:200]}",
              "the backward returns grad_output times the derivative of tanh(x) * scale, and None for scale")
    if not ok:
        _fail("gradcheck failed")
    torch._dynamo.reset()
    xs = x.detach().clone().requires_grad_()
    with _stance_kept():
        try:
            torch.compile(lambda t: op(t, 1.5).sum(), backend="aot_eager", fullgraph=True)(xs).backward()
        except Exception as exc:  # noqa: BLE001 - a graph break (fullgraph) or a compile error
            _fail(f"torch.compile(fullgraph=True) of a loss through the op: {type(exc).__name__}: "
                  f"{str(exc).splitlines()[0][:200]}", "the fake implementation lets the compiler trace the op")
    torch._dynamo.reset()
    xr = x.detach().clone().requires_grad_()
    reference(xr, 1.5).sum().backward()
    if xs.grad is None or not torch.allclose(xs.grad, xr.grad, atol=1e-5):
        _fail("the compiled loss's gradient differs from the reference's")
    return _pass("opcheck passes (schema, autograd registration, fake tensor, AOT dispatch), gradcheck passes, "
                 "and a fullgraph compile of a loss through the op has the reference's gradient")


def check_compiled_step(make_step, steps: int = 3) -> None:
    """``step = make_step(opt)`` for an Adam optimizer of a small model of the check's: each ``step()`` must update
    the parameters **inside compiled code** — every ``torch.compile`` forced to a backend of the check's
    (``set_stance(force_backend=...)``) that compares the parameters before and after each compiled run — and after
    ``steps`` steps the parameters equal those of the same model stepped by an eager Adam."""
    import copy

    import torch

    if make_step is ...:
        _fail("no answer yet", "def make_step(opt): return <a compiled optimizer step>")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    twin = copy.deepcopy(model)
    opt, twin_opt = (torch.optim.Adam(m.parameters(), lr=0.01) for m in (model, twin))
    params = list(model.parameters())
    updated = []  # per compiled run: did it change a parameter?

    def backend(gm, example_inputs):
        def run(*args):
            before = [p.detach().clone() for p in params]
            out = gm.forward(*args)
            updated.append(any(not torch.equal(b, p.detach()) for b, p in zip(before, params)))
            return out
        return run

    torch._dynamo.reset()
    step = make_step(opt)
    if not callable(step):
        _fail(f"make_step returned a {type(step).__name__}, not a function to call each step")
    batches = [torch.randn(16, 8) for _ in range(steps)]
    with _stance_kept(), torch.compiler.set_stance("default", force_backend=backend):
        for i, batch in enumerate(batches):
            for m in (model, twin):
                m(batch).square().mean().backward()
            seen = len(updated)
            step()
            twin_opt.step()
            if not any(updated[seen:]):
                _fail(f"step {i + 1}: " + ("no compiled code ran" if len(updated) == seen else
                                           "compiled code ran, but the parameters were updated outside it"),
                      "compile the optimizer's step itself: torch.compile(opt.step)")
            opt.zero_grad()
            twin_opt.zero_grad()
    torch._dynamo.reset()
    if not all(torch.allclose(p, q, atol=1e-6) for p, q in zip(model.parameters(), twin.parameters())):
        _fail(f"after {steps} steps the parameters differ from an eager Adam's", "step the optimizer it was given")
    return _pass(f"{steps} steps, each updating the parameters inside compiled code; the parameters equal an "
                 "eager Adam's")
