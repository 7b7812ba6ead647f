"""The explorer widget: a compile selector and one tab per view, plus a what-if panel in Guards.

A tab is rendered when first shown and again when the selected compile changes. Displayed in a
notebook, the output also carries the static HTML rendering (``text/html``) and a plain-text
summary, so a saved notebook shows the exploration where widgets cannot run.
"""
from __future__ import annotations

import ipywidgets as widgets

from compiler.stages.findings import fixes_of

from .full_text import CutTexts
from .html import collecting_cut_texts, style_tag, view_frame
from .page import FALLBACK_BYTES, render_static, summary_text
from .views import VIEWS, render_view
from .views.common import compile_label
from .views.tables import WIDGET_ROWS, LaterHtml, collecting_tables, split_view
from .views.error import render_error
from .views.timings import perfetto_link
from .whatif_panel import WhatIfPanel, evaluate_arguments, user_namespace, what_if_answer  # noqa: F401

# the tabs that draw graphs in viewers (``explorer.graph_viewer.INTERACTIVE``; it and the Fixes panel are anywidgets,
# imported when first drawn: not for the first screen)
VIEWER_TABS = ("graph", "aot", "inductor")


def first_with_graph(compiles) -> int | None:
    """Where the explorer opens: the first compile whose graph has operations (a ``%%tcompile`` cell's
    own frame often has none: it breaks at once), else the first with a graph, else the first."""
    if not compiles:
        return None
    for has_content in (lambda g: g.available and g.op_count > 0, lambda g: g.available):
        found = next((i for i, c in enumerate(compiles) if has_content(c.graph)), None)
        if found is not None:
            return found
    return 0


