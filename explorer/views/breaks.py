"""Graph breaks: where Dynamo stopped tracing, why, and what torch suggests doing about it."""
from __future__ import annotations

import re

from ..html import (badge, code, details, heading, join, key_values, note, para, plural, preformatted, tag,
                    unavailable)
from compiler.schema import BreakRegistry

from .common import break_title

GB_SITE = "https://meta-pytorch.github.io/compile-graph-break-site/gb/{}.html"


def _doc_link(gb_code: str | None):
    if not gb_code or not re.fullmatch(r"GB\d+", gb_code):
        return None
    return tag("a", f"{gb_code} documentation", href=GB_SITE.format(gb_code.lower()), target="_blank",
               rel="noopener")


def _stack(item):
    if not item.stack:
        return None
    rows = [tag("li", code(f"{f.file}:{f.line}"), f" in {f.function}: ", code(f.code)) for f in item.stack]
    return details("User stack", tag("ol", *rows))


def break_card(item, selected_id: str | None):
    """One ``GraphBreak`` as a card; outlined when it happened in the selected compile."""
    registry = item.registry or BreakRegistry()
    in_selected = selected_id in item.compile_ids
    doc_link = _doc_link(item.gb_code)
    return tag("div",
               tag("div", badge(item.gb_code or "no GB code", "error"),
                   tag("strong", f" {break_title(item)}"),
                   badge(f"×{item.count}", "warn", title="how often this break happened"),
                   cls="tc-card-title"),
               para("at ", code(f"{item.file}:{item.line}"), "  ", code(item.code or "")),
               key_values([("torch's summary", item.headline or None if item.headline != registry.type else None),
                           ("explanation", item.explanation or registry.explanation),
                           ("in compiles", ", ".join(item.compile_ids))]),
               join([heading("Hints", 5), tag("ul", *(tag("li", h) for h in item.hints))]) if item.hints else None,
               _stack(item),
               details("Full reason (as torch logged it)", preformatted(item.reason)),
               para(doc_link) if doc_link else None,
               cls="tc-break-card" + (" tc-selected" if in_selected else ""))


def render_breaks(capture, compile) -> str:
    stage = capture.breaks
    if not stage.available:
        return unavailable("Graph breaks", stage.reason)
    items = stage.items
    if not items:
        return note("No graph breaks: Dynamo traced every compiled frame without stopping.", kind="ok")
    selected = compile.compile_id if compile is not None else None
    return join([
        para(f"{plural(stage.total or len(items), 'graph break')} at {plural(len(items), 'place')}. "
             "At each one Dynamo ends the graph, runs the line in plain Python, and resumes in a new "
             "frame (a resume function) with its own graph and guards.",
             " Cards of the selected compile are outlined." if selected else ""),
        *(break_card(item, selected) for item in items),
    ])
