"""FX graph: the graph Dynamo traced, drawn (collapsible groups per nn.Module) and as readable code.

In the widget the drawing is the interactive viewer (``explorer.graph_viewer``); the static view
(``render_graph``) draws the viewer's opening state as an SVG.
"""
from __future__ import annotations

from ..html import Html, code, code_block, details, join, note, para, plural, unavailable
from .common import op_summary
from .graph_svg import module_of, render_graph_svg
from .tables import data_table


def module_compile_seconds(compile) -> dict[str, float]:
    """Compile seconds sampled per module path of this compile (``c.timings.by_line``; empty: not sampled)."""
    out: dict[str, float] = {}
    for row in compile.timings.by_line if compile.timings.available else []:
        if row.module:
            out[row.module] = out.get(row.module, 0.0) + row.seconds
    return out


def graph_facts(graph) -> str:
    nodes = graph.nodes
    inputs = sum(n.op == "placeholder" for n in nodes)
    modules = {module_of(n) for n in nodes} - {None}
    return ", ".join([plural(graph.op_count, "op"), plural(inputs, "input"), plural(len(modules), "module")])


def nodes_table(graph) -> Html:
    """Every node of the graph as a searchable table (collapsed at first)."""
    def value(n):
        return f"{n.dtype}[{', '.join(n.shape)}]" if n.dtype and n.shape is not None else n.type or ""

    rows = [[code(n.name), n.op, code(n.target) if n.target else "", value(n), n.module or n.module_guess or "",
             f"{n.file.rsplit('/', 1)[-1]}:{n.line}" if n.file else "", code(n.code) if n.code else ""]
            for n in graph.nodes]
    return data_table(f"All {plural(len(rows), 'node')} as a table (search, sort)",
                      ["node", "op", "target", "value", "module", "line", "code"], rows, cls="tc-wrap-first",
                      collapsed=True, drop_empty=True)


def render_graph(capture, compile, drawing: bool = True) -> str:
    """The FX graph view; ``drawing=False`` leaves the static drawing out (the widget shows the
    interactive viewer in its place)."""
    graph = compile.graph
    if not graph.available:
        return unavailable("FX graph", graph.reason)
    heat = module_compile_seconds(compile)
    svg, collapsed = render_graph_svg(graph, heat=heat) if drawing else (None, None)
    return join([
        para(graph_facts(graph), cls="tc-muted"),
        para("Modules shaded by the compile time sampled on them (darker: more; hover a module for its seconds; "
             "cap.compile_time_table(by='module')). In the live explorer: the viewer's “compile time” box.",
             cls="tc-muted") if heat and drawing else None,
        note(graph.not_parsed, kind="warn") if graph.not_parsed else None,
        op_summary(graph.nodes),
        note(collapsed, kind="info") if collapsed else None,
        svg,
        details("Readable code (GraphModule.print_readable)", code_block(graph.code, "python"), open=drawing),
        nodes_table(graph),
    ])
