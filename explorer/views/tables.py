"""The capture's tables: as pandas DataFrames (``dataframes``), and the views' big tables (guards, FX
nodes, kernels, recompiles, compiles) as ``DataTable``s.

A view calls ``data_table(...)`` where the table goes, at the top level of the view. In static HTML
that is a plain table (``tc-datatable``: a standalone report pages, sorts and searches it with
itables' DataTables bundle, see ``datatables_script``). The widget renders a view inside
``collecting_tables()``: each table becomes a marker, and ``split_view`` cuts the view there so the
widget shows an itables widget (paging, sorting, search; its JavaScript ships in the package, so it
works offline) in the table's place.
"""
from __future__ import annotations

import contextvars
import functools
import re
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..html import Html, details, esc, join, para, table, tag, view_frame

PAGE_LENGTH = 25
STATIC_ROWS = 500  # rows a static table (saved copy, report) holds; the widget pages through more
WIDGET_ROWS = 10_000  # rows an itables widget is sent (it holds them all in the browser)
_FOUND: contextvars.ContextVar[list | None] = contextvars.ContextVar("tc_data_tables", default=None)
_MARKER = re.compile(r'<div data-tc-table="(\d+)"></div>')
_FRAME_OPEN = '<div class="tcompile tc-view">'


@dataclass
class DataTable:
    """A table of escaped cells (``Html`` or plain values); ``marks`` give rows a class (``tc-hit``,
    ``tc-selected``); ``collapsed`` tables start folded; ``selectable`` rows can be clicked (the
    widget reports the clicked row)."""

    title: str
    headers: list[str]
    rows: list[list]
    marks: list[str | None] = field(default_factory=list)
    cls: str | None = None
    collapsed: bool = False
    selectable: bool = False
    total: int | None = None  # the rows there are, when ``rows`` holds only the first of them

    @property
    def count(self) -> int:
        return max(self.total or 0, len(self.rows))

    def html(self) -> Html:
        rows, marks = self.rows[:STATIC_ROWS], (self.marks or [])[:STATIC_ROWS]
        markup = join([table(self.headers, rows, marks or None, cls=f"tc-datatable {self.cls or ''}".strip()),
                       self.cut_note(STATIC_ROWS, "the explorer widget pages through up to "
                                      f"{WIDGET_ROWS:,} of them; the capture holds every one (cap.save; "
                                      "as DataFrames: explorer.dataframes(cap))")])
        return details(self.title, markup, cls="tc-table-details") if self.collapsed else markup

    def first_page(self) -> Html:
        """What the widget shows of the table at once: its first page, as HTML (the itables widget, which
        sorts, searches and pages through every row, takes its place when made)."""
        rows, marks = self.rows[:PAGE_LENGTH], (self.marks or [])[:PAGE_LENGTH]
        more = para(f"The first {len(rows):,} of {self.count:,} rows; sorting and search come with the full table.",
                    cls="tc-muted tc-page-note") if self.count > len(rows) else None
        return view_frame(join([table(self.headers, rows, marks or None, cls=f"tc-datatable {self.cls or ''}".strip()),
                                more]))

    def cut_note(self, shown: int, where: str) -> Html:
        if self.count <= shown:
            return Html("")
        return para(f"{self.title}: the first {shown:,} of {self.count:,} rows; {where}.",
                    cls="tc-muted tc-page-note")

    def frame(self):
        """The table as a DataFrame of HTML cells (a row's mark rides in its first cell, for CSS)."""
        import pandas as pd

        def cell(value, index, mark):
            if _is_number(value):
                return value
            text = str(esc(value))
            return f'<span class="tc-row-{mark}"></span>{text}' if index == 0 and mark else text

        marks = self.marks or [None] * len(self.rows)
        rows = [[cell(v, i, (m or "").removeprefix("tc-")) for i, v in enumerate(row)]
                for row, m in zip(self.rows[:WIDGET_ROWS], marks)]
        return pd.DataFrame(rows, columns=self.headers)

    def widget(self, selected: int | None = None):
        """An itables widget: paged when longer than a page, sortable, searchable."""
        from itables.widget import ITable

        options = dict(allow_html=True, maxBytes=0, maxRows=0, showIndex=False, classes=f"display compact tc-itable {self.cls or ''}".strip(),
                       pageLength=PAGE_LENGTH, lengthMenu=[10, 25, 100, 500], autoWidth=False,
                       paging=len(self.rows) > PAGE_LENGTH, warn_on_undocumented_option=False)
        if self.selectable:
            options.update(select={"style": "single", "toggleable": False},
                           selected_rows=[selected] if selected is not None else [])
        table_widget = ITable(self.frame(), **options)
        table_widget.add_class("tcompile")
        table_widget.add_class("tc-itable-widget")
        return table_widget


def data_table(title: str, headers, rows, marks=None, cls: str | None = None, collapsed: bool = False,
                selectable: bool = False, drop_empty: bool = False, total: int | None = None) -> Html:
    """A view's big table: static HTML, or, inside ``collecting_tables()``, a marker for the widget.
    ``drop_empty`` leaves out columns with no value in any row. A static table shows its first
    ``STATIC_ROWS`` rows, the widget its first ``WIDGET_ROWS``; ``total``: how many rows there are when
    the view passed only the first ``WIDGET_ROWS`` of them."""
    headers, rows = list(headers), [list(r) for r in rows]
    if drop_empty and rows:
        keep = [i for i in range(len(headers)) if any(row[i] not in ("", None) for row in rows)]
        headers, rows = [headers[i] for i in keep], [[row[i] for i in keep] for row in rows]
    found = _FOUND.get()
    if found is not None:
        # escaped now, while the view renders: a cell text cut at TEXT_CHARS is then numbered (✂N) among
        # the tab's cut texts, whose rest the widget loads on demand (explorer.full_text); escaped later,
        # when the itables widget is built, its mark would name nothing the tab holds
        rows = [[v if _is_number(v) else esc(v) for v in row] for row in rows]
    item = DataTable(title, headers, rows, list(marks or []), cls, collapsed, selectable, total)
    if found is None:
        return item.html()
    found.append(item)
    return Html(f'<div data-tc-table="{len(found) - 1}"></div>')


