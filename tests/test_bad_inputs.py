"""Bad inputs and faults, across cells, options, files, interrupts, threads and huge inputs. Each case
checks the clear one-line error (naming the stage or option and the cause), the partial capture where
one was made, that torch is left as it was (``torch_state``: loggers, bytecode hooks, stance, config,
profile hooks…, compared after every test by the autouse fixture) and that the shell or kernel goes on.
Real torch.compile runs, mostly ``backend="eager"``; one real kernel interrupt through nbclient."""
from __future__ import annotations

import contextlib
import gzip
import io
import json
import logging
import os
import re
import threading
import time
from pathlib import Path

import pytest
import torch
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

import compiler
import explorer
import torch_state
from compiler.reference.options import OptionError
from compiler.capturing.run import CaptureInterrupted
from compiler.stages.schema import CaptureFormatError
from explorer import magics
from explorer.page import render_static

REPO = Path(__file__).resolve().parent.parent
torch_state.load_torch_modules()


@pytest.fixture(autouse=True)
def torch_left_as_it_was():
    before = torch_state.snapshot()
    yield
    torch_state.assert_restored(before)


def one_line(text: str) -> str:
    text = str(text).strip()
    assert text and "\n" not in text and "Traceback" not in text, text
    return text


def f(x):
    return x.sin() + 1


def with_break(x):
    y = x.sin()
    print("a graph break")
    return y.cos()


def add(x, y):
    return x + y


def bad_backend(gm, example_inputs):
    raise ValueError("this backend refuses every graph")


def interrupting_backend(gm, example_inputs):
    raise KeyboardInterrupt


# --- cells: %%tcompile and %tcompile in an IPython shell ------------------------------------------------

@pytest.fixture(scope="module")
def shell():
    sh = InteractiveShell.instance()
    magics.register(sh)
    return sh


@pytest.fixture
def cell(shell, monkeypatch):
    """Run a cell → (the exception the cell ended with, what it printed to stderr, the capture shown);
    afterwards the shell must still run a cell."""
    shown = []
    monkeypatch.setattr(explorer.widget, "show", lambda cap, fn=None, namespace=None: shown.append(cap))
    shell.user_ns.update(torch=torch, x=torch.randn(4), five=5, f=f, bad_backend=bad_backend)

    def run(source: str):
        shown.clear()
        err, out = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            result = shell.run_cell(source)
        error = result.error_in_exec or result.error_before_exec
        return error, err.getvalue(), (shown[0] if shown else None)

    yield run
    assert shell.run_cell("1 + 1").result == 2  # the shell is alive


EAGER = "%%tcompile --backend eager --no-timing\n"

# cell → (error type, stage, message part, at least this many compiles kept)
CAPTURED_ERRORS = {
    "syntax error": (EAGER + "y = x +", "SyntaxError", "parsing the cell", "line 2: y = x +", 0),
    "return outside a function": (EAGER + "return x", "SyntaxError", "parsing the cell", "'return' outside", 0),
    "yield in a cell": (EAGER + "yield x", "SyntaxError", "parsing the cell", "'yield' outside", 0),
    "await in a cell": (EAGER + "y = await x", "SyntaxError", "parsing the cell", "'await' outside", 0),
    "a magic inside the cell": (EAGER + "y = 1\n%time 1", "SyntaxError", "parsing the cell", "%time 1", 0),
    "undefined name": (EAGER + "y = undefined_thing + 1", "NameError", "running the user's code",
                       "undefined_thing", 1),
    "division by zero": (EAGER + "y = x.sin()\nz = 1 / 0", "ZeroDivisionError", "running the user's code",
                         "division by zero", 1),
    "calling a non-callable": (EAGER + "y = five(3)", "TypeError", "running the user's code", "not callable", 1),
    "missing module": (EAGER + "import no_such_module_xyz", "ModuleNotFoundError", "running the user's code",
                       "no_such_module_xyz", 1),
    "graph break under --fullgraph": ("%%tcompile --backend eager --no-timing --fullgraph\ny = x.sin()\n"
                                      "print('break')\nz = y.cos()", "Unsupported", "fullgraph=True",
                                      "Failed to trace builtin operator", 1),
    "shape mismatch": (EAGER + "y = x @ torch.randn(3, 3)", "TorchRuntimeError", "Dynamo tracing",
                       "fake tensor", 1),
    "broadcast mismatch": (EAGER + "y = torch.ones(3) + torch.ones(4)", "TorchRuntimeError", "Dynamo tracing",
                           "fake tensor", 1),
    "infinite recursion": (EAGER + "def r(n):\n    return r(n + 1)\ny = r(0)", "InternalTorchDynamoError",
                           "Dynamo tracing", "RecursionError", 1),
    "a multi-line exception message": (EAGER + "y = x.sin()\nraise ValueError('first line\\nsecond line')",
                                       "ValueError", "running the user's code", "first line", 1),
    "an Inductor option of the wrong type": ("%%tcompile --no-timing --options '{\"max_autotune\": \"yes please\"}'"
                                             "\ny = x + 1", "RuntimeError", "torch.compile arguments",
                                             "max_autotune", 0),
    "a backend that raises": ("%%tcompile --backend bad_backend --no-timing\ny = x.sin() * 2",
                              "BackendCompilerFailed", "backend compile", "refuses every graph", 1),
    "wrong number of arguments": ("%tcompile --backend eager --no-timing f(x, 1, 2, 3)", "TypeError",
                                  "running the user's code", "positional argument", 0),
}


