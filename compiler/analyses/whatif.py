"""What-if: would new arguments hit a cached compile, or recompile — and on which guard?

Two ways to ask (``Capture.what_if``):

- **No run** (default): the live guard managers of the entry frame's cached compiles
  (``check_verbose``) run on the would-be frame locals; the function itself never runs. Frames that
  only start after a graph break (resume frames), hook frames and other functions compiled on their
  own are not checked, and the answer lists them (``WhatIf.not_checked``).
- **Dry run** (``dry_run=True``): the function is called once, for real, under
  ``torch.compiler.set_stance("eager_on_recompile")`` — nothing is compiled, a frame whose guards
  all fail runs eagerly instead. Every frame with cached compiles that the call enters is seen (a
  profile hook, removed afterwards), and for each one torch would recompile, torch's own
  recompilation reasons (``get_and_maybe_log_recompilation_reasons``, not logged) say which guard
  failed (``DryRun.recompiles``). It runs the user's code, with its side effects.
"""
from __future__ import annotations

import inspect
import re
import sys
from dataclasses import dataclass, field
from typing import Any

from compiler.capturing.run import target_function
from compiler.stages.base import resume_origin
from compiler.stages.capture import METHODS, LiveState


@dataclass
class ShapeCheck:
    """One size guard (``L['b'].size()[0] == L['a'].size()[0]``) evaluated on the would-be arguments."""

    condition: str
    symbolic: str
    with_values: str
    passed: bool | None  # None: could not be evaluated
    note: str | None = None

    def failure_text(self) -> str:
        values = self.with_values.replace("==", "≠") if self.with_values.count("==") == 1 else self.with_values
        symbolic = f" (symbolically {self.symbolic})" if self.symbolic != self.condition else ""
        return f"shape guard {self.condition}{symbolic} fails: {values}"


@dataclass
class GuardCheck:
    """One cached compile's guards run on the would-be frame locals (no-run what-if)."""

    compile_id: str
    passed: bool
    failed_guard: str | None = None  # torch's failing guard code, when it failed
    guards_checked: int = 0
    shape_guards: list[ShapeCheck] = field(default_factory=list)

    @property
    def failed_shape_guards(self) -> list[str]:
        return [c.failure_text() for c in self.shape_guards if c.passed is False]

    @property
    def reason(self) -> str:
        return "; ".join(self.failed_shape_guards) or self.failed_guard or ""


@dataclass
class Frame:
    """A compiled frame of the capture: its function and where it starts."""

    function: str
    file: str
    line: int
    compile_ids: list[str] = field(default_factory=list)  # its compiles in the capture

    @property
    def kind(self) -> str:
        origin = resume_origin(self.function)
        if origin:
            return f"the frame after the graph break at line {origin[1]} of {origin[0]}()"
        return f"{self.function}() ({_short(self.file)}:{self.line})"

    @classmethod
    def of(cls, code, compile_ids=()) -> "Frame":
        return cls(code.co_name, code.co_filename, code.co_firstlineno, list(compile_ids))


@dataclass
class WhatIf:
    """The no-run answer: the entry frame's cached compiles checked in Dynamo's cache order (most recently used
    first: a hit moves its entry to the front, ``ExtraState::move_to_front``)."""

    accepted_by: str | None  # compile id whose guards all pass, or None: it would recompile
    checks: list[GuardCheck]
    frame: Frame | None = None  # the entry frame checked
    not_checked: list[Frame] = field(default_factory=list)  # other compiled frames: not checked without a run

    @property
    def recompiles(self) -> bool:
        return self.accepted_by is None

    def as_text(self) -> str:
        if self.accepted_by:
            text = f"accepted by compile {self.accepted_by}: no recompile"
        elif not self.checks:
            text = "no cached compile for this function yet: the call would compile it"
        else:
            failures = "; ".join(f"{c.compile_id}: {c.reason}" for c in self.checks)
            text = f"recompile: guard failed — {failures}"
        if self.not_checked:
            text += (" (only the entry frame's guards were checked; not checked: "
                     + "; ".join(f"{f.kind} [{', '.join(f.compile_ids)}]" for f in self.not_checked)
                     + " — what_if(..., dry_run=True) checks every frame by running the call)")
        return text

    __str__ = as_text


@dataclass
class FrameRecompile:
    """A frame the call enters whose cached compiles all reject it: the real call recompiles it."""

    frame: Frame
    failed_guard: str  # the first failing guard, as torch reports it
    reasons: list[str]  # torch's recompilation reasons, one per cached compile ("0/0: …")
    note: str | None = None  # e.g. the recompile limit is reached: torch would run it eagerly

    def as_text(self) -> str:
        ids = ", ".join(self.frame.compile_ids)
        return f"{self.frame.kind} [{ids}]: {self.failed_guard}" + (f" ({self.note})" if self.note else "")


