"""The Fixes tab, the Overview's fix line and the Graph breaks row's "fix: …" (explorer.views.fixes)."""
from __future__ import annotations

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
    assert "2 changes together remove 2 of 3 graph breaks" in overview and "— measured" in overview
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
    assert not panel.try_all.disabled and [o[1] for o in panel.choice.options] == ["fix1", "fix2"]
    fixes_tab = ui.select("fixes")
    assert "not tried" in fixes_tab.value.lower()
    panel.try_all.click()
    assert all(fix.result is not None for fix in cap.fixes() if fix.applicable)
    assert "Outputs equal eager" in ui.select("fixes").value and panel.status.value.startswith("done")

    loaded = Explorer(compiler.Capture.from_json(cap.to_json()))
    assert loaded.fixes_panel.try_all.disabled and "Try needs the live function" in loaded.fixes_panel.status.value
