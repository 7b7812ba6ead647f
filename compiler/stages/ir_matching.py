"""Inductor's scheduler nodes ↔ the post-grad nodes they compute, and kernels ↔ the scheduler nodes they run,
read from the scheduler IR's text and the generated code (``compiler.stages.provenance`` uses it where torch names
no origin: a C++ kernel on CPU). Best effort: each buffer a scheduler node writes is matched to a post-grad node —
graph inputs by name, outputs by position, extern calls by op and shape, others by shape and stored op, downstream
of their inputs."""
from __future__ import annotations

import re
from collections import defaultdict

from compiler.stages.fx_graph import GraphNode
from compiler.stages.inductor_ir import IrNode
from compiler.stages.kernels import Kernel

_LAYOUT = re.compile(r"^\s*(?P<buf>\w+)\.layout = \w+\('[^']*', torch\.\w+, size=\[(?P<size>[^\]]*)\]", re.M)
_STORE = re.compile(r"ops\.store(?:_reduction)?\('(?P<buf>\w+)', \w+, (?P<var>\w+)")
_OP_DEF = re.compile(r"^\s*(?P<var>\w+) = ops\.(?P<op>\w+)\((?P<args>.*)\)\s*$", re.M)
_REUSE = re.compile(r"^\s*(?P<new>buf\d+) = (?P<old>buf\d+); del (?P=old)\s*# reuse", re.M)
_OP_ALIASES = {"truediv": "div", "floordiv": "div", "reduction": "sum"}


def _op_of(target: str | None) -> str:
    """``torch.ops.aten.sum.dim_IntList`` → ``sum``; ``extern_kernels.addmm`` → ``addmm``."""
    parts = [p for p in (target or "").split(".") if p]
    if len(parts) >= 2 and parts[0] in ("torch", "aten") or "ops" in parts:
        parts = [p for p in parts if p not in ("torch", "ops", "aten", "prims", "default")]
        return parts[0] if parts else ""
    return parts[-1] if parts else ""


def match_ir_nodes(pre_nodes: list[IrNode], ir_text: str, post_nodes: list[GraphNode], module: str) -> dict[str, list[str]]:
    """Scheduler node (before fusion) → the post-grad nodes it computes. Best effort (see module doc)."""
    by_name = {n.name: n for n in post_nodes}
    order = {n.name: i for i, n in enumerate(post_nodes)}
    descendants = _descendants(post_nodes)
    anchor = {n.name: n.name for n in post_nodes if n.op == "placeholder"}
    anchor.update(_output_anchors(post_nodes, module))
    shapes = {m["buf"]: [d.strip() for d in m["size"].split(",") if d.strip()] for m in _LAYOUT.finditer(ir_text or "")}
    text_lines = (ir_text or "").splitlines()
    claimed = set(anchor.values())
    result: dict[str, list[str]] = {}
    # Candidate sets as bit masks over the post-grad nodes' positions: the first candidate of a kind is
    # the lowest bit of an AND (a scan of every node per scheduler node grew with the graph squared)
    bit = {n.name: 1 << order[n.name] for n in post_nodes}
    computing = [n for n in post_nodes if n.op not in ("placeholder", "output")]
    by_op: dict[str, int] = defaultdict(int)
    by_shape: dict = defaultdict(int)
    for n in computing:
        by_op[_op_of(n.target)] |= bit[n.name]
        by_shape[tuple(n.shape) if n.shape is not None else None] |= bit[n.name]
    computing_mask = sum(bit[n.name] for n in computing)
    claimed_mask = sum(bit.get(name, 0) for name in claimed)
    for node in pre_nodes:
        reads = {anchor[r] for r in node.reads if r in anchor}
        writes = node.writes
        realized = anchor.get(writes[0]) if writes else None
        if realized is None:
            downstream = computing_mask  # the nodes that have every read among their ancestors
            for r in reads:
                downstream &= descendants.get(r, 0)
            if writes and writes[0] in shapes:
                downstream &= by_shape[None] | by_shape.get(tuple(shapes[writes[0]]), 0)
            if node.extern_kernel:  # of the op: the first not claimed yet, else the first
                of_op = downstream & by_op.get(_op_of(node.extern_kernel), 0)
                kinds = (of_op & ~claimed_mask, of_op)
            else:  # the first storing the op, unclaimed before claimed, then any other
                of_op = downstream & by_op.get(_stored_op(text_lines, node), 0)
                kinds = (of_op & ~claimed_mask, of_op, downstream & ~claimed_mask, downstream)
            first = next((mask & -mask for mask in kinds if mask), 0)
            realized = post_nodes[first.bit_length() - 1].name if first else None
        if realized is None:
            result[node.name] = []
            continue
        for w in writes:
            anchor.setdefault(w, realized)
        claimed.add(realized)
        claimed_mask |= bit.get(realized, 0)
        result[node.name] = _inlined(realized, reads, claimed, by_name, order)
    return result


