"""FX graph: the graph Dynamo traced, drawn (clusters per nn.Module) and as readable code."""
from __future__ import annotations

from ..html import code_block, details, join, note, para, plural, unavailable
from .common import op_summary
from .graph_svg import module_of, render_graph_svg


def graph_facts(stage) -> str:
    nodes = stage.get("nodes") or []
    inputs = sum(n.get("op") == "placeholder" for n in nodes)
    modules = {module_of(n) for n in nodes} - {None}
    return ", ".join([plural(stage.get("op_count", 0), "op"), plural(inputs, "input"),
                      plural(len(modules), "module")])


def render_graph(capture, compile) -> str:
    stage = compile.graph
    if not stage.available:
        return unavailable("FX graph", stage.reason)
    svg, collapsed = render_graph_svg(stage.data)
    return join([
        para(graph_facts(stage), cls="tc-muted"),
        op_summary(stage.get("nodes") or []),
        note(collapsed, kind="info") if collapsed else None,
        svg,
        details("Readable code (GraphModule.print_readable)", code_block(stage.get("code"), "python"),
                open=True),
    ])
