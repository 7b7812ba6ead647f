"""A whole capture as one page: ``render_static`` (every view as one HTML fragment that needs no
JavaScript, ``<details>`` to navigate — for nbconvert and shared reports) and ``summary_text``
(what a terminal, or a notebook without HTML, shows).

It sits above ``views`` (which sit above ``html``): nothing below imports it back.
"""
from __future__ import annotations

import json
from string import Template

from .html import (Html, details, esc, heading, join, note, para, plural, preformatted, seconds, shorten, style_tag,
                   view_frame)
from .views import VIEWS, render_view
from .views.common import break_title, capture_title, compile_label
from .views.error import render_error

STATIC_PAGE = Template("""<div class="tcompile tc-static$fallback">
$style
<div class="tc-static-title">tcompile — $title</div>
$about
$error
$capture_views
$compiles
</div>""")

FALLBACK_BYTES = 1_000_000  # a notebook output's static copy stays under this (issue 16: saved notebooks stay small)
NOTEBOOK_LINE_BYTES = 11  # what nbformat adds per line of an output's HTML: newline, 7 levels of indent, "", comma


def notebook_bytes(text: str) -> int:
    """The bytes ``text`` takes as an output in a saved notebook (.ipynb), where the budgets of what a cell shows
    apply (issue 46: a capture of 0.99 MB of HTML saved 1.04 MB): JSON-escaped (quotes, backslashes, control
    characters; UTF-8 kept), one JSON string per line, each on a line of its own, indented (nbformat's writer)."""
    return len(json.dumps(text, ensure_ascii=False).encode()) + NOTEBOOK_LINE_BYTES * (text.count("\n") + 1)


def utf8_bytes(text: str) -> int:
    """The bytes ``text`` takes in a file of its own (a report)."""
    return len(text.encode())

# A saved notebook reopened shows, where the explorer was, "Loading widget..." for good (no kernel) or
# "Error displaying widget: model not found" (a new kernel, which never had the widget's model). That
# output has no data-mime-type (every rendered mimetype has one; the widget renderer sets none) and no
# rendered explorer (.tc-explorer) in it. The static copy in a later output of the same cell stands in
# for it, so it is hidden; only in a cell that holds a tcompile fallback. (:has() cannot nest.)
REOPENED_CSS = ("<style>.jp-OutputArea-child:has(> .jp-OutputArea-output:not([data-mime-type]))"
                ":not(:has(.tc-explorer)):has(~ .jp-OutputArea-child .tc-fallback) { display: none; }</style>")

KEEP = ("The interactive explorer (<code>explorer.show(cap)</code>, or the one a cell showed while the kernel runs) "
        "and the saved capture (<code>%%tcompile --save PATH</code> or <code>cap.save(PATH)</code>, reopened with "
        "<code>%tcompile --load PATH</code>) hold everything.")


# Which sections a size-limited copy keeps first: the small summaries (Overview, and Fixes, which Overview points
# to, with their results), then what is hardest to get back
# from the saved JSON by eye (the drawn graph, the generated code), the long listings last.
PRIORITY = ("overview", "fixes", "breaks", "recompiles", "cudagraphs", "source", "timings", "graph", "code", "inductor",
            "aot", "guards", "bytecode")


