"""The live panel of compiler.watch() in a real JupyterLab: it shows under the running cell and its updates
(steps, the recompile alert with its fix) arrive while the cell is still running. Screenshots taken while
the loop runs, light and dark, in test-output/<test>/."""
import re

import pytest

from jupyterlab_harness import _START_RUN_ALL_JS, open_notebook, screenshot, set_theme, wait_for_output, write_notebook

CELL = """\
import time, torch, compiler, explorer

@torch.compile(backend="eager")
def train_step(x):
    return (x.sin() * 2).sum()

with compiler.watch() as w:
    for step in range(1200):
        train_step(torch.ones(4 if step < 150 else 6))
        time.sleep(0.012 if step != 400 else 0.5)
        w.step()
"""

_RUNNING_JS = "() => [...document.querySelectorAll('.jp-InputPrompt')].some(p => p.textContent.includes('[*]'))"


def _steps(page) -> int:
    text = page.locator(".jp-OutputArea-output .tc-watch").first.inner_text()
    return int(re.search(r"(\d+) steps", text)[1])


@pytest.mark.browser
def test_watch_panel_updates_while_the_cell_runs(jupyterlab_server, browser_page, artifact_dir):
    page = browser_page
    write_notebook(jupyterlab_server.root_dir / "watch.ipynb", [CELL])
    open_notebook(page, jupyterlab_server, "watch.ipynb")
    page.evaluate(_START_RUN_ALL_JS)
    panel = wait_for_output(page, ".tc-watch", text="changed 4 → 6", timeout=120_000)
    assert page.evaluate(_RUNNING_JS), "the cell should still be running"
    first = _steps(page)
    page.wait_for_timeout(1500)
    second = _steps(page)
    assert page.evaluate(_RUNNING_JS) and second > first > 150, (first, second)
    text = panel.inner_text()
    assert "`x.size()[0]` changed 4 → 6" in text and "fix: Mark dimension 0 of x dynamic" in text
    output = page.locator(".jp-OutputArea-output:has(.tc-watch)").first  # the panel's HTML is replaced as it redraws
    screenshot(output, artifact_dir / "watch_panel_light.png")
    set_theme(page, "dark")
    assert page.evaluate(_RUNNING_JS)
    screenshot(output, artifact_dir / "watch_panel_dark.png")
    page.wait_for_function("() => ![...document.querySelectorAll('.jp-InputPrompt')]"
                           ".some(p => p.textContent.includes('[*]'))", timeout=120_000)
    wait_for_output(page, ".tc-watch", text="stopped")
    assert "slow step" in page.locator(".jp-OutputArea-output .tc-watch").first.inner_text()
    screenshot(output, artifact_dir / "watch_panel_stopped_dark.png")
