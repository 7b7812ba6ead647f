"""FX graphs as a tree of collapsible groups, laid out by Graphviz ``dot`` one expand state at a time.

The tree: one group per ``nn.Module`` path (``module``, else ``module_guess``, else the longest
module path that the node's producers and consumers share), a group per higher-order op's body
(``Graph.subgraphs``), and, where one level holds more than ``LEVEL_LIMIT`` items (a flat graph of
10,000 ops), runs of consecutive items. A *scene* is what one expand state looks like: collapsed
groups are single boxes, expanded ones are clusters around their children, edges are merged
between what is visible. ``dot`` places boxes of fixed size (labels never go through dot), so the
scene is plain numbers and strings; the interactive viewer (``explorer/static/graph_viewer.js``)
and the static SVG (``scene_svg``) draw the same scene. Scenes are cached per expand state.
"""
from __future__ import annotations

import json
import math
import re
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

from ..html import Html, esc, plural, shorten
from .common import op_label

LEVEL_LIMIT = 40  # items per level before consecutive items are grouped into runs
OPEN_BOXES = 64  # opening a group also opens its inner groups while it shows at most this many boxes
INITIAL_BOXES = 24  # open with levels expanded while the picture stays this small
CHAR_PX, LINE_PX, PAD_X, PAD_Y = 7.0, 16.0, 16.0, 10.0
LABEL_CHARS = 44
DOT_TIMEOUT_S = 30


def nodes_and_edges(graph) -> tuple[list, list]:
    """A ``compiler.stages.schema.Graph``'s nodes and edges, as lists this module may reorder."""
    return list(graph.nodes), list(graph.edges)


@dataclass
class Item:
    """A box or a group in the tree. Groups have children; a leaf carries its FX node."""

    id: str
    kind: str  # module, run, subgraph, or the FX op of a leaf (placeholder, call_function, …)
    label: list[str]
    parent: str | None
    children: list[str] = field(default_factory=list)
    node: object = None
    size: int = 0  # FX nodes inside (1 for a leaf)
    path: str | None = None  # the module path of a module group


def _common_prefix(paths) -> str | None:
    paths = [p.split(".") for p in paths if p]
    if not paths:
        return None
    common = []
    for parts in zip(*paths):
        if len(set(parts)) != 1:
            break
        common.append(parts[0])
    return ".".join(common) or None


def module_paths(nodes: list) -> dict[str, str | None]:
    """Each node's module path: its own (``module``/``module_guess``), else the longest path shared by
    the nearest attributed nodes before and after it in program order (FX nodes are in execution
    order), so e.g. a softmax between ``h.3.attn.c_attn`` and ``h.3.attn.c_proj`` sits in ``h.3.attn``
    and a residual add between two layers in ``h``. Best effort, like ``module_guess`` itself."""
    own = [n.module or n.module_guess for n in nodes]
    before, after, last = [], [None] * len(nodes), None
    for path in own:
        before.append(last)
        last = path or last
    last = None
    for index in range(len(nodes) - 1, -1, -1):
        after[index] = last
        last = own[index] or last
    out = {}
    for index, node in enumerate(nodes):
        path = own[index]
        if not path and node.op not in ("placeholder", "output"):
            path = _common_prefix([before[index], after[index]]) if before[index] and after[index] else None
        out[node.name] = path
    return out


_PARAMETER = re.compile(r"_(?:parameters|buffers)_(?P<leaf>\w+?)_$")


def leaf_label(node) -> list[str]:
    op, name = node.op, node.name
    kind_type = _type_text(node)
    if op == "placeholder":
        parameter = _PARAMETER.search(name) if node.module else None
        head = parameter["leaf"] if parameter else name
    elif op == "output":
        head = "output"
    else:
        head = f"{name} = {op_label(node.target)}"
    return [shorten(s, LABEL_CHARS) for s in (head, kind_type) if s]


def _type_text(node) -> str | None:
    """``float32[4, 16]``, or the symbolic type (``Sym(s77)``)."""
    if node.dtype:
        return f"{node.dtype}[{', '.join(node.shape or [])}]"
    return node.type


