"""What-if over the whole call: the dry run (``cap.what_if(fn, *args, dry_run=True)``) predicts exactly
the frames the real call then recompiles, counted from torch's own recompile records
(``torch._dynamo.utils.guard_failures``, which Dynamo appends to each time it recompiles a frame),
including frames the no-run check cannot see: resume frames after a graph break and hooks."""
from __future__ import annotations

import inspect

import pytest
import torch
from torch._dynamo.utils import counters, guard_failures

import compiler
from compiler.analyses.whatif import DryRun, FrameRecompile, WhatIf

SCALE = 2
HOOK_STATE = {"scale": 2.0}


def after_break_global(x):
    y = x.sin()
    torch._dynamo.graph_break()
    return y * SCALE


def after_break_arg(x, z):
    y = x.sin()
    torch._dynamo.graph_break()
    return y + z.sum()


def after_break_int(x, n):
    y = x.sin()
    torch._dynamo.graph_break()
    return y * n


def entry_global(x):
    return x.cos() * SCALE


def dict_keys(d):
    total = 0
    for key, value in d.items():
        total = total + value * len(key)
    return total


def helper(x):
    y = x.cos()
    torch._dynamo.graph_break()
    return y * SCALE


def calls_helper(x):
    return helper(x.sin()) + 1


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.scale = 2

    def forward(self, x):
        y = self.lin(x)
        torch._dynamo.graph_break()
        return y * self.scale


def state_hook(module, args, output):
    return output * HOOK_STATE["scale"]


def resume(fn) -> str:
    """The name of the resume frame Dynamo makes for the graph break in ``fn``."""
    lines, start = inspect.getsourcelines(fn)
    line = start + next(i for i, text in enumerate(lines) if "graph_break()" in text)
    return f"torch_dynamo_resume_in_{fn.__name__}_at_{line}"


def recompiled_by(call) -> list[str]:
    """The frames a real call recompiled, from torch's records (one entry per recompile)."""
    before = {code: len(reasons) for code, reasons in guard_failures.items()}
    call()
    return sorted(code.co_name for code, reasons in guard_failures.items()
                  for _ in range(len(reasons) - before.get(code, 0)))


def predict_and_call(cap, fn, *args, **kwargs) -> tuple[DryRun, list[str]]:
    compiled_before = counters["frames"]["ok"]
    dry = cap.what_if(fn, *args, dry_run=True, **kwargs)
    assert isinstance(dry, DryRun)
    assert counters["frames"]["ok"] == compiled_before, "the dry run must compile nothing"
    call_fn = cap.live.compiled_fn
    real = recompiled_by(lambda: call_fn(*args, **kwargs))
    return dry, real


def assert_exact(dry: DryRun, real: list[str]) -> None:
    assert sorted(r.frame.function for r in dry.recompiles) == real
    assert bool(dry.recompiles) == bool(real)


@pytest.fixture(autouse=True)
def _restore_globals():
    global SCALE
    yield
    SCALE = 2
    HOOK_STATE["scale"] = 2.0


def explore(fn, *args, backend="eager", **kwargs):
    return compiler.explore(fn, *args, backend=backend, timing=False, dynamic=False, **kwargs)


def test_the_issue_example_a_global_read_after_a_break():
    global SCALE
    x = torch.randn(4)
    cap = explore(after_break_global, x, backend="aot_eager")
    SCALE = 3
    quick = cap.what_if(after_break_global, x)
    assert isinstance(quick, WhatIf) and quick.accepted_by == "0/0"
    assert [f.function for f in quick.not_checked] == [resume(after_break_global)]
    assert f"not checked: the frame after the graph break at line {resume(after_break_global).rsplit('_', 1)[1]}" in quick.as_text()
    dry, real = predict_and_call(cap, after_break_global, x)
    assert_exact(dry, real)
    assert real == [resume(after_break_global)]
    frame = dry.recompiles[0]
    assert isinstance(frame, FrameRecompile) and frame.failed_guard == "G['SCALE'] == 2"
    assert frame.frame.compile_ids == ["1/0"] and "[dry run: the function ran once]" in dry.as_text()


def test_unchanged_call_is_a_control():
    x = torch.randn(4)
    cap = explore(after_break_global, x)
    dry, real = predict_and_call(cap, after_break_global, x)
    assert_exact(dry, real)
    assert real == [] and dry.recompiles == []
    assert [(r.frame.function, r.compile_id) for r in dry.reused] == [
        ("after_break_global", "0/0"), (resume(after_break_global), "1/0")]
    assert dry.as_text().startswith("no recompile")


