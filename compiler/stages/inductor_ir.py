"""Inductor scheduler IR before and after fusion (artifact loggers ``ir_pre_fusion`` /
``ir_post_fusion``), parsed into nodes, with the fusion mapping between the two."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from compiler.stages.data import BuiltOnRead, Data, Deferred, Stage, _dump, _Mismatch


# --- declared here, built below (``compiler.stages.schema`` ties the stages into a ``Compile``) ---

@dataclass(repr=False, eq=False)
class IrNode(Data):
    OMIT_DEFAULTS: ClassVar[bool] = True
    name: str = ""
    kind: str = ""
    ops: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    members: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)  # [first, last] line in the IR text
    detail: str | None = None
    extern_kernel: str | None = None
    text: str | None = None


DIFF_MAX_LINES = 40_000  # difflib's matching grows faster than linear: longer IR texts are saved whole


def line_diff(old: str, new: str) -> list | None:
    """``new`` as copies of ``old``'s lines (``[start, end]``) and the text in between, when that is at most
    three quarters of ``new``'s size; None otherwise (``apply_line_diff`` gives ``new`` back exactly)."""
    import difflib

    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    if not a or not b or max(len(a), len(b)) > DIFF_MAX_LINES:
        return None
    ops: list = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            ops.append([i1, i2])
        elif j2 > j1:
            ops.append("".join(b[j1:j2]))
    if _diff_size(ops) > 0.75 * len(new):
        return None
    return ops


def _diff_size(ops: list) -> int:
    return sum(len(op) if isinstance(op, str) else 12 for op in ops)


def apply_line_diff(old: str, ops: list, where: str = ".post_fusion_diff") -> str:
    lines = old.splitlines(keepends=True)
    out = []
    for op in ops:
        if isinstance(op, str):
            out.append(op)
        elif isinstance(op, list) and len(op) == 2 and all(type(i) is int for i in op) and 0 <= op[0] <= op[1] <= len(lines):
            out.extend(lines[op[0]:op[1]])
        else:
            exc = _Mismatch("a text or [start, end] of the lines of the text it differs from", op)
            exc.where.append(where)
            raise exc
    return "".join(out)


@dataclass(repr=False, eq=False)
class IrText(Data):
    """Inductor's scheduler nodes as its IR log prints them. Saved without its nodes where parsing the text
    gives them back (``nodes_from_text``)."""

    text: str = ""
    nodes: list[IrNode] = field(default_factory=list)
    nodes_from_text: bool = False
    available: ClassVar[bool] = True  # read like a stage's: False only for a run's missing IR (``MissingIr``)
    reason: ClassVar[str | None] = None

    def __post_init__(self):
        if self.nodes_from_text and self.text:  # (after fusion: once InductorIR rebuilt the text)
            # parsed on first read (``BuiltOnRead``): loading a capture of many compiles parses none of them
            self.__dict__["nodes"] = Deferred(list, functools.partial(_ir_nodes, self.text))
            self.nodes_from_text = False

    def to_data(self) -> dict:
        out = super().to_data()
        out.pop("nodes_from_text")
        if self.text and out["nodes"] and _dump(_ir_nodes(self.text)) == out["nodes"]:
            out["nodes"], out["nodes_from_text"] = [], True
        return out

    def as_text(self) -> str:
        return self.text


class MissingIr(IrText):
    """A run's IR before or after fusion where Inductor logged none (``InductorRun.ir_before`` / ``ir_after``):
    empty, ``available`` False and the ``reason`` — a cache hit named, which skips lowering and fusion. Made on
    read, never saved."""

    available = False

    def __init__(self, reason: str):
        super().__init__()
        self.reason = reason

    def as_text(self) -> str:
        return f"[ir: unavailable — {self.reason}]"


def _ir_nodes(text: str) -> list[IrNode]:
    return IrNode.list_from_data(parse_ir(text), "nodes")


IrText.nodes = BuiltOnRead("nodes")


@dataclass(repr=False, eq=False)
class FusionRow(Data):
    OMIT_DEFAULTS: ClassVar[bool] = True
    fused: str = ""
    members: list[str] = field(default_factory=list)
    kind: str = ""
    is_fusion: bool = False
    kernel: str | None = None


@dataclass(repr=False, eq=False)
class InductorIR(Stage):
    """Inductor's IR before and after fusion. A saved stage keeps the text after fusion as its difference
    from the text before (``post_fusion_diff``: most fused nodes print the lines of the nodes they fuse),
    rebuilt whole on load."""

    NAME: ClassVar[str] = "ir"
    pre_fusion: IrText | None = None
    post_fusion: IrText | None = None
    fusion: list[FusionRow] = field(default_factory=list)
    nodes_before: int = 0
    nodes_after: int = 0
    post_fusion_diff: list[Any] | None = None  # set when saved without post_fusion.text (``line_diff``)

    def __post_init__(self):
        if self.post_fusion_diff is not None and self.pre_fusion is not None and self.post_fusion is not None:
            self.post_fusion.text = apply_line_diff(self.pre_fusion.text, self.post_fusion_diff)
            self.post_fusion_diff = None
            self.post_fusion.__post_init__()  # its nodes, parsed from the text just rebuilt

    def to_data(self) -> dict:
        out = super().to_data()
        out.pop("post_fusion_diff")
        if self.pre_fusion is not None and self.post_fusion is not None:
            ops = line_diff(self.pre_fusion.text, self.post_fusion.text)
            if ops is not None:
                out["post_fusion"]["text"], out["post_fusion_diff"] = "", ops
        return out

    def _text(self):
        return (self.post_fusion or IrText()).text

    def _summary(self):
        return f"{self.nodes_before} nodes before fusion, {self.nodes_after} after"


