"""Guards: the C++ guard tree torch prints (``dynamo_cpp_guards_str``), as text and a flat table, and its
declared types (``Guards``, ``GuardRow``; ``compiler.stages.schema`` ties them into a ``Compile``): the
rows are parsed from the tree when the stage is built and again when a saved one is read."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import ClassVar

from compiler.stages.data import Data, Stage, _dump, _fields, _table, as_declared

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
        manager = _MANAGER.match(body) if "GuardManager: source=" in body else None  # (a leaf's long line: no regex)
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
                 user_lines: range | None = None) -> Guards:
    if not tree_text:
        reason = ("no guards were built: the compile failed before guard building"
                  if metrics.get("fail_type") else "torch did not emit the guard tree for this compile")
        return Guards(available=False, reason=reason)
    rows = parse_tree(tree_text)
    for row in rows:
        row["user_line"] = bool(row["origin"] and user_file and _same_file(row["origin"], user_file)
                                and (user_lines is None or row["line"] in user_lines))
    latency = _LATENCY.search(tree_text)
    return as_declared(Guards, {  # the metrics are torch's record: checked as on load
        "available": True, "tree": tree_text.strip("\n"), "rows": rows, "count": len(rows),
        "guard_count_torch": metrics.get("guard_count"),
        "latency_us": float(latency.group(1)) if latency else metrics.get("guard_latency_us")})


def _same_file(origin: str, user_file: str) -> bool:
    # torch shortens the path to its last characters: "mp/probe/probe2.py:22 in step"
    shown = origin.rsplit(":", 1)[0]
    return user_file.endswith(shown) or shown.endswith(user_file.rsplit("/", 1)[-1])


# --- the declared types ---------------------------------------------------------------------------

def _parsed_guard_rows(tree: str, user_line_rows: list[int]) -> list:
    """The guard rows of ``tree`` (``parse_tree``), those at ``user_line_rows`` marked as the user's."""
    rows = GuardRow.list_from_data(parse_tree(tree))
    for index in user_line_rows:
        if 0 <= index < len(rows):
            rows[index].user_line = True
    return rows




@dataclass(repr=False, eq=False)
class GuardRow(Data):
    kind: str = ""
    source: str = ""
    condition: str = ""
    depth: int = 0
    line: int | None = None
    user_line: bool = False
    user_code: str | None = None
    origin: str | None = None
    note: str | None = None


@dataclass(repr=False, eq=False)
class Guards(Stage):
    """The guard tree and one row per guard. A saved stage keeps the tree and which rows come from the
    user's code (``user_line_rows``); every other column is the tree parsed again when loading."""

    NAME: ClassVar[str] = "guards"
    tree: str = ""  # torch's guard tree, as it prints it
    rows: list[GuardRow] = field(default_factory=list)
    count: int = 0
    guard_count_torch: int | None = None  # torch's own guard_count metric, for comparison
    latency_us: float | None = None
    user_line_rows: list[int] | None = None  # set when saved without rows: the rows with user_line

    def __post_init__(self):
        if self.user_line_rows is not None and self.tree and not self.__dict__.get("rows"):
            self.__dict__.pop("rows", None)  # the tree parsed on first read (_GuardRowsOnRead)

    def forget_rows(self) -> None:
        """Keep only which rows are the user's: the rows are the tree parsed again on their next read. For a
        stage just built from its tree (``assemble``), once the stages that read its rows are built."""
        if self.tree and "rows" in self.__dict__ and self.user_line_rows is None:
            self.user_line_rows = [i for i, row in enumerate(self.__dict__["rows"]) if row.user_line]
            del self.__dict__["rows"]

    def to_data(self) -> dict:
        if "rows" not in self.__dict__:  # never read: saved as it came, without parsing the tree now
            out = {key: [] if name == "rows" else _dump(getattr(self, name)) for name, key, _, _ in _fields(Guards)}
            out.update(self.__dict__.get("_unknown", {}))
            return out
        out = super().to_data()
        user = [i for i, row in enumerate(self.rows) if row.user_line]
        if self.tree and self.rows and _dump(_parsed_guard_rows(self.tree, user)) == out["rows"]:
            out["rows"], out["user_line_rows"] = [], user
        return out

    def _text(self):
        return self.tree

    def _summary(self):
        return f"{self.count} guards"

    @property
    def table(self):
        """The guards as a pandas DataFrame (one row per guard)."""
        return _table(self.rows)


class _GuardRowsOnRead:
    """``Guards.rows`` of a stage saved (or kept, ``forget_rows``) as its tree and which rows are the user's:
    the tree parsed on the first read, then kept."""

    def __get__(self, guards, owner=None):
        if guards is None:
            return self
        values = guards.__dict__
        if "rows" not in values:
            values["rows"] = _parsed_guard_rows(values.get("tree") or "", values.get("user_line_rows") or [])
            values["user_line_rows"] = None
        return values["rows"]

    def __set__(self, guards, value):
        guards.__dict__["rows"] = value


Guards.rows = _GuardRowsOnRead()
