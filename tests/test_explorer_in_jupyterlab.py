"""The explorer in a real JupyterLab: a notebook runs `%%tcompile` on a cell with a graph break;
headless Chromium checks the views render (tabs, the graph-break reason, the guard table) and that
the what-if panel answers. Screenshots land in test-output/<test>/."""
import pytest

from jupyterlab_harness import (
    open_notebook,
    run_all_cells,
    screenshot,
    set_theme,
    wait_for_output,
    write_notebook,
)


SETUP = """\
%load_ext explorer
import torch
x = torch.randn(8, 4)
"""

CELL = """\
%%tcompile --backend aot_eager --name cap
y = x.sin() + 1
print("a graph break")
z = y.cos().sum()
"""

CHECK = """\
assert abs(float(z) - float((x.sin() + 1).cos().sum())) < 1e-5
print("graph breaks:", cap.summary.graph_breaks)
"""


def tab(page, title):
    page.locator(".tc-explorer .lm-TabBar-tab", has_text=title).first.click()


@pytest.mark.browser
def test_tcompile_cell_explorer_in_jupyterlab(jupyterlab_server, browser_page, artifact_dir):
    page = browser_page
    write_notebook(jupyterlab_server.root_dir / "explore.ipynb", [SETUP, CELL, CHECK])
    open_notebook(page, jupyterlab_server, "explore.ipynb")
    run_all_cells(page, timeout=240_000)

    tabs = page.locator(".tc-explorer .lm-TabBar-tab").all_inner_texts()
    for title in ("Overview", "Source", "Bytecode", "FX graph", "Guards", "Graph breaks", "Recompiles",
                  "AOT graphs", "Inductor", "Generated code", "CUDA graphs", "Timings"):
        assert any(t.startswith(title) for t in tabs), (title, tabs)
    wait_for_output(page, "pre", text="graph breaks: 1")
    screenshot(page, artifact_dir / "overview.png")

    tab(page, "Graph breaks")
    wait_for_output(page, ".tc-explorer", text="Failed to trace builtin operator")
    wait_for_output(page, ".tc-explorer", text='print("a graph break")')
    screenshot(page, artifact_dir / "graph_breaks.png")

    tab(page, "Guards")
    wait_for_output(page, ".tc-explorer table", text="TENSOR_MATCH")
    arguments = page.locator(".tc-explorer .widget-text input").first
    arguments.fill("x=torch.randn(16, 4)")
    page.locator(".tc-explorer button", has_text="Would it recompile?").first.click()
    answer = wait_for_output(page, ".tc-explorer", text="size mismatch at index 0")
    assert "recompile" in answer.inner_text()
    screenshot(page, artifact_dir / "what_if.png")

    set_theme(page, "dark")
    tab(page, "FX graph")
    wait_for_output(page, ".tc-explorer svg")
    screenshot(page, artifact_dir / "fx_graph_dark.png")
