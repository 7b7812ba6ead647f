"""Inductor scheduler IR before and after fusion (artifact loggers ``ir_pre_fusion`` /
``ir_post_fusion``), parsed into nodes, with the fusion mapping between the two."""
from __future__ import annotations

import re

_HEADER = re.compile(r"^(?P<name>\w+): (?P<kind>\w+)\((?P<detail>[^)]*)\)\s*$")
_DEP_NAME = re.compile(r"(?:MemoryDep|StarDep|WeakDep)\((?:name=)?'(?P<buf>[^']+)'")
_OPS = re.compile(r"\bops\.(\w+)\(")
_SNODE = re.compile(r"^(?P<name>\w+)\.snodes\[\d+\] =")


def parse_ir(text: str | None) -> list[dict]:
    """Top-level scheduler nodes: name, kind, what they read and write, the ops in their loop body."""
    if not text:
        return []
    nodes: list[dict] = []
    current: dict | None = None
    previous = ""
    for number, line in enumerate(text.splitlines()):
        header = _HEADER.match(line)
        is_member = bool(_SNODE.match(previous))  # "opX_opY.snodes[0] =" introduces a fused member
        if line.strip():
            previous = line
        if header and not line.startswith(" ") and not is_member:
            current = {"name": header["name"], "kind": header["kind"], "detail": header["detail"],
                       "reads": [], "writes": [], "ops": [], "text": [], "lines": [number, number]}
            nodes.append(current)
        if current is None:
            continue
        current["text"].append(line)
        current["lines"][1] = number
        stripped = line.strip()
        if stripped.startswith(f"{current['name']}.writes"):
            current["writes"] += _DEP_NAME.findall(line)
        elif ".unmet_dependencies" in stripped or ".met_dependencies" in stripped or _continues_deps(current):
            current["reads"] += _DEP_NAME.findall(line)
        current["ops"] += [op for op in _OPS.findall(line) if op not in ("load", "store", "index_expr")]
        if stripped.startswith(current["name"] + ".node.kernel"):
            current["extern_kernel"] = stripped.split("=", 1)[1].strip()
    for node in nodes:
        node["text"] = "\n".join(node["text"]).strip()
        node["reads"] = sorted(set(node["reads"]))
        node["writes"] = sorted(set(node["writes"]) | set(re.findall(r"^\s*(buf\d+): ", node["text"], re.M)))
        node["ops"] = list(dict.fromkeys(node["ops"]))
        node["members"] = _members(node)
        del node["text"]  # the stage keeps the whole IR text; "lines" is this node's range in it
    return nodes


def _continues_deps(node: dict) -> bool:
    # Multi-line dependency lists: lines after "opN.unmet_dependencies = " until the next "opN." key
    last = node["text"][-2] if len(node["text"]) > 1 else ""
    return last.rstrip().endswith("=") and "dependencies" in last


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
