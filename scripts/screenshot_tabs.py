"""Screenshots of every tab of a capture's explorer in JupyterLab at 1,400 px with the file browser open, light
and dark (issue 46), each tab checked for clipping as tests/test_no_clipping_in_jupyterlab.py checks it: the pane
does not scroll sideways, nothing is cut by a box that does not scroll, every element's visible part lies inside
the pane — and no table is wider than its box (its last columns off-screen until one scrolls sideways).

    .venv/bin/python scripts/screenshot_tabs.py CAPTURE OUT_DIR [TAB,TAB…]

TAB: the tabs to take (titles as they start: Overview,Timings); default every one.

A notebook ``%tcompile --load CAPTURE`` runs in a JupyterLab server of its own (tests/jupyterlab_harness.py,
Debian Chromium); OUT_DIR gets NN_tab_THEME.png per tab and theme, and clipping.json (per tab and theme, what
sticks out; empty: nothing). Exit status 1 when something is clipped.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from jupyterlab_harness import (JupyterLabServer, open_browser, open_notebook, run_all_cells,  # noqa: E402
                                screenshot, set_theme, wait_for_kernel_idle, wait_for_output, write_notebook)
from test_no_clipping_in_jupyterlab import OVERFLOW_JS  # noqa: E402 — the one clipping check

WIDTH = 1400
# A table wider than the box it scrolls in: its last columns are off-screen until one scrolls sideways (issue 46:
# the compiles table's last column, Recompiles' "fix", Timings' "code", Generated code's "of DRAM peak").
WIDE_TABLES_JS = """(explorer) => {
    const pane = [...explorer.querySelectorAll('.widget-tab-contents > *')]
        .find(p => !p.classList.contains('lm-mod-hidden') && !p.classList.contains('p-mod-hidden'));
    const out = [];
    for (const table of pane.querySelectorAll('table')) {
        if (table.closest('details:not([open]) > :not(summary), svg') || !table.getClientRects().length) continue;
        if (table.closest('.dt-scroll-head, .dt-scroll-foot')) continue;
        let box = table.parentElement;
        while (box && box !== pane && getComputedStyle(box).overflowX === 'visible') box = box.parentElement;
        const width = table.getBoundingClientRect().width, room = box.getBoundingClientRect().width;
        if (width > room + 1) {
            const head = [...table.querySelectorAll('th')].map(th => th.textContent.trim()).filter(Boolean);
            out.push(`table wider than its box: ${Math.round(width)} > ${Math.round(room)} px, its last columns `
                     + `off-screen (${head.slice(-2).join(', ')})`);
        }
    }
    return out;
}"""
OPEN_FILE_BROWSER = "() => window.jupyterapp.commands.execute('filebrowser:activate')"


def tab_titles(explorer) -> list[str]:
    return [t.strip() for t in explorer.locator(".tc-tabs .lm-TabBar-tab").all_inner_texts()]


def show_tab(page, explorer, index: int):
    explorer.locator(".tc-tabs .lm-TabBar-tab").nth(index).click()
    pane = explorer.locator(".widget-tab-contents > .lm-Widget:not(.lm-mod-hidden)")
    pane.locator(".tcompile").first.wait_for(state="visible", timeout=120_000)
    page.wait_for_timeout(300)
    wait_for_kernel_idle(page, timeout=300_000)  # the parts drawn after the tab shows (tables, code) are in
    for table in pane.locator(".tc-itable-widget").all():  # DataTables draws after the widget mounts
        table.locator(".dt-container").wait_for(state="attached", timeout=120_000)
    page.wait_for_timeout(300)
    return pane


def shoot(page, explorer, path: Path) -> None:
    """The window at 1,400 px, as tall as the explorer (the notebook scrolls inside it), the explorer's top at
    the top: the file browser beside it, as the user sees it."""
    height = explorer.evaluate("e => e.getBoundingClientRect().height")
    page.set_viewport_size({"width": WIDTH, "height": int(min(max(1000, height + 200), 4000))})
    explorer.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(200)
    screenshot(page, path)
    page.set_viewport_size({"width": WIDTH, "height": 1000})


def explorer_of(page, server, capture: Path, name: str):
    """The explorer of ``%tcompile --load capture`` in a new notebook ``name``, the file browser open beside it."""
    write_notebook(server.root_dir / name, ["%load_ext explorer", f"%tcompile --load {capture}"])
    open_notebook(page, server, name)
    page.evaluate(OPEN_FILE_BROWSER)
    page.locator(".jp-FileBrowser").first.wait_for(state="visible")
    run_all_cells(page, timeout=300_000)
    explorer = wait_for_output(page, ".tc-explorer", timeout=120_000)
    explorer.locator(".tc-tabs .lm-TabBar-tab").first.wait_for(state="visible")
    return explorer


def check_tabs(page, explorer, out: Path | None, themes=("light", "dark"), only=None) -> dict:
    """Each tab (``only``: those whose title starts so) in each theme: its clipping problems (tab (theme) → the
    check's result, only where there are some); a screenshot of each in ``out``."""
    failures = {}
    titles = tab_titles(explorer)
    for theme in themes:
        set_theme(explorer.page, theme)
        for index, title in enumerate(titles):
            if only and not title.startswith(tuple(only)):
                continue
            pane = show_tab(page, explorer, index)
            fold = pane.locator(".tc-table-fold")
            if title.startswith("FX graph") and fold.count() and not fold.locator(".dt-container").first.is_visible():
                fold.get_by_text("as a table").first.click()  # its table, folded at first
                fold.locator(".dt-container").first.wait_for(state="visible")
                page.wait_for_timeout(250)
            result = explorer.evaluate(OVERFLOW_JS)
            wide = explorer.evaluate(WIDE_TABLES_JS)
            result = {**result, "problems": result["problems"] + wide, "count": result["count"] + len(wide)}
            if out is not None:
                slug = title.split(" (")[0].lower().replace(" ", "_")
                shoot(page, explorer, out / f"{index:02d}_{slug}_{theme}.png")
            if result["count"]:
                failures[f"{title} ({theme})"] = result
    return failures


def main(argv: list[str]) -> int:
    capture, out = Path(argv[0]).resolve(), Path(argv[1]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with JupyterLabServer(out / "lab", out / "server") as server, open_browser() as page:
        explorer = explorer_of(page, server, capture, "tabs.ipynb")
        failures = check_tabs(page, explorer, out, only=argv[2].split(",") if len(argv) > 2 else None)
    (out / "clipping.json").write_text(json.dumps(failures, indent=1))
    print(f"{len(list(out.glob('*.png')))} screenshots in {out} ({time.perf_counter() - started:.0f} s); clipped: "
          + (", ".join(failures) or "nothing"))
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
