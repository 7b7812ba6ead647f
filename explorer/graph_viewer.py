"""The interactive graph viewer: an ``anywidget`` whose ES module (``static/graph_viewer.js``) draws the
scene that ``views.graph_layout`` computes with Graphviz, one layout per expand state (cached).

The browser sends the expand state (``expanded``) and the search text (``query``); Python answers with
the new ``scene`` and the ``matches`` (visible box → matching FX nodes inside it).
"""
from __future__ import annotations

import re
from pathlib import Path

import anywidget
import traitlets

from .views.graph_layout import GraphTree

STATIC = Path(__file__).resolve().parent / "static"


class GraphViewer(anywidget.AnyWidget):
    """Pan/zoom/collapse view of one FX graph (``compiler.stages.schema.Graph``)."""

    _esm = STATIC / "graph_viewer.js"
    _css = STATIC / "tcompile.css"  # for its graph-viewer section; the rest is scoped under .tcompile
    scene = traitlets.Dict().tag(sync=True)
    expanded = traitlets.List(traitlets.Unicode()).tag(sync=True)
    query = traitlets.Unicode("").tag(sync=True)
    matches = traitlets.Dict().tag(sync=True)
    focus = traitlets.Unicode("").tag(sync=True)  # the group opened or closed last: the view centres on it
    error = traitlets.Unicode("").tag(sync=True)
    colour_compile = traitlets.Bool(False).tag(sync=True)  # shade modules by their sampled compile seconds

    def __init__(self, graph, kernels: dict[str, list[str]] | None = None, tree: GraphTree | None = None,
                 heat: dict[str, float] | None = None, **kwargs):
        self.tree = tree or GraphTree(graph, kernels, heat)
        expanded = self.tree.initial_expanded()
        super().__init__(expanded=expanded, scene=self.tree.scene(expanded), **kwargs)
        self._setting = False
        self.observe(self._opened, names="expanded")
        self.observe(self._search, names="query")

    def _opened(self, change) -> None:
        """A group the user opened also opens its inner groups while it shows at most ``OPEN_BOXES`` boxes,
        never more (``GraphTree.opened(strict=True)``); the groups opened that way open nothing further
        (each used to open its own inner groups in turn: a deep module tree opened 131 groups at once).
        "Reset" (an empty list) goes back to the opening view."""
        if self._setting:  # the assignment below: laid out once, after it
            return
        if not change["new"] and self.tree.initial_expanded():
            self.focus = ""
            target = self.tree.initial_expanded()
        else:
            new = [g for g in change["new"] if g not in (change["old"] or [])]
            inner = [g for group in new if group in self.tree.items for g in self.tree.opened(group, strict=True)]
            target = list(dict.fromkeys([*change["new"], *inner]))
        if target != list(change["new"]):
            self._setting = True
            try:
                self.expanded = target
            finally:
                self._setting = False
        self._relayout()

    def _relayout(self, _change=None) -> None:
        try:
            self.scene = self.tree.scene(self.expanded)
            self.error = ""
        except Exception as exc:  # noqa: BLE001 — dot failed or timed out: keep the last picture, say why
            self.error = f"layout failed: {type(exc).__name__}: {exc}"
        self._search()

    def _search(self, _change=None) -> None:
        self.matches = self.tree.search(self.query, self.expanded)

    # Python-side helpers (tests, notebooks): the same actions a click makes
    def expand(self, *ids: str) -> None:
        self.expanded = list(dict.fromkeys([*self.expanded, *ids]))

    def collapse(self, item_id: str) -> None:
        self.expanded = [e for e in self.expanded if e != item_id and not e.startswith(item_id + ".")]


# --- FX / post-grad node → kernel ---------------------------------------------------------------------

_SOURCE_NODES = re.compile(r"#\s*(?:Topologically Sorted|Unsorted) Source Nodes: \[(?P<nodes>[^\]]*)\]")
_MAPPING = re.compile(r"#\s+(?P<source>\w+) => (?P<targets>[\w, ]+)$", re.M)
_CALLED = re.compile(r"^\s*(?:\w+ = )?(?P<fn>[\w.]+?)(?:\.run)?\(")
_OP = re.compile(r"^_*(?P<op>[a-z][a-z0-9]*(?:_[a-z]+)*?)(?:_\d+)?$")


def _op_key(target: str | None) -> str | None:
    """``torch.nn.functional.softmax`` / ``aten._softmax.default`` / ``softmax`` → ``softmax``."""
    if not target:
        return None
    parts = [p for p in str(target).split(".") if p not in ("default", "Tensor", "Scalar", "int", "dim")]
    match = _OP.match(parts[-1]) if parts else None
    return match["op"] if match else None


