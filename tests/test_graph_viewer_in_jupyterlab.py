"""Acceptance (issue 16): the interactive graph viewer on a GPT-2-small-sized model in a real JupyterLab.

A transformers GPT-2 built from config (12 layers, 768 wide, vocab 50257, no weights downloaded) runs
under a capture with backend="eager" on 2×64 token ids; in the FX graph tab, headless Chromium checks
that the first screen shows the whole collapsed model inside the viewport (grown taller, readable), that opening
``transformer.h.0`` shows its nodes, that searching ``softmax`` highlights one node per layer, and that
clicking a node shows its source line. Screenshots in light and dark themes land in
test-output/<test>/."""
import time

import pytest

from jupyterlab_harness import (
    open_notebook,
    run_all_cells,
    screenshot,
    set_theme,
    wait_for_output,
    write_notebook,
)


pytest.importorskip("transformers")
pytest.importorskip("anywidget")

BUILD = """\
import torch, transformers, compiler
from explorer.widget import Explorer
config = transformers.GPT2Config(attn_implementation="eager")  # eager attention: a softmax per layer
model = transformers.GPT2LMHeadModel(config).eval()
ids = torch.randint(0, config.vocab_size, (2, 64))
with torch.no_grad(), compiler.capture() as cap:
    torch.compile(model, backend="eager")(ids)
print("FX nodes:", len(cap.compiles[0].graph.nodes), "layers:", config.n_layer)
"""

SHOW = """\
explorer = Explorer(cap, static_html=False)
explorer.select("graph")
explorer
"""

INSIDE_VIEWPORT_JS = """(viewer) => {
    const port = viewer.querySelector('.tc-gv-viewport').getBoundingClientRect();
    const boxes = [...viewer.querySelectorAll('.tc-gv-box, .tc-gv-cluster')];
    const outside = boxes.filter(b => { const r = b.getBoundingClientRect();
        return r.left < port.left - 1 || r.right > port.right + 1 || r.top < port.top - 1 || r.bottom > port.bottom + 1; });
    return {boxes: boxes.length, outside: outside.map(b => b.dataset.id),
            smallest_text_px: Math.min(...[...viewer.querySelectorAll('.tc-gv-box text')]
                .map(t => t.getBoundingClientRect().height))};
}"""


def box(viewer, item_id):
    return viewer.locator(f'.tc-gv-box[data-id="{item_id}"]')


def shoot(page, viewer, artifact_dir, name):
    screenshot(viewer, artifact_dir / f"{name}.png")
    screenshot(page, artifact_dir / f"{name}_page.png")


@pytest.mark.browser
@pytest.mark.slow
def test_graph_viewer_on_gpt2_small(jupyterlab_server, browser_page, artifact_dir):
    page = browser_page
    write_notebook(jupyterlab_server.root_dir / "graph_viewer.ipynb", [BUILD, SHOW])
    open_notebook(page, jupyterlab_server, "graph_viewer.ipynb")
    run_all_cells(page, timeout=400_000)
    wait_for_output(page, "pre", text="layers: 12")

    viewer = wait_for_output(page, ".tc-gv-interactive")
    viewer.locator(".tc-gv-box").first.wait_for(state="visible")
    viewer.scroll_into_view_if_needed()
    page.wait_for_timeout(300)  # fit runs on the next animation frame

    # 1. the first screen shows the whole collapsed model inside the viewport
    first = viewer.evaluate(INSIDE_VIEWPORT_JS)
    assert first["boxes"] >= 5 and not first["outside"], first
    assert box(viewer, "m:transformer.h").is_visible()
    shoot(page, viewer, artifact_dir, "1_first_screen_light")

    # 2. open the layers, then transformer.h.0: its nodes show
    box(viewer, "m:transformer.h").click()
    box(viewer, "m:transformer.h.0").wait_for(state="visible")
    start = time.perf_counter()
    box(viewer, "m:transformer.h.0").click()
    viewer.locator('.tc-gv-cluster[data-id="m:transformer.h.0"]').wait_for(state="visible")
    expand_s = time.perf_counter() - start
    leaves = viewer.locator('.tc-gv-cluster[data-id="m:transformer.h.0"]').count()
    assert leaves == 1
    node_boxes = viewer.locator('.tc-gv-box[data-id^="n:"]').count()
    assert node_boxes >= 30, node_boxes
    (artifact_dir / "timings.txt").write_text(f"expand transformer.h.0, click to cluster shown: {expand_s:.3f} s\n")
    page.wait_for_timeout(300)
    shoot(page, viewer, artifact_dir, "2_expanded_h0_light")

    # 3. search softmax: one node per layer (h.0's node itself, h.1 … h.11 as their closed boxes)
    viewer.locator(".tc-gv-toolbar input[type=search]").fill("softmax")
    wait_for_output(page, ".tc-gv-count", text="12 matching nodes in 12 boxes")
    assert viewer.locator(".tc-gv-box.tc-gv-match").count() == 12
    shoot(page, viewer, artifact_dir, "3_search_softmax_light")

    # 4. the search centred its first hit, the matching node (Enter would step on); click it: its source line
    wait_for_output(page, ".tc-gv-count", text="box 1 of 12 shown")
    viewer.locator('.tc-gv-box.tc-gv-match[data-id^="n:"]').first.click()
    details = viewer.locator(".tc-gv-details")
    details.filter(has_text="modeling_gpt2.py:").wait_for(state="visible")
    assert "softmax(attn_weights" in details.inner_text()
    shoot(page, viewer, artifact_dir, "4_node_source_light")

    # the same states in the dark theme
    set_theme(page, "dark")
    viewer.scroll_into_view_if_needed()
    shoot(page, viewer, artifact_dir, "4_node_source_dark")
    viewer.locator(".tc-gv-toolbar button.tc-gv-collapse").click()
    page.wait_for_function("""() => !document.querySelector('.tc-gv-cluster[data-id="m:transformer.h.0"]')""")
    page.wait_for_timeout(300)
    again = viewer.evaluate(INSIDE_VIEWPORT_JS)
    assert not again["outside"], again
    shoot(page, viewer, artifact_dir, "1_first_screen_dark")