@dataclass
class FrameReuse:
    """A frame the call enters whose cached compile ``compile_id`` accepts it."""

    frame: Frame
    compile_id: str


@dataclass
class DryRun:
    """The dry-run answer: what one real call under ``eager_on_recompile`` met, frame by frame."""

    recompiles: list[FrameRecompile] = field(default_factory=list)  # empty: no frame would recompile
    reused: list[FrameReuse] = field(default_factory=list)
    not_checked: list[Frame] = field(default_factory=list)  # compiled frames the call did not reach
    error: str | None = None  # the call raised: "Type: message"
    result: Any = None  # what the call returned

    @property
    def accepted_by(self) -> str | None:
        return self.reused[0].compile_id if self.reused and not self.recompiles else None

    def as_text(self) -> str:
        if self.recompiles:
            text = (f"recompile: {len(self.recompiles)} frame{'s' if len(self.recompiles) > 1 else ''} would "
                    "recompile — " + "; ".join(r.as_text() for r in self.recompiles))
        elif self.reused:
            text = ("no recompile: every frame reuses a compile ("
                    + ", ".join(f"{r.frame.function} → {r.compile_id}" for r in self.reused) + ")")
        else:
            text = ("no compiled frame was entered: the call would compile its frames for the first time "
                    "(or it did not go through the compiled function: pass that, e.g. cap.live.compiled_fn)")
        if self.not_checked:
            text += (" (not reached, because a frame around them would recompile and ran eagerly: "
                     + "; ".join(f.kind for f in self.not_checked) + ")")
        if self.error:
            text += f"; the call raised {self.error}"
        return text + " [dry run: the function ran once]"

    __str__ = as_text


def _short(path: str) -> str:
    return path.rsplit("/", 1)[-1]


# --- binding arguments to frame locals ----------------------------------------------------------


def frame_locals(fn, args, kwargs) -> tuple[object, dict]:
    """The code object Dynamo compiles for ``fn`` and the locals it would see at frame entry."""
    import types

    fn = target_function(fn)
    if isinstance(fn, types.CodeType):
        return fn, _locals_from_code(fn, args, kwargs)
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


def compiled_frames(live: LiveState) -> dict:
    """Original code object → the compile ids of the capture that compiled it."""
    frames: dict = {}
    for compile_id, code in live.codes.items():
        frames.setdefault(code, []).append(compile_id)
    return frames


# --- no run -------------------------------------------------------------------------------------

def what_if(live: LiveState, fn, args, kwargs, compiles=()) -> WhatIf:
    from compiler.stages.shapes import check_shape_guards

    code, f_locals = frame_locals(fn, args, kwargs)
    by_id = {c.compile_id: c for c in compiles}
    frames = compiled_frames(live)
    others = [Frame.of(other, ids) for other, ids in frames.items() if other is not code]
    checks = []
    for entry in live.entries(code):
        info = entry.guard_manager.check_verbose(f_locals)
        compile_id = str(entry.compile_id)
        compiled = by_id.get(compile_id)
        shape_checks = (check_shape_guards(compiled.guards.rows, f_locals, compiled.shapes.symbol_sources)
                        if compiled is not None else [])
        checks.append(GuardCheck(compile_id=compile_id, passed=bool(info.result),
                                 failed_guard=None if info.result else "; ".join(info.verbose_code_parts),
                                 guards_checked=info.num_guards_executed,
                                 shape_guards=[ShapeCheck(**c) for c in shape_checks]))
        if info.result:
            break
    accepted = next((c.compile_id for c in checks if c.passed), None)
    return WhatIf(accepted_by=accepted, checks=checks, frame=Frame.of(code, frames.get(code, ())),
                  not_checked=others)


# --- dry run ------------------------------------------------------------------------------------

_COMMENT = re.compile(r"\s{2,}#.*$", re.S)


def _reason_parts(reason: str) -> tuple[str, str]:
    """torch's ``"0/0: G['SCALE'] == 2      # y * SCALE  # f.py:6 in f\\nUser stack trace: …"`` →
    (``"0/0: G['SCALE'] == 2"``, ``"G['SCALE'] == 2"``)."""
    first = reason.split("\nUser stack trace:", 1)[0].strip()
    parts = [_COMMENT.sub("", part).strip() for part in first.split("\n")]
    text = "; ".join(p for p in parts if p)
    guard = text.split(": ", 1)[1] if re.match(r"^\[?\d+/\d+\]?: ", text) else text
    return text, guard