class GraphTree:
    """The collapsible tree of one FX graph (and its higher-order ops' bodies)."""

    def __init__(self, graph, kernels: dict[str, list[str]] | None = None, heat: dict[str, float] | None = None):
        self.items: dict[str, Item] = {"root": Item("root", "root", [], None)}
        self.kernels = kernels or {}
        self.heat = heat or {}  # module path → compile seconds spent on it (sampled: compiler.stages.compile_time)
        self.leaf_of: dict[str, str] = {}  # FX node name (prefixed in subgraphs) → leaf item id
        self.position: dict[str, int] = {}  # leaf item id → program order
        self.module_path: dict[str, str | None] = {}  # leaf item id → its module path (own or inferred)
        self.edges: list[tuple[str, str]] = []
        self._add_graph(graph, "root", "")
        self._split_long_levels("root")
        self._count("root")
        self.ancestors = {leaf: self._ancestors(leaf) for leaf in self.leaf_of.values()}
        self._scenes: dict[frozenset, dict] = {}

    # --- building ---------------------------------------------------------------------------

    def _add_graph(self, graph, parent: str, prefix: str) -> None:
        nodes, edges = nodes_and_edges(graph)
        aliases = {n.name: n.target for n in nodes if n.op == "alias"}
        nodes = [n for n in nodes if n.op != "alias"]

        def root(name):
            seen = set()
            while name in aliases and name not in seen:
                seen.add(name)
                name = aliases[name]
            return name

        edges = list(dict.fromkeys((root(a), root(b)) for a, b in edges))
        paths = module_paths(nodes)
        subgraphs = graph.subgraphs
        for node in nodes:
            name = node.name
            group = self._module_group(paths.get(name), parent, prefix)
            self.module_path[f"n:{prefix}{name}"] = paths.get(name)
            leaf = Item(f"n:{prefix}{name}", node.op or "?", leaf_label(node), group, node=node)
            self._attach(leaf)
            self.leaf_of[prefix + name] = leaf.id
            self.position[leaf.id] = len(self.position)
            body = self._subgraph_name(node, subgraphs)
            if body is not None:  # a higher-order op's body: its own graph, nested in a group
                sub_id = f"s:{prefix}{name}"
                self._attach(Item(sub_id, "subgraph", [f"{name}: {body}", "subgraph"], group))
                self._add_graph(subgraphs[body], sub_id, f"{prefix}{body}/")
        names = {n.name for n in nodes}
        self.edges += [(prefix + a, prefix + b) for a, b in edges if a in names and b in names and a != b]

    @staticmethod
    def _subgraph_name(node, subgraphs: dict) -> str | None:
        if not subgraphs:
            return None
        name, target = node.name, str(node.target or "")
        for body in subgraphs:
            if name == body or target in (body, f"self.{body}"):
                return body
        return None

    def _module_group(self, path: str | None, parent: str, prefix: str) -> str:
        if not path:
            return parent
        parts = path.split(".")
        for depth in range(1, len(parts) + 1):
            sub = ".".join(parts[:depth])
            item_id = f"m:{prefix}{sub}"
            if item_id not in self.items:
                self._attach(Item(item_id, "module", [sub], parent, path=sub))
            parent = item_id
        return parent

    def _attach(self, item: Item) -> None:
        self.items[item.id] = item
        self.items[item.parent].children.append(item.id)

    def _split_long_levels(self, item_id: str) -> None:
        """Groups of more than ``LEVEL_LIMIT`` children get runs of consecutive children (recursively)."""
        item = self.items[item_id]
        for child in list(item.children):
            self._split_long_levels(child)
        self._split(item)

    def _split(self, item: Item) -> None:
        """Beside module groups, a stretch of more than four loose ops (in program order) becomes a
        run; a level that still has more than ``LEVEL_LIMIT`` items (a flat graph of thousands of
        ops) is cut into runs of consecutive items, recursively."""
        has_groups = any(self.items[c].children for c in item.children)
        if len(item.children) <= LEVEL_LIMIT and not has_groups:
            return
        children, stretch, placed = [], [], set()

        def flush():
            children.extend([self._run(item, stretch)] if has_groups and len(stretch) > 4 else stretch)
            stretch.clear()

        for child in self._program_order(item):
            if not self.items[child].children:
                stretch.append(child)
                continue
            flush()
            if child not in placed:
                placed.add(child)
                children.append(child)
        flush()
        if len(children) > LEVEL_LIMIT:
            size = math.ceil(len(children) / LEVEL_LIMIT)
            children = [self._run(item, children[start:start + size]) for start in range(0, len(children), size)]
        item.children = children

    def _program_order(self, item: Item) -> list[str]:
        """``item``'s children in the order their FX nodes run; a group shows up where its first node does."""
        child_of = {}
        stack = [(c, c) for c in item.children]
        while stack:
            top, current = stack.pop()
            if self.items[current].node is not None:
                child_of[current] = top
            stack += [(top, c) for c in self.items[current].children]
        sequence = []  # with a group repeated each time the program comes back to it
        for leaf in sorted(child_of, key=self.position.__getitem__):
            if not sequence or sequence[-1] != child_of[leaf]:
                sequence.append(child_of[leaf])
        placed = set(child_of.values())
        return sequence + [c for c in item.children if c not in placed]

    def _run(self, item: Item, chunk: list[str]) -> str:
        run = Item(f"r:{item.id}:{chunk[0]}", "run", [], item.id, children=list(chunk))
        for child in chunk:
            self.items[child].parent = run.id
        self.items[run.id] = run
        self._split(run)
        return run.id

    def _count(self, item_id: str) -> int:
        item = self.items[item_id]
        item.size = 1 if item.node is not None else 0
        item.size += sum(self._count(c) for c in item.children)
        if item.kind == "run":
            first, last = self._first_leaf(item), self._last_leaf(item)
            item.label = [f"{first.node.name} … {last.node.name}" if first and last
                          else "nodes", plural(item.size, "node")]
        elif item.kind == "module":
            item.label = [item.path, plural(item.size, "node")]
        return item.size

    def _first_leaf(self, item: Item):
        while item.children:
            item = self.items[item.children[0]]
        return item if item.node is not None else None

    def _last_leaf(self, item: Item):
        while item.children:
            item = self.items[item.children[-1]]
        return item if item.node is not None else None

    def _ancestors(self, item_id: str) -> list[str]:
        """Group ids from the outermost to the innermost that hold ``item_id``."""
        chain = []
        parent = self.items[item_id].parent
        while parent and parent != "root":
            chain.append(parent)
            parent = self.items[parent].parent
        return chain[::-1]

    # --- expand state ---------------------------------------------------------------------

    def groups(self) -> list[str]:
        return [i for i, item in self.items.items() if item.children and i != "root"]

    def initial_expanded(self, budget: int = INITIAL_BOXES) -> list[str]:
        """Open level by level while the picture stays within ``budget`` boxes: a wrapper module
        that holds everything (``transformer``) opens, its twelve layers stay closed."""
        return self.opened("root", budget)

    def opened(self, group: str, budget: int = OPEN_BOXES, strict: bool = False) -> list[str]:
        """The groups inside ``group`` to open with it, level by level, while it shows at most
        ``budget`` boxes (a whole level at a time). The opening view lets a lone child group open past
        the budget (``transformer`` holds everything); a click (``strict``) never does: on a deep module
        tree it opened every wrapper and block below at once (issue 27: 131 groups, 6 → 425 boxes)."""
        expanded: list[str] = []
        frontier = [c for c in self.items[group].children if self.items[c].children]
        visible = len(self.items[group].children)
        while frontier:
            grown = visible + sum(len(self.items[g].children) - 1 for g in frontier)
            if grown > budget and (strict or len(frontier) > 1):
                break
            expanded += frontier
            visible = grown
            frontier = [c for g in frontier for c in self.items[g].children if self.items[c].children]
        return expanded

    def visible_of(self, leaf: str, expanded: frozenset) -> str:
        for group in self.ancestors[leaf]:
            if group not in expanded:
                return group
        return leaf

    # --- scene ----------------------------------------------------------------------------

    def scene(self, expanded) -> dict:
        """Boxes, clusters and edges for an expand state (cached). A group is open only when
        its parents are open too."""
        key = frozenset(e for e in expanded if e in self.items)
        if key not in self._scenes:
            if len(self._scenes) > 64:
                self._scenes.clear()
            self._scenes[key] = self._layout(key)
        return self._scenes[key]

    def _box_size(self, item: Item) -> tuple[float, float]:
        lines = item.label or [item.id]
        width = max(len(line) for line in lines) * CHAR_PX + 2 * PAD_X
        return max(width, 60.0), len(lines) * LINE_PX + 2 * PAD_Y

    def _layout(self, expanded: frozenset) -> dict:
        boxes, clusters, lines = {}, {}, []

        def walk(item_id: str, depth: int, indent: str):
            for child in self.items[item_id].children:
                item = self.items[child]
                if item.children and child in expanded:
                    cid = f"cluster_{len(clusters)}"
                    clusters[cid] = (child, depth)
                    lines.append(f'{indent}subgraph {cid} {{ label="{_dot_quote(_cluster_title(item))}"; '
                                 f'fontsize=12; margin=10;')
                    walk(child, depth + 1, indent + "  ")
                    lines.append(f"{indent}}}")
                else:
                    bid = f"b{len(boxes)}"
                    boxes[child] = bid
                    width, height = self._box_size(item)
                    lines.append(f'{indent}{bid} [width={width / 72:.3f}, height={height / 72:.3f}];')

        walk("root", 0, "  ")
        edge_counts = Counter()
        for a, b in self.edges:
            va, vb = self.visible_of(self.leaf_of[a], expanded), self.visible_of(self.leaf_of[b], expanded)
            if va != vb:
                edge_counts[(va, vb)] += 1
        edge_list = [(a, b, n) for (a, b), n in edge_counts.items() if a in boxes and b in boxes]
        lines += [f"  {boxes[a]} -> {boxes[b]};" for a, b, _ in edge_list]
        source = ("digraph G {\n  graph [rankdir=TB, nodesep=0.25, ranksep=0.35, compound=true, "
                  'fontname="Helvetica"];\n  node [shape=box, fixedsize=true, label=""];\n  edge [arrowsize=0.6];\n'
                  + "\n".join(lines) + "\n}\n")
        laid = run_dot(source)
        return self._scene_from(laid, boxes, clusters, edge_list)

    def _scene_from(self, laid: dict, boxes: dict, clusters: dict, edge_list: list) -> dict:
        x0, y0, x1, y1 = (float(v) for v in laid.get("bb", "0,0,0,0").split(","))
        height = y1

        def flip(x, y):
            return round(float(x), 1), round(height - float(y), 1)

        by_name = {o["name"]: o for o in laid.get("objects", [])}
        item_of_box = {bid: item_id for item_id, bid in boxes.items()}
        scene_boxes = []
        for bid, item_id in item_of_box.items():
            obj = by_name[bid]
            x, y = flip(*obj["pos"].split(","))
            w, h = float(obj["width"]) * 72, float(obj["height"]) * 72
            scene_boxes.append(self._box_entry(self.items[item_id], x - w / 2, y - h / 2, w, h))
        scene_clusters = []
        for cid, (item_id, depth) in clusters.items():
            bx0, by0, bx1, by1 = (float(v) for v in by_name[cid]["bb"].split(","))
            item = self.items[item_id]
            scene_clusters.append({"id": item_id, "x": round(bx0, 1), "y": round(height - by1, 1),
                                   "w": round(bx1 - bx0, 1), "h": round(by1 - by0, 1), "depth": depth,
                                   "kind": item.kind, "label": _cluster_title(item)})
        scene_edges = []
        for edge, (a, b, count) in zip(laid.get("edges", []), edge_list):
            scene_edges.append({"from": a, "to": b, "count": count, "d": _edge_path(edge.get("pos", ""), flip)})
        for entry in scene_clusters:
            seconds = self.compile_seconds(self.items[entry["id"]])
            if seconds:
                entry["compile_s"] = seconds
        scene = {"width": round(x1 - x0, 1), "height": round(y1 - y0, 1), "boxes": scene_boxes,
                 "clusters": scene_clusters, "edges": scene_edges}
        if self.heat:
            # shading compares the closed modules (boxes); an open module (cluster) holds them all, so it is not shaded
            scene["compile_s_max"] = max((e.get("compile_s", 0.0) for e in scene_boxes), default=0.0)
        return scene

    def compile_seconds(self, item: Item) -> float | None:
        """Compile seconds sampled on a module group's module and those inside it (None: no heat data, or a node)."""
        path = getattr(item, "path", None)
        if not self.heat or not path or not item.children:
            return None
        total = sum(s for p, s in self.heat.items() if p == path or p.startswith(path + "."))
        return round(total, 4) if total else None

    def _box_entry(self, item: Item, x, y, w, h) -> dict:
        entry = {"id": item.id, "kind": item.kind, "label": item.label, "x": round(x, 1), "y": round(y, 1),
                 "w": round(w, 1), "h": round(h, 1), "group": bool(item.children), "size": item.size}
        if item.node is not None:
            entry["info"] = self.node_info(item)
        seconds = self.compile_seconds(item)
        if seconds:
            entry["compile_s"] = seconds
        return entry

    def node_info(self, item: Item) -> dict:
        node = item.node
        name = item.id[2:]
        info = {"name": node.name, "op": node.op, "target": node.target,
                "type": _type_text(node),
                "module": node.module or self.module_path.get(item.id),
                "module_guessed": not node.module,
                "file": node.file, "line": node.line,
                "function": node.function, "code": node.code,
                "kernels": self.kernels.get(name, [])}
        return {k: str(v) if k == "target" and v is not None else v for k, v in info.items()
                if v not in (None, [], "")}

    # --- search ---------------------------------------------------------------------------

    def search(self, query: str, expanded) -> dict[str, int]:
        """Visible box id → how many FX nodes inside it match ``query`` (name, target, code; case-insensitive)."""
        query = query.strip().lower()
        if not query:
            return {}
        key = frozenset(expanded)
        hits: Counter = Counter()
        for leaf_id in self.leaf_of.values():
            node = self.items[leaf_id].node
            text = f"{node.name} {node.target or ''} {node.code or ''}"
            if query in text.lower():
                hits[self.visible_of(leaf_id, key)] += 1
        return dict(hits)


