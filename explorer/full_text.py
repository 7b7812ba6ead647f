"""The rest of the long texts a view cut (``explorer.html.cut_text``), loaded on demand in the widget:
below a tab, one row per cut text (``✂1``, ``✂2``…) with buttons that show the next part of it
or all of it. Nothing of a cut text is sent to the browser until asked for.
"""
from __future__ import annotations

import html

import ipywidgets as widgets

from .html import BLOCK_CHARS, Html, join, note, tag, view_frame

PAGE_CHARS = 1_000_000  # what "Show more" adds


class CutText(widgets.VBox):
    """One cut text: what the view showed, then the rest on demand."""

    def __init__(self, number: int, text: str, shown: int):
        self.number, self.text, self.shown = number, text, shown
        self.start = shown
        self.label = widgets.HTML()
        self.more = widgets.Button(description=f"Next {PAGE_CHARS:,} characters", layout=widgets.Layout(width="auto"),
                                   tooltip=f"Show the rest of ✂{number}, {PAGE_CHARS:,} characters at a time")
        self.all = widgets.Button(description="All the rest", button_style="warning",
                                  layout=widgets.Layout(width="auto"), tooltip=f"Show all of ✂{number}")
        self.rest = widgets.HTML(layout=widgets.Layout(width="100%"))
        self.more.on_click(lambda _: self.show(self.shown + PAGE_CHARS))
        self.all.on_click(lambda _: self.show(len(self.text)))
        super().__init__([widgets.HBox([self.label, self.more, self.all]), self.rest])
        self._describe()

    def show(self, end: int) -> None:
        """Show the text up to ``end`` (after the part the view shows)."""
        self.shown = min(end, len(self.text))
        # escaped here: the builders would cut it again
        rest = tag("div", tag("pre", Html(html.escape(self.text[self.start:self.shown]))), cls="tc-code")
        self.rest.value = view_frame(rest) if self.shown > self.start else ""
        self._describe()

    def _describe(self) -> None:
        left = len(self.text) - self.shown
        self.label.value = view_frame(join([tag("strong", f"✂{self.number}"),
                                            f" (the text marked ✂{self.number} above, cut there): "
                                            f"{self.shown:,} of {len(self.text):,} characters shown "]))
        self.more.disabled = self.all.disabled = left == 0


class CutTexts(widgets.VBox):
    """The cut texts of one tab (empty when the view cut nothing)."""

    def show(self, cut: list[tuple[str, int]]) -> None:
        """``cut``: what ``explorer.html.collecting_cut_texts`` collected while the tab was rendered."""
        rows = [CutText(i, text, shown) for i, (text, shown) in enumerate(cut, 1)]
        intro = [widgets.HTML(view_frame(note(f"This view shows at most {BLOCK_CHARS:,} characters of a text "
                                              "(less in a table cell); the rest of each text it cut is here, "
                                              "loaded when you ask.", kind="muted")))]
        self.children = intro + rows if rows else []
