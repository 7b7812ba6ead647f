"""Nothing clipped (issue 16): every tab of a GPT-2-small capture, in light and dark JupyterLab, fits its
tab pane — wide code, tables and long guard conditions wrap or scroll inside their own box.

The notebook builds a transformers GPT-2 from config (12 layers, 768 wide, vocab 50257, no weights) and
compiles a step around it with backend="aot_eager" (Dynamo and AOT graphs): the step prints (a graph
break in the notebook's own cell) and its second call changes a size the resume function guards on (a
recompile). For each tab headless Chromium checks that the pane itself has no horizontal overflow, that
no element inside it is cut off by a box that does not scroll, and that every element's visible part
lies inside the pane. Screenshots of every tab in both themes land in test-output/<test>/. Also checked
on the way: the explorer opens on a compile with a graph, the guard table pages, a click on a
compiles-table row selects that compile, graph-break frames name the cell ``In [N]``."""
import json
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
pytest.importorskip("itables")

BUILD = """\
import torch, transformers, compiler
from explorer.widget import Explorer
config = transformers.GPT2Config(attn_implementation="eager")
model = transformers.GPT2LMHeadModel(config).eval()
ids = torch.randint(0, config.vocab_size, (2, 64))
"""

STEP = """\
def step(ids, scale):
    logits = model(ids).logits
    print("step done")  # a graph break in this cell
    return logits.mean() * scale.sum()
"""

CAPTURE = """\
with torch.no_grad(), compiler.capture() as cap:
    compiled = torch.compile(step, backend="aot_eager")
    compiled(ids, torch.ones(3))
    compiled(ids, torch.ones(5))  # the resume function guards on scale's size: a recompile
print("compiles:", len(cap.compiles), "guards:", max(c.guards.count for c in cap.compiles))
"""

SHOW = """\
explorer = Explorer(cap, static_html=False)
explorer
"""

# For the visible tab pane: (1) the pane does not overflow sideways; (2) no element is clipped by a box
# that hides its overflow without scrolling; (3) the visible part of each element (clipped by the boxes
# that scroll) lies inside the pane. The graph viewer's viewport clips on purpose (pan and zoom).
OVERFLOW_JS = """(explorer) => {
    const pane = [...explorer.querySelectorAll('.widget-tab-contents > *')]
        .find(p => !p.classList.contains('lm-mod-hidden') && !p.classList.contains('p-mod-hidden'));
    const box = pane.getBoundingClientRect();
    const name = el => el.tagName.toLowerCase() + (el.className && typeof el.className === 'string'
        ? '.' + el.className.trim().split(/\\s+/).slice(0, 3).join('.') : '')
        + ' "' + (el.textContent || '').trim().slice(0, 60) + '"';
    const problems = [];
    if (pane.scrollWidth > pane.clientWidth + 1)
        problems.push(`pane scrolls sideways: ${pane.scrollWidth} > ${pane.clientWidth}`);
    for (const el of pane.querySelectorAll('*')) {
        if (el.closest('svg, .tc-gv-viewport')) continue;
        const style = getComputedStyle(el);
        if (style.display === 'none' || style.visibility === 'hidden') continue;
        const rect = el.getBoundingClientRect();
        if (rect.width === 0 && rect.height === 0) continue;
        if (el.closest('details:not([open]) > :not(summary)')) continue;
        if (['hidden', 'clip'].includes(style.overflowX) && el.scrollWidth > el.clientWidth + 1
                && style.textOverflow !== 'ellipsis')
            problems.push(`clipped inside ${name(el)}: ${el.scrollWidth} > ${el.clientWidth}`);
        let left = rect.left, right = rect.right;
        for (let up = el.parentElement; up && up !== pane; up = up.parentElement) {
            if (getComputedStyle(up).overflowX !== 'visible') {
                const r = up.getBoundingClientRect();
                left = Math.max(left, r.left); right = Math.min(right, r.right);
            }
        }
        if (right > left && (right > box.right + 1 || left < box.left - 1))
            problems.push(`outside the pane: ${name(el)} spans ${Math.round(left)}..${Math.round(right)}, `
                          + `pane ${Math.round(box.left)}..${Math.round(box.right)}`);
    }
    return {problems: problems.slice(0, 12), count: problems.length, width: Math.round(box.width)};
}"""


def tab_titles(explorer):
    return [t.strip() for t in explorer.locator(".tc-tabs .lm-TabBar-tab").all_inner_texts()]


def show_tab(page, explorer, index):
    explorer.locator(".tc-tabs .lm-TabBar-tab").nth(index).click()
    pane = explorer.locator(".widget-tab-contents > .lm-Widget:not(.lm-mod-hidden)")
    pane.locator(".tcompile").first.wait_for(state="visible")
    for table in pane.locator(".tc-itable-widget").all():  # DataTables draws after the widget mounts
        table.locator(".dt-container").wait_for(state="attached")
    page.wait_for_timeout(250)
    return pane


def shoot(page, explorer, path):
    """The whole explorer: the window grows to its height (the notebook scrolls inside the window)."""
    height = explorer.evaluate("e => e.getBoundingClientRect().height")
    page.set_viewport_size({"width": 1400, "height": int(min(max(1000, height + 200), 4000))})
    page.wait_for_timeout(150)
    screenshot(explorer, path)
    page.set_viewport_size({"width": 1400, "height": 1000})