class _FrameWatcher:
    """A profile hook that sees every frame with cached compiles the call enters: a cached compile's
    transformed code starting is a reuse; the original code starting is a frame run eagerly
    because no cached compile accepted it (the stance forbids compiling)."""

    def __init__(self, live: LiveState):
        from torch._dynamo.eval_frame import _debug_get_cache_entry_list

        self.entries = _debug_get_cache_entry_list
        self.known = compiled_frames(live)
        self.transformed: dict = {}  # a cached compile's code → (original code, compile id)
        for code in self.known:
            for entry in self.entries(code):
                self.transformed[entry.code] = (code, str(entry.compile_id))
        self.has_entries: dict = {}
        self.recompiles: list[FrameRecompile] = []
        self.reused: list[FrameReuse] = []
        self.entered: set = set()
        self.previous = None

    def __call__(self, frame, event, arg):
        if event == "call":
            try:
                self.see(frame)
            except Exception:  # noqa: BLE001 — observing must never break the user's call
                pass
        if self.previous is not None:
            self.previous(frame, event, arg)

    def see(self, frame) -> None:
        code = frame.f_code
        hit = self.transformed.get(code)
        if hit is not None:
            original, compile_id = hit
            self.entered.add(original)
            self.reused.append(FrameReuse(Frame.of(original, self.known.get(original, ())), compile_id))
            return
        entries = self.has_entries.get(code)
        if entries is None:
            entries = self.has_entries[code] = self.entries(code)
        if not entries:
            return
        self.entered.add(code)
        f_locals = dict(frame.f_locals)
        if any(entry.guard_manager.check(f_locals) for entry in entries):
            return  # accepted after all (e.g. the frame ran with Dynamo disabled around it)
        from torch._dynamo.guards import get_and_maybe_log_recompilation_reasons

        reasons = get_and_maybe_log_recompilation_reasons(entries, frame, None, skip_logging=True)
        texts = [_reason_parts(r) for r in reasons] or [("", "no reason given by torch")]
        self.recompiles.append(FrameRecompile(
            frame=Frame.of(code, self.known.get(code) or [str(e.compile_id) for e in entries]),
            failed_guard=texts[0][1], reasons=[t[0] for t in texts], note=_limit_note(len(entries))))


def _limit_note(cached: int) -> str | None:
    import torch

    limit = torch._dynamo.config.recompile_limit
    if cached >= limit:
        return (f"it already has {cached} cached compiles, torch._dynamo.config.recompile_limit is {limit}: "
                "the real call runs it eagerly instead of recompiling")
    return None


def dry_run(live: LiveState, fn, args, kwargs) -> DryRun:
    """Call ``fn(*args, **kwargs)`` once under ``set_stance("eager_on_recompile")`` and report every
    frame that would recompile (see the module docstring). ``fn`` must be the compiled callable."""
    import types

    import torch

    if isinstance(fn, types.CodeType) or not callable(fn):
        raise TypeError("a dry run calls the function: pass the function, module or compiled function "
                        "(cap.live.compiled_fn), not a code object")
    if _is_compiled(fn):
        call = fn
    elif live.compiled_fn is not None and _original(live.compiled_fn) is fn:
        call = live.compiled_fn  # the same call path as the capture (a module's hooks run inside it)
    else:
        call = _run_only(fn)
    watcher = _FrameWatcher(live)
    result = DryRun()
    watcher.previous = sys.getprofile()
    with torch.compiler.set_stance("eager_on_recompile"):
        sys.setprofile(watcher)
        try:
            result.result = call(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 — the user's code failing is part of the answer
            result.error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        finally:
            sys.setprofile(watcher.previous)
    result.recompiles, result.reused = watcher.recompiles, watcher.reused
    missed = {r.frame.function for r in watcher.recompiles}
    result.not_checked = [Frame.of(code, ids) for code, ids in watcher.known.items()
                          if code not in watcher.entered and (resume_origin(code.co_name) or ("",))[0] in missed]
    return result


def _is_compiled(fn) -> bool:
    from torch._dynamo.eval_frame import OptimizedModule

    return isinstance(fn, OptimizedModule) or hasattr(fn, "_torchdynamo_orig_callable")


def _original(compiled):
    return getattr(compiled, "_orig_mod", None) or getattr(compiled, "_torchdynamo_orig_callable", None)


def _run_only(fn):
    """``fn`` called with Dynamo in run-only mode: cached compiles are used, nothing is compiled
    (a plain function or module the user compiled inside ``capture()``)."""
    from torch._dynamo.eval_frame import RunOnlyContext

    def call(*args, **kwargs):
        return fn(*args, **kwargs)

    return RunOnlyContext()(call)


METHODS.update(what_if=what_if, dry_run=dry_run)  # Capture.what_if (compiler.stages.capture)
