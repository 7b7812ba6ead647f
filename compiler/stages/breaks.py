"""Graph breaks: torch's ``dynamo_graph_break_reason`` artifact, enriched from torch's own
graph-break registry (GB code → type, explanation, hints) and de-duplicated with a count."""
from __future__ import annotations

import functools
import json
import os
import re
import sys
from pathlib import Path
from dataclasses import dataclass, field
from typing import ClassVar

from compiler.stages.data import Data, Stage, _table


# --- declared here, built below (``compiler.stages.schema`` ties the stages into a ``Compile``) ---

@dataclass(repr=False, eq=False)
class Location(Data):
    file: str | None = None
    line: int | None = None
    function: str | None = None
    code: str | None = None
    user: bool = True  # False: Python's runtime, Jupyter/IPython, torch or tcompile (not the model's code)
    cell: int | None = None  # the notebook cell this file is: In [cell] (IPython's execution count)


@dataclass(repr=False, eq=False)
class BreakRegistry(Data):
    """torch's graph-break registry entry for a GB code."""

    type: str | None = None
    context: str | None = None
    explanation: str | None = None
    hints: list[str] = field(default_factory=list)


@dataclass(repr=False, eq=False)
class GraphBreak(Data):
    headline: str = ""
    reason: str = ""
    gb_code: str | None = None
    explanation: str | None = None
    hints: list[str] = field(default_factory=list)
    file: str | None = None
    line: int | None = None
    code: str | None = None
    cell: int | None = None  # ``file`` is the notebook cell In [cell]
    stack: list[Location] = field(default_factory=list)  # outermost first; ``user`` marks the model's frames
    registry: BreakRegistry | None = None
    fatal: bool = False  # under fullgraph=True: the compile failed
    count: int = 1
    compile_id: str | None = None
    compile_ids: list[str] = field(default_factory=list)

    @property
    def kind(self) -> str:
        """Which way torch logged it (``KINDS``): only "resumed" breaks are in torch's counters['graph_break']."""
        return break_kind(self.reason)

    def as_text(self) -> str:
        where = f"{self.file}:{self.line}" if self.file else "unknown location"
        lines = [f"{self.gb_code or 'graph break'}: {self.headline} at {where}"
                 + (f" (x{self.count})" if self.count > 1 else "")
                 + (f" — {KINDS[self.kind]}" if self.kind != "resumed" else "")]  # how torch logged it
        if self.code:
            lines.append(f"    {self.code}")
        if self.explanation:
            lines.append(f"  why: {self.explanation}")
        lines += [f"  hint: {h}" for h in self.hints]
        return "\n".join(lines)


@dataclass(repr=False, eq=False)
class Breaks(Stage):
    """Every graph break of the capture, deduplicated (``count`` per place). Indexable: ``cap.breaks[0]``."""

    NAME: ClassVar[str] = "breaks"
    items: list[GraphBreak] = field(default_factory=list)
    total: int = 0

    def __getitem__(self, index) -> GraphBreak:
        return self.items[index]

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self):
        return iter(self.items)

    def _text(self):
        if not self.items:
            return "no graph breaks"
        return "\n\n".join(item.as_text() for item in self.items)

    def _summary(self):
        return f"{self.total} graph breaks, {len(self.items)} unique"

    def kinds(self) -> dict[str, int]:
        """How many breaks torch logged each way (``KINDS``; "resumed" first): only the resumed ones are in its
        counters['graph_break']."""
        out = {kind: 0 for kind in KINDS}
        for item in self.items:
            out[item.kind] += item.count
        return {kind: n for kind, n in out.items() if n or kind == "resumed"}

    @property
    def table(self):
        return _table(self.items)


_AT = re.compile(r"Graph break in user code at (?P<file>.+):(?P<line>\d+)")
_GB_CODE = re.compile(r"/gb/(gb\d+)\.html", re.IGNORECASE)
_TB_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)')


# How torch words the graph breaks it logs (symbolic_convert.py), and which of them counters["graph_break"] counts:
# only a break at an instruction Dynamo ends the graph at and resumes after (``break_graph_if_unsupported``: its
# reason starts with one of COUNTED), the exception moved from counters["unimplemented"] to counters["graph_break"].
# A break it cannot resume from (``InstructionTranslatorBase.step``: compiled up to the last resumable point, the
# rest of the function run eagerly) and a data-dependent branch (``jump_graph_break``: resumed in both branches)
# are logged as graph breaks too, and stay in counters["unimplemented"] (torch 2.13, 2.14).
UNRESUMABLE = "Encountered graph break that we cannot resume from"
COUNTED = ("Encountered graph break when attempting to trace", "Encountered intentional debugging graph break")
BRANCH = "Data-dependent branching"
KINDS = {"resumed": "resumed from after the instruction (torch's counters['graph_break'] counts these)",
         "unresumable": "not resumable: the rest of the function runs eagerly (in counters['unimplemented'])",
         "branch": "data-dependent branches, resumed in both branches (in counters['unimplemented'])",
         "other": "logged another way (in counters['unimplemented'])"}


