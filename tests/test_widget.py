"""The explorer widget on real captures: tabs, compile selection, the what-if panel, the saved output."""
import html
import sys
import types

import ipywidgets as widgets
import pytest
import torch

import compiler
import explorer
from explorer import Explorer
from explorer.views import VIEWS


def scaled(x):
    y = x.cos() * 3
    print("tcompile-widget")
    return y - 1


def shifted(x):
    return x.sin() + 1


@pytest.fixture(scope="module")
def break_cap():
    """Two frames (a graph break): the compile selector has something to select."""
    torch._dynamo.reset()
    return compiler.explore(scaled, torch.randn(8, 4), backend="aot_eager", timing=False)


@pytest.fixture
def live_cap():
    """A live capture of ``shifted`` whose cache entry exists during the test (what-if needs it)."""
    with compiler.capture() as cap:
        torch.compile(shifted, backend="eager")(torch.randn(8, 4))
    return cap


def test_tabs_have_one_view_each_with_counts(break_cap):
    ui = Explorer(break_cap)
    titles = list(ui.tabs.titles)
    assert len(titles) == len(VIEWS) == len(ui.tabs.children)
    assert titles[0] == "Overview" and "FX graph" in titles and "Guards" in titles
    assert f"Graph breaks ({break_cap.summary.graph_breaks})" in titles
    assert "tc-findings" in ui.panes[0].value  # the visible tab is rendered at once
    assert ui.fn is break_cap.live.compiled_fn and not ui.what_if.button.disabled  # what-if without fn=


def test_selecting_another_compile_rerenders(break_cap):
    ui = Explorer(break_cap)
    assert isinstance(ui.children[2], widgets.Dropdown) and len(ui.selector.options) == len(break_cap.compiles)
    first, resume = break_cap.compiles[0], break_cap.compiles[1]
    pane = ui.select("bytecode")
    assert f"Original: {first.name}" in pane.value
    ui.selector.value = 1
    assert f"{resume.name} is a resume function" in pane.value
    ui.select("graph")
    (viewer,) = ui.viewer_slots["graph"].children  # the interactive drawing, of the selected compile
    drawn = {box["label"][0] for box in viewer.scene["boxes"]}
    inputs = {n.name for n in resume.graph.nodes if n.op == "placeholder"}
    assert inputs and inputs <= drawn and "L_x_" not in drawn


def test_what_if_accepts_and_recompiles(live_cap):
    ui = Explorer(live_cap, fn=shifted, namespace={"torch": torch})
    assert ui.what_if in ui.tabs.children[[v.key for v in VIEWS].index("guards")].children
    ui.what_if.arguments.value = "torch.randn(8, 4)"
    ui.what_if.button.click()
    assert "accepted by compile 0/0" in ui.what_if.answer.value
    ui.what_if.arguments.value = "x=torch.randn(16, 4)"
    ui.what_if.button.click()
    answer = ui.what_if.answer.value
    assert "recompile" in answer and "size mismatch at index 0" in answer and "expected 8, actual 16" in answer


def test_what_if_input_errors_are_messages_not_tracebacks(live_cap):
    panel = Explorer(live_cap, fn=shifted, namespace={"torch": torch}).what_if
    assert "SyntaxError" in panel.ask("x=")
    assert "NameError" in panel.ask("undefined_tensor")
    assert "do not fit the function" in panel.ask("y=1") and "missing a required argument" in panel.ask("y=1")
    assert "Traceback" not in panel.ask("x=")


def test_what_if_uses_the_given_namespace(live_cap):
    namespace = {"torch": torch, "wide": torch.randn(8, 5)}
    panel = Explorer(live_cap, fn=shifted, namespace=namespace).what_if
    assert "size mismatch at index 1" in panel.ask("wide")
    assert "__tcompile_arguments__" not in namespace


def test_loaded_capture_says_what_if_needs_a_live_one(live_cap, tmp_path):
    loaded = compiler.load(live_cap.save(tmp_path / "cap.json"))
    panel = Explorer(loaded, fn=shifted).what_if
    assert panel.button.disabled and panel.arguments.disabled
    assert "needs a live capture" in panel.ask("torch.randn(8, 4)")
    assert "needs a live capture" in panel.children[0].value


