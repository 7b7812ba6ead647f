"""FX graphs drawn by graphviz ``dot`` as inline SVG.

Nodes sit in nested clusters per ``nn.Module`` path (``module``, else ``module_guess``). A graph
of more than ``LIMIT`` nodes is collapsed into one box per module and source line (then per
module, then per run of consecutive ops) so that it stays legible and ``dot`` stays fast.
Every label goes through ``graphviz.escape``: torch-derived text is never read as dot markup.
"""
from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from ..html import Html, plural, shorten, tag
from .common import op_counts, op_label, tensor_type

LIMIT = 150
MIN_GROUPS = 12
RUN_BOXES = 60  # about how many boxes a graph collapsed into runs of consecutive ops gets
INPUT_OPS = ("placeholder",)
GRAPH_ATTRS = {"rankdir": "TB", "bgcolor": "transparent", "nodesep": "0.25", "ranksep": "0.35",
               "fontname": "Helvetica,Arial,sans-serif", "fontsize": "11", "fontcolor": "#777777",
               "color": "#999999", "style": "rounded,dashed"}
NODE_ATTRS = {"shape": "box", "style": "rounded,filled", "fontname": "Helvetica,Arial,sans-serif",
              "fontsize": "12", "margin": "0.1,0.04", "height": "0.3", "color": "#8a8a8a",
              "fillcolor": "#eef1f6", "fontcolor": "#1a1a1a"}
EDGE_ATTRS = {"color": "#8a8a8a", "arrowsize": "0.6", "fontsize": "10", "fontcolor": "#777777"}
_POINT_SIZE = re.compile(r'(width|height)="([\d.]+)pt"')
_PARAMETER = re.compile(r"_(?:parameters|buffers)_(?P<leaf>\w+?)_$")


@dataclass
class Box:
    """One drawn node: an FX node, or a group of FX nodes once the graph is collapsed."""

    id: str
    label: list[str]
    tooltip: list[str]
    kind: str  # placeholder, call_function, call_method, call_module, getitem, output, group
    module: str | None = None
    members: list[str] = field(default_factory=list)


def module_of(node: dict) -> str | None:
    return node.get("module") or node.get("module_guess")


def without_aliases(nodes: list[dict], edges: list) -> tuple[list[dict], list[tuple[str, str]]]:
    """Drop ``l_x_ = L_x_`` alias nodes; their consumers read the aliased node directly."""
    alias = {n["name"]: n["target"] for n in nodes if n.get("op") == "alias"}

    def root(name):
        seen = set()
        while name in alias and name not in seen:
            seen.add(name)
            name = alias[name]
        return name

    kept = [n for n in nodes if n.get("op") != "alias"]
    names = {n["name"] for n in kept}
    pairs = {(root(a), root(b)) for a, b in edges}
    return kept, [(a, b) for a, b in pairs if a in names and b in names and a != b]


def node_box(node: dict, index: int) -> Box:
    op, kind_type = node.get("op", "?"), tensor_type(node)
    if op == "placeholder":
        parameter = _PARAMETER.search(node["name"]) if node.get("module") else None
        label = [parameter["leaf"] if parameter else node["name"], kind_type]
    elif op == "output":
        label = ["output"]
    else:
        label = [f"{node['name']} = {op_label(node.get('target'))}", kind_type]
    where = f"{node.get('file')}:{node.get('line')} in {node.get('function')}" if node.get("line") else None
    module = module_of(node)
    tooltip = [f"{node['name']} ({op})", f"target: {node.get('target')}" if op not in ("placeholder", "output") else None,
               f"type: {kind_type}" if kind_type else None,
               f"stride: [{', '.join(node['stride'])}] {node.get('device') or ''}" if node.get("stride") is not None else None,
               f"module: {module}{' (guessed)' if not node.get('module') and module else ''}" if module else None,
               where, f"code: {node['code']}" if node.get("code") else None]
    return Box(f"n{index}", [shorten(s, 48) for s in label if s], [t for t in tooltip if t], op, module, [node["name"]])


# --- collapsing -----------------------------------------------------------------------------------

def _by_module_and_line(node, _position):
    return (module_of(node), node.get("line"))


def _by_module(node, _position):
    return (module_of(node),)


