"""Inductor scheduler IR before and after fusion (artifact loggers ``ir_pre_fusion`` /
``ir_post_fusion``), parsed into nodes, with the fusion mapping between the two."""
from __future__ import annotations

import re

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
