"""One view per stage: ``render_<stage>(capture, compile) -> str`` of escaped HTML.

``VIEWS`` lists them in tab order. A view of scope ``capture`` shows the whole capture (the
selected compile is only highlighted); a view of scope ``compile`` shows one compile.

``render_stage`` and ``render_compile`` draw one stage object or one compile alone (stylesheet
included): what ``_repr_html_`` of ``compiler.stages.schema``'s objects shows in a notebook cell.
"""
from __future__ import annotations

import traceback
from dataclasses import dataclass
from typing import Callable

from compiler.stages.capture import STAGES, Capture

from ..html import Html, details, join, note, preformatted, style_tag, tag, unavailable, view_frame
from .aot import render_aot
from .breaks import pages as breaks_pages, render_breaks
from .bytecode import render_bytecode
from .code import render_code
from .cudagraphs import render_cudagraphs
from .error import render_error
from .fixes import render_fixes
from .fx_graph import render_graph
from .guards import render_guards
from .inductor import render_inductor
from .overview import render_overview
from .recompiles import render_recompiles
from .source import render_source
from .tables import dataframes
from .common import compile_label
from .timings import render_timings, runtime_section


@dataclass(frozen=True)
class View:
    key: str
    title: str
    scope: str  # "capture" or "compile"
    render: Callable
    count: Callable | None = None  # how many findings the tab title shows, e.g. "Graph breaks (2)"
    pages: Callable | None = None  # how many pages a long list view has (it takes a ``page`` option)

    def title_for(self, capture) -> str:
        found = self.count(capture) if self.count else 0
        return f"{self.title} ({found})" if found else self.title


def _breaks_count(summary) -> int | str:
    """The Graph breaks tab's count: its breaks, and the frames Dynamo skipped, which it also shows."""
    if not summary.skipped_frames:
        return summary.graph_breaks
    return f"{summary.graph_breaks} + {summary.skipped_frames} skipped"


VIEWS = (
    View("overview", "Overview", "capture", render_overview),
    View("source", "Source", "compile", render_source),
    View("bytecode", "Bytecode", "compile", render_bytecode),
    View("graph", "FX graph", "compile", render_graph),
    View("guards", "Guards", "compile", render_guards),
    View("breaks", "Graph breaks", "capture", render_breaks, lambda c: _breaks_count(c.summary), breaks_pages),
    View("recompiles", "Recompiles", "capture", render_recompiles, lambda c: c.summary.recompiles),
    View("fixes", "Fixes", "capture", render_fixes, lambda c: len(c.proposed_fixes or ())),
    View("aot", "AOT graphs", "compile", render_aot),
    View("inductor", "Inductor", "compile", render_inductor),
    View("code", "Generated code", "compile", render_code),
    View("cudagraphs", "CUDA graphs", "capture", render_cudagraphs),
    View("timings", "Timings", "compile", render_timings),
)
BY_KEY = {v.key: v for v in VIEWS}


def render_view(key: str, capture, compile, **options) -> Html:
    """One view, inside the ``.tcompile`` scope; a view that fails says so instead of raising.
    ``options`` go to the view (e.g. the guard filter's ``text`` and ``kind``)."""
    view = BY_KEY[key]
    if view.scope == "compile" and compile is None:
        return view_frame(unavailable(view.title, "no compile was captured: torch.compile never compiled a "
                                                  "frame in this run (see the Overview)"))
    return view_frame(_guarded(view.title, view.render, capture, compile, **options))


def _guarded(title: str, render: Callable, *args, **options) -> Html:
    """``render(*args, **options)``, or a note saying it failed: one broken view must not hide the others."""
    try:
        return Html(render(*args, **options))
    except Exception as exc:  # noqa: BLE001
        return note(tag("strong", f"The {title} view failed: "), f"{type(exc).__name__}: {exc}",
                    details("traceback", preformatted(traceback.format_exc())), kind="error")


# --- one stage or one compile alone (``_repr_html_``) -------------------------------------------

COMPILE_STAGE_VIEWS = {"source": "source", "bytecode": "bytecode", "graph": "graph", "guards": "guards",
                       "aot": "aot", "inductor": "inductor", "kernels": "code", "timings": "timings"}
"""A compile's stage attribute → the view that draws it (``recompile`` and ``shapes`` have none)."""


def _alone(title: str, *body) -> Html:
    """A piece of the explorer shown on its own in a notebook cell: with the stylesheet and a title."""
    return tag("div", style_tag(), tag("div", f"tcompile — {title}", cls="tc-static-title"), *body,
               cls="tcompile tc-static")


def _capture_of(compile) -> Capture:
    """The capture a compile belongs to, or an empty stand-in for a compile built on its own."""
    capture = compile.__dict__.get("_capture") if compile is not None else None
    return capture if capture is not None else Capture.empty()


def _as_text(stage) -> Html:
    if not stage.available:
        return unavailable(type(stage).__name__, stage.reason)
    return preformatted(stage.as_text() or "(empty)")


def _capture_stage(stage) -> Html | None:
    """A capture-wide stage (``cap.breaks``, ``cap.cudagraphs``, ``cap.runtime``) drawn by its view."""
    capture = stage.__dict__.get("_capture")
    if capture is None or getattr(capture, stage.NAME, None) is not stage:
        capture = Capture.empty()
        setattr(capture, stage.NAME, stage)
    if stage.NAME in ("breaks", "cudagraphs"):
        view = BY_KEY[stage.NAME]
        return _alone(view.title, render_view(view.key, capture, None))
    return _alone("Runtime", view_frame(_guarded("Runtime", runtime_section, capture)))


def render_stage(stage) -> Html:
    """One stage object alone, drawn by the view of its stage (``Stage._repr_html_``).

    A compile's stage is drawn with its compile and capture (a stage knows its compile through
    ``_compile``, set by ``Capture``); capture-wide ``breaks``, ``cudagraphs`` and ``runtime`` by
    their capture view; a stage no view draws (``shapes``, ``recompile``, a graph inside ``aot``)
    as its text."""
    compile = stage.__dict__.get("_compile")
    name = next((n for n in STAGES if compile.__dict__.get(n) is stage), None) if compile is not None else None
    if name in COMPILE_STAGE_VIEWS:
        view = BY_KEY[COMPILE_STAGE_VIEWS[name]]
        return _alone(f"{view.title} of compile {compile_label(compile)}",
                      render_view(view.key, _capture_of(compile), compile))
    if compile is None and stage.NAME in ("breaks", "cudagraphs", "runtime"):
        return _capture_stage(stage)
    where = f" of compile {compile_label(compile)}" if compile is not None else ""
    return _alone(f"{stage.NAME}{where}", view_frame(_as_text(stage)))


def render_compile(compile) -> Html:
    """One compile alone: its error, if any, then every compile view, one ``<details>`` each
    (``Compile._repr_html_``)."""
    capture = _capture_of(compile)
    views = [details(v.title, render_view(v.key, capture, compile), cls="tc-section", open=v.key == "source")
             for v in VIEWS if v.scope == "compile"]
    error = render_error(None, compile)
    return _alone(f"compile {compile_label(compile)}", view_frame(error) if error else None, join(views, "\n"))


__all__ = ["BY_KEY", "VIEWS", "View", "dataframes", "render_aot", "render_breaks", "render_bytecode",
           "render_code", "render_cudagraphs", "render_error", "render_fixes", "render_graph", "render_guards", "render_inductor",
           "render_compile", "render_overview", "render_recompiles", "render_source", "render_stage", "render_timings",
           "render_view"]
