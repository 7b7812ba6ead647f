"""%%tcompile / %tcompile in a real IPython shell, with real (mostly backend="eager") compiles."""
from __future__ import annotations

import json
import linecache

import pytest
import torch
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from torch._dynamo.utils import counters

import compiler
import explorer
from explorer import cell as cell_mod
from explorer import magics


@pytest.fixture(scope="module")
def shell():
    sh = InteractiveShell.instance()
    magics.register(sh)
    sh.run_cell("import torch\nx = torch.arange(4.0)\nw = 3.0")
    return sh


@pytest.fixture(autouse=True)
def shown(monkeypatch):
    """Record what the magics hand to explorer.show instead of drawing it."""
    calls = []
    monkeypatch.setattr(explorer.widget, "show", lambda cap, fn=None, namespace=None: calls.append((cap, fn, namespace)),
                        raising=False)
    return calls


def run(shell, text):
    return shell.run_cell(text)


def graph_breaks() -> int:
    return sum(counters["graph_break"].values())


# --- the cell form -------------------------------------------------------------------------------

BREAK_CELL = """\
y = x * w
print("hello from the cell", y)
z = y + 1
z.sum()"""


@pytest.fixture(scope="module")
def break_run(shell):
    """One shared compile: a cell with a graph break (print) at notebook line 3."""
    calls = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(explorer.widget, "show", lambda cap, fn=None, namespace=None: calls.append((cap, fn, namespace)),
                   raising=False)
        before = graph_breaks()
        result = run(shell, f"%%tcompile --backend eager --name cap_break --repeat 3\n{BREAK_CELL}")
        delta = graph_breaks() - before
    return result, shell.user_ns["cap_break"], delta, calls


def test_graph_break_is_counted_and_points_at_the_cell_line(break_run):
    result, cap, delta, _ = break_run
    assert result.error_in_exec is None
    assert cap.error is None
    assert delta == 1 == cap.summary.graph_breaks
    item = cap.breaks[0]
    assert item.line == 3  # the %%tcompile line is line 1, as in the notebook
    assert item.code == 'print("hello from the cell", y)'
    assert item.file.startswith("<tcompile-cell-")
    assert linecache.getline(item.file, 3).strip() == item.code


def test_fx_comments_and_source_show_the_cell(break_run):
    _, cap, _, _ = break_run
    first = cap.compiles[0]
    assert first.name == cell_mod.FUNCTION_NAME
    assert first.source.as_text().startswith("def tcompile_cell(x, w):")
    assert "print(\"hello from the cell\", y)" in first.source.as_text()
    graph = first.graph.as_text()
    assert ":2 in tcompile_cell, code: y = x * w" in graph
    assert "L_x_" in graph  # the notebook's tensor is an input of the compiled function


def test_assigned_names_written_back_and_equal_eager(break_run, shell):
    result, _, _, _ = break_run
    x, w = shell.user_ns["x"], shell.user_ns["w"]
    torch.testing.assert_close(shell.user_ns["y"], x * w)
    torch.testing.assert_close(shell.user_ns["z"], x * w + 1)
    torch.testing.assert_close(result.result, (x * w + 1).sum())  # the last expression is the cell's Out
    assert cell_mod.OUT not in shell.user_ns


def test_explorer_shown_with_the_capture(break_run, shell):
    _, cap, _, calls = break_run
    assert calls == [(cap, cap.live.compiled_fn, shell.user_ns)]
    assert cap.options["backend"] == "eager" and cap.options["magic"] == "%%tcompile"


def test_what_if_on_the_cell_inputs(shell):
    # conftest resets Dynamo between tests, so this test compiles its own cell
    run(shell, "%%tcompile --backend eager --no-timing --name cap_wi\nwi = x * w")
    cap = shell.user_ns["cap_wi"]
    assert cap.what_if(cap.live.compiled_fn).accepted_by == "0/0"  # defaults: the inputs the cell ran with
    changed = cap.what_if(cap.live.compiled_fn, x=torch.zeros(7))  # another shape for L['x']
    assert changed.recompiles and "L['x']" in changed.checks[0].failed_guard


def test_real_explorer_show_displays_without_error(shell, monkeypatch, capsys):
    monkeypatch.undo()  # the real explorer.show, whichever is installed
    result = run(shell, "%%tcompile --backend eager --no-timing\nshown_y = x - 1")
    assert result.error_in_exec is None
    assert "could not display" not in capsys.readouterr().err


