"""Smoke test of the browser harness: ipywidgets really render in JupyterLab."""

import pytest

from jupyterlab_harness import (
    open_notebook,
    run_all_cells,
    screenshot,
    set_theme,
    wait_for_output,
    write_notebook,
)


MESSAGE = "tcompile harness smoke 7f3a"

WIDGET_CELL = f"""\
import ipywidgets as widgets

message = widgets.HTML("<b>{MESSAGE}</b>")
tab = widgets.Tab(children=[message, widgets.Button(description="Press me")])
tab.titles = ("Message", "Button")
tab
"""


@pytest.mark.browser
def test_ipywidgets_tab_renders_in_light_and_dark(jupyterlab_server, browser_page, artifact_dir):
    page = browser_page
    write_notebook(jupyterlab_server.root_dir / "widgets_smoke.ipynb", [WIDGET_CELL])
    open_notebook(page, jupyterlab_server, "widgets_smoke.ipynb")
    run_all_cells(page)

    # The widget manager rendered the Tab: its HTML child is live DOM, not the text fallback.
    message = wait_for_output(page, ".jupyter-widgets .widget-html-content", text=MESSAGE)
    outputs = page.locator(".jp-OutputArea-output").all_inner_texts()
    assert not any("Loading widget" in text or "Tab(children" in text for text in outputs)
    screenshot(page, artifact_dir / "light.png")

    page.locator(".jp-OutputArea-output .lm-TabBar-tab", has_text="Button").click()
    wait_for_output(page, "button.jupyter-button", text="Press me")
    assert message.is_hidden()

    set_theme(page, "dark")
    screenshot(page, artifact_dir / "dark.png")
