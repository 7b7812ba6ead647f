"""Graph breaks: torch's ``dynamo_graph_break_reason`` artifact, enriched from torch's own
graph-break registry (GB code → type, explanation, hints) and de-duplicated with a count."""
from __future__ import annotations

import functools
import json
import linecache
import re
from pathlib import Path

_AT = re.compile(r"Graph break in user code at (?P<file>.+):(?P<line>\d+)")
_GB_CODE = re.compile(r"/gb/(gb\d+)\.html", re.IGNORECASE)
_TB_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>\S+)\n(?P<code>[^\n]*)')


@functools.lru_cache(maxsize=1)
def registry() -> dict:
    """torch's graph-break registry, keyed by lower-case GB code (``gb0059``)."""
    import torch._dynamo

    path = Path(torch._dynamo.__file__).parent / "graph_break_registry.json"
    if not path.exists():
        return {}
    entries = json.loads(path.read_text())
    out = {}
    for code, versions in entries.items():
        entry = versions[0] if isinstance(versions, list) else versions
        out[code.lower()] = entry
    return out


def parse_break(payload: str) -> dict:
    where = _AT.search(payload)
    reason_text, _, traceback = payload.partition("User code traceback:")
    reason_text = reason_text.split("Graph Break Reason:", 1)[-1].strip()
    headline = _headline(reason_text)
    gb = _GB_CODE.search(payload)
    stack = [{"file": m["file"], "line": int(m["line"]), "function": m["fn"], "code": m["code"].strip()}
             for m in _TB_FRAME.finditer(traceback) if _is_user_file(m["file"])]
    file = where["file"] if where else (stack[-1]["file"] if stack else None)
    line = int(where["line"]) if where else (stack[-1]["line"] if stack else None)
    item = {"file": file, "line": line, "code": _line_text(file, line, stack), "headline": headline,
            "reason": reason_text, "gb_code": gb.group(1).upper() if gb else None, "stack": stack,
            "explanation": _field(reason_text, "Explanation"), "hints": _hints(reason_text)}
    entry = registry().get((item["gb_code"] or "").lower())
    if entry:
        item["headline"] = entry.get("Gb_type") or item["headline"]  # torch's own name for the break
        item["registry"] = {"type": entry.get("Gb_type"), "context": entry.get("Context"),
                            "explanation": entry.get("Explanation"), "hints": entry.get("Hints", [])}
    return item


@functools.lru_cache(maxsize=1)
def _internal_dirs() -> tuple[str, ...]:
    """Frames from these folders are tooling (torch, tcompile, IPython, pytest), not user code."""
    import importlib.util

    import torch

    here = Path(__file__).resolve().parent
    dirs = [str(Path(torch.__file__).parent), str(here), str(here.parent / "explorer")]
    for package in ("IPython", "_pytest", "pluggy", "ipykernel"):
        spec = importlib.util.find_spec(package)
        if spec and spec.origin:
            dirs.append(str(Path(spec.origin).parent))
    return tuple(dirs)


def _is_user_file(path: str) -> bool:
    return not path.startswith(_internal_dirs())


def _line_text(file, line, stack) -> str | None:
    for frame in reversed(stack):
        if frame["file"] == file and frame["line"] == line and frame["code"]:
            return frame["code"]
    return linecache.getline(file, line).strip() or None if file and line else None


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
    """Identical breaks (same place, same reason) once, with how often and in which compiles."""
    merged: dict[tuple, dict] = {}
    for item in items:
        key = (item["file"], item["line"], item["headline"])
        if key in merged:
            merged[key]["count"] += 1
            merged[key]["compile_ids"].append(item["compile_id"])
        else:
            merged[key] = {**item, "count": 1, "compile_ids": [item["compile_id"]]}
    return list(merged.values())