def test_saved_output_carries_static_html_and_text(break_cap):
    bundle = Explorer(break_cap)._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert '<div class="tcompile tc-static">' in bundle["text/html"]
    assert f"{break_cap.summary.graph_breaks} graph break" in bundle["text/plain"]


def test_error_box_on_top_when_the_capture_failed():
    def broken(x):
        print("no graph break allowed")
        return x + 1

    cap = compiler.explore(broken, torch.ones(2), backend="aot_eager", fullgraph=True, errors="return",
                           timing=False)
    ui = Explorer(cap)
    assert ui.children[1] is ui.error
    assert html.escape(cap.error.stage) in ui.error.value and cap.error.type in ui.error.value


def test_show_displays_the_explorer_and_its_static_fallback(break_cap, monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    assert explorer.show(break_cap) is None
    widget, fallback = shown
    assert isinstance(widget, Explorer) and "text/html" not in widget._repr_mimebundle_()
    assert '<div class="tcompile tc-static tc-fallback">' in fallback._repr_mimebundle_()["text/html"]
    assert ".jp-OutputArea:has(.tc-explorer) .tc-fallback" in explorer.html.stylesheet()
    assert "tc-explorer" in widget._dom_classes


def test_load_ipython_extension_registers_magics(monkeypatch):
    calls = []
    fake = types.ModuleType("explorer.magics")
    fake.register = calls.append
    monkeypatch.setitem(sys.modules, "explorer.magics", fake)
    monkeypatch.setattr(explorer, "magics", fake, raising=False)
    explorer.load_ipython_extension("ipython")
    assert calls == ["ipython"]


def test_load_ipython_extension_without_magics_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "explorer.magics", None)
    monkeypatch.delattr(explorer, "magics", raising=False)
    with pytest.raises(ImportError, match="magics"):
        explorer.load_ipython_extension(object())


def test_guard_table_is_an_interactive_table_of_every_guard():
    from itables.widget import ITable

    def f(x, n):
        return x * n

    cap = compiler.explore(f, torch.ones(3), 2, backend="eager", timing=False)
    widget = Explorer(cap)
    pane = widget.select("guards")
    index = next(i for i, v in enumerate(VIEWS) if v.key == "guards")
    (table,) = [w for w in widget.pieces[index].children if isinstance(w, ITable)]
    rows = cap.compiles[0].guards.rows
    assert len(table.df) == len(rows) and list(table.df.columns)[:3] == ["guarded value", "kind", "condition"]
    assert html.escape(rows[0].condition) in table.df["condition"].iloc[0]
    assert table._dt_args["paging"] is (len(rows) > 25) and "<table" not in pane.value  # no HTML rows
    assert "Guard tree" in pane.value


def test_opens_on_the_first_compile_with_a_graph_and_rows_select_compiles(break_cap):
    from itables.widget import ITable

    from explorer.widget import first_with_graph

    def breaks_at_once(x):
        print("tcompile-widget")  # the frame's first graph is empty, as a %%tcompile cell's wrapper often is
        return x.sin() + 1

    torch._dynamo.reset()
    cap = compiler.explore(breaks_at_once, torch.randn(4), backend="eager", timing=False)
    first = first_with_graph(cap.compiles)
    assert first > 0 and not cap.compiles[0].graph.op_count and cap.compiles[first].graph.op_count
    assert Explorer(cap).compile is cap.compiles[first]
    ui = Explorer(break_cap)
    first = first_with_graph(break_cap.compiles)
    assert break_cap.compiles[first].graph.op_count > 0 and ui.selector.value == first
    (compiles,) = [w for w in ui.pieces[0].children if isinstance(w, ITable)]
    assert compiles.selected_rows == [first] and len(compiles.df) == len(break_cap.compiles)
    compiles.selected_rows = [1]  # what a click on the row's cells sends from the browser
    assert ui.selector.value == 1 and ui.compile is break_cap.compiles[1]
    (again,) = [w for w in ui.pieces[0].children if isinstance(w, ITable)]
    assert again.selected_rows == [1]


def test_no_dropdown_shows_a_blank_value(break_cap):
    ui = Explorer(break_cap)
    dropdowns = [w for w in _descendants(ui) if isinstance(w, widgets.Dropdown)]
    assert dropdowns and all(d.value is not None and d.label for d in dropdowns)


def _descendants(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _descendants(child)
