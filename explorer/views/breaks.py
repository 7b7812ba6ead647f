"""Graph breaks: where Dynamo stopped tracing, why, and what torch suggests doing about it."""
from __future__ import annotations

import re

from ..html import (badge, code, details, heading, join, key_values, note, para, plural, preformatted, tag,
                    unavailable)
from .common import break_title

GB_SITE = "https://meta-pytorch.github.io/compile-graph-break-site/gb/{}.html"


def _doc_link(gb_code: str | None):
    if not gb_code or not re.fullmatch(r"GB\d+", gb_code):
        return None
    return tag("a", f"{gb_code} documentation", href=GB_SITE.format(gb_code.lower()), target="_blank",
               rel="noopener")


def _stack(item: dict):
    frames = item.get("stack") or []
    if not frames:
        return None
    rows = [tag("li", code(f"{f.get('file')}:{f.get('line')}"), f" in {f.get('function')}: ", code(f.get("code")))
            for f in frames]
    return details("User stack", tag("ol", *rows))


def break_card(item: dict, selected_id: str | None):
    registry = item.get("registry") or {}
    in_selected = selected_id in (item.get("compile_ids") or [])
    hints = item.get("hints") or []
    return tag("div",
               tag("div", badge(item.get("gb_code") or "no GB code", "error"),
                   tag("strong", f" {break_title(item)}"),
                   badge(f"×{item.get('count', 1)}", "warn", title="how often this break happened"),
                   cls="tc-card-title"),
               para("at ", code(f"{item.get('file')}:{item.get('line')}"), "  ", code(item.get("code") or "")),
               key_values([("torch's summary", item.get("headline") if item.get("headline") != registry.get("type")
                            else None),
                           ("explanation", item.get("explanation") or registry.get("explanation")),
                           ("in compiles", ", ".join(item.get("compile_ids") or []))]),
               join([heading("Hints", 5), tag("ul", *(tag("li", h) for h in hints))]) if hints else None,
               _stack(item),
               details("Full reason (as torch logged it)", preformatted(item.get("reason"))),
               para(_doc_link(item.get("gb_code"))) if _doc_link(item.get("gb_code")) else None,
               cls="tc-break-card" + (" tc-selected" if in_selected else ""))


def render_breaks(capture, compile) -> str:
    stage = capture.breaks
    if not stage.available:
        return unavailable("Graph breaks", stage.reason)
    items = stage.get("items") or []
    if not items:
        return note("No graph breaks: Dynamo traced every compiled frame without stopping.", kind="ok")
    selected = compile.compile_id if compile is not None else None
    return join([
        para(f"{plural(stage.get('total', len(items)), 'graph break')} at {plural(len(items), 'place')}. "
             "At each one Dynamo ends the graph, runs the line in plain Python, and resumes in a new "
             "frame (a resume function) with its own graph and guards.",
             " Cards of the selected compile are outlined." if selected else ""),
        *(break_card(item, selected) for item in items),
    ])
