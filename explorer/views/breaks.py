"""Graph breaks: where Dynamo stopped tracing, why, and what torch suggests doing about it."""
from __future__ import annotations

import re

from ..html import (Html, badge, code, details, heading, join, key_values, note, para, plural, preformatted, tag,
                    unavailable)
from compiler.stages.schema import BreakRegistry

from .common import break_title
from .fixes import fix_for_break, fix_label

GB_SITE = "https://meta-pytorch.github.io/compile-graph-break-site/gb/{}.html"


def _doc_link(gb_code: str | None):
    if not gb_code or not re.fullmatch(r"GB\d+", gb_code):
        return None
    return tag("a", f"{gb_code} documentation", href=GB_SITE.format(gb_code.lower()), target="_blank",
               rel="noopener")


def with_code_spans(text: str | None) -> Html:
    """torch's markdown-ish text (``Avoid calling builtin `print` …``): backticked parts as code spans."""
    parts = re.split(r"`([^`\n]+)`", text or "")
    return join([code(part) if i % 2 else part for i, part in enumerate(parts)])


def place(file: str | None, line: int | None, cell: int | None = None) -> str:
    """Where a line is, named as the notebook names it: ``In [6], line 3``, else ``file:line``."""
    if cell is not None:
        return f"In [{cell}], line {line}"
    return f"{file}:{line}" if file else "unknown location"


def _frame(f, cls: str | None = None):
    return tag("li", code(place(f.file, f.line, f.cell)), f" in {f.function}", ": " if f.code else "",
               code(f.code) if f.code else None, cls=cls)


def _stack(item):
    """The user's frames (the model's code), outermost first; every frame under "show all frames"."""
    if not item.stack:
        return None
    user = [f for f in item.stack if f.user]
    hidden = len(item.stack) - len(user)
    everything = details(f"show all frames ({plural(len(item.stack), 'frame')}, {hidden} of Python, "
                         "Jupyter, torch or tcompile)",
                         tag("ol", *(_frame(f, None if f.user else "tc-muted") for f in item.stack)),
                         cls="tc-all-frames") if hidden else None
    return join([heading("Your code (outermost call first)", 5),
                 tag("ol", *(_frame(f) for f in user)) if user else para("(no frame of your code)", cls="tc-muted"),
                 everything])


def break_card(item, selected_id: str | None, fix=None):
    """One ``GraphBreak`` as a card; outlined when it happened in the selected compile."""
    registry = item.registry or BreakRegistry()
    in_selected = selected_id in item.compile_ids
    doc_link = _doc_link(item.gb_code)
    summary = item.headline if item.headline and item.headline != registry.type else None
    return tag("div",
               tag("div", badge(item.gb_code or "no GB code", "error"),
                   tag("strong", f" {break_title(item)}"),
                   badge(f"×{item.count}", "warn", title="how often this break happened"),
                   cls="tc-card-title"),
               para("at ", code(place(item.file, item.line, item.cell)), " ", code(item.code) if item.code else None),
               para(fix_label(fix), cls="tc-fix-link") if fix is not None else None,
               key_values([("torch's summary", with_code_spans(summary) if summary else None),
                           ("explanation", with_code_spans(item.explanation or registry.explanation)),
                           ("in compiles", ", ".join(item.compile_ids))]),
               join([heading("Hints", 5), tag("ul", *(tag("li", with_code_spans(h)) for h in item.hints))])
               if item.hints else None,
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
        *(break_card(item, selected, fix_for_break(capture, index)) for index, item in enumerate(items)),
    ])
