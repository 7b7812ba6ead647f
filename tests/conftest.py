import os
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


@pytest.fixture
def artifact_dir(request):
    path = REPO / "test-output" / request.node.name
    path.mkdir(parents=True, exist_ok=True)
    return path


def pytest_collection_modifyitems(config, items):
    if os.environ.get("CUDA_VISIBLE_DEVICES") == "":
        return
