"""Issue 16 item 7: a saved notebook reopened in JupyterLab shows each tcompile output's static copy, with no
widget error in front of it — for a ``%%tcompile`` cell, a ``%%tcompile --compare`` cell and a ``%tcompile --load``
of a job directory (tlparse's 3-rank fixture from ../shared/tlparse_inputs; left out when that is absent).

A notebook runs under nbclient (as a user's kernel would) and is saved, signed as JupyterLab signs what the
user saves (so it is trusted), then opened in headless Chromium twice: on a server with no kernel at all
("No Kernel": ipywidgets shows "Loading widget..." for good) and with a fresh kernel (which never had the
widgets' models: "Error displaying widget: model not found"). Screenshots (light and dark) land in
test-output/<test>/. Also: the static copy stays under 1 MB for a capture (and a job) whose full page is bigger."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tlparse_fixtures import INPUTS  # noqa: E402

from jupyterlab_harness import (
    TEST_OUTPUT,
    JupyterLabServer,
    _isolated_env,
    open_browser,
    screenshot,
    set_theme,
    wait_for_kernel_idle,
    write_notebook,
)


SETUP = """\
%load_ext explorer
import torch
x = torch.randn(8, 4)
"""

CELL = """\
%%tcompile --backend eager --no-timing --name cap
y = x.sin() + 1
print("a graph break")
z = y.cos().sum()
"""

COMPARE = """\
%%tcompile --compare "backend=eager,aot_eager" --no-timing
w = x.cos() * 2
"""

JOB_DIR = INPUTS / "multi_rank_schedule"
JOB = f"%tcompile --load {JOB_DIR}\n"
needs_job = pytest.mark.skipif(not JOB_DIR.is_dir(), reason=f"{JOB_DIR} is absent (provided next to the checkout)")

# What each widget's static copy starts with, in notebook order.
FALLBACK_STARTS = ("tcompile — ", "Comparing 2 configurations") + (("A static copy of the job",) if JOB_DIR.is_dir()
                                                                   else ())

WIDGET_TEXTS = ("Loading widget", "Error displaying widget")

# Each output of the notebook: is it shown, which classes does its renderer have, what text does it start with.
# The text an output shows, also for a cell JupyterLab has not laid out (it skips cells out of view with
# content-visibility, where innerText is empty): its text content without style sheets and scripts.
OUTPUTS_JS = """() => {
const visibleText = node => {
    const copy = node.cloneNode(true);
    copy.querySelectorAll('style, script').forEach(n => n.remove());
    return copy.textContent.replace(/\\s+/g, ' ').trim();
};
return [...document.querySelectorAll('.jp-NotebookPanel .jp-OutputArea-child')].map(child => {
    const output = child.querySelector('.jp-OutputArea-output');
    return {shown: child.offsetParent !== null && getComputedStyle(child).display !== 'none',
            mime: output.dataset.mimeType || null, text: visibleText(output).slice(0, 80),
            fallback: !!output.querySelector('.tc-fallback')};
});
}"""


class NoKernelServer(JupyterLabServer):
    """A JupyterLab with no kernel to start: a notebook opens with "No Kernel"."""

    def command(self) -> list[str]:
        return super().command() + ["--KernelSpecManager.allowed_kernelspecs=tcompile-no-such-kernel"]


def sign(server: JupyterLabServer, path: Path) -> None:
    """Trust the notebook as this server's JupyterLab would after the user saved it."""
    subprocess.run([sys.executable, "-m", "jupyter", "trust", str(path)], check=True, capture_output=True,
                   env=_isolated_env(Path(server._home.name)))


@pytest.fixture(scope="module")
def saved_notebook(tmp_path_factory) -> Path:
    """The notebook, run by a kernel under nbclient and saved with its outputs."""
    import nbformat
    from nbclient import NotebookClient

    root = tmp_path_factory.mktemp("reopen")
    path = write_notebook(root / "reopened.ipynb", [SETUP, CELL, COMPARE] + ([JOB] if JOB_DIR.is_dir() else []))
    notebook = nbformat.read(path, as_version=4)
    # JupyterLab saves no widget state unless asked ("Save Widget State Automatically" is off): neither do we
    NotebookClient(notebook, timeout=300, kernel_name="python3", store_widget_state=False,
                   resources={"metadata": {"path": str(root)}}).execute()
    assert "widgets" not in notebook.metadata
    nbformat.write(notebook, path)
    return path


def check_outputs(page, where: str) -> None:
    outputs = page.evaluate(OUTPUTS_JS)
    widget_outputs = [o for o in outputs if o["mime"] is None]
    assert len(widget_outputs) == len(FALLBACK_STARTS), outputs  # the explorer, compare and job widgets, not rendered
    assert not any(o["shown"] for o in widget_outputs), (where, outputs)
    fallbacks = [o for o in outputs if o["fallback"]]
    assert len(fallbacks) == len(FALLBACK_STARTS) and all(o["shown"] for o in fallbacks), (where, outputs)
    assert all(o["text"].startswith(start) for o, start in zip(fallbacks, FALLBACK_STARTS)), (where, fallbacks)
    visible = page.evaluate("() => document.querySelector('.jp-NotebookPanel .jp-Notebook').innerText")
    assert not any(text in visible for text in WIDGET_TEXTS), (where, visible[:500])


