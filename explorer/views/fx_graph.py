"""FX graph: the graph Dynamo traced, drawn (collapsible groups per nn.Module) and as readable code.

In the widget the drawing is the interactive viewer (``explorer.graph_viewer``); the static view
(``render_graph``) draws the viewer's opening state as an SVG.
"""
from __future__ import annotations

from ..html import code_block, details, join, note, para, plural, unavailable
from .common import op_summary
from .graph_svg import module_of, render_graph_svg


def graph_facts(graph) -> str:
    nodes = graph.nodes
    inputs = sum(n.op == "placeholder" for n in nodes)
    modules = {module_of(n) for n in nodes} - {None}
    return ", ".join([plural(graph.op_count, "op"), plural(inputs, "input"), plural(len(modules), "module")])


def render_graph(capture, compile, drawing: bool = True) -> str:
    """The FX graph view; ``drawing=False`` leaves the static drawing out (the widget shows the
    interactive viewer in its place)."""
    graph = compile.graph
    if not graph.available:
        return unavailable("FX graph", graph.reason)
    svg, collapsed = render_graph_svg(graph) if drawing else (None, None)
    return join([
        para(graph_facts(graph), cls="tc-muted"),
        op_summary(graph.nodes),
        note(collapsed, kind="info") if collapsed else None,
        svg,
        details("Readable code (GraphModule.print_readable)", code_block(graph.code, "python"), open=drawing),
    ])
