"""A whole capture as one page: ``render_static`` (every view as one HTML fragment that needs no
JavaScript, ``<details>`` to navigate — for nbconvert and shared reports) and ``summary_text``
(what a terminal, or a notebook without HTML, shows).

It sits above ``views`` (which sit above ``html``): nothing below imports it back.
"""
from __future__ import annotations

from string import Template

from .html import details, esc, heading, join, plural, seconds, shorten, style_tag
from .views import VIEWS, render_view
from .views.common import break_title, capture_title, compile_label
from .views.error import render_error

STATIC_PAGE = Template("""<div class="tcompile tc-static$fallback">
$style
<div class="tc-static-title">tcompile — $title</div>
$error
$capture_views
$compiles
</div>""")


def render_static(capture, fallback: bool = False) -> str:
    """Every view of ``capture`` as one self-contained HTML fragment (CSS inlined, no JavaScript).
    ``fallback=True`` marks it as the stand-in that a rendered explorer widget hides."""
    compiles = capture.compiles
    capture_views = [details(v.title_for(capture), render_view(v.key, capture, None), open=v.key == "overview",
                             cls="tc-section") for v in VIEWS if v.scope == "capture"]
    per_compile = [details(compile_label(c), *(details(v.title, render_view(v.key, capture, c), cls="tc-section")
                                               for v in VIEWS if v.scope == "compile"),
                           open=len(compiles) == 1, cls="tc-compile")
                   for c in compiles]
    return STATIC_PAGE.substitute(
        fallback=" tc-fallback" if fallback else "", style=style_tag(), title=esc(capture_title(capture)),
        error=render_error(capture, None),
        capture_views=join(capture_views, "\n"),
        compiles=heading(f"{plural(len(compiles), 'compile')} — one section each", 3) + join(per_compile, "\n")
        if compiles else "")


def summary_text(capture) -> str:
    """A plain-text summary: what a terminal or a notebook without HTML shows."""
    s = capture.summary
    lines = [f"tcompile: {capture_title(capture)}",
             f"  {plural(s.compiles, 'compile')} of {plural(s.frames, 'frame')}, "
             f"{plural(s.graphs, 'graph')}, {plural(s.graph_breaks, 'graph break')}, "
             f"{plural(s.recompiles, 'recompile')}, {plural(s.guards, 'guard')}, "
             f"{plural(s.kernels, 'kernel')}, compile time {seconds(s.compile_time_s)}"]
    runtime = capture.runtime
    if runtime.available and runtime.speedup and runtime.eager and runtime.compiled:
        lines.append(f"  speedup {runtime.speedup:.2f}x (eager {seconds(runtime.eager.median_s)}, "
                     f"compiled {seconds(runtime.compiled.median_s)} median)")
    for item in capture.breaks:
        lines.append(f"  graph break at {item.file}:{item.line} (x{item.count}): {break_title(item)}")
    for recompile in capture.recompiles:
        for reason in recompile.reasons[:1]:
            lines.append(f"  recompile {recompile.compile_id}: {reason.text}")
    if capture.error:
        error = capture.error
        lines.append(f"  ERROR in {error.stage}: {error.type}: {shorten(error.message, 200)}")
    return "\n".join(lines)