def shoot(page, folder: Path, name: str) -> None:
    """Each static copy with its cell's input above it (where the widget's error would be): the explorer's,
    the comparison's, the job's."""
    for index, which in enumerate(("explorer", "compare", "job")[:len(FALLBACK_STARTS)]):
        page.locator(".jp-NotebookPanel .tc-fallback").nth(index).evaluate(
            "node => node.closest('.jp-Cell').scrollIntoView({block: 'start'})")
        screenshot(page, folder / f"{name}_{which}.png")


def test_notebook_outputs_carry_the_widget_and_a_bounded_static_copy(saved_notebook):
    import nbformat

    notebook = nbformat.read(saved_notebook, as_version=4)
    for cell in notebook.cells[1:]:
        data = [o.get("data", {}) for o in cell.outputs if o.output_type == "display_data"]
        widget = next(d for d in data if "application/vnd.jupyter.widget-view+json" in d)
        assert "text/html" not in widget  # the static copy is an output of its own, after the widget's
        static = [d["text/html"] for d in data[data.index(widget) + 1:] if "text/html" in d]
        assert len(static) == 1 and "tc-fallback" in static[0] and len(static[0].encode()) <= 1_000_000


@pytest.mark.browser
def test_reopened_without_a_kernel(saved_notebook, artifact_dir):
    with NoKernelServer(saved_notebook.parent, TEST_OUTPUT / "jupyterlab-server-no-kernel") as server:
        sign(server, saved_notebook)
        with open_browser() as page:
            page.goto(server.lab_url(f"tree/{saved_notebook.name}", reset=True))
            page.locator(".jp-Dialog", has_text="Select Kernel").wait_for()
            page.locator(".jp-Dialog .jp-mod-accept").click()  # "No Kernel", the only choice
            page.locator(".jp-NotebookPanel .tc-fallback").first.wait_for(state="visible")
            for theme in ("light", "dark"):
                set_theme(page, theme)
                check_outputs(page, f"no kernel, {theme}")
                shoot(page, artifact_dir, f"no_kernel_{theme}")


@pytest.mark.browser
def test_reopened_with_a_new_kernel(saved_notebook, jupyterlab_server, artifact_dir):
    path = Path(shutil.copy(saved_notebook, jupyterlab_server.root_dir / saved_notebook.name))
    sign(jupyterlab_server, path)
    with open_browser() as page:
        page.goto(jupyterlab_server.lab_url(f"tree/{path.name}", reset=True))
        wait_for_kernel_idle(page)
        # the new kernel has no widget models: ipywidgets gives up on each (the text is in the page, hidden)
        page.wait_for_function("""() => [...document.querySelectorAll('.jp-OutputArea-output')]
            .filter(o => o.textContent.includes('model not found')).length === %d""" % len(FALLBACK_STARTS),
                                timeout=60_000)
        for theme in ("light", "dark"):
            set_theme(page, theme)
            check_outputs(page, f"new kernel, {theme}")
            shoot(page, artifact_dir, f"new_kernel_{theme}")


def test_static_copy_stays_under_1_mb_and_says_what_it_left_out():
    import torch

    import compiler
    from bench.workloads import chain
    from explorer.page import FALLBACK_BYTES, render_static

    torch._dynamo.reset()
    with compiler.capture() as cap:
        torch.compile(chain(1500), backend="eager")(torch.randn(8))
    full, fallback = render_static(cap), render_static(cap, fallback=True)
    assert len(full.encode()) > FALLBACK_BYTES >= len(fallback.encode())
    left_out = re.findall(r'<p class="tc-muted tc-left-out">([^<]*) — left out of this saved copy \(([\d.]+) MB\)</p>',
                          fallback)
    assert left_out and all(float(size) > 0 for _, size in left_out)
    assert f"{len(left_out)} sections left out" in fallback and "--save PATH" in fallback
    assert "<summary>Overview</summary>" in fallback  # the summaries always fit


@needs_job
def test_job_static_copy_stays_under_1_mb_and_names_what_it_left_out():
    import warnings

    from compiler.readers.job import load_trace
    from explorer.job_view import render_job
    from explorer.page import FALLBACK_BYTES

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if not (JOB_DIR.parent / "multi_rank_runtime").is_dir():
            pytest.skip("multi_rank_runtime is absent")
        job = load_trace(JOB_DIR.parent / "multi_rank_runtime")  # 7 ranks: 6.6 MB of full pages
    full, fallback = render_job(job), render_job(job, fallback=True)
    assert len(full.encode()) > FALLBACK_BYTES >= len(fallback.encode())
    assert "tc-fallback" in fallback and "left out of this saved copy" in fallback
    assert fallback.count("<summary>Rank ") == len(job.ranks) and fallback.count("A static copy of the job") == 1