def break_kind(reason: str | None) -> str:
    """Which way torch logged a graph break (its reason, as ``parse_break`` keeps it): a key of ``KINDS``."""
    reason = (reason or "").lstrip()
    if reason.startswith(UNRESUMABLE):
        return "unresumable"
    if reason.startswith(COUNTED):
        return "resumed"
    if reason.startswith(BRANCH):
        return "branch"
    return "other"


@functools.lru_cache(maxsize=1)
def registry() -> dict:
    """torch's graph-break registry, keyed by lower-case GB code (``gb0059``): the JSON file torch installs
    next to ``torch/_dynamo``, read as a file — found with ``importlib.util.find_spec("torch")``, which locates
    the installed package without importing it (reading a trace needs no torch)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        spec = None
    folders = list(spec.submodule_search_locations or []) if spec else []
    path = next((p for p in (Path(f) / "_dynamo" / "graph_break_registry.json" for f in folders) if p.is_file()), None)
    if path is None:
        return {}
    entries = json.loads(path.read_text())
    out = {}
    for code, versions in entries.items():
        entry = versions[0] if isinstance(versions, list) else versions
        out[code.lower()] = entry
    return out


def parse_break(payload: str, sources) -> dict:
    """One graph-break reason as torch logged it → a break item; ``sources``
    (``compiler.stages.source_files.SourceFiles``) reads the break's line where the logged stack lacks its code."""
    where = _AT.search(payload)
    reason_text, _, traceback = payload.partition("User code traceback:")
    reason_text = reason_text.split("Graph Break Reason:", 1)[-1].strip()
    headline = _headline(reason_text)
    gb = _GB_CODE.search(payload)
    stack = [dict(frame, code=frame["code"] or "", cell=cell_number(frame["file"]),
                  user=is_user_frame(frame["file"]) and not (frame["code"] or "").startswith(_MAGIC_CALL))
             for frame in traceback_frames(traceback)]
    user_stack = [frame for frame in stack if frame["user"]]
    file = where["file"] if where else (user_stack[-1]["file"] if user_stack else None)
    line = int(where["line"]) if where else (user_stack[-1]["line"] if user_stack else None)
    item = {"file": file, "line": line, "cell": cell_number(file), "code": _line_text(file, line, user_stack, sources),
            "headline": headline,
            "reason": reason_text, "gb_code": gb.group(1).upper() if gb else None, "stack": stack,
            "explanation": _field(reason_text, "Explanation"), "hints": _hints(reason_text)}
    entry = registry().get((item["gb_code"] or "").lower())
    if entry:
        item["headline"] = entry.get("Gb_type") or item["headline"]  # torch's own name for the break
        item["registry"] = {"type": entry.get("Gb_type"), "context": entry.get("Context"),
                            "explanation": entry.get("Explanation"), "hints": entry.get("Hints", [])}
    return item


# What runs the model's code without being it: Jupyter and IPython, the test runner, torch, tcompile.
# Model libraries (transformers, …) are the code being compiled, so their frames count as user frames.
_MACHINERY = ("IPython", "ipykernel", "ipykernel_launcher", "tornado", "zmq", "jupyter_client", "jupyter_core", "traitlets", "comm",
              "debugpy", "anyio", "ipywidgets", "_pytest", "pytest", "pluggy", "torch", "triton")


_MAGIC_CALL = "get_ipython().run_cell_magic("  # a %%cell magic's line, as IPython rewrites it: not user code


@functools.lru_cache(maxsize=1)
def _internal_dirs() -> tuple[str, ...]:
    """Folders (and single-module files) whose frames are not user code: ``_MACHINERY`` and tcompile."""
    import importlib.util

    here = Path(__file__).resolve().parents[1]  # compiler/
    dirs = [str(here), str(here.parent / "explorer")]
    for package in _MACHINERY:
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            spec = None
        if spec and spec.origin and spec.submodule_search_locations:  # a package: its folder
            dirs.append(str(Path(spec.origin).parent) + os.sep)
        elif spec and spec.origin and spec.origin.endswith(".py"):  # a module: its file
            dirs.append(spec.origin)
    return tuple(dirs)


