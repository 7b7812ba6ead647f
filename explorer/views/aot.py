"""AOT graphs: the ATen-level graphs AOTAutograd made (inference, or joint → forward + backward)."""
from __future__ import annotations

from ..html import code_block, details, heading, join, para, unavailable
from .common import op_summary
from .tables import later

ROLES = {"inference": "Inference graph: no gradients needed, so one graph",
         "joint": "Joint graph: forward and backward traced together, before partitioning",
         "forward": "Forward graph: what runs on the call (saves tensors for backward)",
         "backward": "Backward graph: what runs on .backward()"}


def aot_graph_section(role: str, graph):
    """One AOT graph (a ``compiler.stages.schema.Graph``): its ops at a glance and its code."""
    title = ROLES.get(role.split("_")[0], role)
    if not graph.available:
        return join([heading(title, 4), para(graph.reason or "not logged", cls="tc-muted")])
    # its ops and its code drawn once the tab is on screen (parsing and highlighting a big graph take a second)
    return join([heading(title, 4), later(lambda: join([
        op_summary(graph.nodes), details(f"{role} graph code", code_block(graph.code, "python"), open=role != "joint")]),
        f"drawing the {role} graph ({graph.code.count(chr(10)) + 1:,} lines of code)…")])


def render_aot(capture, compile) -> str:
    stage = compile.aot
    if not stage.available:
        return unavailable("AOT graphs", stage.reason)
    intro = ("Training: AOTAutograd traced the joint graph and split it into a forward and a backward graph."
             if stage.training else
             "Inference: no input requires grad, so AOTAutograd made one graph.")
    return join([para(intro), *(aot_graph_section(role, graph) for role, graph in stage.graphs.items())])