@pytest.mark.parametrize("case", CAPTURED_ERRORS)
def test_a_failing_cell_shows_its_capture_with_a_one_line_error(cell, case):
    source, error_type, stage, part, kept = CAPTURED_ERRORS[case]
    error, stderr, cap = cell(source)
    assert error is None  # shown as the capture's error, never as a traceback
    lines = [line for line in stderr.splitlines() if line.startswith("tcompile:")]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    assert error_type in lines[0] and stage in lines[0] and part in lines[0], lines[0]
    assert cap.error.type == error_type and stage in cap.error.stage
    assert len(cap.compiles) >= kept  # the stages captured before the failure are kept
    if case == "a backend that raises":  # Dynamo's graph was captured before the backend failed
        assert cap.compiles[0].graph.available and cap.compiles[0].graph.op_count == 2


def test_the_traceback_torch_logs_for_a_failing_meta_kernel_stays_in_the_capture(cell):
    # FakeTensorMode logs the meta kernel's traceback (log.exception) before Dynamo raises TorchRuntimeError
    error, stderr, cap = cell(EAGER + "y = x @ torch.randn(3, 3)")
    assert error is None and "failed while attempting" not in stderr
    assert "failed while attempting to run meta for aten.mm" in cap.error.logged
    assert "must have same reduction dim" in cap.error.logged  # the whole traceback, kept
    assert "what torch logged" in render_static(cap)


