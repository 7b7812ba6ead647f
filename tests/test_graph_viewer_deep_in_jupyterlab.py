"""The FX graph viewer on a deep module tree (issue 27 item 4), in JupyterLab, light and dark: a
ResNet-like backbone (tests/messy/deep.py: backbone.body.layerN.M.convK). Opening a stage opens within
OPEN_BOXES boxes, never every level below it; no view is fitted below a readable zoom (the rendered
height of node labels is measured: at least 9 px); a search centres its first hit at a readable zoom and
Enter steps to the next. Screenshots land in test-output/<test>/."""
from pathlib import Path

import pytest

from explorer.views.graph_layout import OPEN_BOXES
from jupyterlab_harness import open_notebook, run_all_cells, screenshot, set_theme, wait_for_output, write_notebook

pytest.importorskip("anywidget")

TESTS = Path(__file__).resolve().parent

BUILD = f"""\
import sys
sys.path[:0] = [{str(TESTS)!r}, {str(TESTS.parent)!r}]
import torch, compiler
from explorer.widget import Explorer
from messy.deep import DeepModel, example_input
with torch.no_grad(), compiler.capture() as cap:
    torch.compile(DeepModel().eval(), backend="eager")(example_input())
print("FX nodes:", len(cap.compiles[0].graph.nodes))
"""

SHOW = """\
explorer = Explorer(cap, static_html=False)
explorer.select("graph")
explorer
"""

# the smallest rendered node label, and whether a box is inside the viewport
MEASURE_JS = """(viewer, id) => {
    const port = viewer.querySelector('.tc-gv-viewport').getBoundingClientRect();
    const heights = [...viewer.querySelectorAll('.tc-gv-box text')].map(t => t.getBoundingClientRect().height);
    const inside = (el) => { if (!el) return false; const r = el.getBoundingClientRect();
        return r.left >= port.left - 1 && r.right <= port.right + 1 && r.top >= port.top - 1 && r.bottom <= port.bottom + 1; };
    return {smallest_text_px: Math.min(...heights), boxes: viewer.querySelectorAll('.tc-gv-box').length,
            clusters: viewer.querySelectorAll('.tc-gv-cluster').length,
            inside: id ? inside(viewer.querySelector(`.tc-gv-box[data-id="${id}"]`)) : null};
}"""


# how many boxes of an opened group are wholly inside the viewport, of how many it has (issue 33: opening a group
# landed on its empty corner)
IN_VIEW_JS = """(viewer, id) => {
    const port = viewer.querySelector('.tc-gv-viewport').getBoundingClientRect();
    const group = viewer.querySelector(`.tc-gv-cluster[data-id="${id}"] rect`).getBoundingClientRect();
    const within = (r, o) => r.left >= o.left - 1 && r.right <= o.right + 1 && r.top >= o.top - 1 && r.bottom <= o.bottom + 1;
    const mine = [...viewer.querySelectorAll('.tc-gv-box')].map(b => b.getBoundingClientRect()).filter(r => within(r, group));
    return {inside: mine.filter(r => within(r, port)).length, boxes: mine.length};
}"""


def box(viewer, item_id):
    return viewer.locator(f'.tc-gv-box[data-id="{item_id}"]')


@pytest.mark.browser
@pytest.mark.slow
def test_graph_viewer_reads_on_a_deep_module_tree(jupyterlab_server, browser_page, artifact_dir):
    page = browser_page
    write_notebook(jupyterlab_server.root_dir / "deep.ipynb", [BUILD, SHOW])
    open_notebook(page, jupyterlab_server, "deep.ipynb")
    run_all_cells(page, timeout=300_000)
    wait_for_output(page, "pre", text="FX nodes:")
    viewer = wait_for_output(page, ".tc-gv-interactive")
    viewer.locator(".tc-gv-box").first.wait_for(state="visible")
    viewer.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    first = viewer.evaluate(MEASURE_JS, None)
    assert first["smallest_text_px"] >= 9, first
    screenshot(viewer, artifact_dir / "1_first_screen_light.png")

    # open one stage: it opens within OPEN_BOXES boxes (its blocks, their layers closed), never every level below
    box(viewer, "m:backbone.body.layer3").click()
    viewer.locator('.tc-gv-cluster[data-id="m:backbone.body.layer3"]').wait_for(state="visible")
    page.wait_for_timeout(300)
    opened = viewer.evaluate(MEASURE_JS, None)
    assert opened["boxes"] - first["boxes"] < OPEN_BOXES, (first, opened)  # what it opened fits the budget
    assert viewer.locator('.tc-gv-cluster[data-id^="m:backbone.body.layer3.0."]').count() == 0  # conv/bn stay closed
    assert opened["smallest_text_px"] >= 9, opened
    in_view = viewer.evaluate(IN_VIEW_JS, "m:backbone.body.layer3")
    assert in_view["inside"] >= min(3, in_view["boxes"]), in_view  # it lands on its boxes, not an empty corner
    screenshot(viewer, artifact_dir / "2_opened_layer3_light.png")

    # open a block's downsample: readable (the tall picture is not fitted into a strip)
    box(viewer, "m:backbone.body.layer3.0.downsample").click()
    viewer.locator('.tc-gv-cluster[data-id="m:backbone.body.layer3.0.downsample"]').wait_for(state="visible")
    page.wait_for_timeout(300)
    block = viewer.evaluate(MEASURE_JS, None)
    assert block["smallest_text_px"] >= 9, block
    screenshot(viewer, artifact_dir / "3_opened_block_light.png")

    # search: the first hit is centred at a readable zoom; Enter steps to the next
    viewer.locator(".tc-gv-toolbar input[type=search]").fill("conv2")
    wait_for_output(page, ".tc-gv-count", text="of")
    page.wait_for_timeout(300)
    current = viewer.locator(".tc-gv-box.tc-gv-current")
    first_hit = current.get_attribute("data-id")
    searched = viewer.evaluate(MEASURE_JS, first_hit)
    assert searched["inside"] and searched["smallest_text_px"] >= 9, searched
    assert "box 1 of" in viewer.locator(".tc-gv-count").inner_text()
    screenshot(viewer, artifact_dir / "4_search_conv2_light.png")
    viewer.locator(".tc-gv-toolbar input[type=search]").press("Enter")
    page.wait_for_timeout(300)
    second_hit = viewer.locator(".tc-gv-box.tc-gv-current").get_attribute("data-id")
    assert second_hit != first_hit and viewer.evaluate(MEASURE_JS, second_hit)["inside"]
    assert "box 2 of" in viewer.locator(".tc-gv-count").inner_text()

    set_theme(page, "dark")
    viewer.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    screenshot(viewer, artifact_dir / "4_search_conv2_dark.png")
    viewer.locator(".tc-gv-toolbar button.tc-gv-fit").click()
    page.wait_for_timeout(300)
    fitted = viewer.evaluate(MEASURE_JS, None)
    assert fitted["smallest_text_px"] >= 9, fitted  # Fit shows the top of a tall picture, readable
    screenshot(viewer, artifact_dir / "5_fit_dark.png")
