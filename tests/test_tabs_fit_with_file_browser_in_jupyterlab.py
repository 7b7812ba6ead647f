"""At 1,400 px with JupyterLab's file browser open (issue 46, item 6), the tabs whose last columns were off-screen
fit their pane — the Overview's compiles table, Recompiles' "fix", Timings' "code", Generated code's "of DRAM
peak" — nothing else is clipped (scripts/screenshot_tabs.py's check: tests/test_no_clipping_in_jupyterlab.py's,
and no table wider than its box); and in the dark theme a disabled Try all looks disabled (JupyterLab Dark drew it
as bright as an enabled one). On the shipped H100 capture (Generated code, Fixes) and a CPU capture of
recompiles made here (backend="eager")."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from scripts.screenshot_tabs import check_tabs, explorer_of, show_tab, tab_titles  # noqa: E402

SHIPPED = REPO / "assets" / "gpu" / "gpt2_2layer.json"


def recompiling_capture(path: Path) -> Path:
    import torch

    import compiler

    def scaled(x, factor):
        return (x.sin() * factor).sum(dim=-1, keepdim=True) + x.shape[0]

    with compiler.capture() as cap:
        compiled = torch.compile(scaled, backend="eager", dynamic=False)
        for n, factor in ((4, 2.0), (5, 3.0), (6, 4.0), (7, 5.0)):
            compiled(torch.randn(n, 8), factor)
    assert cap.recompiles
    return Path(cap.save(path))


@pytest.mark.browser
@pytest.mark.slow
def test_the_tabs_fit_with_the_file_browser_open(jupyterlab_server, browser_page, artifact_dir, tmp_path):
    page = browser_page
    capture = recompiling_capture(jupyterlab_server.root_dir / "recompiles.json")
    explorer = explorer_of(page, jupyterlab_server, capture, "recompiles.ipynb")
    failures = check_tabs(page, explorer, artifact_dir / "recompiles", themes=("light",),
                          only=("Overview", "Recompiles", "Timings"))
    explorer = explorer_of(page, jupyterlab_server, SHIPPED, "gpt2.ipynb")
    failures |= check_tabs(page, explorer, artifact_dir / "gpt2", themes=("light", "dark"),
                           only=("Overview", "Generated code", "Timings", "Inductor"))
    assert failures == {}
    # dark: the disabled Try all (a loaded capture cannot try) drawn as disabled, not in the primary blue
    show_tab(page, explorer, [t.startswith("Fixes") for t in tab_titles(explorer)].index(True))
    button = explorer.locator(".tc-fixes-panel button", has_text="Try all").first
    assert button.is_disabled()
    colours = button.evaluate("""b => { const s = getComputedStyle(b), probe = document.createElement('div');
        probe.style.background = 'var(--jp-layout-color3)'; document.body.append(probe);
        const want = getComputedStyle(probe).backgroundColor; probe.remove();
        return [s.backgroundColor, want, s.opacity]; }""")
    assert colours[0] == colours[1] and colours[2] == "1", colours