class _Seen(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def test_a_held_traceback_reaches_torchs_handlers_when_the_capture_reports_no_error():
    logger = logging.getLogger("torch._subclasses.fake_tensor")
    seen = _Seen()
    logger.addHandler(seen)
    try:
        with compiler.capture() as cap:
            try:
                raise RuntimeError("handled by the user's code")
            except RuntimeError:
                logger.exception("failed while attempting to run meta for %s", "aten.mm.default")
            logger.error("no traceback: never held")
            assert seen.messages == ["no traceback: never held"]  # held while the capture runs
        assert cap.error is None
        assert seen.messages == ["no traceback: never held", "failed while attempting to run meta for aten.mm.default"]
        with pytest.raises(ValueError), compiler.capture() as cap:
            try:
                raise RuntimeError("the cause")
            except RuntimeError:
                logger.exception("logged before raising")
            raise ValueError("reported by tcompile")
        assert len(seen.messages) == 2 and "logged before raising" in cap.error.logged
    finally:
        logger.removeHandler(seen)


def test_an_untested_torch_warns_once_in_one_line_naming_it_and_still_captures(monkeypatch):
    from compiler.stages import environment as env

    assert env.untested_torch("2.13.0+cpu") is None and env.untested_torch("2.14.1+cu130") is None
    for version in ("2.12.0", "2.99.0a0+git1234", "not a version", ""):
        message = env.untested_torch(version)
        assert f"torch {version} is untested for live capture" in message and "\n" not in message
    monkeypatch.setattr(env, "TESTED_LIVE_TORCH", ())  # the torch running here becomes untested
    monkeypatch.setattr(env, "_warned", set())
    with pytest.warns(env.TorchVersionWarning) as warned:
        with compiler.capture() as cap:
            torch.compile(f, backend="eager")(torch.randn(4))
        with compiler.capture():  # once per process and version
            pass
    messages = [str(w.message) for w in warned if w.category is env.TorchVersionWarning]
    assert messages == [env.untested_torch()] and str(torch.__version__) in messages[0]
    assert cap.error is None and len(cap.compiles) == 1


def test_save_to_a_missing_folder_says_so_and_still_shows_the_capture(cell, tmp_path):
    error, stderr, cap = cell(f"%%tcompile --backend eager --no-timing --save {tmp_path}/no/such/dir/cap.json\n"
                              "y = x + 1")
    assert error is None and cap.error is None and len(cap.compiles) == 1
    assert one_line(stderr).startswith(f"tcompile: --save {tmp_path}/no/such/dir/cap.json:")


# cell → part of the one-line UsageError (nothing compiled, nothing shown)
USAGE_ERRORS = {
    "empty cell": ("%%tcompile --backend eager", "cell body is empty"),
    "unknown backend": ("%%tcompile --backend no_such_backend\ny = x + 1", "--backend: unknown backend"),
    "backend name bound to a non-callable": ("%%tcompile --backend five\ny = x + 1", "unknown backend 'five'"),
    "unknown mode": ("%%tcompile --mode fastest\ny = x + 1", "--mode: unknown mode 'fastest'"),
    "mode with options": ("%%tcompile --mode reduce-overhead --options '{\"max_autotune\": True}'\ny = x + 1",
                          "cannot be used together with options"),
    "dynamic not true/false/auto": ("%%tcompile --dynamic maybe\ny = x + 1", "--dynamic: invalid choice"),
    "options not a dict literal": ("%%tcompile --options '{bad'\ny = x + 1", "not a JSON or Python dict"),
    "unknown Inductor option": ("%%tcompile --options '{\"not_an_option\": 1}'\ny = x + 1",
                                "unknown Inductor option 'not_an_option'"),
    "options a list": ("%%tcompile --options '[1, 2]'\ny = x + 1", "must be a dict, got list"),
    "repeat 0": ("%%tcompile --repeat 0\ny = x + 1", "--repeat must be at least 1"),
    "repeat not a number": ("%%tcompile --repeat many\ny = x + 1", "--repeat: invalid int value"),
    "unknown stance": ("%%tcompile --stance fast\ny = x + 1", "--stance: invalid choice"),
    "name not an identifier": ("%%tcompile --name 1abc\ny = x + 1", "--name must be a Python identifier"),
    "name a keyword": ("%%tcompile --name class\ny = x + 1", "not a keyword, got 'class'"),
    "name the cell reads": ("%%tcompile --name x --backend eager\ny = x + 1", "would overwrite it"),
    "name the call uses": ("%tcompile --name f --backend eager f(x)", "would overwrite it"),
    "unknown flag": ("%%tcompile --turbo\ny = x + 1", "unrecognized arguments: --turbo"),
    "compare with a bad mode": ("%%tcompile --compare mode=fastest\ny = x + 1", "--compare: mode: unknown mode"),
    "compare with an empty spec": ("%%tcompile --compare ''\ny = x + 1", "empty spec"),
    "compare in the line form": ("%tcompile --compare backend=eager,aot_eager f(x)", "--compare works on a cell"),
    "load a missing file": ("%tcompile --load /no/such/capture.json", "no such file or directory"),
    "load with a cell": ("%%tcompile --load /tmp\ny = 1", "--load shows a file or directory"),
    "line form without a call": ("%tcompile", "needs a call to compile"),
    "line form calling a non-callable": ("%tcompile five(x)", "five is int (5), not a function"),
    "line form with an undefined argument": ("%tcompile f(undefined_name)", "NameError: name 'undefined_name'"),
    "line form, unclosed call": ("%tcompile f(", "not a Python expression"),
    "line form, not a call": ("%tcompile 1 + 2", "EXPR must be a call"),
    "cell form with words after the options": ("%%tcompile --backend eager extra words\ny = x + 1",
                                               "unrecognized arguments: extra words"),
    "fail_on_recompile on a first compile (line form)": ("%tcompile --stance fail_on_recompile --backend eager f(x)",
                                                         "torch holds no compile of f"),
    "fail_on_recompile on a cell's first run": ("%%tcompile --stance fail_on_recompile --backend eager\n"
                                                "y = x + 12345", "--stance fail_on_recompile"),
    "huge options text": ("%%tcompile --options '{" + ", ".join(f'"k{i}": {i}' for i in range(20000)) + "}'\n"
                          "y = x + 1", "unknown Inductor option 'k0'"),
}


@pytest.mark.parametrize("case", USAGE_ERRORS)
def test_a_bad_option_or_call_is_a_one_line_usage_error(cell, case):
    source, part = USAGE_ERRORS[case]
    error, stderr, cap = cell(source)
    assert isinstance(error, UsageError) and part in one_line(error), error
    assert cap is None and one_line(stderr).startswith("UsageError:")
    assert len(one_line(error)) < 400


def test_load_of_a_truncated_file_in_a_cell(cell, tmp_path):
    path = tmp_path / "cut.json"
    path.write_text('{"format": "tcompile-capture", "vers')
    error, _, _ = cell(f"%tcompile --load {path}")
    assert isinstance(error, UsageError) and "--load: not a tcompile capture: invalid JSON" in one_line(error)


def test_an_exception_raised_as_keyboardinterrupt_in_a_cell_keeps_the_capture(cell):
    error, _, cap = cell(EAGER + "y = x.sin()\nraise KeyboardInterrupt")
    assert isinstance(error, UsageError) and "interrupted (KeyboardInterrupt)" in one_line(error)
    assert cap.interrupted and len(cap.compiles) >= 1


# --- options through the Python API ------------------------------------------------------------------

x4 = torch.randn(4)

# explore(...) keyword arguments → (exception type, part of its one-line message)
API_ERRORS = {
    "fn is not callable": (lambda: compiler.explore(5, x4), TypeError, "fn must be a function"),
    "fn is not callable, errors='return'": (lambda: compiler.explore(5, x4, errors="return"), TypeError,
                                            "nothing to compile"),
    "unknown backend": (lambda: compiler.explore(f, x4, backend="nope"), OptionError, "unknown backend 'nope'"),
    "unknown mode": (lambda: compiler.explore(f, x4, mode="fastest"), OptionError, "unknown mode 'fastest'"),
    "dynamic='maybe'": (lambda: compiler.explore(f, x4, dynamic="maybe"), OptionError, "dynamic: takes True"),
    "unknown Inductor option": (lambda: compiler.explore(f, x4, options={"nope": 1}), OptionError,
                                "unknown Inductor option 'nope'"),
    "options not a dict": (lambda: compiler.explore(f, x4, options=[1]), OptionError, "must be a dict"),
    "mode with options": (lambda: compiler.explore(f, x4, mode="max-autotune", options={"max_autotune": True}),
                          OptionError, "cannot be used together"),
    "unknown torch.compile keyword": (lambda: compiler.explore(f, x4, backend="eager", turbo=True), TypeError,
                                      "unknown torch.compile option(s) ['turbo']"),
    "errors='ignore'": (lambda: compiler.explore(f, x4, errors="ignore"), ValueError, "errors must be"),
    "repeat=0": (lambda: compiler.explore(f, x4, backend="eager", repeat=0), ValueError, "at least 1, got 0"),
    "repeat=2.5": (lambda: compiler.explore(f, x4, backend="eager", repeat=2.5), ValueError, "got 2.5"),
    "unknown stance": (lambda: compiler.explore(f, x4, backend="eager", stance="fast"), OptionError,
                       "unknown stance 'fast'"),
    "kwargs not a dict": (lambda: compiler.explore(f, x4, backend="eager", kwargs=5), TypeError,
                          "kwargs must be a dict"),
    "missing argument, errors='raise'": (lambda: compiler.explore(f, backend="eager", timing=False), TypeError,
                                         "missing 1 required positional argument"),
    "explore with fn's arguments in a tuple": (lambda: compiler.explore(add, (x4, x4), backend="eager"), TypeError,
                                               "spread out — explore(fn, x, y), run(fn, x, y) — not as one tuple"),
    "run with fn's arguments in a list": (lambda: compiler.run(add, [x4, x4], compile_kwargs={"backend": "eager"}),
                                          TypeError, "not as one list (explore(fn, (x, y))), which fn cannot take"),
    "compare with a bad spec": (lambda: compiler.compare(f, x4, configs="mode=fastest"), OptionError,
                                "unknown mode"),
    "compare with an empty spec": (lambda: compiler.compare(f, x4, configs=""), OptionError, "empty spec"),
}


@pytest.mark.parametrize("case", API_ERRORS)
def test_a_bad_option_is_a_one_line_error_before_compiling(case):
    call, error_type, part = API_ERRORS[case]
    with pytest.raises(error_type) as raised:
        call()
    assert part in one_line(raised.value) and len(str(raised.value)) < 400


def test_failures_kept_as_captures_with_errors_return():
    cap = compiler.explore(f, x4, backend=bad_backend, timing=False, errors="return")
    assert cap.error.stage == "backend compile" and "refuses every graph" in cap.error.cause
    assert cap.compiles[0].graph.available and cap.compiles[0].graph.op_count == 2  # Dynamo's graph is kept
    cap = compiler.explore(with_break, x4, backend="eager", fullgraph=True, timing=False, errors="return")
    assert cap.error.type == "Unsupported" and "fullgraph=True" in cap.error.stage


def test_bad_arguments_to_what_if_and_diff():
    cap = compiler.explore(f, x4, backend="eager", timing=False)
    with pytest.raises(TypeError, match="missing a required argument"):
        cap.what_if(f)
    with pytest.raises(TypeError, match="not a callable"):
        cap.what_if(5, x4)
    with pytest.raises(TypeError, match="compares Captures"):
        cap.diff(5)


# --- files ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def good_file(tmp_path_factory) -> str:
    torch._dynamo.reset()
    with torch_state_kept():
        return compiler.explore(f, x4, backend="eager", timing=False).to_json()


@contextlib.contextmanager
def torch_state_kept():
    before = torch_state.snapshot()
    yield
    torch_state.assert_restored(before)


def edited(text: str, change) -> str:
    data = json.loads(text)
    change(data)
    return json.dumps(data)


# file content (from the good capture's JSON text) → part of the one-line CaptureFormatError
BAD_FILES = {
    "empty": (lambda good: "", "invalid JSON"),
    "whitespace only": (lambda good: " \n\t ", "invalid JSON"),
    "truncated": (lambda good: good[: len(good) // 2], "invalid JSON"),
    "binary": (lambda good: bytes(range(256)) * 20, "not UTF-8 text"),
    "Latin-1 text": (lambda good: '{"format": "caf\xe9"}'.encode("latin-1"), "not UTF-8 text"),
    "UTF-16": (lambda good: good.encode("utf-16"), "not UTF-8 text"),
    # a capture saved to a .json.gz name loads (test_capture_size); gzip of what is no capture is still refused
    "gzip-compressed binary": (lambda good: gzip.compress(bytes(range(256)) * 20), "not UTF-8 text"),
    "UTF-8 with a BOM": (lambda good: b"\xef\xbb\xbf" + good.encode(), "invalid JSON"),
    "a JSON list": (lambda good: "[1, 2]", 'missing "format": "tcompile-capture"'),
    "a JSON string": (lambda good: '"hello"', 'missing "format"'),
    "null": (lambda good: "null", 'missing "format"'),
    "no format": (lambda good: edited(good, lambda d: d.pop("format")), 'missing "format"'),
    "another format": (lambda good: edited(good, lambda d: d.update(format="tcompile-comparison")),
                       'missing "format": "tcompile-capture"'),
    "a newer major version": (lambda good: edited(good, lambda d: d.update(version=[99, 0])),
                              "version 99.0 is not supported"),
    "a version that is a string": (lambda good: edited(good, lambda d: d.update(version="2.0")),
                                   "version: expected [major, minor]"),
    "compiles not a list": (lambda good: edited(good, lambda d: d.update(compiles=5)),
                            "compiles: expected a list, got 5"),
    "a stage not an object": (lambda good: edited(good, lambda d: d["compiles"][0].update(guards=5)),
                              "compiles[0].guards: expected an object, got 5"),
    "graph nodes a string": (lambda good: edited(good, lambda d: d["compiles"][0]["graph"].update(nodes="x")),
                             "compiles[0].graph.nodes: expected a list"),
    "an op count that is text": (lambda good: edited(good, lambda d: d["compiles"][0]["graph"].update(
        op_count="many")), "compiles[0].graph.op_count: expected an integer"),
    "NaN where an integer goes": (lambda good: edited(good, lambda d: d["compiles"][0]["graph"].update(
        op_count=float("nan"))), "expected an integer, got NaN"),
    "a flag that is text": (lambda good: edited(good, lambda d: d["compiles"][0]["graph"].update(available="yes")),
                            "compiles[0].graph.available: expected true or false"),
    "nested deeper than Python reads": (lambda good: "[" * 100_000 + "]" * 100_000, "nested deeper"),
    "an integer of 5,000 digits": (lambda good: good[:-1] + ',"big":' + "9" * 5000 + "}", "invalid JSON"),
    "a TORCH_TRACE log": (lambda good: 'V1123 09:00:00.000000 1 torch/_dynamo/convert_frame.py:1 {"dynamo_start": {}}\n',
                          "invalid JSON"),
}


@pytest.mark.parametrize("case", BAD_FILES)
def test_a_bad_file_is_a_one_line_capture_format_error(good_file, tmp_path, case):
    make, part = BAD_FILES[case]
    content = make(good_file)
    path = tmp_path / "capture.json"
    (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)
    with pytest.raises(CaptureFormatError) as raised:
        compiler.load(path)
    assert part in one_line(raised.value) and len(str(raised.value)) < 400, raised.value


@pytest.mark.parametrize("where", ["missing", "a directory"])
def test_a_path_that_is_not_a_file(tmp_path, where):
    path = tmp_path / "none.json" if where == "missing" else tmp_path
    with pytest.raises(CaptureFormatError, match="cannot read"):
        compiler.load(path)


def test_a_huge_file_loads_and_renders_bounded(good_file, tmp_path):
    """30 MB of text in one field and 30 MB in a field tcompile does not know: loaded, kept on save, and the
    page stays small (explorer/html.py cuts long texts)."""
    path = tmp_path / "huge.json"
    path.write_text(edited(good_file, lambda d: (d["compiles"][0]["guards"].update(tree="x = 1\n" * 5_000_000),
                                                 d.update(junk="y" * 30_000_000))))
    cap = compiler.load(path)
    assert len(cap.compiles[0].guards.tree) == 30_000_000
    assert len(render_static(cap)) < 3_000_000
    assert len(cap.to_json()) > 60_000_000  # nothing dropped


# --- interrupts ---------------------------------------------------------------------------------------

def test_keyboardinterrupt_in_the_backend_keeps_the_traced_graph():
    with pytest.raises(CaptureInterrupted) as raised:
        compiler.explore(f, x4, backend=interrupting_backend, timing=False)
    cap = raised.value.capture
    assert cap.interrupted and "during the compile or the first call" in one_line(cap.error.stage)
    assert cap.compiles[0].graph.available and cap.compiles[0].graph.op_count == 2


def test_keyboardinterrupt_while_timing_keeps_the_whole_compile():
    def g(x):
        if not torch.compiler.is_compiling():  # the eager timing calls only
            raise KeyboardInterrupt
        return x.cos() * 3

    with pytest.raises(CaptureInterrupted) as raised:
        compiler.explore(g, x4, backend="eager")
    cap = raised.value.capture
    assert cap.interrupted and "timing" in cap.error.stage and cap.compiles[0].status == "compiled"


def test_keyboardinterrupt_inside_a_capture_block_restores_everything():
    with pytest.raises(KeyboardInterrupt), compiler.capture() as cap:
        torch.compile(f, backend="eager")(x4)
        raise KeyboardInterrupt
    assert [c.name for c in cap.compiles] == ["f"] and cap.error.type == "KeyboardInterrupt"


def test_a_real_kernel_interrupt_through_nbclient(tmp_path):
    """Jupyter's interrupt (SIGINT to the kernel) during a %%tcompile cell's timing: the cell ends with the
    one-line error, the capture is named and kept, torch is restored, and the kernel runs the next cell."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    from jupyter_core.utils import run_sync

    started = tmp_path / "timing-started"
    sources = [
        f"import sys, time\nsys.path[:0] = [{str(REPO)!r}, {str(REPO / 'tests')!r}]\nimport torch, torch_state\n"
        "%load_ext explorer\ntorch_state.load_torch_modules()\nbefore = torch_state.snapshot()\n"
        f"x = torch.randn(8)\nstarted = {str(started)!r}",
        "%%tcompile --backend eager --name cap_int\ny = x.sin() * 2\nif not torch.compiler.is_compiling():\n"
        "    open(started, 'w').close()\n    time.sleep(60)",
        "print(torch_state.differences(before, torch_state.snapshot()), cap_int.interrupted, "
        "cap_int.compiles[0].status, bool(torch.equal(y, x.sin() * 2)), 1 + 1)",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                                     resources={"metadata": {"path": str(tmp_path)}})
    interrupted = []

    def interrupt_when_timing():
        deadline = time.monotonic() + 90
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        if started.exists():
            run_sync(client.km.interrupt_kernel)()
            interrupted.append(True)

    with client.setup_kernel():
        client.execute_cell(nb.cells[0], 0)
        assert not [o for o in nb.cells[0].outputs if o.output_type == "error"], nb.cells[0].outputs
        interrupter = threading.Thread(target=interrupt_when_timing)
        interrupter.start()
        start = time.monotonic()
        client.execute_cell(nb.cells[1], 1)
        interrupter.join()
        assert interrupted and time.monotonic() - start < 60  # the sleep was cut short
        # IPython prints a UsageError as one line on stderr (no traceback)
        stderr = "".join(o.text for o in nb.cells[1].outputs if o.output_type == "stream" and o.name == "stderr")
        (line,) = [line for line in stderr.splitlines() if line.startswith("UsageError: ")]
        assert "interrupted (KeyboardInterrupt) during timing" in line and "Traceback" not in stderr
        assert not [o for o in nb.cells[1].outputs if o.output_type == "error"]
        client.execute_cell(nb.cells[2], 2)
    text = "".join(o.get("text", "") for o in nb.cells[2].outputs if o.output_type == "stream")
    assert text.strip() == "[] True compiled True 2", nb.cells[2].outputs


# --- threads ------------------------------------------------------------------------------------------

def in_thread(fn):
    result = {}

    def run():
        try:
            result["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 — checked by the caller
            result["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(120)
    return result


def test_explore_in_a_worker_thread():
    result = in_thread(lambda: compiler.explore(f, x4, backend="eager", timing=False))
    assert [c.name for c in result["value"].compiles] == ["f"]


def test_a_failure_in_a_worker_thread_is_kept_as_its_error():
    result = in_thread(lambda: compiler.explore(with_break, x4, backend="eager", fullgraph=True, timing=False,
                                                errors="return"))
    assert "fullgraph=True" in result["value"].error.stage


def test_a_capture_block_that_raises_in_a_worker_thread_restores_everything():
    def block():
        with compiler.capture():
            torch.compile(f, backend="eager")(x4)
            raise RuntimeError("the block failed")

    assert str(in_thread(block)["error"]) == "the block failed"


def test_a_bad_option_in_a_worker_thread():
    assert isinstance(in_thread(lambda: compiler.explore(f, x4, dynamic="maybe"))["error"], OptionError)


# --- huge inputs --------------------------------------------------------------------------------------

def test_a_function_of_1000_ops():
    source = "def chain(x):\n" + "".join(f"    x = x + {i}\n" for i in range(1000)) + "    return x\n"
    namespace = {}
    exec(compile(source, str(REPO / "tests" / "generated_chain.py"), "exec"), namespace)  # noqa: S102
    cap = compiler.explore(namespace["chain"], x4, backend="eager", timing=False)
    assert cap.error is None and cap.compiles[0].graph.op_count == 1000
    assert torch.equal(cap.live.result, namespace["chain"](x4))


def test_100_tensor_arguments():
    def total(*xs):
        return sum(x.sum() for x in xs)

    args = [torch.randn(2) for _ in range(100)]
    cap = compiler.explore(total, *args, backend="eager", timing=False)
    assert cap.error is None and sum(n.op == "placeholder" for n in cap.compiles[0].graph.nodes) == 100


def test_a_huge_cell(cell):
    body = "".join(f"y{i} = x * {i}\n" for i in range(500))
    error, stderr, cap = cell(EAGER + body)
    assert error is None and cap.error is None and cap.compiles[0].graph.op_count >= 500


def test_a_cell_with_a_5_mb_string_renders_bounded(cell):
    error, _, cap = cell(EAGER + "s = '" + "z" * 5_000_000 + "'\ny = x + len(s)")
    assert error is None and cap.error is None
    assert len(render_static(cap)) < 3_000_000


def test_a_large_tensor_timed_twice():
    cap = compiler.explore(f, torch.randn(5_000_000), backend="eager", repeat=2)
    assert cap.error is None and cap.runtime.available


# --- loose ends (issue 38): what a newcomer sees --------------------------------------------------------

def test_explore_and_run_take_the_arguments_one_way_and_sample_compile_time_when_asked(cell):
    """run(fn, x, y) as explore(fn, x, y) (run took a tuple); sample_compile from explore, run and %%tcompile
    (on Python 3.11 compile time by line is off unless asked for, and only capture() could ask)."""
    cap = compiler.run(add, x4, x4, compile_kwargs={"backend": "eager"}, timing=False, sample_compile=True)
    assert cap.error is None and torch.equal(cap.live.result, x4 + x4) and "compile_sampling" in cap.options
    assert "compile_sampling" not in compiler.explore(f, x4, backend="eager", timing=False,
                                                      sample_compile=False).options
    assert "compile_sampling" in compiler.explore(f, x4, backend="eager", timing=False, sample_compile=True).options
    one_tuple = compiler.explore(lambda pair: pair[0] * pair[1], (x4, x4), backend="eager", timing=False)
    assert one_tuple.error is None  # a function that takes one tuple still gets it whole
    error, _, cap = cell("%%tcompile --backend eager --no-timing --sample-compile\nsampled = x + 1")
    assert error is None and "compile_sampling" in cap.options


def test_a_break_in_code_with_no_source_file_has_no_code_line():
    """python -c / exec: torch logs no code line for the frame; the traceback's next line is not it."""
    namespace: dict = {}
    exec(compile("def g(x):\n    y = x.sin()\n    print('a graph break')\n    return y.cos()\n", "<string>",
                 "exec"), namespace)
    with compiler.capture() as cap:
        torch.compile(namespace["g"], backend="eager")(x4)
    item = cap.breaks[0]
    assert (item.file, item.line, item.code) == ("<string>", 3, None)
    assert not [frame for frame in item.stack if (frame.code or "").startswith("Traceback")]
    assert "Traceback (most recent call last)" not in explorer.render_view("breaks", cap, cap.compiles[0])


def test_print_right_after_the_with_block_shows_the_capture():
    with compiler.capture() as cap:
        assert repr(cap) == "<Capture pending: made when its with block ends>"
        torch.compile(with_break, backend="eager")(x4)
    assert str(cap) == repr(cap) == "<Capture 2 compiles, 2 graphs, 1 graph breaks, 0 recompiles>"


def _overview_first_lines(cap) -> list[str]:
    """The Overview's fixes headline and findings as text (its HTML, tags stripped)."""
    import html
    import re

    from explorer.views.overview import render_overview

    page = render_overview(cap, None)
    shown = re.findall(r'<p class="tc-fix-headline">(.*?)</p>|<li class="tc-finding tc-(\w+)">(.*?)</li>', page)
    strip = lambda text: html.unescape(re.sub(r"<[^>]+>", "", text))  # noqa: E731
    return [f"{strip(head).replace(' (see Fixes)', '')}" if head else f"{kind}: {strip(text)}"
            for head, kind, text in shown]


def test_as_text_starts_with_what_the_overview_says_first(monkeypatch):
    """The text form of a capture opens with the Overview's first lines — frames skipped to eager, the fixes —
    from one source (it opened with the counts, and named no skipped frame and no fix)."""
    def looping(x):
        for _ in range(2):
            x = x.sin()
            print("a graph break in a loop: Dynamo skips the frame")
        return x

    with compiler.capture() as skipped:
        torch.compile(looping, backend="eager")(x4)
    with compiler.capture() as recompiled:
        compiled = torch.compile(with_break, backend="eager")
        compiled(x4)
        compiled(torch.randn(4, 5))
    for cap in (skipped, recompiled):
        lines = cap.as_text().splitlines()
        overview = _overview_first_lines(cap)
        assert overview and lines[0] == repr(cap)
        text_lines = [line.replace(" (see Fixes; cap.fixes())", "") for line in lines[1:1 + len(overview)]]
        # a place: the full path in the text, its file name in the page (the path in its tooltip)
        assert [re.sub(r"[^\s(]*/(\w+\.py:\d+)", r"\1", line) for line in text_lines] == overview
    # the frame skipped to eager is among the first lines (after the fixes' headline, as in Overview)
    assert any(line.startswith("error: Dynamo skipped the whole frame looping (")
               for line in skipped.as_text().splitlines()[1:3])
    assert recompiled.as_text().splitlines()[1].startswith("Fixes: ")


def test_an_unknown_saving_does_not_read_never_paid_off():
    """The graph after a break is not timed alone: its saving is unknown, not 'never paid off'."""
    def then_nothing(x):
        y = x.sin() + 1
        print("a graph break")
        return y

    cap = compiler.explore(then_nothing, x4, backend="aot_eager", repeat=3)
    after = cap.compiles[1].amortization
    assert after.available and after.saving_per_call_s is None
    assert repr(after) == "<Amortization paid off: unknown: this graph is not timed alone>"
    assert after.as_text().endswith("saving unknown: paid off: unknown: this graph is not timed alone")
    untimed = compiler.explore(f, x4, backend="aot_eager", timing=False).compiles[0].amortization
    assert repr(untimed) == "<Amortization paid off: unknown: no timed calls>"


@pytest.mark.slow
def test_a_cache_hit_names_itself_where_the_ir_is_missing():
    """compiler.capture() keeps Inductor's caches on: a hit skips lowering and fusion, and the run's IR says so
    (ir_after was an empty text: README's example raised IndexError on its second run)."""
    def g(x):
        return x.cos() * 2

    for _ in range(2):  # the first fills Inductor's caches (or hits them); the second, after a reset, hits
        torch._dynamo.reset()
        with compiler.capture() as cap:
            torch.compile(g)(x4)
    run = cap.compiles[0].inductor.runs[0]
    for ir in (run.ir_before, run.ir_after):
        assert not ir.available and "cache hit" in ir.reason and ir.text == ""
        assert ir.as_text() == f"[ir: unavailable — {ir.reason}]"
    with compiler.capture(fresh=True) as fresh:
        torch._dynamo.reset()
        torch.compile(g)(x4)
    assert fresh.compiles[0].inductor.runs[0].ir_after.available
