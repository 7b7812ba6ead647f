"""What-if: would new arguments hit a cached compile, or recompile — and on which guard?

Runs the live guard managers of each cached entry (``check_verbose``) on the would-be frame
locals; the function itself never runs.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field


@dataclass
class LiveState:
    """What a capture made in this process keeps besides its data (``cap.live``; never saved, and
    None on a capture loaded from a file).

    - ``codes``: compile id → the original code object Dynamo compiled (its cache entries hold the
      guard managers that ``what_if`` runs).
    - ``records``: the raw records the capture was built from (``compiler.records.Record``), for
      debugging tcompile itself.
    - ``compiled_fn``: the ``torch.compile``-d function ``compiler.run`` called (None for
      ``compiler.capture()``, where the user compiles).
    - ``result``: what the first compiled call returned (``compiler.run``; the ``%%tcompile`` cell's
      names and value come from it).
    """

    codes: dict = field(default_factory=dict)  # compile id → original code object
    records: list = field(default_factory=list)
    compiled_fn: object = None
    result: object = None

    def entries(self, code):
        from torch._dynamo.eval_frame import _debug_get_cache_entry_list

        return _debug_get_cache_entry_list(code)


@dataclass
class WhatIf:
    accepted_by: str | None  # compile id whose guards all pass, or None: it would recompile
    checks: list[dict]  # every cached entry, newest first: compile id, passed, failing guard

    @property
    def recompiles(self) -> bool:
        return self.accepted_by is None

    def as_text(self) -> str:
        if self.accepted_by:
            return f"accepted by compile {self.accepted_by}: no recompile"
        if not self.checks:
            return "no cached compile for this function yet: the call would compile it"
        failures = "; ".join(f"{c['compile_id']}: " + ("; ".join(c["failed_shape_guards"]) or c["failed_guard"])
                             for c in self.checks)
        return f"recompile: guard failed — {failures}"

    __str__ = as_text


def _shape_failure(check: dict) -> str:
    values = check["with_values"].replace("==", "≠") if check["with_values"].count("==") == 1 else check["with_values"]
    symbolic = f" (symbolically {check['symbolic']})" if check["symbolic"] != check["condition"] else ""
    return f"shape guard {check['condition']}{symbolic} fails: {values}"


def frame_locals(fn, args, kwargs) -> tuple[object, dict]:
    """The code object Dynamo compiles for ``fn`` and the locals it would see at frame entry."""
    import types

    import torch

    if isinstance(fn, types.CodeType):
        return fn, _locals_from_code(fn, args, kwargs)
    if isinstance(fn, torch.nn.Module):
        fn = fn.forward
    fn = getattr(fn, "_torchdynamo_orig_callable", fn)
    fn = inspect.unwrap(fn)
    target = fn.__func__ if inspect.ismethod(fn) else fn
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    f_locals = dict(bound.arguments)
    if inspect.ismethod(fn):
        first = next(iter(inspect.signature(target).parameters))
        f_locals = {first: fn.__self__, **f_locals}
    return target.__code__, f_locals


def _locals_from_code(code, args, kwargs) -> dict:
    """Without the function (``capture()`` only saw its code), bind arguments by parameter name."""
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    if len(args) > code.co_argcount:
        raise TypeError(f"{code.co_name}() takes {code.co_argcount} positional arguments")
    f_locals = {**dict(zip(names, args)), **kwargs}
    missing = [n for n in names if n not in f_locals]
    if missing:
        raise TypeError(f"pass every argument of {code.co_name}() (defaults are unknown from its code): "
                        f"missing {', '.join(missing)}")
    return f_locals


def what_if(live: LiveState, fn, args, kwargs, compiles=()) -> WhatIf:
    from .shapes import check_shape_guards

    code, f_locals = frame_locals(fn, args, kwargs)
    by_id = {c.compile_id: c for c in compiles}
    checks = []
    for entry in live.entries(code):
        info = entry.guard_manager.check_verbose(f_locals)
        compile_id = str(entry.compile_id)
        compiled = by_id.get(compile_id)
        shape_checks = (check_shape_guards(compiled.guards.rows, f_locals, compiled.shapes.symbol_sources)
                        if compiled is not None else [])
        checks.append({"compile_id": compile_id, "passed": bool(info.result),
                       "failed_guard": None if info.result else "; ".join(info.verbose_code_parts),
                       "guards_checked": info.num_guards_executed,
                       "shape_guards": shape_checks,
                       "failed_shape_guards": [_shape_failure(c) for c in shape_checks if c["passed"] is False]})
        if info.result:
            return WhatIf(accepted_by=compile_id, checks=checks)
    return WhatIf(accepted_by=None, checks=checks)
