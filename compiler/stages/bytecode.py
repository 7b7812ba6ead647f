"""Bytecode before and after Dynamo, from ``register_bytecode_hook`` (observe only: the hook
returns None, so torch keeps its own transformed code), with the transformed code — and a resume
function's own code — decompiled to Python by ``depyf`` when it is installed.

The hook only keeps the two code objects; listing them (``transformation``) waits until the capture
is assembled and decompiling until a listing's text is first read, so neither adds to Dynamo's compile.
"""
from __future__ import annotations

import dis
import functools
import os
import platform
import re
import sys
import threading
import types
from dataclasses import dataclass, field
from typing import ClassVar

from compiler.stages.data import BuiltOnRead, Data, Deferred, Stage


# --- declared here, built below (``compiler.stages.schema`` ties the stages into a ``Compile``) ---

@dataclass(repr=False, eq=False)
class Source(Stage):
    NAME: ClassVar[str] = "source"
    filename: str | None = None
    firstlineno: int | None = None
    name: str | None = None
    text: str = ""
    resumes: str | None = None  # a resume frame shows the function it resumes …
    resume_line: int | None = None  # … from this line

    def _text(self):
        return self.text

    def _summary(self):
        return f"{self.name} at {self.filename}:{self.firstlineno}"


@dataclass(repr=False, eq=False)
class Instruction(Data):
    offset: int = 0
    opname: str = ""
    arg: int | None = None
    argrepr: str = ""
    line: int | None = None
    is_jump_target: bool = False


@dataclass(repr=False, eq=False)
class CodeListing(Data):
    """One code object as ``dis`` lists it."""

    name: str | None = None
    filename: str | None = None
    firstlineno: int | None = None
    text: str = ""
    instructions: list[Instruction] = field(default_factory=list)
    decompiled: str | None = None  # the code as Python, by depyf (transformed code, and a resume function's own)
    decompiled_reason: str | None = None  # why there is no decompiled text (depyf missing or failed)
    instructions_from_text: bool = False  # saved without ``instructions``: loading reads them from ``text``

    def __post_init__(self):
        if self.instructions_from_text:  # read from the text on first read (``BuiltOnRead``), not on load
            self.__dict__["instructions"] = Deferred(list, functools.partial(_instructions, self.text))
            self.instructions_from_text = False

    def to_data(self) -> dict:
        """Saved without the instructions when reading the text back gives them exactly (they are the text again)."""
        out = super().to_data()
        out.pop("instructions_from_text")
        if out["instructions"] and instructions_of(self.text) == out["instructions"]:
            del out["instructions"]
            out["instructions_from_text"] = True
        return out

    def __getattribute__(self, name):
        # a live capture decompiles on first read (compiler.stages.bytecode.decompiled_on_read)
        if name in _DECOMPILED:
            state = object.__getattribute__(self, "__dict__")
            if "_pending_code" in state:
                state.update(decompile(state.pop("_pending_code")))
        return object.__getattribute__(self, name)


def _instructions(text: str) -> list[Instruction]:
    return [Instruction(**row) for row in instructions_of(text) or []]


CodeListing.instructions = BuiltOnRead("instructions")
_DECOMPILED = frozenset({"decompiled", "decompiled_reason"})


@dataclass(repr=False, eq=False)
class Bytecode(Stage):
    NAME: ClassVar[str] = "bytecode"
    original: CodeListing | None = None
    transformed: CodeListing | None = None
    is_resume: bool = False
    source: str | None = None  # where the listings came from (the bytecode hook or torch's artifacts)

    def _text(self):
        parts = [f"# original ({self.original.name})\n{self.original.text}" if self.original else None,
                 f"# transformed by Dynamo ({self.transformed.name})\n{self.transformed.text}"
                 if self.transformed else None]
        return "\n\n".join(p for p in parts if p)

    def _summary(self):
        counts = [f"{len(c.instructions)} instructions {what}" for what, c in
                  (("before", self.original), ("after", self.transformed)) if c]
        return ", ".join(counts)


RESUME_PREFIX = "torch_dynamo_resume_in_"


def listing(code: types.CodeType) -> list[dict]:
    rows = []
    for ins in dis.get_instructions(code):
        line = ins.positions.lineno if getattr(ins, "positions", None) else ins.starts_line
        rows.append({"offset": ins.offset, "opname": ins.opname, "arg": ins.arg,
                     "argrepr": ins.argrepr, "line": line, "is_jump_target": ins.is_jump_target})
    return rows


_DIS_ROW = re.compile(r"^(?P<line>\s*\d+)?\s+(?P<target>>>)?\s*(?P<offset>\d+) (?P<opname>[A-Z_][A-Z0-9_]*)"
                      r"(?: +(?P<arg>-?\d+))?(?: +\((?P<argrepr>.*)\))?$")


