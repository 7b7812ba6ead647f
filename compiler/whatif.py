"""What-if: would new arguments hit a cached compile, or recompile — and on which guard?

Runs the live guard managers of each cached entry (``check_verbose``) on the would-be frame
locals; the function itself never runs.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field


@dataclass
class LiveState:
    """Live objects a capture keeps in-process (never saved): code objects seen compiling."""

    codes: dict = field(default_factory=dict)  # compile id → original code object

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
        failures = "; ".join(f"{c['compile_id']}: {c['failed_guard']}" for c in self.checks)
        return f"recompile: guard failed — {failures}"

    __str__ = as_text


def frame_locals(fn, args, kwargs) -> tuple[object, dict]:
    """The code object Dynamo compiles for ``fn`` and the locals it would see at frame entry."""
    import torch

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


def what_if(live: LiveState, fn, args, kwargs) -> WhatIf:
    code, f_locals = frame_locals(fn, args, kwargs)
    checks = []
    for entry in live.entries(code):
        info = entry.guard_manager.check_verbose(f_locals)
        compile_id = str(entry.compile_id)
        checks.append({"compile_id": compile_id, "passed": bool(info.result),
                       "failed_guard": None if info.result else "; ".join(info.verbose_code_parts),
                       "guards_checked": info.num_guards_executed})
        if info.result:
            return WhatIf(accepted_by=compile_id, checks=checks)
    return WhatIf(accepted_by=None, checks=checks)