def _cluster_title(item: Item) -> str:
    if item.kind == "module":
        return f"{item.path} ({plural(item.size, 'node')})"
    return " ".join(item.label)


def _dot_quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")


_POINT = re.compile(r"(-?[\d.]+),(-?[\d.]+)")


def _edge_path(pos: str, flip) -> str:
    """dot's spline (``e,x,y`` end point, then 1 + 3n Bézier points) as an SVG path with the arrow's tip."""
    end = None
    points = []
    for token in pos.split():
        if token.startswith("e,"):
            end = flip(*token[2:].split(","))
        elif token.startswith("s,"):
            continue
        else:
            match = _POINT.fullmatch(token)
            if match:
                points.append(flip(match[1], match[2]))
    if not points:
        return ""
    d = f"M{points[0][0]},{points[0][1]}"
    for i in range(1, len(points) - 2, 3):
        (ax, ay), (bx, by), (cx, cy) = points[i:i + 3]
        d += f"C{ax},{ay} {bx},{by} {cx},{cy}"
    if end:
        d += f"L{end[0]},{end[1]}"
    return d


def run_dot(source: str) -> dict:
    done = subprocess.run(["dot", "-Tjson"], input=source, capture_output=True, text=True, timeout=DOT_TIMEOUT_S,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"dot failed: {shorten(done.stderr.strip(), 300)}")
    return json.loads(done.stdout)


