"""The wheel installs only the ``compiler``, ``explorer`` and ``tcompile_labs`` packages, with the styles and the
labs' GPU captures as package data, and nothing of notebooks/ (lab sources, solutions, answer checkers)."""
from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.any_torch  # compiles nothing, reads only saved files (make test-torch leaves it out)

REPO = Path(__file__).resolve().parent.parent


def test_wheel_installs_only_compiler_explorer_and_the_labs_run_time(tmp_path):
    source = tmp_path / "src"  # a copy: building writes build/ and *.egg-info next to pyproject.toml
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    for package in ("compiler", "explorer", "assets", "tcompile_labs", "notebooks"):
        shutil.copytree(REPO / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                            "-q", "-w", str(tmp_path / "dist"), str(source)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("tcompile-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names if ".dist-info/" not in name}
    assert top == {"compiler", "explorer", "tcompile_labs"}
    assert {"explorer/static/tcompile.css", "explorer/static/compare.css"} <= set(names)
    # issue 39: a student release stands alone: the checkers, lab 8's jobs and the GPU captures come with tcompile
    assert {"tcompile_labs/__init__.py", "tcompile_labs/checks.py", "tcompile_labs/dist_job.py",
            "tcompile_labs/ddp_job.py", "tcompile_labs/checks_modern.py"} <= set(names)
    shipped = {name for name in names if name.endswith(".json")}
    assert shipped == {f"tcompile_labs/gpu/{p.name}" for p in (REPO / "assets" / "gpu").glob("*.json")}
    assert not [name for name in names if "answers" in name or "grading" in name or "/lab0" in name]


def test_styles_are_read_as_package_data():
    from explorer.html import stylesheet
    from explorer.views.diff import compare_stylesheet

    assert ".tcompile" in stylesheet() and ".tc-cmp-table" in compare_stylesheet()