def test_load_ext_registers_the_magics():
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "explorer")
    assert sh.find_cell_magic("tcompile") and sh.find_line_magic("tcompile")


def test_timing_reruns_cell_quietly_on_copies(shell, capsys):
    shell.run_cell("t = torch.zeros(2)")
    capsys.readouterr()
    run(shell, "%%tcompile --backend eager --name cap_t --repeat 2\nt.add_(1)\nprint('ran')\nu = t * 2")
    out = capsys.readouterr().out
    assert out.count("ran") == 1  # timing runs print nothing
    torch.testing.assert_close(shell.user_ns["t"], torch.ones(2))  # in-place update applied once
    torch.testing.assert_close(shell.user_ns["u"], torch.full((2,), 2.0))
    runtime = shell.user_ns["cap_t"].runtime
    assert runtime.available and runtime.compiled.samples == 2 and "re-run" in runtime.note


def test_show_receives_capture_fn_and_namespace(shell, shown):
    run(shell, "%%tcompile --backend eager --no-timing\nq = x + 1")
    cap, fn, namespace = shown[-1]
    assert isinstance(cap, compiler.Capture)
    assert callable(fn) and namespace is shell.user_ns


def test_fullgraph_failure_keeps_stages_and_error_stage(shell, capsys):
    shell.user_ns.pop("fg_y", None)
    result = run(shell, "%%tcompile --backend eager --fullgraph --name cap_fg\nfg_y = x + 1\nprint(fg_y)\nfg_z = fg_y * 2")
    assert result.error_in_exec is None  # no exception escapes
    cap = shell.user_ns["cap_fg"]
    assert cap.error.type == "Unsupported"
    assert "fullgraph" in cap.error.stage
    assert cap.compiles and cap.compiles[0].source.available  # what was captured is still there
    assert cap.compiles[0].error.line == 3 and cap.compiles[0].error.file.startswith("<tcompile-cell-")
    assert cap.runtime.reason.startswith("not timed")
    assert "fg_y" not in shell.user_ns
    err = capsys.readouterr().err
    assert "tcompile: Unsupported in Dynamo tracing" in err and "Traceback" not in err


def test_cell_raising_keeps_kernel_alive_and_namespace_consistent(shell, capsys):
    shell.run_cell("before = 1")
    result = run(shell, "%%tcompile --backend eager --name cap_err\nbefore = 2\nafter = x + 1\n"
                        "raise ValueError('boom')")
    assert result.error_in_exec is None
    cap = shell.user_ns["cap_err"]
    assert cap.error.type == "ValueError" and "boom" in cap.error.message
    assert cap.error.stage == "running the user's code"
    assert shell.user_ns["before"] == 1 and "after" not in shell.user_ns  # nothing half-written
    assert "nothing was written back" in capsys.readouterr().err
    assert shell.run_cell("before + 41").result == 42  # the kernel goes on


def test_syntax_error_cell(shell, shown, capsys):
    result = run(shell, "%%tcompile --backend eager --name cap_syn\ny = 1\nz = (x +\n")
    assert result.error_in_exec is None
    cap = shell.user_ns["cap_syn"]
    assert cap.error.type == "SyntaxError"
    assert cap.error.stage.startswith("parsing the cell")
    assert cap.compiles == []
    assert shown[-1][0] is cap
    assert "SyntaxError in parsing the cell" in capsys.readouterr().err


def test_top_level_return_is_rejected(shell):
    run(shell, "%%tcompile --backend eager --name cap_ret\nreturn x")
    assert "'return' outside function" in shell.user_ns["cap_ret"].error.message


def test_dynamic_false_name_and_save(shell, tmp_path):
    path = tmp_path / "cell.json"
    run(shell, f"%%tcompile --dynamic false --backend eager --no-timing --name cap_s --save {path}\nds = x.cos()")
    cap = shell.user_ns["cap_s"]
    assert cap.options["dynamic"] is False and cap.options["backend"] == "eager"
    assert cap.runtime.reason.startswith("timing was turned off")
    loaded = compiler.load(path)
    assert loaded.to_data() == json.loads(cap.to_json())
    assert len(loaded.compiles) == 1
    assert "ds" in shell.user_ns


