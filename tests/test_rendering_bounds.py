"""Bounded rendering: one huge text anywhere in a capture (code, a kernel, IR, a guard) gives views of
bounded size, each cut marked, and the whole text stays one click away — in the widget (loaded on
demand below the tab) and in the saved capture. The time and memory of a 200 MB text are measured
in bench/rendering.py, not here."""
from __future__ import annotations

import html
import json
import re

import ipywidgets as widgets
import pytest
import torch

import compiler
from compiler.stages.capture import Capture
from explorer.full_text import CutText, CutTexts
from explorer.html import (BLOCK_CHARS, CUT_WHERE_STATIC, TEXT_CHARS, code_block, collecting_cut_texts, esc,
                           preformatted)
from explorer.page import render_static
from explorer.views import VIEWS
from explorer.widget import Explorer

LINE = "    buf0 = torch.ops.aten.add.Tensor(arg0_1, 1);  arg0_1 = None  # a line <of> generated & code\n"

# where a huge text goes (a path in the capture's JSON) → the tab that shows it
FIELDS = {
    "graph code": (("compiles", 0, "graph", "code"), "graph"),
    "kernel source": (("compiles", 0, "inductor", "runs", 0, "code", "kernels", 0, "source"), "code"),
    "output module": (("compiles", 0, "inductor", "runs", 0, "code", "module"), "code"),
    "IR before fusion": (("compiles", 0, "inductor", "runs", 0, "ir", "pre_fusion", "text"), "inductor"),
    "post-grad graph code": (("compiles", 0, "inductor", "runs", 0, "post_grad", "code"), "inductor"),
    "function source": (("compiles", 0, "source", "text"), "source"),
    "bytecode listing": (("compiles", 0, "bytecode", "original", "text"), "bytecode"),
    "guard tree": (("compiles", 0, "guards", "tree"), "guards"),
    "compile name (inline text: titles, table cells)": (("compiles", 0, "name"), "overview"),
}


def f(x):
    y = x.sin() + 1
    return y.cos() * 2


@pytest.fixture(scope="module")
def data():
    torch._dynamo.reset()
    cap = compiler.explore(f, torch.randn(8, 4), timing=False, fresh=True)  # Inductor, no cache hit: every field
    data = json.loads(cap.to_json())
    for saved, c in zip(data["compiles"], cap.compiles):  # the provenance map saved whole: the map of this capture,
        if saved.pop("provenance_from_stages", False):     # not one built again from a graph a test made huge
            saved["provenance"] = c.provenance.to_data()
    return data


def with_text(data: dict, path: tuple, text: str) -> Capture:
    data = json.loads(json.dumps(data))
    node = data
    for key in path[:-1]:
        node = node[key]
    if path[-1] == "source" and path[-2] == 0 and "source" not in node:  # saved without the kernels' texts:
        from compiler.stages.code_text import kernel_texts                # put them back, then replace one

        code = data["compiles"][0]["inductor"]["runs"][0]["code"]
        texts = kernel_texts(code.pop("texts_from_module") and code["module"])
        for kernel in code["kernels"]:
            kernel["source"], kernel["comments"] = texts.get(kernel["name"], ("", ""))
    assert path[-1] in node, path
    node[path[-1]] = text
    return Capture.from_data(data)


def shown_html(widget) -> str:
    """The HTML a widget shows, its children's included (the rest of cut texts is loaded on demand only)."""
    if isinstance(widget, CutTexts):
        return ""
    if isinstance(widget, widgets.HTML):
        return widget.value
    return "".join(shown_html(child) for child in getattr(widget, "children", ()))


def visible_text(markup: str) -> str:
    """What a reader sees of ``markup`` without hovering: its text, tags and their attributes left out."""
    return html.unescape(re.sub(r"<[^>]*>", "", markup))


def html_of_every_view(cap) -> dict[str, str]:
    """The static page, and each widget tab as shown."""
    ui = Explorer(cap, static_html=False)
    for index in range(len(VIEWS)):
        ui.show_tab(index)
    return {"static": render_static(cap), **{v.key: shown_html(ui.tabs.children[i]) for i, v in enumerate(VIEWS)}}, ui