def test_module_attribute_read_after_a_break():
    model = Scaled()
    x = torch.randn(2, 4)
    cap = explore(model, x)
    model.scale = 3
    assert not cap.what_if(model, x).recompiles  # the entry frame alone accepts it
    dry, real = predict_and_call(cap, model, x)
    assert_exact(dry, real)
    assert len(real) == 1 and real == [resume(Scaled.forward)]
    assert "scale" in dry.recompiles[0].failed_guard


def test_hook_state():
    model = torch.nn.Linear(4, 4)
    model.register_forward_hook(state_hook)
    x = torch.randn(2, 4)
    cap = explore(model, x)
    HOOK_STATE["scale"] = 3.0
    dry, real = predict_and_call(cap, model, x)
    assert_exact(dry, real)
    assert real and "HOOK_STATE" in dry.recompiles[0].failed_guard


def test_a_hook_added_after_the_compile():
    model = torch.nn.Linear(4, 4)
    model.register_forward_hook(state_hook)  # compiled with its hooks: Dynamo guards on them
    x = torch.randn(2, 4)
    cap = explore(model, x)
    handle = model.register_forward_hook(lambda module, args, output: output + 1)
    try:
        dry, real = predict_and_call(cap, model, x)
    finally:
        handle.remove()
    assert_exact(dry, real)
    assert len(real) == 1 and "hooks" in dry.recompiles[0].failed_guard


def test_a_hook_on_a_module_compiled_without_hooks_runs_outside_the_compile():
    model = torch.nn.Linear(4, 4)
    x = torch.randn(2, 4)
    cap = explore(model, x)
    handle = model.register_forward_hook(state_hook)
    try:
        dry, real = predict_and_call(cap, model, x)
    finally:
        handle.remove()
    assert_exact(dry, real)
    assert real == [] and [r.compile_id for r in dry.reused] == ["0/0"]


def test_a_shape_that_reaches_only_the_resume_frame():
    x = torch.randn(4)
    cap = explore(after_break_arg, x, torch.randn(3))
    assert not cap.what_if(after_break_arg, x, torch.randn(5)).recompiles  # z is not read before the break
    dry, real = predict_and_call(cap, after_break_arg, x, torch.randn(5))
    assert_exact(dry, real)
    assert real == [resume(after_break_arg)]
    assert "size mismatch" in dry.recompiles[0].failed_guard


def test_a_dtype_that_reaches_only_the_resume_frame():
    x = torch.randn(4)
    cap = explore(after_break_arg, x, torch.randn(3))
    dry, real = predict_and_call(cap, after_break_arg, x, torch.randn(3, dtype=torch.float64))
    assert_exact(dry, real)
    assert real == [resume(after_break_arg)]
    assert "dtype mismatch" in dry.recompiles[0].failed_guard


def test_a_python_int_that_reaches_only_the_resume_frame():
    x = torch.randn(4)
    cap = explore(after_break_int, x, 2)
    dry, real = predict_and_call(cap, after_break_int, x, 3)
    assert_exact(dry, real)
    assert real == [resume(after_break_int)]
    assert dry.recompiles[0].failed_guard == "n == 2"  # torch strips L[...]


def test_requires_grad_in_the_entry_frame_agrees_with_the_no_run_check():
    cap = explore(entry_global, torch.randn(4))
    x = torch.randn(4, requires_grad=True)
    quick = cap.what_if(entry_global, x)
    dry, real = predict_and_call(cap, entry_global, x)
    assert_exact(dry, real)
    assert real == ["entry_global"] and quick.recompiles
    assert "requires_grad" in dry.recompiles[0].failed_guard


def test_dict_keys():
    cap = explore(dict_keys, {"a": torch.ones(2), "bb": torch.ones(2)})
    same_keys = {"a": torch.zeros(2), "bb": torch.zeros(2)}
    dry, real = predict_and_call(cap, dict_keys, same_keys)
    assert_exact(dry, real)
    assert real == []
    dry, real = predict_and_call(cap, dict_keys, {"a": torch.ones(2), "ccc": torch.ones(2)})
    assert_exact(dry, real)
    assert real == ["dict_keys"]


def test_a_global_read_after_a_break_in_a_called_function():
    global SCALE
    x = torch.randn(4)
    cap = explore(calls_helper, x)
    SCALE = 5
    quick = cap.what_if(calls_helper, x)
    assert not quick.recompiles and len(quick.not_checked) >= 2  # helper's frames are their own
    dry, real = predict_and_call(cap, calls_helper, x)
    assert_exact(dry, real)
    assert real == [resume(helper)]


