#!/usr/bin/env python
"""Writes tcompile's teaching labs (``notebooks/NN_name.ipynb``) from the cells in ``labs/``.

    python notebooks/build_labs.py           # write every lab (outputs cleared)
    python notebooks/build_labs.py --check   # exit 1 if a committed .ipynb differs from its source
    python notebooks/build_labs.py --student # the student edition, without solutions, in notebooks/student/

Edit the labs in ``notebooks/labs/labNN_*.py``, not in JupyterLab, then rebuild: the .ipynb files are
committed with their outputs cleared so diffs stay readable. Each lab module defines ``FILE`` and
``cells()``, a list built with the helpers below:

- ``md(text)`` / ``code(text)``: an explanation / a live cell.
- ``exercise(text)``: the student's starting code, tagged ``exercise``. With ``fails=True`` (the
  default) it ends in a checker that fails until the student fixes the code, so it is also tagged
  ``raises-exception``: nbclient and JupyterLab's Run All go on past it, and CI checks that it
  really fails with ``CheckFailed``.
- ``solution(text)``: the fixed version, running the checker; its input is hidden
  (``jupyter.source_hidden``) and it is tagged ``solution``. CI runs the solutions in place and
  requires their ✓ lines.

The **student edition** (``--student``, ``make labs-student``) is the same notebooks without the solution
cells and the notes that point at them, written to ``notebooks/student/`` together with the checkers
(``labs/checks.py``; not the lab sources, which hold the solutions). It is generated, not committed
(``.gitignore``): it is derived entirely from the sources, so a committed copy could only go stale, and
a teacher hands out the folder they just built. CI checks that its exercises fail until solved and that
no solution text is in it (``tests/test_labs.py``).
"""
from __future__ import annotations

import argparse
import importlib
import shutil
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_notebook

HERE = Path(__file__).resolve().parent
LAB_MODULES = ["lab00_tour", "lab01_dynamo", "lab02_graph_breaks", "lab03_guards", "lab04_aot",
               "lab05_inductor", "lab06_cudagraphs", "lab07_performance", "lab08_distributed"]
STUDENT_DIR = HERE / "student"
STUDENT_README = """# tcompile teaching labs — student edition

Run each notebook top to bottom (`jupyter lab` in this folder). An **Exercise** cell ends in a checker that
prints `✗ …` with a hint until your code is right, then `✓ …`. Keep `labs/checks.py` next to the notebooks:
the labs import their checkers from it.
"""
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def build(module_name: str):
    module = importlib.import_module(f"labs.{module_name}")
    nb = new_notebook(cells=module.cells(), metadata={
        "kernelspec": KERNELSPEC,
        "language_info": {"name": "python", "pygments_lexer": "ipython3"},
    })
    stem = Path(module.FILE).stem
    for i, cell in enumerate(nb.cells):
        cell.id = f"{stem.replace('_', '-')}-{i:02d}"
    nbformat.validate(nb)
    return module.FILE, nb


def _is_solution(cell) -> bool:
    from labs import SOLUTION_NOTE_PREFIX
    if "solution" in cell.get("metadata", {}).get("tags", []):
        return True
    return cell.cell_type == "markdown" and cell.source.startswith(SOLUTION_NOTE_PREFIX)


def student_edition(nb):
    """The notebook without its solutions: every solution cell and the note above it are dropped."""
    nb = nbformat.reads(nbformat.writes(nb), as_version=4)  # a deep copy
    nb.cells = [cell for cell in nb.cells if not _is_solution(cell)]
    nbformat.validate(nb)
    return nb


def write_student_edition(out_dir: Path = STUDENT_DIR) -> list[Path]:
    """Writes the student edition to ``out_dir``: the notebooks, labs/checks.py and a README."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "labs").mkdir(exist_ok=True)
    shutil.copyfile(HERE / "labs" / "checks.py", out_dir / "labs" / "checks.py")
    (out_dir / "labs" / "__init__.py").write_text('"""The checkers of the tcompile labs (labs.checks)."""\n',
                                                  encoding="utf-8")
    (out_dir / "README.md").write_text(STUDENT_README, encoding="utf-8")
    written = []
    for name in LAB_MODULES:
        filename, nb = build(name)
        path = out_dir / filename
        path.write_text(nbformat.writes(student_edition(nb)) + "\n", encoding="utf-8")
        written.append(path)
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed notebooks; write nothing")
    parser.add_argument("--student", action="store_true",
                        help=f"write the student edition (no solutions) to {STUDENT_DIR.relative_to(HERE.parent)}/")
    parser.add_argument("--out", type=Path, default=STUDENT_DIR, help="with --student: where to write it")
    args = parser.parse_args(argv)
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    if args.student:
        for path in write_student_edition(args.out.resolve()):
            print(f"wrote {path} (student edition)")
        return 0
    stale = []
    for name in LAB_MODULES:
        filename, nb = build(name)
        text = nbformat.writes(nb) + "\n"
        path = HERE / filename
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(filename)
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(HERE.parent)} ({len(nb.cells)} cells)")
    if stale:
        print("out of date (run python notebooks/build_labs.py): " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