@pytest.mark.browser
@pytest.mark.slow
def test_no_tab_overflows_its_pane_on_gpt2_small(jupyterlab_server, browser_page, artifact_dir):
    page = browser_page
    started = time.perf_counter()
    outside = []  # itables' JavaScript comes with the widget, from the kernel: nothing is fetched elsewhere
    page.on("request", lambda r: None if r.url.startswith((jupyterlab_server.url, "data:", "blob:"))
            else outside.append(r.url))
    write_notebook(jupyterlab_server.root_dir / "no_clipping.ipynb", [BUILD, STEP, CAPTURE, SHOW])
    open_notebook(page, jupyterlab_server, "no_clipping.ipynb")
    run_all_cells(page, timeout=500_000)
    wait_for_output(page, "pre", text="compiles:")
    explorer = wait_for_output(page, ".tc-explorer")
    explorer.locator(".tc-tabs .lm-TabBar-tab").first.wait_for(state="visible")
    built = time.perf_counter()

    selector = explorer.locator(".widget-dropdown select").first  # the compile selector (Fixes has its own)
    assert selector.locator("option:checked").inner_text().replace("\xa0", " ").startswith("0/0 step")  # has a graph

    titles = tab_titles(explorer)
    failures = {}
    for theme in ("light", "dark"):
        if theme == "dark":
            set_theme(page, "dark")
        for index, title in enumerate(titles):
            pane = show_tab(page, explorer, index)
            if title.startswith("Guards"):  # ~2,000 guards: the table pages
                info = pane.locator(".dt-info").inner_text()
                assert pane.locator(".tc-itable-widget tbody tr").count() == 25, info
                assert pane.locator(".dt-paging button").count() >= 3 and "entries" in info, info
            if title.startswith("FX graph") and not pane.locator(".tc-table-fold .dt-container").is_visible():
                pane.locator(".tc-table-fold").get_by_text("as a table").first.click()  # folded at first
                pane.locator(".tc-table-fold .dt-container").wait_for(state="visible")
                page.wait_for_timeout(250)
            if title.startswith("Graph breaks"):
                assert "In [2], line 3" in pane.inner_text()  # the cell, as the notebook names it
            result = explorer.evaluate(OVERFLOW_JS)
            slug = title.split(" (")[0].lower().replace(" ", "_")
            shoot(page, explorer, artifact_dir / f"{index:02d}_{slug}_{theme}.png")
            if result["count"]:
                failures[f"{title} ({theme})"] = result
    # a click on a compiles-table row selects that compile
    show_tab(page, explorer, 0).locator(".tc-itable-widget tbody tr").nth(2).locator("td").nth(1).click()
    page.wait_for_function("""() => document.querySelector('.tc-explorer .widget-dropdown select')
        .selectedOptions[0].textContent.startsWith('1/1')""")
    shoot(page, explorer, artifact_dir / "compile_1_1_selected_by_row_click_dark.png")
    seconds = time.perf_counter() - started
    (artifact_dir / "timings.txt").write_text(f"notebook run {built - started:.1f} s, whole test {seconds:.1f} s\n")
    (artifact_dir / "overflow.json").write_text(json.dumps(failures, indent=1))
    assert not failures, failures
    assert not outside, outside


GUARDED = """\
import torch, compiler
from explorer import write_report

def total(xs):
    return sum(x.sin() for x in xs)

with compiler.capture() as cap:
    torch.compile(total, backend="eager")([torch.randn(4) for _ in range(20)])
write_report(cap, {path!r})
print(cap.compiles[0].guards.count)
"""


@pytest.mark.browser
def test_report_page_tables_page_sort_and_search_offline(tmp_path, artifact_dir):
    """The static export (``python -m compiler report``): its big tables page, with no network."""
    import subprocess
    import sys

    from jupyterlab_harness import open_browser

    report = tmp_path / "report.html"
    run = subprocess.run([sys.executable, "-c", GUARDED.format(path=str(report))], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    guards = int(run.stdout.split()[-1])
    assert guards > 25
    with open_browser() as page:
        fetched = []
        page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                   else (fetched.append(route.request.url), route.abort()))
        for theme in ("light", "dark"):
            page.emulate_media(color_scheme=theme)
            page.goto(report.as_uri())
            page.locator("details.tc-compile").first.evaluate("d => d.open = true")
            section = page.locator("details.tc-section:has(> summary:text-is('Guards'))").first
            section.evaluate("d => d.open = true")
            info = section.locator(".dt-info")
            info.wait_for(state="visible")
            assert f"of {guards} entries" in info.inner_text()
            assert section.locator(".tc-datatable tbody tr").count() == 25
            section.locator(".dt-search input").fill("TENSOR_MATCH")
            page.wait_for_function("""() => [...document.querySelectorAll('.dt-info')]
                .some(i => i.textContent.includes('filtered from'))""")
            section.scroll_into_view_if_needed()
            screenshot(page, artifact_dir / f"report_guards_search_{theme}.png")
        assert not fetched, fetched
