"""The compare widget: the summary table, then two configuration pickers and a stage selector driving
a side-by-side diff pane. ``show_comparison`` puts static HTML (summary + the diff of the first two
configurations, under 1 MB) in an output of its own next to it, so a saved notebook keeps the
comparison, as ``explorer.widget.show`` does for one capture."""
from __future__ import annotations

import ipywidgets as widgets

from compiler.analyses.diff import DIFF_STAGES, stage_title

from .html import join, note, style_tag, tag, view_frame
from .page import FALLBACK_BYTES, REOPENED_CSS, notebook_bytes
from .views.compare import render_compare, render_compare_static
from .views.diff import compare_style_tag, render_diff

CHANGED = "changed"


class CompareExplorer(widgets.VBox):
    """Summary of a ``compiler.analyses.compare.Comparison`` and a diff between any two of its configurations."""

    def __init__(self, comparison, static_html: bool = True):
        self.comparison = comparison
        self.static_html = static_html
        self._diffs: dict = {}
        options = [(label, i) for i, (label, cap) in enumerate(zip(comparison.labels, comparison.captures))
                   if cap is not None]
        first, second = (options + [(None, None), (None, None)])[:2]
        self.config_a = widgets.Dropdown(options=options, value=first[1], description="A:",
                                         layout=widgets.Layout(width="min(100%, 420px)"))
        self.config_b = widgets.Dropdown(options=options, value=second[1] if second[1] is not None else first[1],
                                         description="B:", layout=widgets.Layout(width="min(100%, 420px)"))
        # a None value would show blank: "changed" stands for the changed stages
        stages = [("Changed stages", CHANGED)] + [(stage_title(key), key) for key in DIFF_STAGES]
        self.stage = widgets.Dropdown(options=stages, value=CHANGED, description="Stage:",
                                      layout=widgets.Layout(width="min(100%, 300px)"))
        self.summary = widgets.HTML(view_frame(render_compare(comparison)))
        self.pane = widgets.HTML(layout=widgets.Layout(width="100%"))
        for control in (self.config_a, self.config_b, self.stage):
            control.observe(lambda _: self.refresh(), names="value")
        controls = widgets.HBox([self.config_a, self.config_b, self.stage])
        controls.add_class("tc-compare-controls")
        super().__init__([widgets.HTML(style_tag() + compare_style_tag()), self.summary,
                          *([controls] if len(options) >= 2 else []), self.pane])
        self.add_class("tc-explorer")  # a rendered widget hides its static fallback (explorer/static/tcompile.css)
        self.refresh()

    def diff(self, a: int, b: int):
        """The CaptureDiff of configurations ``a`` and ``b`` (computed once, then cached)."""
        if (a, b) not in self._diffs:
            self._diffs[(a, b)] = self.comparison.diff(a, b)
        return self._diffs[(a, b)]

    def refresh(self) -> None:
        a, b = self.config_a.value, self.config_b.value
        if a is None or b is None or len(self.config_a.options) < 2:
            self.pane.value = view_frame(note("A diff needs two configurations that compiled.", kind="muted"))
            return
        if a == b:
            self.pane.value = view_frame(note("A and B are the same configuration: pick two different ones.",
                                              kind="muted"))
            return
        try:
            body = render_diff(self.diff(a, b), None if self.stage.value == CHANGED else self.stage.value)
        except Exception as exc:  # noqa: BLE001 — one broken diff must not break the widget
            body = note(tag("strong", "The diff failed: "), f"{type(exc).__name__}: {exc}", kind="error")
        self.pane.value = view_frame(body)

    def _repr_mimebundle_(self, **kwargs):
        bundle = {**(super()._repr_mimebundle_(**kwargs) or {}), "text/plain": self.comparison.as_text()}
        if self.static_html:
            bundle["text/html"] = static_comparison(self.comparison)
        return bundle


def static_comparison(comparison, fallback: bool = False) -> str:
    """The comparison as static HTML under ``FALLBACK_BYTES``: with the diff of the first two
    configurations when it fits, else the summary and a note. ``fallback``: the stand-in for the widget."""
    html = render_compare_static(comparison)
    if notebook_bytes(html) > FALLBACK_BYTES:
        left_out = note(f"The diff of the first two configurations ({len(html.encode()) / 1e6:.1f} MB) is left out of "
                        f"this static copy, kept under {FALLBACK_BYTES / 1e6:g} MB. The compare widget (while the kernel "
                        "runs) shows every diff, and the saved comparison (--save PATH) holds everything.", kind="info")
        html = join([style_tag(), compare_style_tag(),
                     tag("div", render_compare(comparison, None), left_out, cls="tcompile tc-static")])
    if fallback:
        html = REOPENED_CSS + html.replace("tcompile tc-static", "tcompile tc-static tc-fallback", 1)
    return html


class CompareFallback:
    """The comparison's static HTML as an output of its own, shown where the widget is not (a saved
    notebook reopened without its kernel, nbconvert, GitHub), like ``explorer.widget.StaticFallback``."""

    def __init__(self, comparison):
        self.comparison = comparison

    def _repr_mimebundle_(self, **kwargs):
        return {"text/html": static_comparison(self.comparison, fallback=True), "text/plain": self.comparison.as_text()}


def show_comparison(comparison) -> None:
    """Display the compare widget in the notebook, with its static fallback."""
    from IPython.display import display

    display(CompareExplorer(comparison, static_html=False))
    display(CompareFallback(comparison))
