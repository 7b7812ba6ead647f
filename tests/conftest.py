import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(autouse=True, scope="session")
def _sigint_raises_keyboard_interrupt():
    """The suite passes however it is started: under ``nohup make test &`` (as many CI runners and batch jobs start
    it) SIGINT arrives ignored, and Python then leaves it so; the interrupt tests need Python's own handler (issue
    46). Put back for the session, the way the process found it after."""
    import signal

    found = signal.getsignal(signal.SIGINT)
    if found is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    if found is signal.SIG_IGN:
        signal.signal(signal.SIGINT, found)


@pytest.fixture(autouse=True)
def _fresh_dynamo(request):
    """Each test starts with empty Dynamo caches and counters (Inductor's disk cache is shared). A test marked
    ``any_torch`` (it reads only files in the repository or ../shared, so the installed torch cannot change its
    result: make test-torch leaves it out) fails if Dynamo compiled a frame during it."""
    import torch
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    yield
    compiled = counters["frames"]["total"]
    torch._dynamo.reset()
    if compiled and request.node.get_closest_marker("any_torch"):
        pytest.fail(f"marked any_torch, but Dynamo compiled {compiled} frames: its result depends on the installed "
                    "torch (remove the mark)")


# The browser tests' shared setup, in one place: the JupyterLab harness is a plugin of every test module
# (its fixtures: the server, Chromium, test-output/<test>/), its asserts rewritten like a test's.
pytest.register_assert_rewrite("jupyterlab_harness")
pytest_plugins = ["jupyterlab_harness"]

from tlparse_fixtures import INPUTS, SKIP_REASON as TLPARSE_SKIP  # noqa: E402


def pytest_terminal_summary(terminalreporter):
    """Say at the end how many tests skipped for want of tlparse's fixture logs, and how to run them."""
    skipped = [r for r in terminalreporter.stats.get("skipped", [])
               if isinstance(r.longrepr, tuple) and TLPARSE_SKIP in str(r.longrepr[2])]
    if skipped:
        terminalreporter.write_line(
            f"{len(skipped)} tests skipped because tlparse's fixture logs are not at {INPUTS}: to run them, put "
            "tlparse's tests/inputs folder there (github.com/pytorch/tlparse, tests/inputs; see "
            "../shared/tlparse_inputs/SOURCE.md) and run pytest again", yellow=True)
