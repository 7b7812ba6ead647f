import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    """Each test starts with empty Dynamo caches and counters (Inductor's disk cache is shared)."""
    import torch
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    yield
    torch._dynamo.reset()


pytest.register_assert_rewrite("jupyterlab_harness")
from jupyterlab_harness import artifact_dir  # noqa: E402,F401 — one test-output/<test>/ fixture for all tests
