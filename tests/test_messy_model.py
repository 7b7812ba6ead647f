"""Messy real models, legible (issue 27): a detection-like model (tests/messy: a loop Dynamo skips, a float
argument that fills the recompile limit, code in two files) compiled for real, every finding checked
against torch's own answer: its counters, ``torch._dynamo.explain()`` and ``torch._dynamo.config``."""
import re

import pytest
import torch

import compiler
from messy.model import SCALES, Detector, example_inputs


def _explore(**config):
    model, args = Detector().eval(), example_inputs()
    with torch.no_grad(), torch._dynamo.config.patch(**config):
        return compiler.explore(model, *args, backend="aot_eager", repeat=3)


@pytest.fixture(scope="module")
def messy():
    return _explore()


def _unimplemented(cap) -> str:
    return "\n".join(cap.counters.get("unimplemented", {}))


def test_skipped_frames_are_what_torch_skipped(messy):
    skipped = {s.function: s for s in messy.skipped_frames}
    assert set(skipped) == {"filter_proposals", "multiscale_pool"}
    text = _unimplemented(messy)
    for item in skipped.values():
        # torch's own record of the skip: "frame skipped: filter_proposals (…/model.py line 10)"
        assert f"frame skipped: {item.function} ({item.file} line {item.line})" in text
        assert item.reason == "graph break in loop" and item.gb_code == "GB7000"
        assert item.cause.headline == "Data-dependent branching" and item.cause.file.endswith("messy/model.py")
        assert messy.compile(item.compile_id).status == "failed"
        assert item.share is not None and 0 <= item.share <= 1 and item.seconds > 0
    assert skipped["filter_proposals"].cause.code.startswith("if scores[i] > 0:")
    assert skipped["multiscale_pool"].cause.line == 21
    frames = messy.counters["frames"]  # torch counts every compile attempt, and the ones that worked
    assert frames["total"] - frames["ok"] == messy.summary.failed_compiles == 3  # 2 skipped + 1 refused


def test_graph_breaks_count_what_torch_counts(messy):
    """A skipped frame's break, and the refused recompile, are not graph breaks: torch's counter agrees."""
    assert messy.summary.graph_breaks == sum(messy.counters["graph_break"].values()) == 2
    assert messy.summary.graphs == messy.counters["stats"]["unique_graphs"]  # graphs Dynamo made, as torch counts
    assert all(len(item.compile_ids) == len(set(item.compile_ids)) for item in messy.breaks.items)
    assert not any(item.headline == "Dynamo recompile limit exceeded" for item in messy.breaks.items)
    assert "artifact:dynamo_error" not in messy.unknown_records


def test_recompile_limit_as_torch_configures_it(messy):
    (hit,) = messy.recompile_limits
    limit = torch._dynamo.config.recompile_limit
    assert hit.function == "roi_pool" and hit.file.endswith("messy/ops.py")
    assert hit.limit == limit and len(hit.compile_ids) == limit and hit.limit_type == "recompile_limit"
    assert hit.limit_source == "torch._dynamo.config at capture time"
    assert hit.guard == "spatial_scale =="
    assert [float(v) for v in hit.values] == pytest.approx(SCALES[:limit])  # the value each compile was made for
    assert messy.compile(hit.compile_id).status == "failed" and messy.compile(hit.compile_id).name == "roi_pool"


def test_recompile_limit_is_read_as_the_capture_ran():
    cap = _explore(recompile_limit=3)
    (hit,) = cap.recompile_limits
    assert hit.limit == 3 and hit.compile_ids == ["4/0", "4/1", "4/2"]


def test_counts_against_explain(messy):
    """explain() on the same input: its break count is graphs − 1, and its own backend leaves the float
    dynamic (fewer roi_pool compiles); Overview says both."""
    from explorer.views.overview import render_overview

    torch._dynamo.reset()
    with torch.no_grad():
        explained = torch._dynamo.explain(Detector().eval())(*example_inputs())
    assert explained.graph_break_count == explained.graph_count - 1
    assert explained.graph_count < messy.summary.graphs  # the float stays dynamic under explain's backend
    html = render_overview(messy, messy.compiles[0])
    # no predicted count (it said "would read 36" where explain() counted 38): the check lists the difference
    assert f"differ from these {messy.summary.graphs} graphs (no count is predicted here" in html
    from compiler.analyses.check import explain_record, reconcile_explain

    differences = reconcile_explain(messy, explain_record(explained))
    assert differences[0].startswith(f"{messy.summary.graphs} graphs here, {explained.graph_count} in explain()")
    limit = torch._dynamo.config.recompile_limit  # item by item: the function whose graphs differ
    assert any(d.startswith("roi_pool (ops.py): ") and f": {limit} graphs here, " in d for d in differences[1:])
    assert "own graph-collecting backend (no AOTAutograd)" in html
    assert "What each count counts" in html