# --- static SVG (no kernel: nbconvert, saved notebooks) ------------------------------------------

def scene_svg(scene: dict, heat: bool = False) -> Html:
    """The scene as an ``<svg>`` scaled to fit its box (every text escaped); ``heat``: modules shaded by the
    compile seconds sampled on them (``GraphTree(heat=...)``)."""
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="tc-gv-svg" viewBox="-4 -4 {scene["width"] + 8} '
             f'{scene["height"] + 8}" width="{scene["width"] + 8}" height="{scene["height"] + 8}" preserveAspectRatio="xMidYMin meet" '
             f'role="img"><defs><marker id="tc-gv-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
             f'markerHeight="7" orient="auto"><path d="M0,0L10,5L0,10z" class="tc-gv-arrowhead"/></marker></defs>']
    top = scene.get("compile_s_max") if heat else None

    def shade(entry) -> str:  # a module's sampled compile seconds, as the interactive viewer shades them
        if not top or not entry.get("compile_s"):
            return ""
        return f' style="fill: rgba(234, 88, 12, {0.12 + 0.6 * entry["compile_s"] / top:.3f})"'

    for c in sorted(scene["clusters"], key=lambda c: c["depth"]):
        parts.append(f'<g class="tc-gv-cluster"><rect x="{c["x"]}" y="{c["y"]}" width="{c["w"]}" height="{c["h"]}" '
                     f'rx="6"/><text x="{c["x"] + 8}" y="{c["y"] + 16}">{esc(c["label"])}</text></g>')
    for e in scene["edges"]:
        parts.append(f'<path class="tc-gv-edge" d="{esc(e["d"])}" marker-end="url(#tc-gv-arrow)"/>')
    for b in scene["boxes"]:
        title = "\n".join(f"{k}: {v}" for k, v in (b.get("info") or {}).items()) + (
            f"{' · '.join(b['label'])}: {b['compile_s']:.2f} s compile time (sampled)" if top and b.get("compile_s") else "")
        lines = "".join(f'<text x="{b["x"] + b["w"] / 2:.1f}" y="{b["y"] + PAD_Y + (i + 0.75) * LINE_PX:.1f}" '
                        f'text-anchor="middle" class="{"tc-gv-sub" if i else "tc-gv-head"}">{esc(line)}</text>'
                        for i, line in enumerate(b["label"]))
        parts.append(f'<g class="tc-gv-box tc-gv-{esc(b["kind"])}"><title>{esc(title or " ".join(b["label"]))}</title>'
                     f'<rect x="{b["x"]}" y="{b["y"]}" width="{b["w"]}" height="{b["h"]}" rx="5"{shade(b)}/>{lines}</g>')
    parts.append("</svg>")
    return Html("".join(parts))


@lru_cache(maxsize=1)
def dot_available() -> bool:
    try:
        return subprocess.run(["dot", "-V"], capture_output=True, timeout=10, check=False).returncode == 0
    except OSError:
        return False