class Budget:
    """Sections of a static page, each kept whole while the page stays under ``limit`` bytes (decided in
    ``PRIORITY`` order, shown in tab order); a section that does not fit becomes a stub naming its size
    (``limit=None``: keep everything). Under ``MIN_SECTION`` bytes left, sections are not even rendered.
    ``measure``: a text's bytes where it lands (``notebook_bytes``, ``utf8_bytes``); ``said``: the limit the
    page's note names (the whole file's, where the page is a part of it)."""

    MIN_SECTION = 2_000

    def __init__(self, limit: int | None, used: int = 0, measure=notebook_bytes, said: int | None = None):
        self.limit, self.used, self.left_out = limit, used, []
        self.measure, self.said = measure, said or limit
        self._sections: list[tuple[str, str, object, bool]] = []

    def add(self, key: str, title: str, render, open: bool = False) -> int:
        """A section to decide on (``render()`` gives its body); returns its index for ``html``."""
        self._sections.append((key, title, render, open))
        return len(self._sections) - 1

    def decide(self) -> list[Html]:
        """Every section's HTML, in the order added. Each section's stub is counted from the start (a page
        of many compiles holds hundreds of them: uncounted, they took the copy past its limit), and
        given back when the section itself is kept."""
        order = sorted(range(len(self._sections)), key=lambda i: (_rank(self._sections[i][0]), i))
        out: list[Html] = [Html("")] * len(self._sections)
        stubs = [self.measure(self._stub_html(title, 0)) for _, title, _, _ in self._sections] \
            if self.limit is not None else [0] * len(self._sections)
        self.used += sum(stubs)
        for i in order:
            key, title, render, open = self._sections[i]
            if self.limit is not None and self.limit - self.used + stubs[i] < self.MIN_SECTION:
                out[i] = self._stub(i, title, None)
                continue
            html = details(title, render(), open=open, cls="tc-section")
            size = self.measure(html)
            if self.limit is not None and self.used - stubs[i] + size > self.limit:
                out[i] = self._stub(i, title, size)
                continue
            self.used += size - stubs[i]
            out[i] = html
        self.left_out.sort()
        return out

    def _stub(self, index: int, title: str, size: int | None) -> Html:
        self.left_out.append((index, title))
        return self._stub_html(title, size)

    def _stub_html(self, title: str, size: int | None) -> Html:
        """One line (the note at the top of the page says why and where the rest is): a capture of many
        compiles has hundreds of these."""
        what = f"{size / 1e6:.2f} MB" if size else "not rendered"
        return para(f"{title} — left out of this saved copy ({what})", cls="tc-muted tc-left-out")

    def about(self) -> Html:
        """What the static copy is, and what it left out."""
        if not self.left_out:
            return para("A static copy of the explorer, readable without a kernel. ", Html(KEEP), cls="tc-muted")
        titles = list(dict.fromkeys(title for _, title in self.left_out))
        names = ", ".join(titles[:6]) + (" …" if len(titles) > 6 else "")
        return note(f"A static copy of the explorer, kept under {self.said / 1e6:.3g} MB: "
                    f"{plural(len(self.left_out), 'section')} left out ({names}). ", Html(KEEP), kind="info")


def _rank(key: str) -> int:
    return PRIORITY.index(key) if key in PRIORITY else len(PRIORITY)


def render_static(capture, fallback: bool = False, limit: int | None = None, *, measure=notebook_bytes,
                  said: int | None = None) -> str:
    """Every view of ``capture`` as one self-contained HTML fragment (CSS inlined, no JavaScript).
    ``fallback=True`` marks it as the stand-in that a rendered explorer widget hides, kept under
    ``FALLBACK_BYTES`` (or ``limit``): sections that do not fit are named, not shown.

    Under a limit the page holds at most that many bytes, by construction: one section per compile
    is listed only while those sections (each at least its title and the stubs of its views) take a
    quarter of the limit — the others are counted in one line — and a page that still came out
    larger (a capture-wide view of a huge capture) is replaced by its summary (``_summary_page``). Bytes are
    counted where the page lands (``measure``: in a saved notebook, unless told otherwise); its note names ``said``
    (the whole file's limit, where this page is part of one), else ``limit``."""
    from compiler.stages.data import paused_gc

    with paused_gc():  # rendering makes many small objects and no cycles (on a big capture GC took a third)
        return _render_static(capture, fallback, limit, measure, said)


