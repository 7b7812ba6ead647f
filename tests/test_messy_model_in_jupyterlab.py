"""The messy detection-like model (tests/messy) in JupyterLab, light and dark (issue 27): the explorer's
Overview says the skipped frames and the recompile limit first, Graph breaks has a card per skipped frame,
and no tab's table or text is cut off (the no-clipping check of test_no_clipping_in_jupyterlab, on this
model). Screenshots of every tab in both themes land in test-output/<test>/."""
import json

import pytest

from jupyterlab_harness import open_notebook, run_all_cells, set_theme, wait_for_output, write_notebook
from test_no_clipping_in_jupyterlab import OVERFLOW_JS, shoot, show_tab, tab_titles

pytest.importorskip("itables")

TESTS = str(__import__("pathlib").Path(__file__).resolve().parent)

BUILD = f"""\
import sys
sys.path[:0] = [{TESTS!r}, {str(__import__("pathlib").Path(TESTS).parent)!r}]
import torch, compiler
from explorer.widget import Explorer
from messy.model import Detector, example_inputs
with torch.no_grad():
    cap = compiler.explore(Detector().eval(), *example_inputs(), backend="aot_eager", repeat=3)
print("skipped:", len(cap.skipped_frames), "limits:", len(cap.recompile_limits))
"""

SHOW = """\
explorer = Explorer(cap, static_html=False)
explorer
"""


@pytest.mark.browser
@pytest.mark.slow
def test_messy_model_reads_in_jupyterlab(jupyterlab_server, browser_page, artifact_dir):
    page = browser_page
    write_notebook(jupyterlab_server.root_dir / "messy.ipynb", [BUILD, SHOW])
    open_notebook(page, jupyterlab_server, "messy.ipynb")
    run_all_cells(page, timeout=300_000)
    wait_for_output(page, "pre", text="skipped: 2 limits: 1")
    explorer = wait_for_output(page, ".tc-explorer")
    explorer.locator(".tc-tabs .lm-TabBar-tab").first.wait_for(state="visible")
    titles = tab_titles(explorer)
    failures = {}
    for theme in ("light", "dark"):
        if theme == "dark":
            set_theme(page, "dark")
        for index, title in enumerate(titles):
            pane = show_tab(page, explorer, index)
            text = pane.inner_text()
            if title.startswith("Overview"):
                first = pane.locator(".tc-finding").first.inner_text()
                assert "Dynamo skipped the whole frame" in first and "graph break in loop" in first
                assert "Recompile limit reached" in text and "dynamo_error" not in text
                row = pane.locator(".tc-itable-widget tbody tr.selected td").nth(1)
                style = row.evaluate("td => [getComputedStyle(td).color, getComputedStyle(td).boxShadow]")
                (artifact_dir / f"selected_row_{theme}.json").write_text(json.dumps(style))
                # the selected compile's row: the theme's text colour (dark on light, light on dark) on a
                # light tint of the accent (was DataTables' white text on our pale tint in the light theme)
                red, green, blue = (float(v) for v in style[0].split("(")[1].rstrip(")").split(",")[:3])
                assert (red + green + blue < 200) if theme == "light" else (red + green + blue > 500), style
                assert "/ 0.22)" in style[1], style
            if title.startswith("Graph breaks"):
                assert pane.locator(".tc-skipped-card").count() == 2
            if title.startswith("Recompiles"):
                assert "recompile_limit = 8" in text
            result = explorer.evaluate(OVERFLOW_JS)
            slug = title.split(" (")[0].lower().replace(" ", "_")
            shoot(page, explorer, artifact_dir / f"{index:02d}_{slug}_{theme}.png")
            if result["count"]:
                failures[f"{title} ({theme})"] = result
    (artifact_dir / "overflow.json").write_text(json.dumps(failures, indent=1))
    assert not failures, failures