@functools.lru_cache(maxsize=1)
def _stdlib_dir() -> str:
    return str(Path(os.__file__).resolve().parent) + os.sep


# Paths as another machine wrote them (a trace recorded elsewhere): an installed package, or the stdlib
_INSTALLED = re.compile(r"[/\\](?:site|dist)-packages[/\\](?P<name>[^/\\]+)")
_ANY_STDLIB = re.compile(r"[/\\]lib[/\\]python3\.\d+[/\\](?!(?:site|dist)-packages[/\\])")


@functools.lru_cache(maxsize=4096)
def is_user_frame(path: str | None) -> bool:
    """Is a frame in this file the model's code (the notebook's, a script's, a model library's), rather
    than Python's runtime (stdlib: runpy, asyncio, …), Jupyter/IPython, the test runner, torch or tcompile?
    Also for paths of another machine (a loaded trace): ``…/site-packages/torch/…``, ``…/lib/python3.11/runpy.py``."""
    if not path:
        return False
    if path.startswith("<frozen ") or path.startswith(_internal_dirs()):
        return False
    installed = _INSTALLED.search(path)
    if installed and installed["name"].removesuffix(".py") in _MACHINERY:
        return False
    if not installed and _ANY_STDLIB.search(path):
        return False
    resolved = str(Path(path).resolve()) if os.path.isabs(path) else path
    in_stdlib = resolved.startswith(_stdlib_dir()) and not {"site-packages", "dist-packages"} & set(Path(resolved).parts)
    return not in_stdlib and not resolved.startswith(_internal_dirs())


def traceback_frames(text: str | None) -> list[dict]:
    """The frames of a traceback as Python and torch print them (``File "f.py", line 3, in fn``, then the
    code line, absent where Python had no source), in order: file, line, function, code (None if absent)."""
    frames: list[dict] = []
    indent = 0  # the last frame line's: its code line is indented deeper (a frame with no source has none)
    for line in (text or "").splitlines():
        match = _TB_FRAME.match(line)
        if match:
            frames.append({"file": match["file"], "line": int(match["line"]), "function": match["function"],
                           "code": None})
            indent = len(line) - len(line.lstrip())
        elif frames and frames[-1]["code"] is None and line.strip():
            if len(line) - len(line.lstrip()) > indent:
                frames[-1]["code"] = line.strip()
            else:  # the next line of the text (``Traceback (most recent call last):``), not this frame's code
                frames[-1]["code"] = ""
    return [dict(f, code=f["code"] or None) for f in frames]


def cell_number(path: str | None) -> int | None:
    """The notebook cell a file is (``In [6]``), as the running IPython numbers it: its compiler maps
    each cell's file name to the execution count (``%%tcompile`` cells are added there by explorer.cell).
    None outside IPython or for other files. IPython is read only if already loaded, never imported."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    names = getattr(getattr(shell, "compile", None), "_filename_map", None)
    number = names.get(path) if isinstance(names, dict) and path else None
    return number if isinstance(number, int) else None


def _line_text(file, line, stack, sources) -> str | None:
    for frame in reversed(stack):
        if frame["file"] == file and frame["line"] == line and frame["code"]:
            return frame["code"]
    return sources.line(file, line)


def _headline(reason_text: str) -> str:
    """The graph-break type: the line just above "Explanation:" (torch's registry title)."""
    lines = [l.strip() for l in reason_text.splitlines()]
    for index, line in enumerate(lines):
        if line.startswith("Explanation:"):
            title = next((l for l in reversed(lines[:index]) if l), None)
            if title:
                return title
    return next((l for l in lines if l), "graph break")


def _field(text: str, name: str) -> str | None:
    match = re.search(rf"^\s*{name}: (.*)$", text, re.MULTILINE)
    return match.group(1).strip() if match else None


def _hints(text: str) -> list[str]:
    return [m.strip() for m in re.findall(r"^\s*Hint: (.*)$", text, re.MULTILINE)]


def dedupe(items: list[dict]) -> list[dict]:
    """Identical breaks (same place, same reason, logged the same way: ``break_kind``) once, with how often and in
    which compiles. Not merged across kinds: GPT-2's loss warning (transformers, one line) is resumed from in five
    frames and not resumable in a sixth, and only the five are in torch's counters['graph_break']."""
    merged: dict[tuple, dict] = {}
    for item in items:
        key = (item["file"], item["line"], item["headline"], break_kind(item["reason"]))
        if key in merged:
            merged[key]["count"] += 1
            merged[key]["compile_ids"].append(item["compile_id"])
        else:
            merged[key] = {**item, "count": 1, "compile_ids": [item["compile_id"]]}
    return list(merged.values())