def _render_static(capture, fallback: bool, limit: int | None, measure, said: int | None) -> str:
    if fallback and limit is None:
        limit = FALLBACK_BYTES
    style = style_tag() + (Html(REOPENED_CSS) if fallback else "")
    error = render_error(capture, None)
    compiles = capture.compiles
    said = said or limit
    listed = compiles if limit is None else _listed(capture, limit // 4, measure)
    # the page around the sections: its style, the error, one <details> per compile, the title and notes
    frame = sum(measure(details(compile_label(c), cls="tc-compile")) + 2 for c in listed)
    budget = Budget(limit, used=measure(style) + measure(error) + frame + 4_000, measure=measure, said=said)
    capture_views = [budget.add(v.key, v.title_for(capture), lambda v=v: render_view(v.key, capture, None),
                                open=v.key == "overview") for v in VIEWS if v.scope == "capture"]
    per_compile = [[budget.add(v.key, v.title, lambda v=v, c=c: render_view(v.key, capture, c))
                    for v in VIEWS if v.scope == "compile"] for c in listed]
    html = budget.decide()
    compile_sections = [details(compile_label(c), *(html[i] for i in indices), open=len(compiles) == 1,
                                cls="tc-compile") for c, indices in zip(listed, per_compile)]
    if len(listed) < len(compiles):
        compile_sections.append(para(
            f"… and {len(compiles) - len(listed):,} more compiles, not in this copy (kept under "
            f"{said / 1e6:.3g} MB); the Overview's table lists them. ", Html(KEEP), cls="tc-muted tc-left-out"))
    page = STATIC_PAGE.substitute(
        fallback=" tc-fallback" if fallback else "", style=style, title=esc(capture_title(capture)),
        about=budget.about() if limit is not None else "", error=error,
        capture_views=join([html[i] for i in capture_views], "\n"),
        compiles=heading(f"{plural(len(compiles), 'compile')} — one section each", 3)
        + join(compile_sections, "\n") if compiles else "")
    if limit is not None and measure(page) > limit:
        return _summary_page(capture, style, limit, fallback, said)
    return page


def _listed(capture, room: int, measure=notebook_bytes) -> list:
    """The compiles whose sections (title and one stub per view, at the least) fit in ``room`` bytes."""
    stubs = sum(measure(Budget(0)._stub_html(v.title, None)) for v in VIEWS if v.scope == "compile")
    listed, used = [], 0
    for c in capture.compiles:
        used += measure(details(compile_label(c), cls="tc-compile")) + 2 + stubs
        if used > room:
            break
        listed.append(c)
    return listed


def _summary_page(capture, style: Html, limit: int, fallback: bool, said: int | None = None) -> str:
    """The smallest static copy: the title, the counts and where everything is (what a capture too big
    for ``limit`` even in outline gets)."""
    text = shorten(summary_text(capture), max(1_000, limit // 3 - len(style.encode())))
    return STATIC_PAGE.substitute(
        fallback=" tc-fallback" if fallback else "", style=style, title=esc(capture_title(capture)),
        about=note(f"A static copy of the explorer, kept under {(said or limit) / 1e6:.3g} MB: this capture's views do not fit "
                   "even in outline, so only its summary is here. ", Html(KEEP), kind="info"),
        error="", capture_views=preformatted(text), compiles="")


SUMMARY_EACH = 20  # graph breaks and recompiles the text summary names one by one


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
    breaks = list(capture.breaks)
    for item in breaks[:SUMMARY_EACH]:
        lines.append(f"  graph break at {item.file}:{item.line} (x{item.count}): {break_title(item)}")
    if len(breaks) > SUMMARY_EACH:
        lines.append(f"  … and {len(breaks) - SUMMARY_EACH:,} more places with graph breaks (cap.breaks)")
    for recompile in capture.recompiles[:SUMMARY_EACH]:
        for reason in recompile.reasons[:1]:
            lines.append(f"  recompile {recompile.compile_id}: {reason.text}")
    if len(capture.recompiles) > SUMMARY_EACH:
        lines.append(f"  … and {len(capture.recompiles) - SUMMARY_EACH:,} more recompiles (cap.recompiles)")
    if capture.error:
        error = capture.error
        lines.append(f"  ERROR in {error.stage}: {error.type}: {shorten(error.message, 200)}")
    return "\n".join(lines)


# --- a capture, compile or stage as a cell's value (``_repr_html_``, through ``compiler.drawing``) -------------

DISPLAY_BYTES = FALLBACK_BYTES  # what any object tcompile draws as a cell's value renders at most


def display_capture(capture) -> str:
    """A capture as a cell's value: its static copy, under ``DISPLAY_BYTES`` (the rest named, a click on
    ``explorer.show(cap)`` or the saved file away), like the copy a notebook keeps."""
    return render_static(capture, limit=DISPLAY_BYTES)


def display_compile(compile, limit: int = DISPLAY_BYTES) -> str:
    """One compile as a cell's value: its error, then every compile view (``render_compile``), each kept
    whole while the page stays under ``limit``; a view that does not fit is named with its size."""
    from .views import _alone, _capture_of

    capture = _capture_of(compile)
    error = render_error(None, compile)
    budget = Budget(limit, used=notebook_bytes(style_tag()) + notebook_bytes(error) + 4_000)
    for view in VIEWS:
        if view.scope == "compile":
            budget.add(view.key, view.title, lambda v=view: render_view(v.key, capture, compile),
                       open=view.key == "source")
    sections = budget.decide()
    return str(_alone(f"compile {compile_label(compile)}", budget.about() if budget.left_out else None,
                      view_frame(error) if error else None, join(sections, "\n")))


def display_stage(stage, limit: int = DISPLAY_BYTES) -> str:
    """One stage as a cell's value (``render_stage``); one that renders over ``limit`` shows its text, cut
    at ``limit``, and says where the whole is (its tab in ``explorer.show(cap)``, ``as_text()``, the saved capture)."""
    from .html import cut_text
    from .views import _alone, render_stage

    html = str(render_stage(stage))
    size = notebook_bytes(html)
    if size <= limit:
        return html
    shown, _ = cut_text(stage.as_text() or "", limit // 3)
    name = type(stage).__name__
    return str(_alone(name, note(f"{name} renders {size / 1e6:.3g} MB, over the {limit / 1e6:.3g} MB a cell's output "
                                 "keeps: its text is below, cut. The whole is in its tab of the explorer "
                                 "(explorer.show(cap)), in stage.as_text() and in the saved capture.", kind="info"),
                      preformatted(shown)))