@pytest.mark.parametrize("field", FIELDS)
def test_a_huge_text_renders_bounded_and_whole_text_stays_reachable(data, field, tmp_path):
    path, tab = FIELDS[field]
    huge_text = LINE * (3 * BLOCK_CHARS // len(LINE)) + "THE END"
    cap = with_text(data, path, huge_text)
    pages, ui = html_of_every_view(cap)

    # bounded: a text 4× longer gives pages of the same size (but for the digits of the count left out;
    # a graph's code is parsed into nodes on load: its tables are cut at TABLE_ROWS rows), of a few MB
    longer, _ = html_of_every_view(with_text(data, path, LINE * (12 * BLOCK_CHARS // len(LINE)) + "THE END"))
    for name, page in pages.items():
        assert abs(len(longer[name]) - len(page)) < 100 and len(page) < 20 * BLOCK_CHARS, (name, len(page))
    assert "THE END" not in pages["static"]
    assert "more characters" in pages["static"] and CUT_WHERE_STATIC in visible_text(pages["static"])

    # the saved capture keeps the whole text
    saved = compiler.load(cap.save(tmp_path / "huge.json"))
    node = saved.to_data()
    for key in path:
        node = node[key]
    assert node == huge_text

    # the widget: the tab names the cut text ✂1 and loads the rest when asked
    if "inline" in field:
        return  # a table cell: test_a_long_table_cell_says_it_was_cut_and_its_whole_text_is_reachable
    index = [v.key for v in VIEWS].index(tab)
    assert "✂1" in pages[tab]
    rows = [c for c in ui.cut_texts[index].children if isinstance(c, CutText)]
    assert [r.text for r in rows] == [huge_text]
    row = rows[0]
    assert row.rest.value == "" and not row.all.disabled
    row.more.click()
    assert len(row.rest.value) < 1.3 * 1_000_000 + 1000 and "THE END" not in row.rest.value
    row.all.click()
    assert html.unescape(row.rest.value).count("THE END") == 1 and row.all.disabled and row.more.disabled
    shown_in_view = row.start
    assert html.unescape(row.rest.value).count(LINE) == (len(huge_text) - shown_in_view) // len(LINE)


def test_a_long_table_cell_says_it_was_cut_and_its_whole_text_is_reachable(data, tmp_path):
    from itables.widget import ITable

    name = "<N&>" * ((TEXT_CHARS + 10_007) // 4) + "THE END"  # the compiles table's "function" cell
    cap = with_text(data, ("compiles", 0, "name"), name)
    left = f"{len(name) - TEXT_CHARS:,} more characters"

    # static: the cell shows its first TEXT_CHARS characters, escaped, and says how many more the saved JSON holds
    cell = re.search(r'<td>((?:&lt;N&amp;&gt;)+)<span class="tc-badge tc-warn tc-cut" title="([^"]*)">… ✂ ([\d,]+ more '
                     r'characters) — ([^<]*)</span></td>', render_static(cap))
    assert cell and html.unescape(cell.group(1)) == name[:TEXT_CHARS] and cell.group(3) == left
    assert "save" in cell.group(2) and html.unescape(cell.group(4)) == CUT_WHERE_STATIC
    assert compiler.load(cap.save(tmp_path / "long_cell.json")).compiles[0].name == name

    # widget: the itables cell names the cut text (✂1), and the tab's cut texts load its rest when asked
    ui = Explorer(cap, static_html=False)
    index = [v.key for v in VIEWS].index("overview")
    ui.show_tab(index)
    tables = [p for p in ui.pieces[index].children if isinstance(p, ITable)]
    cells = [c for t in tables for row in json.loads(t._dt_args["data_json"]) for c in row
             if isinstance(c, str) and "&lt;N&amp;&gt;" * 10 in c]
    assert len(cells) == 1 and "THE END" not in cells[0]
    assert f"… ✂1 {left} — full text below this view" in visible_text(cells[0])
    assert "loads on demand below this view" in cells[0]
    rows = [c for c in ui.cut_texts[index].children if isinstance(c, CutText)]
    assert [(r.number, r.text, r.shown) for r in rows] == [(1, name, TEXT_CHARS)]
    rows[0].all.click()
    assert html.unescape(re.sub(r"<[^>]+>", "", rows[0].rest.value)) == name[TEXT_CHARS:]


def test_cut_marks_and_short_texts():
    assert esc("a < b") == "a &lt; b"  # short text: unchanged
    assert preformatted("x" * 10) == '<pre class="tc-pre">xxxxxxxxxx</pre>'
    long = "<" * (TEXT_CHARS + 5)
    marked = esc(long)
    assert marked.startswith("&lt;" * TEXT_CHARS) and "5 more characters" in marked and "<<" not in marked
    block = "y\n" * BLOCK_CHARS
    with collecting_cut_texts() as cut:
        once, twice, again = preformatted(block), esc(long), preformatted(block)
    assert [n for _, n in cut] == [BLOCK_CHARS, TEXT_CHARS]  # each text once, with what the view showed
    assert "✂1" in once and "✂2" in twice and "✂" in again


def test_every_cut_mark_says_where_the_rest_is_without_hovering():
    """The static page's marks (inline badge, block note) name the saved capture in their visible text;
    the widget's name the loader below the view. Short, and escaped like any text."""
    long, block = "<b>" * TEXT_CHARS, "y\n" * BLOCK_CHARS
    for mark in (esc(long), preformatted(block), code_block(block)):
        shown = re.sub(r"^(?:<b>|y\n)+", "", visible_text(mark))  # the mark, after the part of the text shown
        assert CUT_WHERE_STATIC in shown and "more characters" in shown and len(shown) < 120, shown
        assert "<b>" not in mark
    with collecting_cut_texts():
        marks = [esc(long), preformatted(block)]
    assert all("full text below this view" in visible_text(m) for m in marks)
