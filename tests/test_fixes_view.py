"""The Fixes tab, the Overview's fix line and the Graph breaks row's "fix: …" (explorer.views.fixes)."""
from __future__ import annotations

import pytest
import torch

import compiler
from explorer.views import BY_KEY, render_view


def f(x):
    y = x.nonzero()
    print("f ran")
    if x.sum() > 0:
        y = y + 1
    return y.float().sum()


def test_fixes_tab_overview_line_and_break_rows():
    cap = compiler.explore(f, torch.randn(16), backend="eager", timing=False, errors="return")
    assert BY_KEY["fixes"].title_for(cap) == "Fixes (3)"
    page = render_view("fixes", cap, None)
    assert "not tried" in page.lower() and "cap.try_fixes()" in page
    assert "torch._dynamo.config.capture_dynamic_output_shape_ops = True" in page  # what the experiment applies
    assert "reorderable_logging_functions" in page and "tc-code" in page  # the snippet, highlighted
    assert "never applied" in page  # the torch.cond rewrite
    assert "1 change" not in render_view("overview", cap, None)
    assert "2 changes not tried; 1 code change suggested" in render_view("overview", cap, None)

    cap.try_fixes()
    page = render_view("fixes", cap, None)
    assert "before" in page and "after" in page and "Outputs equal eager" in page and "recommended" in page
    overview = render_view("overview", cap, None)
    # the first lines say what to do, one sentence per verdict, before the findings
    assert overview.index(">Recommended</span> capture_dynamic_output_shape_ops — ") < overview.index("tc-findings")
    assert ">Recommended</span> together (" in overview and "outputs as close to eager as before" in overview
    breaks = render_view("breaks", cap, None)
    assert breaks.count("fix: ") == 3 and "fix1" in breaks

    loaded = compiler.Capture.from_json(cap.to_json())
    page = render_view("fixes", loaded, None)
    assert "Try needs the live function" in page and "Outputs equal eager" in page


def test_fixes_view_escapes_text():
    data = {"format": "tcompile-capture", "version": [2, 0],
            "fixes": {"available": True, "items": [{"id": "fix1", "kind": "k", "title": "<script>alert(1)</script>",
                                                   "snippet": "x = '<b>'", "findings": ["<img src=x>"]}]}}
    page = render_view("fixes", compiler.Capture.from_data(data), None)
    assert "<script>" not in page and "&lt;script&gt;" in page and "<img" not in page


def test_recompile_rows_name_their_fix():
    from compiler.analyses.fix_experiments import capture_calls

    cap = capture_calls(lambda x: x.sin() * 2, [(torch.randn(4),), (torch.randn(8),)], backend="eager")
    page = render_view("recompiles", cap, None)
    assert "fix: fix1 (mark_dynamic, not tried)" in page


def test_widget_try_all_button_runs_the_experiments_and_redraws():
    from explorer.widget import Explorer

    cap = compiler.explore(f, torch.randn(16), backend="eager", timing=False, errors="return")
    ui = Explorer(cap)
    panel = ui.fixes_panel
    assert not panel.try_all.disabled and [o[1] for o in panel.choice.options] == ["fix1", "fix2", "fix3"]
    assert panel.copy.text == cap.fixes()["fix1"].snippet and panel.copy.label == "Copy fix1's snippet"
    assert panel.compare.disabled  # nothing tried: no before/after to show
    fixes_tab = ui.select("fixes")
    assert "not tried" in fixes_tab.value.lower()
    panel.try_all.click()  # runs in a worker thread: the kernel stays free for Stop
    worker = panel.worker
    if worker is not None:
        worker.join()
    assert all(fix.result is not None for fix in cap.fixes() if fix.applicable)
    assert "Outputs equal eager" in ui.select("fixes").value and panel.status.value.startswith("done")
    assert not panel.compare.disabled
    panel.compare.value = True  # the experiment's before and after captures, in the diff view
    assert "tc-diff-pane" in panel.diff.value and "after fix1" in panel.diff.value
    panel.choice.value = "fix3"  # a code change: copied, never tried
    assert panel.try_one.disabled and panel.copy.text == cap.fixes()["fix3"].snippet

    loaded = Explorer(compiler.Capture.from_json(cap.to_json()))
    assert loaded.fixes_panel.try_all.disabled and "Try needs the live function" in loaded.fixes_panel.status.value


def test_stop_keeps_what_finished_and_tries_no_more():
    from explorer.widget import Explorer

    cap = compiler.explore(f, torch.randn(16), backend="eager", timing=False, errors="return")
    panel = Explorer(cap).fixes_panel
    asked = []

    def told(done, total, text):  # Stop clicked while the first experiment runs
        if text.startswith("trying") and not asked:
            asked.append(text)
            panel.stop.click()

    original = cap.try_fixes
    cap.try_fixes = lambda **kwargs: original(**{**kwargs, "progress": lambda *a: (told(*a), kwargs["progress"](*a))})
    import torch_state

    before = torch_state.snapshot()
    panel.run(None, wait=True)
    torch_state.assert_restored(before)  # the worker thread's experiments put torch back too
    first, second = [f for f in cap.fixes() if f.applicable]
    assert first.result is not None and first.result.status == "measured"  # finished: kept
    assert second.result is None and second.status == "not tried"
    assert cap.fixes().combined is None and panel.status.value.startswith("stopped after 1 of 2 changes")
    assert not panel.try_all.disabled and panel.stop.layout.display == "none"


@pytest.mark.browser
def test_screenshots(artifact_dir):
    """The Fixes tab after Try all (a measured guard filter among the fixes), and the panel's Before/after diff."""
    from jupyterlab_harness import render_html_screenshot, require_browser

    from compiler.analyses.fix_experiments import diff_of
    from explorer.html import join, style_tag, view_frame
    from explorer.views.diff import compare_style_tag, render_diff

    require_browser()
    model = torch.nn.Sequential(*[torch.nn.Linear(8, 8) for _ in range(4)])

    def g(x):
        y = model(x).nonzero()
        print("g ran")
        return y.float().sum()

    cap = compiler.explore(g, torch.randn(4, 8), backend="eager", timing=False, errors="return")
    cap.try_fixes()
    fixes = render_view("fixes", cap, None)
    assert "gives up" in fixes and "as close to eager as before" in fixes
    first = cap.fixes()[0]
    pane = render_diff(diff_of(first.result, labels=("before", f"after {first.id}")))
    html_view = join([style_tag(), compare_style_tag(), view_frame(fixes), view_frame(pane)])
    for theme in ("light", "dark"):
        render_html_screenshot(html_view, artifact_dir / f"fixes_{theme}.png", theme=theme, width=1200)