def test_stance_force_eager_runs_without_compiling(shell):
    run(shell, "%%tcompile --backend eager --stance force_eager --no-timing --name cap_fe\nfe = x * 2")
    cap = shell.user_ns["cap_fe"]
    assert cap.compiles == [] and cap.options["stance"] == "force_eager"
    torch.testing.assert_close(shell.user_ns["fe"], shell.user_ns["x"] * 2)


def test_cache_free_by_default_cached_opts_out(shell):
    """Issue 16 item 5: the cell compiles with Inductor's caches off unless --cached; --fresh is the default."""
    for flags, fresh in (("", True), ("--fresh", True), ("--cached", False)):
        run(shell, f"%%tcompile {flags} --backend eager --no-timing --name cap_c\ncc = x + 1")
        options = shell.user_ns["cap_c"].options
        assert options["fresh"] is fresh and options["caches_enabled"] is not fresh, flags


@pytest.mark.slow
def test_inductor_cell_with_loop_and_module(shell):
    """The default backend, once: kernels captured; names assigned in a loop come back."""
    shell.run_cell("model = torch.nn.Linear(4, 2)\nxs = torch.randn(8, 4)")
    run(shell, "%%tcompile --repeat 2 --name cap_ind\nfor step in range(2):\n    acts = model(xs).relu() * step\n"
               "total = acts.sum()")
    cap = shell.user_ns["cap_ind"]
    assert cap.error is None and cap.options["backend"] == "inductor"
    assert cap.compiles[0].kernels.available
    assert shell.user_ns["step"] == 1
    with torch.no_grad():
        torch.testing.assert_close(shell.user_ns["acts"], shell.user_ns["model"](shell.user_ns["xs"]).relu())
    assert cap.runtime.available and cap.runtime.compiled.samples == 2


def test_timing_notes_recompiles_while_timing(shell):
    run(shell, "%%tcompile --backend eager --repeat 2 --name cap_rc\nclass Point:\n    pass\n"
               "rc = x + 1\nrc_point = Point()")
    runtime = shell.user_ns["cap_rc"].runtime
    assert runtime.available and runtime.recompiles_while_timing >= 1 and "recompiles" in runtime.note


def test_compiles_inside_the_cell_are_captured(shell):
    shell.run_cell("def double(a):\n    return a * 2\n"
                   "inner = torch.compile(double, backend='eager')\n"
                   "@torch._dynamo.disable\ndef run_eagerly(a):\n    return inner(a)\n")
    run(shell, "%%tcompile --backend eager --no-timing --name cap_in\nin_out = inner(x) + 1\nin_eager = run_eagerly(x)")
    cap = shell.user_ns["cap_in"]
    # traced from the cell, a compiled function is inlined into the cell's graph …
    assert "in double, code: return a * 2" in cap.compiles[0].graph.as_text()
    # … and one that runs outside the cell's trace is compiled (and captured) on its own
    assert "double" in [c.name for c in cap.compiles]
    torch.testing.assert_close(shell.user_ns["in_out"], shell.user_ns["x"] * 2 + 1)
    torch.testing.assert_close(shell.user_ns["in_eager"], shell.user_ns["x"] * 2)


# --- options --------------------------------------------------------------------------------------

@pytest.mark.parametrize("line, message", [
    ("--options '{\"max_autotun\": True}'", "unknown Inductor option 'max_autotun'; did you mean 'max_autotune'"),
    ("--bogus", "unrecognized arguments: --bogus"),
    ("stray", "unrecognized arguments: stray"),
    ("--options='{\"max_autotun\": True}'", "unknown Inductor option 'max_autotun'"),
    ("--backend indcutor", "did you mean 'inductor'"),
    ("--dynamic maybe", "argument --dynamic: invalid choice"),
    ("--stance nope", "argument --stance: invalid choice"),
    ("--mode max-autotune --options '{\"debug\": True}'", "--mode: cannot be used together with options"),
    ("--options '[1, 2]'", "--options: must be a dict"),
    ("--repeat 0", "--repeat must be at least 1"),
])
def test_bad_option_is_one_line_usage_error(shell, line, message):
    result = run(shell, f"%%tcompile {line}\nbad = 1")
    assert isinstance(result.error_in_exec, UsageError)
    assert message in str(result.error_in_exec) and "\n" not in str(result.error_in_exec)
    assert "bad" not in shell.user_ns


