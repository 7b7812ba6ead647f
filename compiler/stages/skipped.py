"""Skipped frames: a frame whose compile failed with ``Unsupported`` (a graph break in a for/while loop,
…) is not compiled at all; torch runs the whole frame eagerly, on every call. That is the costliest
outcome a frame can have, so it is its own finding, not a graph break: a graph break ends a graph and
resumes, a skipped frame has no graph.

The reason is torch's own (the compile's ``fail_reason``): the break that happened first (``cause``,
with its line) and, where torch gave up because of it, the name it gives the skip ("graph break in
loop"). A frame that hit the recompile limit fails too; that is a recompile finding
(``compiler.stages.recompiles.limit_hits``), not a skipped frame."""
from __future__ import annotations

from dataclasses import dataclass

from compiler.stages import breaks as breaks_mod
from compiler.stages.breaks import GraphBreak
from compiler.stages.data import Data


# --- declared here, built below (``compiler.stages.schema`` ties the stages into a ``Compile``) ---

@dataclass(repr=False, eq=False)
class SkippedFrame(Data):
    """A frame Dynamo gave up on: no graph, torch runs all of it eagerly on every call
    (``compiler.stages.skipped``)."""

    compile_id: str = ""
    function: str | None = None
    file: str | None = None
    line: int | None = None  # the function's first line
    reason: str = ""  # torch's name for why it skipped the frame ("graph break in loop")
    gb_code: str | None = None
    explanation: str | None = None
    cause: GraphBreak | None = None  # the graph break that started it, where it happened
    seconds: float | None = None  # time spent in this frame per compiled call, where measured (under a profiler)
    share: float | None = None  # … as a share of the compiled call's time
    call_seconds: float | None = None  # the compiled call's time in the same measurement: ``seconds`` ≤ it

    def as_text(self) -> str:
        where = f"{self.file}:{self.line}" if self.file else "unknown location"
        cause = (f"; caused by {self.cause.headline} at {self.cause.file}:{self.cause.line}"
                 if self.cause and self.cause.file else "")
        share = f"; {self.share:.0%} of the compiled call's time" if self.share is not None else ""
        return f"skipped frame {self.function} ({where}), {self.compile_id}: {self.reason}{cause}{share}"


# torch's text when a second graph break ends the handling of the first (convert_frame / symbolic_convert)
_SECOND = "*** While handling this graph break, another graph break occurred: ***"
RECOMPILE_LIMIT = "Dynamo recompile limit exceeded"  # torch's gb_type for a frame over the recompile limit


def is_recompile_limit(compile) -> bool:
    return bool(compile.error and (compile.error.message or "").startswith(RECOMPILE_LIMIT))


def is_skipped(compile, options: dict) -> bool:
    """Did torch give up on this frame (a ``Compile``) and run it eagerly? Under ``fullgraph=True`` the same
    failure is an error raised to the caller (a fatal graph break), not a skip."""
    error = compile.error
    return (compile.status == "failed" and error is not None and "Unsupported" in str(error.type)
            and bool(error.message) and not is_recompile_limit(compile) and not options.get("fullgraph"))


def skipped_frame(compile, breaks: list[dict], sources) -> dict:
    """One skipped frame (a ``Compile``): which function, why torch skipped it, and the break that caused it
    (``breaks``: the compile's parsed graph-break records, the first one is where tracing stopped)."""
    error = compile.error
    first, _, second = error.message.partition(_SECOND)
    cause = breaks[0] if breaks else breaks_mod.parse_break(first, sources)
    skip = breaks_mod.parse_break(second, sources) if second.strip() else None
    metrics = compile.metrics
    if not cause.get("file") and error.file:
        cause.update(file=error.file, line=_int(error.line), code=sources.line(error.file, _int(error.line)))
    return {"compile_id": compile.compile_id, "function": compile.name,
            "file": metrics.get("co_filename") or compile.source.filename,
            "line": _int(metrics.get("co_firstlineno")) or compile.source.firstlineno,
            "reason": skip["headline"] if skip else cause["headline"],
            "gb_code": skip["gb_code"] if skip else cause["gb_code"],
            "explanation": (skip or cause).get("explanation"),
            "cause": {k: v for k, v in cause.items() if k not in ("compile_id",)}}


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def frame_key(item: dict) -> tuple:
    """How a skipped frame is found at run time: its code object's file, first line and name."""
    return (item.get("file"), item.get("line"), item.get("function"))


def with_share(items: list[dict], frame_times: dict | None) -> list[dict]:
    """Add each frame's measured time per call and share of the compiled call (``frame_times``:
    ``compiler.capturing.runtime.frame_times``), where measured."""
    if not frame_times or not frame_times.get("available"):
        return items
    total = frame_times.get("call_s") or 0
    for item in items:
        seconds = frame_times["frames"].get(_key_text(frame_key(item)))
        if seconds is not None and total > 0:
            item.update(seconds=min(seconds, total), share=min(1.0, seconds / total), call_seconds=total)
    return items


def _key_text(key: tuple) -> str:
    return f"{key[0]}:{key[1]}:{key[2]}"


