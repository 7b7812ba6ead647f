"""The FX graph viewer colours modules by the compile seconds sampled on them (issue 22): in a real JupyterLab,
the "compile time" box shades the closed modules, the most costly darkest. Screenshots (light, dark) land in
test-output/<test>/."""
import pytest

from jupyterlab_harness import open_notebook, run_all_cells, screenshot, set_theme, wait_for_output, write_notebook

pytest.importorskip("anywidget")

BUILD = """\
import torch, compiler
from explorer.widget import Explorer

class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up, self.down = torch.nn.Linear(16, 32), torch.nn.Linear(32, 16)
    def forward(self, x):
        for _ in range(30):  # a long unrolled loop: Dynamo spends its time here
            x = x + self.down(torch.relu(self.up(x))) * 0.01
        return x

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.slow, self.head = Block(), torch.nn.Linear(16, 4)
    def forward(self, x):
        return self.head(self.slow(x))

with torch.no_grad(), compiler.capture(sample_compile=True) as cap:
    torch.compile(Net().eval(), backend="aot_eager")(torch.randn(4, 16))
print("modules sampled:", sorted({r.module for r in cap.compiles[0].timings.by_line if r.module}))
"""

SHOW = """\
explorer = Explorer(cap, static_html=False)
explorer.select("graph")
explorer
"""

SHADED_JS = """(viewer) => [...viewer.querySelectorAll('.tc-gv-box rect.tc-gv-heated')].map(r => ({
    id: r.parentNode.dataset.id, fill: r.getAttribute('style')}))"""


@pytest.mark.browser
@pytest.mark.slow
def test_graph_viewer_colours_modules_by_compile_seconds(jupyterlab_server, browser_page, artifact_dir):
    page = browser_page
    write_notebook(jupyterlab_server.root_dir / "heat.ipynb", [BUILD, SHOW])
    open_notebook(page, jupyterlab_server, "heat.ipynb")
    run_all_cells(page, timeout=400_000)
    wait_for_output(page, "pre", text="modules sampled:")
    viewer = wait_for_output(page, ".tc-gv-interactive")
    viewer.locator(".tc-gv-box").first.wait_for(state="visible")
    viewer.scroll_into_view_if_needed()
    toggle = viewer.locator(".tc-gv-heat input")
    toggle.wait_for(state="visible")
    assert viewer.evaluate(SHADED_JS) == []  # off until asked
    toggle.check()
    page.wait_for_function("(v) => v.querySelector('.tc-gv-box rect.tc-gv-heated')", arg=viewer.element_handle())
    shaded = viewer.evaluate(SHADED_JS)
    assert any(s["id"] == "m:slow" for s in shaded), shaded
    assert all("rgba(234, 88, 12" in s["fill"] for s in shaded)
    page.wait_for_timeout(300)
    screenshot(viewer, artifact_dir / "heat_light.png")
    set_theme(page, "dark")
    viewer.scroll_into_view_if_needed()
    screenshot(viewer, artifact_dir / "heat_dark.png")