def _by_run(size):
    return lambda node, position: (module_of(node), position // size)


def _group_key(node, position, strategy):
    if node.get("op") in INPUT_OPS:
        return ("inputs", module_of(node))
    if node.get("op") == "output":
        return ("output",)
    return ("ops",) + strategy(node, position)


def group_nodes(nodes: list[dict], limit: int) -> tuple[dict[tuple, list[dict]], str]:
    """Nodes grouped by the finest strategy that yields at most ``limit`` groups, and its name.
    Grouping by module alone is skipped when it leaves fewer than ``MIN_GROUPS`` boxes (a model
    with one module, or none): runs of consecutive ops keep more of the graph's shape."""
    strategies = [("module and source line", _by_module_and_line), ("module", _by_module),
                  ("runs of consecutive ops", _by_run(math.ceil(len(nodes) / min(RUN_BOXES, limit))))]
    for number, (name, strategy) in enumerate(strategies):
        groups: dict[tuple, list[dict]] = defaultdict(list)
        for position, node in enumerate(nodes):
            groups[_group_key(node, position, strategy)].append(node)
        last = number == len(strategies) - 1
        if last or MIN_GROUPS <= len(groups) <= limit or (len(groups) <= limit and name != "module"):
            break
    return groups, name


def _lines_text(members: list[dict]) -> str | None:
    lines = sorted({m["line"] for m in members if m.get("line")})
    if not lines:
        return None
    if len(lines) == 1:
        code = next((m.get("code") for m in members if m.get("code")), "")
        return shorten(f"line {lines[0]}: {code}", 48)
    return f"lines {lines[0]}–{lines[-1]}"


def group_box(key: tuple, members: list[dict], index: int) -> Box:
    module = module_of(members[0]) if all(module_of(m) == module_of(members[0]) for m in members) else None
    names = [m["name"] for m in members]
    if key[0] == "inputs":
        title = f"{module} inputs" if module else "inputs"
        label = [title, shorten(", ".join(names), 48)]
    elif key[0] == "output":
        label = ["output"]
    else:
        counts = op_counts(members)
        ops = ", ".join(f"{name}{f' ×{n}' if n > 1 else ''}" for name, n in counts.most_common(3))
        label = [s for s in (module, _lines_text(members), shorten(f"{plural(len(members), 'op')}: {ops}", 48)) if s]
    tooltip = [f"{plural(len(members), 'node')} collapsed into one box", *names[:25],
               f"… and {len(names) - 25} more" if len(names) > 25 else None]
    return Box(f"g{index}", label, [t for t in tooltip if t], "group" if key[0] == "ops" else members[0]["op"],
               module, names)


def collapse(nodes: list[dict], edges: list, limit: int) -> tuple[list[Box], Counter, str]:
    groups, strategy = group_nodes(nodes, limit)
    boxes, box_of = [], {}
    for index, (key, members) in enumerate(groups.items()):
        box = group_box(key, members, index)
        boxes.append(box)
        box_of.update({name: box.id for name in box.members})
    box_edges = Counter((box_of[a], box_of[b]) for a, b in edges if box_of[a] != box_of[b])
    return boxes, box_edges, strategy


# --- drawing --------------------------------------------------------------------------------------

def dot_text(lines: list[str]):
    """Lines as a dot string: every character literal, lines broken with dot's ``\\n``."""
    import graphviz

    return graphviz.nohtml("\\n".join(graphviz.escape(line) for line in lines))


def _add_box(graph, box: Box) -> None:
    graph.node(box.id, dot_text(box.label), tooltip=dot_text(box.tooltip), **{"class": f"tc-{box.kind}"})


def _module_tree(boxes: list[Box]) -> tuple[dict, dict]:
    """Boxes per module path, and each module path's child paths (``m`` → ``m.0``, ``m.2``)."""
    by_module = defaultdict(list)
    children = defaultdict(list)
    for box in boxes:
        by_module[box.module].append(box)
        parts = (box.module or "").split(".") if box.module else []
        for depth in range(1, len(parts) + 1):
            path, parent = ".".join(parts[:depth]), ".".join(parts[:depth - 1]) or None
            if path not in children[parent]:
                children[parent].append(path)
    return by_module, children


def _add_cluster(graph, path: str, by_module, children, counter) -> None:
    counter[0] += 1
    with graph.subgraph(name=f"cluster_{counter[0]}") as sub:
        sub.attr(label=dot_text([path]), tooltip=dot_text([f"nn.Module {path}"]), **{"class": "tc-module"})
        for box in by_module.get(path, []):
            _add_box(sub, box)
        for child in children.get(path, []):
            _add_cluster(sub, child, by_module, children, counter)


def to_dot(boxes: list[Box], edges: Counter):
    import graphviz

    graph = graphviz.Digraph(graph_attr=GRAPH_ATTRS, node_attr=NODE_ATTRS, edge_attr=EDGE_ATTRS)
    by_module, children = _module_tree(boxes)
    for box in by_module.get(None, []):
        _add_box(graph, box)
    counter = [0]
    for path in children.get(None, []):
        _add_cluster(graph, path, by_module, children, counter)
    for (src, dst), count in edges.items():
        graph.edge(src, dst, **({"label": f"×{count}"} if count > 1 else {}))
    return graph


def svg_markup(graph) -> Html:
    """The ``<svg>`` element alone (no XML prolog), as dot wrote it (dot escapes all text); sized in
    CSS pixels rather than points, so a 12 pt label shows as 12 px text like the page around it."""
    svg = graph.pipe(format="svg", encoding="utf-8")
    return Html(_POINT_SIZE.sub(r'\1="\2px"', svg[svg.find("<svg"):], count=2))


def render_graph_svg(stage_data: dict, limit: int = LIMIT) -> tuple[Html, str | None]:
    """The drawn graph, and a sentence saying how it was collapsed (None when it was not)."""
    nodes, edges = without_aliases(stage_data.get("nodes") or [], stage_data.get("edges") or [])
    if len(nodes) > limit:
        boxes, box_edges, strategy = collapse(nodes, edges, limit)
        how = (f"{plural(len(nodes), 'node')} collapsed into {plural(len(boxes), 'box', 'boxes')} by {strategy} "
               "so the graph stays legible; hover a box for its nodes, read the code below for every op.")
    else:
        index = {n["name"]: f"n{i}" for i, n in enumerate(nodes)}
        boxes = [node_box(n, i) for i, n in enumerate(nodes)]
        box_edges, how = Counter((index[a], index[b]) for a, b in edges), None
    try:
        svg = svg_markup(to_dot(boxes, box_edges))
    except Exception as exc:  # noqa: BLE001 — no dot binary, or dot failed: say so, keep the view
        return tag("div", f"graphviz could not draw this graph: {type(exc).__name__}: {shorten(exc, 300)}",
                   cls="tc-note tc-muted"), how
    return tag("div", svg, cls="tc-graph"), how
