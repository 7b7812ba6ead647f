"""Recompiles: torch's ``recompile_reasons`` artifact ("0/0: tensor 'x' size mismatch …")."""
from __future__ import annotations

import json
import re
import textwrap
from dataclasses import dataclass, field
from typing import ClassVar

from compiler.stages.budgets import repeated_guard, value_kind  # noqa: F401 (views import value_kind from here)
from compiler.stages.data import Data, Stage, as_declared


# --- declared here, built below (``compiler.stages.schema`` ties the stages into a ``Compile``) ---

@dataclass(repr=False, eq=False)
class RecompileReason(Data):
    text: str = ""
    guard: str = ""  # the guard that failed
    detail: str | None = None
    against: str | None = None  # the compile id whose guards failed
    note: str | None = None
    user_stack: str | None = None


@dataclass(repr=False, eq=False)
class Recompile(Stage):
    """Why this compile happened although the frame had compiled before."""

    NAME: ClassVar[str] = "recompile"
    reasons: list[RecompileReason] = field(default_factory=list)
    compile_id: str | None = None  # set in ``Capture.recompiles``
    name: str | None = None

    @property
    def failed_guard(self) -> str | None:
        """The first guard that failed (torch lists the reasons against each earlier compile)."""
        return self.reasons[0].guard if self.reasons else None

    def _text(self):
        head = f"recompile {self.compile_id} ({self.name})\n" if self.compile_id else ""
        return head + "\n".join(f"  against {r.against}: {r.text}" for r in self.reasons)

    def _summary(self):
        return f"{self.compile_id or ''} {self.failed_guard}"


@dataclass(repr=False, eq=False)
class RecompileLimit(Data):
    """A frame that reached Dynamo's recompile limit: new variants run eagerly, with only a logged warning
    (``compiler.stages.recompiles.limit_hits``)."""

    compile_id: str = ""  # the refused compile
    frame_id: int = 0
    function: str | None = None
    file: str | None = None
    line: int | None = None
    compile_ids: list[str] = field(default_factory=list)  # the compiles the frame made
    limit: int | None = None
    limit_type: str = "recompile_limit"  # the torch._dynamo.config name
    limit_source: str | None = None  # where ``limit`` was read
    guard: str | None = None  # the guard that kept failing, its value stripped: "spatial_scale =="
    values: list[str] = field(default_factory=list)  # the values the guard was specialised to
    note: str | None = None  # torch's note on where the guard came from
    message: str | None = None  # torch's own message for the refused compile
    gb_code: str | None = None  # its graph-break registry code (GB0039)

    def as_text(self) -> str:
        return (f"recompile limit: {self.function} compiled {len(self.compile_ids)} times "
                f"({self.limit_type} = {self.limit}); failing guard {self.guard} {', '.join(self.values)}")


_REASON = re.compile(r"^(?P<against>\d+/\d+): (?P<text>.*)$")


def parse_reasons(payload: str | None) -> list[dict]:
    """One reason per rejected compile. torch writes one reason as plain text and several as a JSON list;
    a reason whose failing guard recorded where it was made ends with "User stack trace:" and that stack."""
    if not payload:
        return []
    try:
        value = json.loads(payload)
        entries = value if isinstance(value, list) else [str(value)]
    except (json.JSONDecodeError, TypeError):
        entries = [payload]
    reasons = []
    for entry in entries:
        head, _, stack = str(entry).partition("User stack trace:")
        stack = textwrap.dedent(stack.strip("\n")).strip() or None
        for line in (l.strip() for l in head.splitlines() if l.strip()):
            match = _REASON.match(line)
            text = match["text"] if match else line
            text, note = (re.split(r"\s{2,}#\s*", text, maxsplit=1) + [""])[:2]
            guard, _, detail = text.partition(". ")
            reasons.append({"against": match["against"] if match else None, "guard": guard.strip(),
                            "detail": detail.strip() or None, "text": text.strip(),
                            "note": note.strip(" #") or None, "user_stack": stack})
    return reasons


def recompile_stage(payload: str | None, metrics: dict) -> Recompile:
    reasons = parse_reasons(payload)
    if not reasons and metrics.get("recompile_reason"):
        reasons = parse_reasons(metrics["recompile_reason"])
    if not reasons:
        return Recompile(available=False, reason="not a recompile: first compile of this frame")
    return as_declared(Recompile, {"available": True, "reasons": reasons})


# torch's message when a frame is over its limit (convert_frame: "Dynamo recompile limit exceeded")
_LIMIT = re.compile(r"exceeding the (?P<type>\w+) cache size limit \(currently set to (?P<limit>\d+)\)")
_GB_CODE = re.compile(r"/gb/(gb\d+)\.html", re.IGNORECASE)  # torch's link to its graph-break registry


def limit_hits(compiles: list, limits: dict) -> list[dict]:
    """Frames that reached Dynamo's recompile limit: torch stops compiling them and runs every new variant
    eagerly, with only a logged warning. One item per frame: its compiles (``Compile``s), the limit (``limits``:
    ``torch._dynamo.config`` as recorded at capture time, else the value torch's message names) and the guard
    that kept failing, with the values it was specialised to."""
    from compiler.stages.skipped import is_recompile_limit

    hits = {}
    for failed in (c for c in compiles if is_recompile_limit(c)):
        if failed.frame_id in hits:
            continue
        message = failed.error.message
        match = _LIMIT.search(message)
        limit_type = match["type"] if match else "recompile_limit"
        frame = [c for c in compiles if c.frame_id == failed.frame_id and c.status == "compiled"]
        named = next((c for c in frame if c.name), failed)
        guard, values, note = repeated_guard([c.recompile.reasons for c in compiles
                                              if c.frame_id == failed.frame_id and c.recompile.available])
        limit = limits.get(limit_type, int(match["limit"]) if match else None)
        hits[failed.frame_id] = {
            "compile_id": failed.compile_id, "frame_id": failed.frame_id, "function": named.name,
            "file": named.source.filename, "line": named.source.firstlineno,
            "compile_ids": [c.compile_id for c in frame], "limit": limit, "limit_type": limit_type,
            "limit_source": "torch._dynamo.config at capture time" if limit_type in limits else "torch's message",
            "guard": guard, "values": values, "note": note, "message": message,
            "gb_code": gb.group(1).upper() if (gb := _GB_CODE.search(message)) else None}
    return list(hits.values())