class Explorer(widgets.VBox):
    """Every stage of a capture, one tab per view; ``fn`` enables what-if in the Guards tab.

    ``static_html=False`` leaves the static rendering out of the displayed output (``show`` puts
    it in an output of its own instead)."""

    def __init__(self, capture, fn=None, namespace: dict | None = None, static_html: bool = True,
                 defer_tables: bool = False):
        self.capture = capture
        # a big table is drawn first as its first page of HTML (what is in view) and made an itables widget
        # (sort, search, every row; it imports pandas) by ``finish_tables``: at once, or, with
        # ``defer_tables``, only when called — ``show`` calls it once the explorer is on screen
        self.defer_tables = defer_tables
        self._unfinished: dict[int, list] = {}  # tab → [(position among its pieces, DataTable)]
        self._unfinished_viewers: dict = {}  # tab key → what makes its graph viewers
        self.static_html = static_html
        self.compiles = capture.compiles
        compiled_fn = capture.live.compiled_fn if capture.live is not None else None
        self.fn = next((f for f in (fn, compiled_fn, capture.frame_code()) if f is not None), None)
        self.panes = [widgets.HTML(layout=widgets.Layout(width="100%")) for _ in VIEWS]
        self.cut_texts = [CutTexts() for _ in VIEWS]  # the rest of the texts a view cut, on demand
        self._cut: dict[int, list] = {}  # by tab: the texts its view cut (for a part drawn later)
        self.what_if = WhatIfPanel(capture, self.fn, namespace)
        # a view's big tables are itables widgets: each tab is its first HTML piece, then the rest in order
        self.pieces = [widgets.VBox(layout=widgets.Layout(width="100%")) for _ in VIEWS]
        # tabs with graphs show interactive graph viewers below their view (explorer.graph_viewer)
        self.viewer_slots = {key: widgets.VBox(layout=widgets.Layout(width="100%")) for key in VIEWER_TABS}
        self.fixes_slot = widgets.VBox()  # the Fixes panel (Try, Try all …), made on the tab's first visit
        fixes_of(capture)  # proposed now where saved without them: the Fixes tab's title counts them
        # a long list view (graph breaks) shows one page at a time, with a pager under it
        self.pages = [0] * len(VIEWS)
        self.pagers = [self._pager(i) if v.pages and v.pages(capture) > 1 else widgets.VBox()
                       for i, v in enumerate(VIEWS)]
        tab_children = [widgets.VBox([self.what_if, pane, rest, cut]) if view.key == "guards"
                        else widgets.VBox([self.fixes_slot, pane, rest, cut]) if view.key == "fixes"
                        else widgets.VBox([pane, rest, cut, self.viewer_slots[view.key]]) if view.key in VIEWER_TABS
                        else widgets.VBox([self._perfetto_row(), pane, rest, cut]) if view.key == "timings"
                        else widgets.VBox([pager, pane, rest, cut])
                        for view, pane, rest, cut, pager in zip(VIEWS, self.panes, self.pieces, self.cut_texts,
                                                                self.pagers)]
        self.tabs = widgets.Tab(children=tab_children, titles=[v.title_for(capture) for v in VIEWS])
        self.tabs.add_class("tc-tabs")
        self.selector = widgets.Dropdown(options=[(compile_label(c), i) for i, c in enumerate(self.compiles)],
                                         value=first_with_graph(self.compiles), description="Compile:",
                                         layout=widgets.Layout(width="min(100%, 640px)"))
        self.error = widgets.HTML()
        self._rendered: set[int] = set()
        self.selector.observe(lambda _: self.refresh(), names="value")
        self.tabs.observe(lambda change: self.show_tab(change["new"]), names="selected_index")
        header = [self.selector] if len(self.compiles) > 1 else []
        repro = []
        if capture.live is not None and (capture.error is not None or any(c.error for c in capture.compiles)):
            from .repro_panel import ReproPanel

            repro = [ReproPanel(capture)]
        super().__init__([widgets.HTML(style_tag()), self.error, *repro, *header, self.tabs])
        self.add_class("tc-explorer")
        self.refresh()
        self.defer_tables = False  # a later tab visit finishes its tables itself, after drawing their first page

    @property
    def compile(self):
        """The selected compile (None when nothing was compiled)."""
        return self.compiles[self.selector.value] if self.compiles else None

    def refresh(self) -> None:
        """Re-render for the selected compile: the error box and the visible tab now, others when shown."""
        self._rendered.clear()
        self.what_if.select(self.compile)
        errors = render_error(self.capture, self.compile)
        self.error.value = view_frame(errors) if errors else ""
        self.show_tab(self.tabs.selected_index or 0)

    def show_tab(self, index: int | None) -> None:
        if index is None or index in self._rendered:
            return
        key = VIEWS[index].key
        options = {"drawing": False} if key == "graph" else {}  # the viewer draws it
        if key == "timings":
            options["perfetto"] = False  # every compile's kernels: made when asked (``_perfetto_row``)
        if VIEWS[index].pages:
            options["page"] = self.pages[index]
        with collecting_cut_texts() as cut, collecting_tables() as tables:
            markup = render_view(key, self.capture, self.compile, **options)
        self._cut[index] = cut  # a part drawn later (LaterHtml) numbers its cut texts on
        pieces = split_view(markup, tables)
        first = pieces.pop(0) if pieces and isinstance(pieces[0], str) else ""
        self.panes[index].value = first
        self._unfinished[index] = [(i, p) for i, p in enumerate(pieces) if not isinstance(p, str)]
        self.pieces[index].children = [self._piece(p) for p in pieces]
        self.cut_texts[index].show(cut)
        self._rendered.add(index)
        if key == "fixes":
            self.fixes_panel  # noqa: B018 — made on the first visit
        if key in VIEWER_TABS:
            from .graph_viewer import interactive_children

            # the FX graph tab's viewer is its drawing: made now; the graphs drawn below the AOT and Inductor
            # views' text come with the tables (the text is on screen first)
            viewers = lambda key=key, compile=self.compile: interactive_children(key, self.capture, compile)
            if key == "graph":
                self.viewer_slots[key].children = viewers()
            else:
                self.viewer_slots[key].children = []
                self._unfinished_viewers[key] = viewers
        if not self.defer_tables:
            self.finish_tables()

    def finish_tables(self) -> None:
        """Make each big table drawn as its first page an itables widget (``defer_tables``), and draw the graph
        viewers under the views shown since."""
        while self._unfinished_viewers:
            key, viewers = self._unfinished_viewers.popitem()
            self.viewer_slots[key].children = viewers()
        while self._unfinished:
            index, tables = self._unfinished.popitem()
            children = list(self.pieces[index].children)
            for position, piece in tables:
                if isinstance(piece, LaterHtml):
                    with collecting_cut_texts(self._cut[index]) as cut:
                        children[position] = widgets.HTML(str(view_frame(piece.render())),
                                                          layout=widgets.Layout(width="100%"))
                    self.cut_texts[index].show(cut)
                elif piece.collapsed:
                    children[position].children = [self._table_widget(piece)]
                else:
                    children[position] = self._table_widget(piece)
            self.pieces[index].children = children

    @property
    def fixes_panel(self):
        """The Fixes tab's controls (``explorer.fixes_panel``), made when first shown or asked for."""
        if not self.fixes_slot.children:
            from .fixes_panel import FixesPanel

            self.fixes_slot.children = [FixesPanel(self.capture, on_done=self._fixes_tried)]
        return self.fixes_slot.children[0]

    def _perfetto_row(self) -> widgets.Widget:
        """The Timings tab's Perfetto trace, made when asked: it reads every compile's kernels (their
        provenance maps, built on first read: ~1 s for Mask R-CNN's 63 compiles)."""
        if not any(c.timings.available and c.timings.events for c in self.compiles):
            return widgets.VBox()
        button = widgets.Button(description="Perfetto trace…", tooltip="the compile events (and measured kernel "
                                "times) as a trace file for ui.perfetto.dev or chrome://tracing")
        link = widgets.HTML()

        def make(_):
            button.disabled = True
            link.value = view_frame(perfetto_link(self.capture) or "")

        button.on_click(make)
        row = widgets.HBox([button, link])
        row.add_class("tc-perfetto-row")
        return row

    def _pager(self, index: int) -> widgets.Widget:
        """Previous / next page of a long list view."""
        total = VIEWS[index].pages(self.capture)
        label = widgets.HTML()
        back, forward = widgets.Button(description="◀ previous"), widgets.Button(description="next ▶")

        def go(step):
            self.pages[index] = min(max(0, self.pages[index] + step), total - 1)
            label.value = f"page {self.pages[index] + 1} of {total}"
            back.disabled, forward.disabled = self.pages[index] == 0, self.pages[index] == total - 1
            if step:
                self._rendered.discard(index)
                self.show_tab(index)

        back.on_click(lambda _: go(-1))
        forward.on_click(lambda _: go(1))
        go(0)
        pager = widgets.HBox([back, label, forward])
        pager.add_class("tc-pager")
        return pager

    def _fixes_tried(self) -> None:
        """Fixes were tried: redraw the tabs that show their results (Fixes, Overview, Graph breaks, Recompiles)."""
        self.tabs.set_title(next(i for i, v in enumerate(VIEWS) if v.key == "fixes"),
                            next(v for v in VIEWS if v.key == "fixes").title_for(self.capture))
        self._rendered.clear()
        self.show_tab(self.tabs.selected_index or 0)

    def _piece(self, piece) -> widgets.Widget:
        """A piece of a view: HTML, or a big table, first as the HTML of its first page (``finish_tables``
        makes it an itables widget), folded under its title where the view folds it."""
        if isinstance(piece, str):
            return widgets.HTML(piece, layout=widgets.Layout(width="100%"))
        first_page = widgets.HTML(piece.first_page(), layout=widgets.Layout(width="100%"))
        if not piece.collapsed:
            return first_page
        folded = widgets.Accordion(children=[first_page], titles=[piece.title], selected_index=None)
        folded.add_class("tc-table-fold")
        return folded

    def _table_widget(self, piece) -> widgets.Widget:
        """A big table as an itables widget: paged, sorted, searched in the browser (the compiles table selects)."""
        selected = self.selector.value if piece.selectable else None
        table_widget = piece.widget(selected=selected)
        if piece.selectable:
            table_widget.observe(self._on_row_selected, names="selected_rows")
        if piece.count > WIDGET_ROWS:
            table_widget = widgets.VBox([table_widget, widgets.HTML(view_frame(piece.cut_note(
                WIDGET_ROWS, "the capture holds every one (cap.save; as DataFrames: explorer.dataframes(cap))")))])
        return table_widget

    def _on_row_selected(self, change) -> None:
        """A click on a compiles-table row selects that compile."""
        rows = change["new"]
        if rows and self.compiles and rows[0] != self.selector.value:
            self.selector.value = rows[0]

    def select(self, key: str) -> widgets.HTML:
        """Show the tab of view ``key`` (e.g. "guards") and return its HTML pane."""
        index = next(i for i, v in enumerate(VIEWS) if v.key == key)
        self.tabs.selected_index = index
        self.show_tab(index)
        return self.panes[index]

    def _repr_mimebundle_(self, **kwargs):
        bundle = {**(super()._repr_mimebundle_(**kwargs) or {}), "text/plain": summary_text(self.capture)}
        if self.static_html:
            bundle["text/html"] = render_static(self.capture, limit=FALLBACK_BYTES)
        return bundle


class StaticFallback:
    """The static rendering as an output of its own, shown only where the widget is not: the
    stylesheet hides it inside an output area that holds a rendered explorer (``.tc-explorer``).
    A saved notebook reopened without its kernel, nbconvert with or without widget state, and
    GitHub's preview all show it; a live JupyterLab shows the widget alone. Reopened, the explorer's
    own output would say "Error displaying widget: model not found": the fallback's stylesheet hides
    that output (``explorer.page``). It stays under 1 MB: what does not fit is named, not shown."""

    def __init__(self, capture):
        self.capture = capture

    def _repr_mimebundle_(self, **kwargs):
        return {"text/html": render_static(self.capture, fallback=True), "text/plain": summary_text(self.capture)}


def show(capture, fn=None, namespace: dict | None = None) -> None:
    """Display the explorer for ``capture`` in the notebook, with its static fallback (returns None)."""
    from IPython.display import display

    explorer = Explorer(capture, fn=fn, namespace=namespace, static_html=False, defer_tables=True)
    display(explorer)  # on screen now, its big tables as their first page of HTML
    display(StaticFallback(capture))
    explorer.finish_tables()  # then sortable (itables, pandas: ~1 s to import, after the explorer shows)