def instructions_of(text: str) -> list[dict] | None:
    """The instructions of a ``dis`` listing read back from its text (``listing``'s rows), or None where the text
    is not one this reader knows. A saved listing leaves its instructions out only when this gives them back
    exactly (exception-handler targets, which ``dis`` marks like jump targets, keep theirs)."""
    rows, line = [], None
    for raw in text.splitlines():
        if not raw.strip():
            continue
        if raw.startswith("ExceptionTable:"):
            break
        match = _DIS_ROW.match(raw)
        if match is None:
            return None
        if match["line"] and match["line"].strip():
            line = int(match["line"])
        rows.append({"offset": int(match["offset"]), "opname": match["opname"],
                     "arg": int(match["arg"]) if match["arg"] else None, "argrepr": match["argrepr"] or "",
                     "line": line, "is_jump_target": bool(match["target"])})
    return rows


def describe(code: types.CodeType) -> dict:
    return {"name": code.co_name, "filename": code.co_filename, "firstlineno": code.co_firstlineno,
            "text": dis.Bytecode(code).dis(), "instructions": listing(code)}


def transformation(code: types.CodeType, new_code: types.CodeType) -> dict:
    """What the bytecode hook keeps: both listings, and the code objects for ``bytecode_stage``."""
    return {"original": describe(code), "transformed": describe(new_code),
            "is_resume": code.co_name.startswith(RESUME_PREFIX), "code_objects": (code, new_code)}


# depyf tidies the temporaries of its output (DEPYF_REMOVE_TEMP, on by default) in time that grows faster
# than the code: 1.4 s for GPT-2-small's 1,958 transformed instructions, 0.08 s without. Longer code is
# shown untidied (more __temp_N, the same meaning).
TIDY_MAX_INSTRUCTIONS = 500
_DEPYF = threading.Lock()  # DEPYF_REMOVE_TEMP is read from the environment while decompiling


def decompile(code: types.CodeType) -> dict:
    """``code`` as Python source by ``depyf`` → ``{"decompiled": text}``, or ``{"decompiled_reason": why not}``."""
    try:
        from depyf.decompiler import Decompiler
    except ImportError as exc:
        # said of the machine that made the capture, not of whoever reads it later
        return {"decompiled_reason": f"not decompiled: depyf was not installed where this capture was made "
                                     f"({platform.node() or 'this machine'}, {sys.executable}); pip install depyf "
                                     f"there and capture again for the decompiled Python ({exc})"}
    tidy = sum(1 for _ in dis.get_instructions(code)) <= TIDY_MAX_INSTRUCTIONS
    with _DEPYF:
        saved = os.environ.get("DEPYF_REMOVE_TEMP")
        os.environ["DEPYF_REMOVE_TEMP"] = "1" if tidy else "0"
        try:
            text = Decompiler(code).decompile()
        except Exception as exc:  # noqa: BLE001 — depyf does not know every opcode of every Python
            first = (str(exc).strip().splitlines() or [""])[0].removeprefix(f"{type(exc).__name__}: ")
            return {"decompiled_reason": f"depyf could not decompile {code.co_name}: {type(exc).__name__}: {first}"}
        finally:
            if saved is None:
                os.environ.pop("DEPYF_REMOVE_TEMP", None)
            else:
                os.environ["DEPYF_REMOVE_TEMP"] = saved
            Decompiler.decompile.cache_clear()  # its cache would keep every code object alive
    return {"decompiled": text.rstrip() + "\n"}


def bytecode_stage(from_hook: dict | None, artifacts: dict[str, str]) -> dict:
    """Prefer the live hook (structured listings, decompiled code); fall back to torch's ``*_BYTECODE`` artifacts."""
    if from_hook:
        stage = {k: v for k, v in from_hook.items() if k != "code_objects"}
        # decompiled later, on first read of ``decompiled`` (or at save): ``decompiled_on_read``
        return {"available": True, "source": "bytecode_hook", **stage}
    original = next((v for k, v in artifacts.items() if k.endswith("_ORIGINAL_BYTECODE")), None)
    modified = next((v for k, v in artifacts.items() if k.endswith("_MODIFIED_BYTECODE")), None)
    if original and modified:
        return {"available": True, "source": "trace_artifact", "is_resume": True,
                "original": {"text": original, "instructions": []},
                "transformed": {"text": modified, "instructions": []}}
    return {"available": False, "reason": "Dynamo produced no transformed code for this compile "
            "(it failed or fell back to running the frame eagerly)"}


def to_decompile(from_hook: dict | None) -> dict[str, types.CodeType]:
    """The code objects of one compile that are decompiled (``listing`` name → code): the transformed
    code, and a resume function's own code (Dynamo's too; the user's own code is in the Source stage)."""
    if not from_hook:
        return {}
    code, new_code = from_hook.get("code_objects") or (None, None)
    out = {"transformed": new_code} if new_code is not None else {}
    if code is not None and from_hook.get("is_resume"):
        out["original"] = code
    return out


def decompiled_on_read(stage, from_hook: dict | None):
    """The Bytecode ``stage``, each listing set to decompile its code (``to_decompile``) on first read of
    ``decompiled`` / ``decompiled_reason`` — the Bytecode view, ``to_data``, a save — once (``CodeListing``):
    decompiling takes depyf ~6 ms a compile in a warm process and ~28 ms in a fresh one (its import), so it
    is not in the compile's path."""
    if stage.available and stage.source == "bytecode_hook":
        for name, code in to_decompile(from_hook).items():
            listing = getattr(stage, name)
            if listing is not None:
                listing.__dict__["_pending_code"] = code
    return stage
