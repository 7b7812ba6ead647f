"""Guards: the C++ guard tree torch prints (``dynamo_cpp_guards_str``), as text and a flat table."""
from __future__ import annotations

import functools
import re

_TREE_LINE = re.compile(r"^(?P<indent>(?:\| )*)\+- (?P<body>.*)$")
_MANAGER = re.compile(r"^(?:(?:KeyManager|ValueManager): )?(?:\w*GuardManager): source=(?P<source>.+?)(?:, accessed_by=.*?)?(?:, type=.*)?$")
_LEAF = re.compile(r"^(?P<kind>[A-Z][A-Z0-9_]+): (?P<rest>.*)$")
# "<condition>  # <user code>  # <file>:<line> in <fn> (note)"
_COMMENT_SEP = re.compile(r"\s{2,}#\s")
_LOCATION = re.compile(r"^(?P<loc>\S+:\d+ in \S+)(?P<note>.*)$")
_LATENCY = re.compile(r"Guard latency = ([\d.]+) us")


def parse_tree(text: str) -> list[dict]:
    """One row per leaf guard, with the source it guards (from the enclosing GuardManager)."""
    rows = []
    sources: list[tuple[int, str]] = []  # (depth, source) of enclosing managers
    for line in text.splitlines():
        match = _TREE_LINE.match(line)
        if not match:
            continue
        depth = len(match["indent"]) // 2
        body = match["body"].strip()
        while sources and sources[-1][0] >= depth:
            sources.pop()
        manager = _MANAGER.match(body)
        if manager:
            sources.append((depth, manager["source"]))
            continue
        leaf = _LEAF.match(body)
        if not leaf:
            continue
        rows.append({"source": sources[-1][1] if sources else "", "kind": leaf["kind"],
                     "depth": depth, **_split_origin(leaf["rest"])})
    return rows


@functools.lru_cache(maxsize=65536)  # recompiles repeat most guards; the row copies the result
def _split_origin(rest: str) -> dict:
    """``cond  # user code  # file:line in fn (note)`` — torch's comment tells where a guard came from,
    or why it exists (duck sizing, 0/1 specialization …)."""
    condition, comment = (_COMMENT_SEP.split(rest, maxsplit=1) + [""])[:2]
    row = {"condition": condition.strip(), "user_code": None, "origin": None, "line": None, "note": None}
    if not comment:
        return row
    parts = _COMMENT_SEP.split(comment, maxsplit=1)
    tail = parts[-1]
    location = _LOCATION.match(tail.strip())
    if location:
        file_part = location["loc"].rpartition(" in ")[0]
        row.update(origin=location["loc"], line=int(file_part.rsplit(":", 1)[1]),
                   note=_unparen(location["note"]))
        if len(parts) > 1:
            row["user_code"] = parts[0].strip()
    else:
        row["note"] = comment.strip()
    return row


def _unparen(text: str) -> str | None:
    text = text.strip()
    return (text[1:-1] if text.startswith("(") and text.endswith(")") else text) or None


def guards_stage(tree_text: str | None, user_file: str | None, metrics: dict,
                 user_lines: range | None = None) -> dict:
    if not tree_text:
        reason = ("no guards were built: the compile failed before guard building"
                  if metrics.get("fail_type") else "torch did not emit the guard tree for this compile")
        return {"available": False, "reason": reason}
    rows = parse_tree(tree_text)
    for row in rows:
        row["user_line"] = bool(row["origin"] and user_file and _same_file(row["origin"], user_file)
                                and (user_lines is None or row["line"] in user_lines))
    latency = _LATENCY.search(tree_text)
    return {"available": True, "tree": tree_text.strip("\n"), "rows": rows, "count": len(rows),
            "guard_count_torch": metrics.get("guard_count"),
            "latency_us": float(latency.group(1)) if latency else metrics.get("guard_latency_us")}


def _same_file(origin: str, user_file: str) -> bool:
    # torch shortens the path to its last characters: "mp/probe/probe2.py:22 in step"
    shown = origin.rsplit(":", 1)[0]
    return user_file.endswith(shown) or shown.endswith(user_file.rsplit("/", 1)[-1])