_HEADER = re.compile(r"^(?P<name>\w+): (?P<kind>\w+)\((?P<detail>[^)]*)\)\s*$")
_DEP_NAME = re.compile(r"(?:MemoryDep|StarDep|WeakDep)\((?:name=)?'(?P<buf>[^']+)'")
_OPS = re.compile(r"\bops\.(\w+)\(")
_SNODE = re.compile(r"^(?P<name>\w+)\.snodes\[\d+\] =")


def parse_ir(text: str | None) -> list[dict]:
    """Top-level scheduler nodes: name, kind, what they read and write, the ops in their loop body.

    A node's reads are its own ``unmet_dependencies`` and ``met_dependencies`` (torch's
    ``read_writes.reads``; a fused node's do not repeat the buffers its members pass each other), its
    writes its own ``writes`` plus the buffers it outputs. torch prints a long dependency list on the
    lines after ``name.met_dependencies =``, indented (``scheduler.pformat``)."""
    if not text:
        return []
    nodes: list[dict] = []
    current: dict | None = None
    previous = ""
    field: str | None = None  # "reads" or "writes" while the current node's dependency list goes on
    skipped = ("load", "store", "index_expr")
    for number, line in enumerate(text.splitlines()):
        top = line[:1] not in ("", " ")
        # a header starts at column 0; "opX_opY.snodes[0] =" before it introduces a fused member instead
        header = _HEADER.match(line) if top else None
        if header and not _SNODE.match(previous):
            current = {"name": header["name"], "kind": header["kind"], "detail": header["detail"],
                       "reads": [], "writes": [], "ops": [], "text": [], "lines": [number, number]}
            nodes.append(current)
            own = {f"{header['name']}.{key} =": value for key, value in (
                ("writes", "writes"), ("unmet_dependencies", "reads"), ("met_dependencies", "reads"))}
            kernel_key = header["name"] + ".node.kernel"
        if line.strip():
            previous = line
        if current is None:
            continue
        current["text"].append(line)
        current["lines"][1] = number
        if top:
            field = own.get(line.split(" =", 1)[0] + " =") if " = " in line or line.endswith(" =") else None
        if field is not None and "Dep(" in line:
            current[field] += _DEP_NAME.findall(line)
        if "ops." in line:
            current["ops"] += [op for op in _OPS.findall(line) if op not in skipped]
        if kernel_key in line and line.lstrip().startswith(kernel_key):
            current["extern_kernel"] = line.split("=", 1)[1].strip()
    for node in nodes:
        node["text"] = "\n".join(node["text"]).strip()
        node["reads"] = sorted(set(node["reads"]))
        node["writes"] = sorted(set(node["writes"]) | set(re.findall(r"^\s*(buf\d+): ", node["text"], re.M)))
        node["ops"] = list(dict.fromkeys(node["ops"]))
        node["members"] = _members(node)
        del node["text"]  # the stage keeps the whole IR text; "lines" is this node's range in it
    return nodes


def _members(node: dict) -> list[str]:
    """The pre-fusion nodes a (possibly fused) node is made of: ``op3_op4`` → op3, op4."""
    if "Fused" in node["kind"] or "Foreach" in node["kind"] or "Grouped" in node["kind"]:
        found = re.findall(r"^(\w+): \w+\(", node["text"], re.M)[1:]
        if not found:
            found = re.findall(r"op\d+", node["name"])
        return list(dict.fromkeys(found)) or [node["name"]]
    return [node["name"]]


def fusion_mapping(pre: list[dict], post: list[dict]) -> list[dict]:
    """For each post-fusion node: which pre-fusion nodes ended up in it."""
    pre_names = {n["name"] for n in pre}
    return [{"fused": n["name"], "kind": n["kind"], "members": [m for m in n["members"] if m in pre_names] or n["members"],
             "is_fusion": len(n["members"]) > 1} for n in post]


def ir_stage(pre_text: str | None, post_text: str | None, cache_note: str | None) -> dict:
    if not pre_text and not post_text:
        return {"available": False, "reason": cache_note or "Inductor did not schedule this graph"}
    pre, post = parse_ir(pre_text), parse_ir(post_text)
    return {"available": True, "pre_fusion": {"text": pre_text, "nodes": pre},
            "post_fusion": {"text": post_text, "nodes": post}, "fusion": fusion_mapping(pre, post),
            "nodes_before": len(pre), "nodes_after": len(post)}
