"""The wheel installs only the ``compiler`` and ``explorer`` packages, with the styles as package data."""
from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_wheel_installs_only_compiler_and_explorer(tmp_path):
    source = tmp_path / "src"  # a copy: building writes build/ and *.egg-info next to pyproject.toml
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    for package in ("compiler", "explorer", "assets"):
        shutil.copytree(REPO / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                            "-q", "-w", str(tmp_path / "dist"), str(source)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("tcompile-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names if ".dist-info/" not in name}
    assert top == {"compiler", "explorer"}
    assert {"explorer/static/tcompile.css", "explorer/static/compare.css"} <= set(names)
    assert not [name for name in names if name.endswith(".json")]  # the recorded GPU captures stay in the repo


def test_styles_are_read_as_package_data():
    from explorer.html import stylesheet
    from explorer.views.diff import compare_stylesheet

    assert ".tcompile" in stylesheet() and ".tc-cmp-table" in compare_stylesheet()