def kernel_links(run, graph_nodes: list | None = None) -> dict[str, list[str]]:
    """FX node name → the kernels it went into, from what Inductor wrote in the generated code:
    the ``Source Nodes`` / ``Source node to ATen node mapping`` comments before a kernel (Triton) or
    before its call in ``call()`` (extern kernels on CPU). C++ kernels on CPU carry no such comment:
    for those, the n-th node of an op goes with the n-th kernel named after that op (marked "guessed").
    Best effort: Inductor records the exact mapping only with provenance tracking on."""
    kernels, module = run.code.kernels, run.code.module or ""
    links: dict[str, list[str]] = {}

    def link(names, kernel):
        for name in names:
            links.setdefault(name.strip(), [])
            if kernel not in links[name.strip()]:
                links[name.strip()].append(kernel)

    for kernel in kernels:
        name = kernel.name
        link(kernel.source_nodes, name)
        for match in _MAPPING.finditer(kernel.comments or ""):
            link([match["source"], *match["targets"].split(",")], name)
    call = module[module.find("def call("):] if "def call(" in module else ""
    names = {k.name for k in kernels}
    pending: list[str] = []
    for line in call.splitlines():
        comment = _SOURCE_NODES.search(line)
        if comment:
            pending = [n for n in comment["nodes"].split(",") if n.strip()]
            continue
        mapping = _MAPPING.search(line)
        if mapping and line.lstrip().startswith("#"):
            pending += [mapping["source"], *mapping["targets"].split(",")]
            continue
        called = _CALLED.match(line)
        if pending and called and called["fn"] in names and not line.lstrip().startswith(("#", "del ", "assert")):
            link(pending, called["fn"])  # a kernel's call (not ``stream0 = get_raw_stream(0)`` before it)
            pending = []
    if graph_nodes:
        _guess_by_op(links, kernels, graph_nodes)
    return links


def _guess_by_op(links: dict, kernels: list, nodes: list) -> None:
    by_op: dict[str, list[str]] = {}
    for kernel in kernels:
        if kernel.language == "extern":
            continue
        for op in dict.fromkeys(_op_key(o) for o in kernel.ops_from_name):
            if op:
                by_op.setdefault(op, []).append(kernel.name)
    seen: dict[str, int] = {}
    for node in nodes:
        name = node.name
        op = _op_key(node.target) if node.op not in ("placeholder", "output", "alias") else None
        if not op or op not in by_op:
            continue
        index = seen.get(op, 0)
        seen[op] = index + 1
        if name not in links and index < len(by_op[op]):
            links[name] = [f"{by_op[op][index]} (guessed from the op name)"]


# --- the viewers each explorer tab shows (below its static view) --------------------------------------

def _titled(title: str, viewer) -> "widgets.VBox":
    import ipywidgets as widgets

    from .html import heading, view_frame

    return widgets.VBox([widgets.HTML(view_frame(heading(title, 4))), viewer])


def fx_viewers(capture, compile) -> list:
    """The interactive viewer(s) of the FX graph tab: the Dynamo graph, linked to kernels after Inductor."""
    graph = compile.graph
    if not graph.available or not graph.nodes:
        return []
    links: dict[str, list[str]] = {}
    for run in compile.inductor.runs if compile.inductor.available else []:
        for name, kernels in kernel_links(run, graph.nodes).items():
            links.setdefault(name, []).extend(k for k in kernels if k not in links.get(name, []))
    from .views.fx_graph import module_compile_seconds

    return [GraphViewer(graph, kernels=links, heat=module_compile_seconds(compile))]


def aot_viewers(capture, compile) -> list:
    aot = compile.aot
    if not aot.available:
        return []
    runs = compile.inductor.runs if compile.inductor.available else []
    out = []
    for role, graph in aot.graphs.items():
        if graph.available and graph.nodes:
            run = next((r for r in runs if r.role and role.startswith(r.role)), runs[0] if len(runs) == 1 else None)
            links = kernel_links(run, graph.nodes) if run is not None else {}
            out.append(_titled(f"{role.capitalize()} graph, drawn", GraphViewer(graph, kernels=links)))
    return out


def post_grad_viewers(capture, compile) -> list:
    inductor = compile.inductor
    if not inductor.available:
        return []
    out = []
    for number, run in enumerate(inductor.runs):
        graph = run.post_grad
        if graph.available and graph.nodes:
            title = f"{run.role.capitalize()} post-grad graph" if run.role else f"Post-grad graph {number + 1}"
            out.append(_titled(f"{title}, drawn (click a node for its kernel)",
                               GraphViewer(graph, kernels=kernel_links(run, graph.nodes))))
    return out


INTERACTIVE = {"graph": fx_viewers, "aot": aot_viewers, "inductor": post_grad_viewers}


def interactive_children(key: str, capture, compile) -> list:
    """The viewers of tab ``key``; a viewer that fails says so instead of breaking the tab."""
    import ipywidgets as widgets

    from .html import note, tag, view_frame

    if key not in INTERACTIVE or compile is None:
        return []
    try:
        return INTERACTIVE[key](capture, compile)
    except Exception as exc:  # noqa: BLE001 — one broken viewer must not hide the view
        return [widgets.HTML(view_frame(note(tag("strong", "The graph viewer failed: "),
                                             f"{type(exc).__name__}: {exc}", kind="error")))]