def test_an_entry_frame_that_recompiles_names_the_frames_it_could_not_reach():
    """When the entry frame would recompile it runs eagerly as a whole: its resume frames are not
    reached, and the answer says so (the real call may recompile them too)."""
    x = torch.randn(4)
    cap = explore(after_break_global, x)
    dry, real = predict_and_call(cap, after_break_global, torch.randn(6))
    assert dry.recompiles and real
    assert [r.frame.function for r in dry.recompiles] == ["after_break_global"]
    assert set(real) <= {"after_break_global", *(f.function for f in dry.not_checked)}
    assert "not reached" in dry.as_text()


def test_dry_run_restores_the_profile_hook_and_the_stance_and_reports_errors():
    import sys

    def boom(x):
        y = x.sin()
        torch._dynamo.graph_break()
        if y.sum() > -1e9:
            raise ValueError("user code failed")
        return y

    cap = explore(after_break_global, torch.randn(4))
    sentinel = []
    sys.setprofile(lambda *a: sentinel.append(1))
    try:
        cap.what_if(after_break_global, torch.randn(4), dry_run=True)
        assert sys.getprofile() is not None and sentinel  # chained and put back
    finally:
        sys.setprofile(None)
    cap = compiler.explore(boom, torch.randn(4), backend="eager", timing=False, errors="return")
    dry = cap.what_if(boom, torch.randn(4), dry_run=True)
    assert dry.error == "ValueError: user code failed" and not dry.recompiles
    assert torch.compiler.is_compiling() is False
    from torch._dynamo.eval_frame import _stance

    assert _stance.stance == "default"
    with pytest.raises(TypeError, match="not a code object"):
        cap.what_if(boom.__code__, torch.randn(4), dry_run=True)


# --- the explorer's what-if panel ------------------------------------------------------------------

def test_panel_offers_both_modes_on_the_selected_compile_and_refuses_bad_input():
    global SCALE
    from explorer import Explorer

    cap = explore(after_break_arg, torch.randn(4), torch.randn(3))
    ui = Explorer(cap, namespace={"torch": torch})
    panel = ui.what_if
    ui.selector.value = 0
    assert panel.arguments.placeholder == "x=torch.randn(4), z=torch.randn(3)"  # the captured call's
    assert "Enter the arguments of the call" in panel.ask("   ")
    missing = panel.ask("x=torch.randn(4)")
    assert "Missing arguments" in missing and "z=torch.randn(3)" in missing
    quick = panel.ask("torch.randn(4), torch.randn(5)", mode="check")
    assert "accepted by compile 0/0" in quick and "not checked" in quick
    dry = panel.ask("torch.randn(4), torch.randn(5)", mode="dry")
    assert "would recompile" in dry and "size mismatch" in dry and "runs your code" in panel.header.value.lower()
    assert counters["frames"]["ok"] == 2  # the dry run compiled nothing
    resume_index = next(i for i, c in enumerate(cap.compiles) if c.name == resume(after_break_arg))
    ui.selector.value = resume_index
    panel.mode.value = "check"
    assert f"compile {cap.compiles[resume_index].compile_id}" in panel.header.value
    assert "torch.randn(4)" in panel.arguments.placeholder and "z=torch.randn(3)" in panel.arguments.placeholder
    code = cap.frame_code(cap.compiles[resume_index].compile_id)
    args = {name: torch.randn(4) if name != "z" else torch.randn(7) for name in code.co_varnames[:code.co_argcount]}
    text = ", ".join(f"{name}=torch.randn({tuple(value.shape)[0]})" for name, value in args.items()
                     if name.isidentifier() and not name.startswith("___"))
    stack = [name for name in args if name.startswith("___")]
    text = ", ".join([*(f"{name}=None" for name in stack), text])
    answer = panel.ask(text)
    assert "recompile: guard failed" in answer and "size" in answer  # the resume frame's own guards


def test_dry_run_of_a_function_the_user_compiled_inside_capture():
    """No compiled function at hand (``compiler.capture()``): the plain function runs in Dynamo's
    run-only mode, so the cached compiles are used and nothing is compiled."""
    global SCALE
    compiled = torch.compile(after_break_global, backend="eager")
    with compiler.capture() as cap:
        compiled(torch.randn(4))
    assert cap.live.compiled_fn is None
    SCALE = 4
    before = counters["frames"]["ok"]
    dry = cap.what_if(after_break_global, torch.randn(4), dry_run=True)
    assert counters["frames"]["ok"] == before
    real = recompiled_by(lambda: compiled(torch.randn(4)))
    assert_exact(dry, real)
    assert real == [resume(after_break_global)]