def test_options_accepts_json_and_python_literals(shell):
    args = magics.TcompileMagics.tcompile.parser.parse_args(["--options", "'{\"max_autotune\": true}'"])
    assert magics.parse_options(args, {}).compile_kwargs["options"] == {"max_autotune": True}
    args = magics.TcompileMagics.tcompile.parser.parse_args(["--options", "{'max_autotune':True}"])
    assert magics.parse_options(args, {}).compile_kwargs["options"] == {"max_autotune": True}


def test_help_lists_the_options(shell, capsys):
    shell.run_cell("%tcompile?")
    text = capsys.readouterr().out
    for option in ("--backend", "--mode", "--dynamic", "--fullgraph", "--options", "--cached", "--no-timing",
                   "--repeat", "--stance", "--name", "--save"):
        assert option in text


# --- the line form --------------------------------------------------------------------------------

def test_line_magic_compiles_one_call(shell, shown):
    shell.run_cell("def f(a, k=1):\n    return (a + k).sin()\n")
    result = run(shell, "%tcompile --backend eager --repeat 2 --name cap_line f(x, k=2)")
    assert result.error_in_exec is None
    cap = shell.user_ns["cap_line"]
    assert [c.name for c in cap.compiles] == ["f"] and cap.error is None
    assert cap.runtime.available and cap.options["magic"] == "%tcompile"
    assert shown[-1][0] is cap and shown[-1][1] is cap.live.compiled_fn


def test_line_magic_fullgraph_failure(shell, capsys):
    shell.run_cell("def g(a):\n    print('side effect')\n    return a + 1\n")
    result = run(shell, "%tcompile --fullgraph --backend eager --name cap_lfg g(x)")
    assert result.error_in_exec is None
    assert "fullgraph" in shell.user_ns["cap_lfg"].error.stage
    assert "tcompile: Unsupported" in capsys.readouterr().err


@pytest.mark.parametrize("line, message", [
    ("x + 1", "EXPR must be a call"),
    ("", "needs a call"),
    ("nope(x)", "NameError"),
])
def test_line_magic_bad_expression(shell, line, message):
    result = run(shell, f"%tcompile --backend eager {line}")
    assert isinstance(result.error_in_exec, UsageError) and message in str(result.error_in_exec)


def test_split_line_keeps_the_expression_intact():
    assert magics.split_line("--fullgraph --backend eager f(x, s='a b')") == \
        ("--fullgraph --backend eager", "f(x, s='a b')")
    assert magics.split_line("--options '{\"a\": 1}' --name c (lambda v: v)(x)") == \
        ("--options '{\"a\": 1}' --name c", "(lambda v: v)(x)")
    assert magics.split_line("--options='{\"a\": 1}' --name=c f(x)") == ("--options '{\"a\": 1}' --name c", "f(x)")


# --- the cell as a function (no compile) ------------------------------------------------------------

def call_cell(source, namespace):
    compiled = cell_mod.compile_cell(source, namespace)
    value = compiled.write_back(namespace, compiled.fn(*compiled.arguments(namespace)))
    return compiled, value


def test_cell_function_parameters_and_write_back():
    import math

    ns = {"math": math, "a": 2, "big": 10, "gone": 5}
    compiled, value = call_cell(
        "b = math.sqrt(a)\n"
        "if a > big:\n    maybe = 1\n"
        "squares = [i * i for i in range(a)]\n"
        "def helper(v):\n    return v + b\n"
        "a += 1\n"
        "del gone\n"
        "helper(1);  # quiet", ns)
    assert compiled.params == ["a", "big", "gone", "maybe"]  # modules stay globals; maybe/del must be bound
    assert value is None  # a trailing ';' hides the value, as in IPython
    assert ns["b"] == math.sqrt(2) and ns["a"] == 3 and ns["squares"] == [0, 1]
    assert "maybe" not in ns and "gone" not in ns and "i" not in ns
    assert ns["helper"](1) == 1 + math.sqrt(2)


def test_cell_source_is_registered_with_notebook_line_numbers():
    compiled, value = call_cell("p = 1\n\nq = p + 1\nq * 10", {})
    assert value == 20
    lines = linecache.getlines(compiled.filename)
    assert lines[0].startswith("def tcompile_cell(")
    assert lines[3].strip() == "q = p + 1"  # notebook line 4 (the %%tcompile line is line 1)
    assert compiled.fn.__code__.co_firstlineno == 1