def test_views_say_it_first(messy):
    from explorer.views.breaks import render_breaks
    from explorer.views.overview import findings
    from explorer.views.recompiles import render_recompiles

    found = findings(messy)
    first, second = (str(text) for _, text in found[:2])
    assert "Dynamo skipped the whole frame" in first and "graph break in loop" in first  # costliest first
    assert "multiscale_pool" in first and "model.py:18" in first
    assert "filter_proposals" in second
    assert "Recompile limit reached" in str(found[2][1]) and "spatial_scale ==" in str(found[2][1])
    assert not any("compiles failed" in str(text) for _, text in found)
    breaks = render_breaks(messy, messy.compiles[0])
    assert breaks.count("tc-skipped-card") == 2 and "Data-dependent branching" in breaks
    recompiles = render_recompiles(messy, messy.compiles[0])
    assert f"recompile_limit = {torch._dynamo.config.recompile_limit}" in recompiles
    assert "refused: limit" in recompiles
    assert not re.search(r"<script|<img", breaks + recompiles)  # torch's text is escaped


@pytest.mark.browser
def test_screenshots(messy, artifact_dir):
    """Overview, Graph breaks and Recompiles of the messy model, light and dark, for people to look at."""
    from jupyterlab_harness import render_html_screenshot, require_browser

    from explorer.html import join, style_tag
    from explorer.views import render_view

    require_browser()
    for key in ("overview", "breaks", "recompiles"):
        html = join([style_tag(), render_view(key, messy, messy.compiles[0])])
        for theme in ("light", "dark"):
            render_html_screenshot(html, artifact_dir / f"{key}_{theme}.png", theme=theme, width=1100)
    assert (artifact_dir / "overview_dark.png").stat().st_size > 10_000


def test_kernel_lines_are_file_line_pairs():
    """One Inductor kernel fuses a line of model.py with a line of ops.py: its lines are (file, line) pairs
    — the kernel's, the line table's, the Source view's and Timings' — as torch's own graph comments
    name them (the Dynamo graph's nodes, each with its file and line)."""
    from messy.model import sharpen

    from explorer.views.source import kernel_panel
    from explorer.views.timings import render_timings

    cap = compiler.explore(sharpen, torch.randn(1, 8, 16, 16), repeat=3, fresh=True)
    c = cap.compiles[0]
    (kernel,) = [k for k in c.provenance.kernels if k.language != "extern"]
    torch_places = {(n.file, n.line) for n in c.graph.nodes if n.line and n.op == "call_function"}
    places = {(p.file, p.line): p.share for p in kernel.places}
    assert set(places) == torch_places and {f.rsplit("/", 1)[-1] for f, _ in places} == {"model.py", "ops.py"}
    assert sum(places.values()) == pytest.approx(1)
    rows = {(r.file, r.line): r for r in c.provenance.lines}
    assert set(rows) == set(places)  # each line in its own file, never another file's line number
    for place, share in places.items():  # one kernel: its time splits over its lines by their share of its work
        assert rows[place].time_share == pytest.approx(share)
    table = cap.line_table()
    assert set(zip(table.file, table.line)) == set(places)
    panel = kernel_panel(c, kernel)
    assert "model.py:29" in panel and "ops.py:14" in panel
    assert panel.count('class="tc-lit"') == 1  # only model.py's line is lit in model.py's source
    timings = render_timings(cap, c)
    assert "ops.py:14" in timings and "model.py:29" in timings



@pytest.mark.browser
def test_recompiles_search_keeps_a_recompiles_rows(messy, artifact_dir):
    """Searching the recompiles table for 4/2 shows both of 4/2's rows (against 4/1 and against 4/0),
    not only its first (issue 27 item 6): DataTables' own search, in a report page."""
    from jupyterlab_harness import rendered_html, require_browser, screenshot

    from explorer.html import join, style_tag
    from explorer.views import render_view
    from explorer.views.tables import datatables_script

    require_browser()
    html = join([style_tag(), render_view("recompiles", messy, None), datatables_script()])
    with rendered_html(html, width=1200) as page:
        search = page.locator(".dt-search input").first
        search.wait_for()
        search.fill("4/2")
        page.wait_for_timeout(300)
        texts = page.locator("table.dataTable tbody tr").all_inner_texts()
        screenshot(page, artifact_dir / "recompiles_search.png", full_page=True)
    own = [t for t in texts if t.split()[0] == "4/2"]
    assert len(own) == 2 and any("4/0" in t for t in own) and any("4/1" in t for t in own)


def test_static_copy_keeps_its_limit(messy):
    """The saved copy counts everything it writes — each left-out section's line and each compile's
    wrapper — so it stays under its limit for a capture of many compiles (issue 27 item 7: 1.17–1.22 MB
    under a 1 MB banner for Mask R-CNN)."""
    from explorer.page import FALLBACK_BYTES, render_static

    full = len(render_static(messy).encode())
    for limit in (80_000, 150_000, full // 2):
        html = render_static(messy, fallback=True, limit=limit)
        assert len(html.encode()) <= limit, (limit, len(html.encode()))
        assert "left out of this saved copy" in html and "Dynamo skipped the whole frame" in html  # findings kept
    assert len(render_static(messy, fallback=True).encode()) <= FALLBACK_BYTES
