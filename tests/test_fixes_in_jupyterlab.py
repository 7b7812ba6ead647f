"""The Fixes tab in a real JupyterLab: Try all runs in a worker thread while the kernel stays free (the
progress and the results arrive through the widgets), Copy snippet copies in the page, Before/after
shows the experiment's two captures in the diff view. Screenshots, light and dark, in test-output/<test>/."""
import pytest

from jupyterlab_harness import open_notebook, run_all_cells, screenshot, set_theme, wait_for_output, write_notebook

SETUP = """\
%load_ext explorer
import torch
x = torch.randn(16)
"""

CELL = """\
%%tcompile --backend eager --no-timing --name cap
y = x.nonzero()
print("a graph break")
z = y.float().sum()
"""


@pytest.mark.browser
def test_fixes_tab_try_all_copy_and_before_after(jupyterlab_server, browser_page, artifact_dir):
    page = browser_page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    write_notebook(jupyterlab_server.root_dir / "fixes.ipynb", [SETUP, CELL])
    open_notebook(page, jupyterlab_server, "fixes.ipynb")
    run_all_cells(page, timeout=240_000)

    page.locator(".tc-explorer .lm-TabBar-tab", has_text="Fixes").first.click()
    panel = page.locator(".tc-fixes-panel").first
    wait_for_output(page, ".tc-explorer", text="not tried")
    copy = panel.locator("button.tc-copy-button")
    assert copy.inner_text() == "Copy fix1's snippet"
    copy.click()
    wait_for_output(page, ".tc-fixes-panel", text="Copied ✓")
    assert "capture_dynamic_output_shape_ops = True" in page.evaluate("navigator.clipboard.readText()")

    panel.locator("button", has_text="Try all").click()
    wait_for_output(page, ".tc-fixes-panel", text="done: the measured results are below", timeout=240_000)
    wait_for_output(page, ".tc-explorer", text="Outputs equal eager")
    screenshot(page, artifact_dir / "fixes_light.png")

    panel.locator("button", has_text="Before/after").click()
    wait_for_output(page, ".tc-fixes-panel .tcompile .tc-diff-pane", text="after fix1")  # styled: in the scope
    panel.locator(".tc-diff-pane").first.scroll_into_view_if_needed()
    screenshot(page, artifact_dir / "before_after_light.png")

    set_theme(page, "dark")
    panel.locator("button", has_text="Try all").scroll_into_view_if_needed()
    screenshot(page, artifact_dir / "fixes_dark.png")
    panel.locator(".tc-diff-pane").first.scroll_into_view_if_needed()
    screenshot(page, artifact_dir / "before_after_dark.png")