@dataclass
class LaterHtml:
    """A part of a view the widget draws right after the view is on screen (``Explorer.finish_tables``, with the big
    tables), in its place: a big compile's long code blocks, whose highlighting took most of a tab's first visit
    (issue 46: AOT graphs and Generated code over a second on Mask R-CNN). ``waiting``: what shows until then."""
    render: object  # () -> Html
    waiting: str
    collapsed: bool = False

    def first_page(self) -> str:
        return str(view_frame(para(self.waiting, cls="tc-muted")))


def later(render, waiting: str) -> Html:
    """``render()`` where it goes, at the top level of a view: now in static HTML, after the view is on screen in
    the widget (``LaterHtml``)."""
    found = _FOUND.get()
    if found is None:
        return render()
    found.append(LaterHtml(render, waiting))
    return Html(f'<div data-tc-table="{len(found) - 1}"></div>')


def rows_shown() -> int:
    """How many rows a ``data_table`` made now shows: ``WIDGET_ROWS`` for the widget (inside
    ``collecting_tables``), ``STATIC_ROWS`` in a static page — a view need not build the rows past them (it
    passes ``total``)."""
    return WIDGET_ROWS if _FOUND.get() is not None else STATIC_ROWS


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@contextmanager
def collecting_tables():
    """Inside: ``data_table`` leaves markers; yields the list of ``DataTable``s, in marker order."""
    found: list[DataTable] = []
    token = _FOUND.set(found)
    try:
        yield found
    finally:
        _FOUND.reset(token)


def split_view(markup: str, tables: list[DataTable]) -> list:
    """A view rendered inside ``collecting_tables`` → its pieces in order: ``Html`` (each in its own
    ``.tcompile`` frame) and ``DataTable``s."""
    inner = markup
    if markup.startswith(_FRAME_OPEN) and markup.endswith("</div>"):
        inner = markup[len(_FRAME_OPEN):-len("</div>")]
    pieces = _MARKER.split(inner)
    out = []
    for index, piece in enumerate(pieces):
        if index % 2:
            out.append(tables[int(piece)])
        elif piece.strip():
            out.append(view_frame(Html(piece)))
    return out


@functools.lru_cache(maxsize=1)
def datatables_script() -> Html:
    """itables' DataTables bundle (inlined: the page works offline) and a script that pages, sorts and
    searches every ``tc-datatable`` table of a standalone page. About 1 MB: for report files, not outputs.
    A table in a folded section starts when the section is opened: a report holds hundreds of tables (573 for
    a 100 MB log), and starting them all made the page wait seconds before it answered."""
    from importlib.util import find_spec
    from pathlib import Path

    # the files only: importing itables imports pandas (a second or more of a report's time)
    html = Path(find_spec("itables").submodule_search_locations[0]) / "html"
    bundle = (html / "dt_bundle.js").read_text(encoding="utf-8")
    css = (html / "dt_bundle.css").read_text(encoding="utf-8")
    bundle = bundle.replace("</script", "<\\/script")
    init = f"""
const source = document.getElementById("tc-dt-bundle").textContent;
const url = URL.createObjectURL(new Blob([source], {{type: "application/javascript"}}));
const {{default: DataTable, set_or_remove_dark_class}} = await import(url);
set_or_remove_dark_class();
const start = table => {{
  if (table.dataset.tcTable || table.closest("details:not([open])")) return;  // a folded one starts when opened
  table.dataset.tcTable = "1";
  const rows = table.tBodies[0] ? table.tBodies[0].rows.length : 0;
  new DataTable(table, {{paging: rows > {PAGE_LENGTH}, pageLength: {PAGE_LENGTH}, autoWidth: false,
                        lengthMenu: [10, 25, 100, 500], order: []}});
}};
document.querySelectorAll(".tc-datatable > table").forEach(start);
document.addEventListener("toggle", event => {{  // toggle does not bubble: heard while capturing
  if (event.target.open) event.target.querySelectorAll(".tc-datatable > table").forEach(start);
}}, true);"""
    return Html(f'<style>{css}</style>\n<script type="text/plain" id="tc-dt-bundle">{bundle}</script>\n'
                f'<script type="module">{init}</script>')


def dataframes(capture) -> dict:
    """``compiles``, ``guards``, ``breaks``, ``recompiles``, ``kernels`` and ``compile_phases``."""
    import pandas as pd

    def per_compile(stage_name: str) -> pd.DataFrame:
        frames = [c.stage(stage_name).table.assign(compile_id=c.compile_id)
                  for c in capture.compiles if c.stage(stage_name).available]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    compiles = pd.DataFrame([{"compile_id": c.compile_id, "name": c.name, "status": c.status,
                              "ops": c.graph.op_count if c.graph.available else None,
                              "guards": c.guards.count if c.guards.available else None,
                              "compile_time_s": c.compile_seconds}
                             for c in capture.compiles])
    recompiles = pd.DataFrame([{"compile_id": r.compile_id, "name": r.name, **reason.to_data()}
                               for r in capture.recompiles for reason in r.reasons])
    return {"compiles": compiles, "guards": capture.guards_df, "breaks": capture.breaks.table,
            "recompiles": recompiles, "kernels": per_compile("kernels"),
            "compile_phases": per_compile("timings")}
