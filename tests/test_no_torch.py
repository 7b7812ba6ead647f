"""Viewing and reading need no torch (issue 35, item 1).

Loading a saved capture and showing every tab of it, ``load_trace``, ``load_job``, ``%tcompile --load`` and
``python -m compiler report`` run in a child process whose audit hook refuses every ``import torch…``
(and records it): a step that imports torch fails here, named, even where a view catches the error.
What reading a trace takes from torch's installed files — the graph-break registry — is read as a
file, found with ``importlib.util.find_spec`` (which locates a package without importing it).
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.any_torch  # compiles nothing, reads only saved files (make test-torch leaves it out)

REPO = Path(__file__).resolve().parent.parent
ASSETS = REPO / "assets" / "gpu"
LOG = REPO / "tests" / "assets" / "traces" / "torch_2_14_1_break_recompile.log"
CAPTURE_GZ = REPO / "tests" / "assets" / "captures" / "reduce_overhead_small_model_3_0.json.gz"

# The child's first lines: refuse torch, record who asked. Then it runs the steps named on its command line.
NO_TORCH = r"""
import sys, traceback
ASKED = []
def _refuse_torch(event, args):
    if event == "import" and (args[0] == "torch" or args[0].startswith("torch.")):
        ASKED.append((args[0], "".join(traceback.format_stack(limit=8)[:-1])))
        raise ImportError(f"{args[0]}: this step must not import torch")
sys.addaudithook(_refuse_torch)
"""

STEPS = NO_TORCH + r"""
import json, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, sys.argv[1])
job_dir, captures = sys.argv[2], sys.argv[3:]
report = {}

def step(name, run):
    before = len(ASKED)
    try:
        run()
        failed = None
    except Exception as exc:  # the step's own failure is reported with the imports it tried
        failed = f"{type(exc).__name__}: {exc}"
    report[name] = {"imports": [a[0] for a in ASKED[before:]], "where": ASKED[before][1] if len(ASKED) > before else "",
                    "failed": failed}

def load_and_view(path):
    import compiler, explorer
    from explorer.views import VIEWS
    from explorer.widget import Explorer
    cap = compiler.load(path)
    widget = Explorer(cap)
    for index, view in enumerate(VIEWS):
        widget.show_tab(index)
        if view.scope == "compile":
            for other in range(1, len(cap.compiles)):  # switching compiles on the tab
                widget.selector.value = other
            widget.selector.value = 0
    widget._repr_mimebundle_()
    explorer.render_static(cap, fallback=True)
    cap._repr_html_()
    for c in cap.compiles:
        c._repr_html_()
        for stage in (c.source, c.graph, c.guards, c.kernels):
            stage._repr_html_()

def job():
    import compiler, explorer
    from explorer.job_widget import JobExplorer
    found = compiler.load_job(job_dir)
    assert len(found.captures) == 2, found
    widget = JobExplorer(found)
    for rank in found.ranks:
        widget.selector.value = rank
        for index in range(len(widget.explorer.panes)):
            widget.explorer.show_tab(index)
    found._repr_html_()

def magic():
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "explorer")
    shell.run_line_magic("tcompile", f"--load {captures[0]} --name loaded")
    assert shell.user_ns["loaded"].compiles
    shell.run_line_magic("tcompile", f"--load {job_dir} --name job")
    assert shell.user_ns["job"].captures

step("import compiler, explorer", lambda: __import__("explorer"))
for path in captures:
    step(f"load and view {path}", lambda path=path: load_and_view(path))
step("load_trace", lambda: __import__("compiler").load_trace(job_dir + "/dedicated_log_torch_trace_rank_0.log").breaks)
step("load_job and its widget", job)
step("%tcompile --load", magic)
report["torch in sys.modules"] = "torch" in sys.modules
print(json.dumps(report))
"""

REPORT = NO_TORCH + r"""
import runpy
sys.path.insert(0, sys.argv[1])
sys.argv = ["compiler", *sys.argv[2:]]
try:
    runpy.run_module("compiler", run_name="__main__")
except SystemExit as exc:
    code = exc.code
else:
    code = 0
print("\nIMPORTS", [a[0] for a in ASKED], "torch" in sys.modules)
if ASKED:
    print(ASKED[0][1])
sys.exit(code)
"""


def job_dir(tmp_path) -> Path:
    """A two-rank TORCH_TRACE directory made of the shipped recorded log (torch 2.14.1)."""
    folder = tmp_path / "job"
    folder.mkdir()
    for rank in (0, 1):
        shutil.copy(LOG, folder / f"dedicated_log_torch_trace_rank_{rank}.log")
    return folder


def largest_shipped_capture() -> Path:
    return max(ASSETS.glob("*.json"), key=lambda p: p.stat().st_size)


def without_fixes(path: Path, tmp_path: Path) -> Path:
    """The capture saved without its proposed fixes: viewing it proposes them (checks of torch's config
    and guard filters that must not import torch)."""
    data = json.loads(path.read_text())
    data.pop("fixes", None)
    data.pop("compile_fixes", None)
    out = tmp_path / f"{path.stem}_no_fixes.json"
    out.write_text(json.dumps(data))
    return out


def test_viewing_and_reading_import_no_torch(tmp_path):
    captures = [largest_shipped_capture(), without_fixes(largest_shipped_capture(), tmp_path),
                ASSETS / "graph_break_repeated_kernel_names.json", CAPTURE_GZ]
    done = subprocess.run([sys.executable, "-c", STEPS, str(REPO), str(job_dir(tmp_path)), *map(str, captures)],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    torch_loaded = report.pop("torch in sys.modules")
    for name, found in report.items():
        assert not found["imports"], f"{name} imported {found['imports']}:\n{found['where']}"
        assert found["failed"] is None, f"{name}: {found['failed']}"
    assert not torch_loaded


def test_the_report_command_imports_no_torch(tmp_path):
    for source in (largest_shipped_capture(), job_dir(tmp_path)):
        out = tmp_path / f"{source.stem}.html"
        done = subprocess.run([sys.executable, "-c", REPORT, str(REPO), "report", str(source), "-o", str(out)],
                              capture_output=True, text=True, timeout=600, cwd=tmp_path)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert "IMPORTS [] False" in done.stdout, done.stdout[-3000:]
        assert out.stat().st_size > 10_000


def test_the_graph_break_registry_is_torchs_installed_file():
    """The registry read as a file is torch's own (the file next to ``torch._dynamo``, when torch has one),
    and a loaded trace's graph break is named from it."""
    import torch._dynamo

    from compiler.stages import breaks

    installed = Path(torch._dynamo.__file__).parent / "graph_break_registry.json"
    if installed.exists():
        entries = json.loads(installed.read_text())
        assert set(breaks.registry()) == {code.lower() for code in entries}
        assert breaks.registry()["gb0059"]["Gb_type"] == entries["GB0059"][0]["Gb_type"]
    import compiler

    cap = compiler.load_trace(LOG)
    named = [b for b in cap.breaks if b.gb_code == "GB0059"]
    assert named and all(b.registry is not None for b in named) == installed.exists()