def _inlined(realized: str, reads: set[str], claimed: set[str], by_name: dict, order: dict) -> list[str]:
    """``realized`` and the nodes computed inside it: walk back through inputs to the node's reads."""
    if realized in reads:
        return [realized]
    found, stack = [], [realized]
    while stack:
        name = stack.pop()
        node = by_name.get(name)
        if name in found or node is None or node.op == "placeholder":
            continue
        if name != realized and (name in reads or name in claimed):
            continue
        found.append(name)
        stack += node.inputs
    return sorted(found, key=order.__getitem__)


def _descendants(post_nodes: list[GraphNode]) -> dict[str, int]:
    """Each node's descendants, as a bit mask over the nodes' positions (ints: one OR per edge, where sets
    of names grew with the graph squared)."""
    order = {n.name: i for i, n in enumerate(post_nodes)}
    out: dict[str, int] = {}
    for node in reversed(post_nodes):  # topological order, backwards: consumers first
        out.setdefault(node.name, 0)
        below = out[node.name] | (1 << order[node.name])
        for i in set(node.inputs):
            out[i] = out.get(i, 0) | below
    return out


def _output_anchors(post_nodes: list[GraphNode], module: str) -> dict[str, str]:
    """Output buffers of the generated ``call`` ↔ the post-grad graph's outputs, by position."""
    output = next((n for n in post_nodes if n.op == "output"), None)
    call = module[module.rfind("def call("):] if "def call(" in module else ""
    returned = re.search(r"^\s*return \((?P<names>[^)]*)\)", call, re.M)
    if output is None or returned is None:
        return {}
    graph_out = [a.strip() for a in (output.args or "").strip("()[] ").split(",") if a.strip()]
    code_out = [a.strip() for a in returned["names"].split(",") if a.strip()]
    if len(graph_out) != len(code_out):
        return {}
    names = {n.name for n in post_nodes}
    aliases = {m["new"]: m["old"] for m in _REUSE.finditer(call)}
    out = {}
    for buf, node in zip(code_out, graph_out):
        if node in names:
            out.setdefault(buf, node)
            if buf in aliases:
                out.setdefault(aliases[buf], node)
    return out


def _stored_op(text_lines: list[str], node: IrNode) -> str:
    """The op whose value a scheduler node stores (``store('buf1', …, mul)`` → ``mul``)."""
    first, last = (node.lines or [0, -1])[:2]
    body = "\n".join(text_lines[first:last + 1])
    store = _STORE.search(body)
    if not store:
        return ""
    defs = {m["var"]: (m["op"], m["args"]) for m in _OP_DEF.finditer(body)}
    op, args = defs.get(store["var"], ("", ""))
    if op == "reduction":
        kind = re.search(r"'(\w+)'", args)
        return kind.group(1) if kind else "sum"
    return _OP_ALIASES.get(op, op)


def kernels_to_ir(kernels: list[Kernel], post_fusion: list[IrNode], module: str) -> dict[str, list[str]]:
    """Kernel name → the scheduler nodes (after fusion) it runs: generated kernels by the buffers they
    are passed (then by reused buffers), extern calls by the op the IR names."""
    out: dict[str, list[str]] = {k.name: [] for k in kernels}
    computed = [n for n in post_fusion if "Extern" not in n.kind]
    for kernel in kernels:
        if kernel.language == "extern":
            out[kernel.name] = [n.name for n in post_fusion if n.extern_kernel == kernel.name
                                or _op_of(n.extern_kernel) == _op_of(kernel.name)]
    call = module[module.find("def call("):] if "def call(" in module else module
    generated = sorted((k for k in kernels if k.language != "extern"),
                       key=lambda k: call.find(f"{k.name}(") % (len(call) + 1))
    for node in computed:  # a buffer's writer is the first kernel called with it (later ones read it)
        owner = next((k for k in generated if set(node.writes) & set(k.call_args)), None)
        if owner:
            out[owner.name].append(node.name)
    claimed = {name for names in out.values() for name in names}
    aliases = defaultdict(set)
    for m in _REUSE.finditer(module):
        aliases[m["old"]].add(m["new"])
    for node in computed:
        if node.name in claimed:
            continue
        names = {a for w in node.writes for a in aliases.get(w, ())}
        owner = next((k for k in kernels if k.language != "extern" and names & set(k.call_args)), None)
        if owner:
            out[owner.name].append(node.name)
    return out
