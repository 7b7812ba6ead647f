"""The README's Python examples, run as a newcomer runs them: each ```python block as a script in a fresh
process, twice in a row (the second run finds Inductor's caches the first one filled), and what it prints
compared with the block the README shows after it ("prints (torch X, CPU):"), line for line (issue 38)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = re.compile(r"```python\n(?P<code>.*?)```\n(?:prints \(torch (?P<torch>[\d.]+), CPU\):\n```\n(?P<out>.*?)```)?",
                     re.DOTALL)


def examples() -> list[tuple[str, str | None, str | None]]:
    """(code, torch version, printed text) of each ```python block; the last two None where none is shown."""
    found = [(m["code"], m["torch"], m["out"]) for m in EXAMPLE.finditer((REPO / "README.md").read_text())]
    assert found, "README.md has no ```python example"
    return found


def test_the_readme_shows_what_its_examples_print():
    assert any(out for _, _, out in examples())


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(examples())))
def test_a_readme_example_prints_what_the_readme_shows_twice_in_a_row(index, tmp_path):
    code, version, shown = examples()[index]
    if version and not torch.__version__.startswith(version + "."):
        pytest.skip(f"the README shows torch {version}'s output; this is torch {torch.__version__}")
    script = tmp_path / "example.py"
    script.write_text(code)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for run in ("first", "second"):
        result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True,
                                text=True, timeout=600)
        assert result.returncode == 0, f"{run} run:\n{result.stderr[-3000:]}"
        if shown is not None:
            assert result.stdout.splitlines() == shown.splitlines(), f"{run} run"
