"""Graph breaks: where Dynamo stopped tracing, why, and what torch suggests doing about it."""
from __future__ import annotations

import re

from pathlib import Path

from compiler.stages.findings import Code, Place, share_text, skipped_frames, skipped_parts
from compiler.stages.breaks import KINDS, cell_number

from ..html import (LIST_PAGE, Html, badge, code, details, heading, join, key_values, note, one_page, page_note, para, plural,
                    preformatted, seconds, tag, unavailable)
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


def file_place(file: str | None, line: int | None) -> Html:
    """``model.py:13`` as code, the full path in its tooltip (several files in one view stay apart)."""
    if not file:
        return code("unknown location")
    cell = cell_number(file)
    return tag("code", place(file, line, cell) if cell is not None else f"{Path(file).name}:{line}", title=file,
               cls="tc-place")


def sentence(parts) -> Html:
    """A sentence of ``compiler.stages.findings`` drawn: its code as code spans, its places as ``file_place``."""
    return join([code(p) if isinstance(p, Code) else file_place(p.file, p.line) if isinstance(p, Place) else p
                 for p in parts])


def skipped_sentence(item) -> Html:
    """One skipped frame in a sentence: which function, torch's reason, the cost where measured."""
    return sentence(skipped_parts(item))


def frame_time_text(item, runtime=None) -> str | None:
    """A skipped frame's time per call, never more than the call: its share of the compiled call, and that share of
    the call's median time where the run was timed (the frame was timed under a profiler, which slows both), else
    the profiled seconds beside the profiled call's."""
    if item.share is None:
        return None
    share = share_text(item.share)
    compiled = runtime.compiled if runtime is not None and runtime.available else None
    if compiled is not None and compiled.median_s:
        return (f"{share} of the compiled call's time: about {seconds(item.share * compiled.median_s)} of its "
                f"{seconds(compiled.median_s)} median (measured after the capture under a profiler, with the compiled "
                "functions it calls)")
    if item.call_seconds:
        return (f"{share} of the compiled call's time: {seconds(min(item.seconds or 0.0, item.call_seconds))} of "
                f"{seconds(item.call_seconds)} per call, both timed under a profiler after the capture")
    return f"{share} of the compiled call's time (measured after the capture, with the compiled functions it calls)"


def skipped_card(item, selected_id: str | None, runtime=None):
    """One ``SkippedFrame``: the frame torch ran eagerly, why, and the break that started it."""
    cause = item.cause
    doc_link = _doc_link(item.gb_code)
    timed = frame_time_text(item, runtime)
    return tag("div",
               tag("div", badge("skipped frame", "error"), tag("strong", " "), code(item.function or "?"),
                   tag("strong", f" ran eagerly: {item.reason}"), badge(item.gb_code, "error") if item.gb_code else None,
                   cls="tc-card-title"),
               para(skipped_sentence(item)),
               key_values([("frame", join([file_place(item.file, item.line), f" (compile {item.compile_id})"])),
                           ("torch's explanation", with_code_spans(item.explanation) if item.explanation else None),
                           ("caused by", join([tag("strong", cause.headline), " at ", file_place(cause.file, cause.line),
                                               " ", code(cause.code) if cause.code else None])
                            if cause and cause.file else (cause.headline if cause else None)),
                           ("why that broke", with_code_spans(cause.explanation) if cause and cause.explanation else None),
                           ("time in this frame", timed)]),
               join([heading("Hints", 5), tag("ul", *(tag("li", with_code_spans(h)) for h in cause.hints))])
               if cause and cause.hints else None,
               _stack(cause) if cause else None,
               details("Full reason (as torch logged it)", preformatted(cause.reason)) if cause and cause.reason else None,
               para(doc_link) if doc_link else None,
               cls="tc-break-card tc-skipped-card" + (" tc-selected" if selected_id == item.compile_id else ""))


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
                           ("in compiles", ", ".join(dict.fromkeys(item.compile_ids))),
                           ("how torch logged it", KINDS[item.kind] if item.kind != "resumed" else None)]),
               join([heading("Hints", 5), tag("ul", *(tag("li", with_code_spans(h)) for h in item.hints))])
               if item.hints else None,
               _stack(item),
               details("Full reason (as torch logged it)", preformatted(item.reason)),
               para(doc_link) if doc_link else None,
               cls="tc-break-card" + (" tc-selected" if in_selected else ""))


def pages(capture) -> int:
    """How many pages the view has (``page``): of skipped frames or of graph breaks, whichever has more."""
    from ..html import page_count

    items = capture.breaks.items if capture.breaks.available else []
    return max(page_count(len(items)), page_count(len(capture.skipped_frames)))


def _kinds_sentence(stage) -> str:
    """How the breaks add up to torch's counters['graph_break'] (it counts only those it resumed from after an
    instruction), where some are of another kind."""
    kinds = stage.kinds()
    apart = {kind: n for kind, n in kinds.items() if kind != "resumed"}
    if not apart:
        return ""
    return (f" torch's counters['graph_break'] counts the {kinds.get('resumed', 0)} it resumed from after an "
            "instruction; " + ", ".join(f"{n} {KINDS[kind]}" for kind, n in apart.items()) + ".")


def render_breaks(capture, compile, page: int = 0) -> str:
    """The skipped frames and graph breaks, a page (``LIST_PAGE`` cards of each) at a time."""
    stage = capture.breaks
    if not stage.available:
        return unavailable("Graph breaks", stage.reason)
    all_items = stage.items
    selected = compile.compile_id if compile is not None else None
    all_skipped = skipped_frames(capture)
    skipped, skipped_page = one_page(all_skipped, page)
    skipped_part = join([
        para(f"{plural(len(all_skipped), 'frame')} skipped: Dynamo gave up on "
             f"{'it' if len(all_skipped) == 1 else 'them'} and torch runs the whole frame eagerly, with no graph "
             "(a graph break only ends a graph; a skipped frame has none). Worst first."),
        *(skipped_card(item, selected, capture.runtime) for item in skipped),
        page_note(len(all_skipped), skipped_page, "skipped frames")]) if all_skipped else None
    items, items_page = one_page(all_items, page)
    offset = items_page * LIST_PAGE
    if not all_items:
        return join([skipped_part, note("No graph breaks: Dynamo traced every compiled frame without stopping."
                                        + (" (The skipped frames above were not compiled at all.)" if all_skipped else ""),
                                        kind="ok")])
    return join([
        skipped_part,
        heading("Graph breaks") if all_skipped else None,
        para(f"{plural(stage.total or len(all_items), 'graph break')} at "
             f"{plural(len({(i.file, i.line) for i in all_items}), 'place')}. "
             "At each one Dynamo ends the graph, runs the line in plain Python, and resumes in a new "
             "frame (a resume function) with its own graph and guards.", _kinds_sentence(stage),
             " Cards of the selected compile are outlined." if selected else ""),
        *(break_card(item, selected, fix_for_break(capture, offset + index)) for index, item in enumerate(items)),
        page_note(len(all_items), items_page, "graph breaks (places)"),
    ])
