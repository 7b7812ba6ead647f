"""FX graphs drawn as a static SVG, for where no kernel runs (nbconvert, saved notebooks, shared pages).

The same collapsible tree and Graphviz layout as the interactive viewer (``graph_layout``), in its
opening state: modules collapsed so that the whole graph fits its box. The SVG scales to the box's
width (viewBox), and a CSS-only "actual size" toggle lets it scroll instead (no script: capture data
is never executed, and every text is escaped).
"""
from __future__ import annotations

import itertools

from ..html import Html, plural, shorten, tag
from .graph_layout import GraphTree, nodes_and_edges, scene_svg

_ids = itertools.count()


def module_of(node) -> str | None:
    """A node's ``nn.Module`` path as torch's names give it (``module``, else ``module_guess``)."""
    return node.module or node.module_guess


def render_graph_svg(graph, tree: GraphTree | None = None, heat: dict[str, float] | None = None) -> tuple[Html, str | None]:
    """The drawn graph in its opening state, and a sentence saying what is collapsed (None when nothing is);
    ``heat`` (module path → compile seconds): modules shaded by them."""
    try:
        tree = tree or GraphTree(graph, heat=heat)
        expanded = tree.initial_expanded()
        scene = tree.scene(expanded)
    except Exception as exc:  # noqa: BLE001 — no dot binary, or dot failed: say so, keep the view
        return tag("div", f"graphviz could not draw this graph: {type(exc).__name__}: {shorten(exc, 300)}",
                   cls="tc-note tc-muted"), None
    nodes, _ = nodes_and_edges(graph)
    groups = [b for b in scene["boxes"] if b["group"]]
    how = None
    if groups:
        how = (f"{plural(len([n for n in nodes if n.op != 'alias']), 'node')} "
               f"drawn as {plural(len(scene['boxes']), 'box', 'boxes')}: {plural(len(groups), 'group')} "
               "(modules, runs of ops) collapsed. In the live explorer, click one to open it.")
    toggle = f"tc-gv-zoom-{next(_ids)}"
    body = tag("div", Html(f'<input type="checkbox" id="{toggle}" class="tc-gv-zoom">'),
               tag("label", " actual size (scroll to pan)", **{"for": toggle}),
               tag("div", scene_svg(scene, heat=bool(heat)), cls="tc-gv-frame"), cls="tc-gv tc-gv-static")
    return body, how
