"""The recompiles view shows where the failing guard was made in the user's code: the stack torch
attaches to a recompile reason ("User stack trace:"), checked against torch's own record of the reasons
(``torch._dynamo.utils.guard_failures``), in the static HTML and in the widget's table."""
import html
import inspect
import textwrap
from pathlib import Path

import pytest
import torch

import compiler
from compiler.stages.breaks import traceback_frames
from compiler.stages.recompiles import parse_reasons
from explorer.page import render_static
from explorer.views import VIEWS, render_view
from explorer.views.recompiles import SHOWN_FRAMES

INJECTED = "<script>alert(1)</script>"
COLUMN = "guard made at (your code)"


def reshape_to(x, shape):
    return x.reshape(shape) * len("<script>alert(1)</script>")  # the guards on `shape` are made here


def net(x, shape):
    y = x.sin()
    return reshape_to(y, shape)


def line_of(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


@pytest.fixture(scope="module")
def recompiled():
    """Three calls: the target shape changes (a guard made at the reshape line fails), then the input's
    size changes too (a tensor check made on entry, with no user line: torch attaches none)."""
    torch._dynamo.reset()
    with compiler.capture() as cap:
        compiled = torch.compile(net, backend="eager")
        compiled(torch.randn(4, 8), (2, 16))
        compiled(torch.randn(4, 8), (8, 4))
        compiled(torch.randn(6, 8), (8, 6))
    torch_reasons = list(torch._dynamo.utils.guard_failures[net.__code__])
    return cap, torch_reasons


def test_user_stack_is_torch_s_stack_for_each_reason(recompiled):
    cap, torch_reasons = recompiled
    reasons = [reason for r in cap.recompiles for reason in r.reasons]
    assert len(reasons) == len(torch_reasons) == 3
    for reason, theirs in zip(reasons, torch_reasons):
        assert theirs.startswith(f"{reason.against}: {reason.guard}")
        _, _, stack = theirs.partition("\nUser stack trace:\n")
        assert reason.user_stack == (textwrap.dedent(stack).strip() or None)
    shape_reasons = [r for r in reasons if r.user_stack]
    assert [r.guard for r in shape_reasons] == ["shape[0] == 2", "shape[0] == 2"]
    frames = traceback_frames(shape_reasons[0].user_stack)
    assert [(f["file"], f["line"], f["function"]) for f in frames] == [
        (__file__, line_of(net, "return reshape_to"), "net"), (__file__, line_of(reshape_to, "x.reshape"), "reshape_to")]
    assert frames[-1]["code"].startswith("return x.reshape(shape)")


def test_recompiles_view_shows_the_user_line_escaped_in_static_html(recompiled):
    cap, _ = recompiled
    line = line_of(reshape_to, "x.reshape")
    for markup in (render_view("recompiles", cap, None), render_static(cap)):
        assert f'<code title="{html.escape(__file__)}">{Path(__file__).name}:{line}</code> in reshape_to' in markup
        assert html.escape('len("<script>alert(1)</script>")') in markup
        assert INJECTED not in markup and "<script>alert" not in markup


def test_recompiles_view_shows_the_user_line_in_the_widget(recompiled):
    from itables.widget import ITable

    from explorer import Explorer

    cap, _ = recompiled
    ui = Explorer(cap)
    ui.select("recompiles")
    index = next(i for i, v in enumerate(VIEWS) if v.key == "recompiles")
    (table,) = [w for w in ui.pieces[index].children if isinstance(w, ITable)]
    cells = list(table.df[COLUMN])
    line = line_of(reshape_to, "x.reshape")
    assert [f"{Path(__file__).name}:{line}</code> in reshape_to" in c for c in cells] == [True, False, True]
    assert all(INJECTED not in c for c in cells) and html.escape(INJECTED) in cells[0]


def test_long_stacks_fold_their_outer_calls():
    frames = [f'  File "/src/m{i}.py", line {i + 1}, in f{i}\n    step_{i}(x)' for i in range(6)]
    payload = "0/0: n == 2\nUser stack trace:\n" + "\n".join(frames)
    (reason,) = parse_reasons(payload)  # one reason is plain text, not JSON
    assert [f["function"] for f in traceback_frames(reason["user_stack"])] == [f"f{i}" for i in range(6)]
    from compiler.stages.schema import RecompileReason
    from explorer.views.recompiles import _user_stack

    markup = _user_stack(RecompileReason(**reason))
    folded, shown = markup.split("</details>")
    assert "4 outer calls" in folded and all(f"step_{i}(x)" in folded for i in range(4))
    assert all(f'title="/src/m{i}.py">m{i}.py:{i + 1}</code>' in shown for i in range(6 - SHOWN_FRAMES + 1, 6))
    assert 'start="5"' in shown


@pytest.mark.browser
def test_screenshots(recompiled, artifact_dir):
    from jupyterlab_harness import open_browser, render_html_screenshot, require_browser

    from explorer.html import join, style_tag, view_frame

    require_browser()
    cap, _ = recompiled
    html_view = join([style_tag(), view_frame(render_view("recompiles", cap, None))])
    with open_browser() as page:
        page.set_content(html_view, wait_until="load")
        frames = page.locator("ol.tc-user-stack li")
        assert frames.count() == 4 and "reshape_to" in frames.nth(1).inner_text()
        assert 'len("<script>alert(1)</script>")' in frames.nth(1).inner_text()  # shown as text, not run
    for theme in ("light", "dark"):  # for people to look at
        render_html_screenshot(html_view, artifact_dir / f"recompiles_{theme}.png", theme=theme, width=1200)