def test_cell_syntax_error_uses_notebook_line_numbers():
    with pytest.raises(SyntaxError) as info:
        cell_mod.compile_cell("ok = 1\nnot ok = 2", {})
    assert info.value.lineno == 3


def test_progress_is_silent_outside_a_frontend_and_cleans_up_in_one(capsys):
    with magics.Progress(object(), "compiling"):
        pass
    assert capsys.readouterr().out == ""

    class FakeKernelShell:
        kernel = object()

    with magics.Progress(FakeKernelShell(), "compiling") as progress:
        assert progress.label is not None and progress.label.value == "compiling…"  # shown
        progress.set("timing")
        assert progress.label.value == "timing…"
    assert progress.label.comm is None and not progress.thread.is_alive()  # closed, no longer ticking


# --- in a real Jupyter kernel ------------------------------------------------------------------------

def test_in_a_real_kernel():
    """%load_ext explorer, progress display (replaced when done), explorer output, Out, error line."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    from pathlib import Path

    repo = str(Path(__file__).resolve().parents[1])
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in (
        f"import sys; sys.path.insert(0, {repo!r})\n%load_ext explorer\nimport torch\nx = torch.ones(4)",
        "%%tcompile --backend eager --repeat 2\ny = x * 2\nprint('in the cell')\ny.sum()",
        "%%tcompile --backend eager\nraise ValueError('boom')",
        "print(y.tolist())",
    )]
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True).execute()
    ok, failing, after = nb.cells[1].outputs, nb.cells[2].outputs, nb.cells[3].outputs
    assert not [o for c in nb.cells for o in c.outputs if o.output_type == "error"]
    assert {"output_type": "display_data", "metadata": {}, "data": {"text/plain": ""}} in ok  # progress, cleared
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in ok)  # the explorer
    assert [o.data["text/plain"] for o in ok if o.output_type == "execute_result"] == ["tensor(8.)"]
    assert [o.text for o in ok if o.output_type == "stream"] == ["in the cell\n"]
    assert any(o.output_type == "stream" and o.name == "stderr" and "ValueError" in o.text for o in failing)
    assert after[0].text == "[2.0, 2.0, 2.0, 2.0]\n"


# --- clear errors, safe names (issue 14 item 7) ----------------------------------------------------

def test_line_form_refuses_what_is_not_callable(shell):
    shell.run_cell("notcallable = 5")
    result = run(shell, "%tcompile --backend eager notcallable(x)")
    assert isinstance(result.error_in_exec, UsageError)
    assert str(result.error_in_exec) == "%tcompile: notcallable is int (5), not a function or module: nothing to compile"


def test_explore_refuses_what_is_not_callable_in_one_line():
    with pytest.raises(TypeError) as raised:
        compiler.explore(5, errors="return")
    assert str(raised.value) == ("tcompile: nothing to compile: fn must be a function, method or nn.Module, "
                                 "got int (5)")


@pytest.mark.parametrize("line, message", [
    ("%%tcompile --backend eager --name class\nkw = x + 1", "not a keyword, got 'class'"),
    ("%%tcompile --backend eager --name x\nkw = x + 1", "--name x: the cell uses 'x'"),
    ("%%tcompile --backend eager --name kw\nkw = x + 1", "--name kw: the cell uses 'kw'"),
    ("%%tcompile --backend eager --name torch\nkw = torch.sin(x)", "--name torch: the cell uses 'torch'"),
    ("%tcompile --backend eager --name x torch.sin(x)", "--name x: the call uses 'x'"),
])
def test_name_refuses_keywords_and_names_the_code_uses(shell, line, message):
    before = dict(shell.user_ns)
    result = run(shell, line)
    assert isinstance(result.error_in_exec, UsageError) and message in str(result.error_in_exec)
    assert "\n" not in str(result.error_in_exec)
    assert shell.user_ns["x"] is before["x"] and shell.user_ns["torch"] is torch and "kw" not in shell.user_ns


def test_fail_on_recompile_is_refused_on_a_first_run_and_checks_reruns(shell):
    cell = "%%tcompile --backend eager --no-timing --name cap_st{flag}\nst = x.sin() + 1"
    refused = run(shell, cell.format(flag=" --stance fail_on_recompile"))
    assert isinstance(refused.error_in_exec, UsageError)
    assert "has not been compiled yet" in str(refused.error_in_exec) and "st" not in shell.user_ns
    assert run(shell, cell.format(flag="")).error_in_exec is None
    assert len(shell.user_ns["cap_st"].compiles) == 1
    rerun = run(shell, cell.format(flag=" --stance fail_on_recompile"))
    cap = shell.user_ns["cap_st"]
    assert rerun.error_in_exec is None and cap.error is None and cap.compiles == []  # torch reused its compile
    torch.testing.assert_close(shell.user_ns["st"], shell.user_ns["x"].sin() + 1)
    shell.user_ns["x"] = torch.arange(6.0)  # another shape: the stance refuses the recompile
    try:
        run(shell, cell.format(flag=" --stance fail_on_recompile"))
        cap = shell.user_ns["cap_st"]
        assert cap.error.stage.startswith("guards / recompile (the stance 'fail_on_recompile'")
    finally:
        shell.user_ns["x"] = torch.arange(4.0)


def test_fail_on_recompile_in_the_line_form_checks_reruns_of_the_same_function(shell, capsys):
    shell.run_cell("def lf(a):\n    return a.cos() * 2")
    line = "%tcompile --backend eager --no-timing --name cap_lf{flag} lf({arg})"
    stance = " --stance fail_on_recompile"
    refused = run(shell, line.format(flag=stance, arg="x"))  # never compiled: refused up front, with the reason
    assert isinstance(refused.error_in_exec, UsageError) and "\n" not in str(refused.error_in_exec)
    assert "torch holds no compile of lf" in str(refused.error_in_exec)
    assert "run %tcompile lf(x) once without --stance" in str(refused.error_in_exec)
    assert "cap_lf" not in shell.user_ns
    assert run(shell, line.format(flag="", arg="x")).error_in_exec is None
    assert len(shell.user_ns["cap_lf"].compiles) == 1
    graphs = counters["stats"]["unique_graphs"]
    rerun = run(shell, line.format(flag=stance, arg="x"))  # same function, same shape: torch reuses its compile
    cap = shell.user_ns["cap_lf"]
    assert rerun.error_in_exec is None and cap.error is None and cap.compiles == []
    assert counters["stats"]["unique_graphs"] == graphs
    torch.testing.assert_close(cap.live.result, shell.user_ns["x"].cos() * 2)
    capsys.readouterr()
    changed = run(shell, line.format(flag=stance, arg="torch.arange(6.0)"))  # another shape: torch refuses
    cap = shell.user_ns["cap_lf"]
    assert changed.error_in_exec is None and cap.compiles == []
    assert cap.error.stage.startswith("guards / recompile (the stance 'fail_on_recompile'")
    assert "fail_on_recompile" in cap.error.message and counters["stats"]["unique_graphs"] == graphs
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("tcompile:")]
    assert len(err) == 1 and "in guards / recompile (the stance 'fail_on_recompile'" in err[0], err
    shell.run_cell("def lf(a):\n    return a.cos() * 2")  # redefined: a new function, not compiled yet
    assert "torch holds no compile of lf" in str(run(shell, line.format(flag=stance, arg="x")).error_in_exec)


def gen_fn(x):
    yield x.sin()


async def async_fn(x):
    return x.sin()


@pytest.mark.parametrize("fn, compiled, why", [
    (gen_fn, "Dynamo compiled nothing", "gen_fn is a generator function"),
    (async_fn, "Dynamo compiled 1 frame(s) (async_fn)", "async_fn is an async function"),
])
def test_generator_and_async_functions_say_what_was_compiled_and_why(fn, compiled, why):
    with pytest.warns(UserWarning, match=why):
        cap = compiler.explore(fn, torch.ones(3), backend="eager", repeat=2)
    assert len(cap.compiles) == (1 if fn is async_fn else 0)
    assert cap.runtime.reason.startswith(f"not timed: {compiled}: {why}")
    if fn is gen_fn:
        assert counters["unimplemented"] and "generator" in next(iter(counters["unimplemented"]))  # torch's word


def test_a_traced_module_has_no_speed_line_and_says_why():
    module = torch.jit.trace(torch.nn.Linear(3, 3), torch.ones(2, 3))
    with pytest.warns(UserWarning, match="TorchScript"):
        cap = compiler.explore(module, torch.ones(2, 3), backend="eager", repeat=2)
    assert cap.compiles == [] and not cap.runtime.available
    assert "no Python frame to compile" in cap.runtime.reason
