"""One view per stage: ``render_<stage>(capture, compile) -> str`` of escaped HTML.

``VIEWS`` lists them in tab order. A view of scope ``capture`` shows the whole capture (the
selected compile is only highlighted); a view of scope ``compile`` shows one compile.
"""
from __future__ import annotations

import traceback
from dataclasses import dataclass
from typing import Callable

from ..html import Html, details, note, preformatted, tag, unavailable, view_frame
from .aot import render_aot
from .breaks import render_breaks
from .bytecode import render_bytecode
from .code import render_code
from .cudagraphs import render_cudagraphs
from .error import render_error
from .fx_graph import render_graph
from .guards import render_guards
from .inductor import render_inductor
from .overview import render_overview
from .recompiles import render_recompiles
from .source import render_source
from .tables import dataframes
from .timings import render_timings


@dataclass(frozen=True)
class View:
    key: str
    title: str
    scope: str  # "capture" or "compile"
    render: Callable
    count: Callable | None = None  # how many findings the tab title shows, e.g. "Graph breaks (2)"

    def title_for(self, capture) -> str:
        found = self.count(capture) if self.count else 0
        return f"{self.title} ({found})" if found else self.title


VIEWS = (
    View("overview", "Overview", "capture", render_overview),
    View("source", "Source", "compile", render_source),
    View("bytecode", "Bytecode", "compile", render_bytecode),
    View("graph", "FX graph", "compile", render_graph),
    View("guards", "Guards", "compile", render_guards),
    View("breaks", "Graph breaks", "capture", render_breaks, lambda c: c.summary.get("graph_breaks", 0)),
    View("recompiles", "Recompiles", "capture", render_recompiles, lambda c: c.summary.get("recompiles", 0)),
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
    try:
        body = view.render(capture, compile, **options)
    except Exception as exc:  # noqa: BLE001 — one broken view must not hide the others
        body = note(tag("strong", f"The {view.title} view failed: "), f"{type(exc).__name__}: {exc}",
                    details("traceback", preformatted(traceback.format_exc())), kind="error")
    return view_frame(body)


__all__ = ["BY_KEY", "VIEWS", "View", "dataframes", "render_aot", "render_breaks", "render_bytecode",
           "render_code", "render_cudagraphs", "render_error", "render_graph", "render_guards", "render_inductor",
           "render_overview", "render_recompiles", "render_source", "render_timings", "render_view"]
