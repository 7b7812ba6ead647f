#!/usr/bin/env python
"""Writes tcompile's teaching labs (``notebooks/NN_name.ipynb``) from the cells in ``labs/``.

    python notebooks/build_labs.py           # write every lab (outputs cleared)
    python notebooks/build_labs.py --check   # exit 1 if a committed .ipynb differs from its source
    python notebooks/build_labs.py --course DIR  # the labs as an nbgrader course (DIR/source/labNN/), see
                                                 # labs/grading.py; then in DIR: nbgrader generate_assignment

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

The **student release** is nbgrader's (``make labs-student``): ``--course DIR`` writes the labs as an
nbgrader course (``labs/grading.py``: solution cells, locked test cells with visible checks and hidden
tests, points), and ``nbgrader generate_assignment`` in DIR writes ``release/``: the starting code in place
of each solution, no hidden test, no answer checker (``labs/answers.py`` stays the instructor's). It is
generated, not committed: it derives entirely from the sources. ``tests/test_labs_grading.py`` autogrades
it (solutions, the unanswered release, planted wrong answers).
"""
from __future__ import annotations

import argparse
import importlib
import re
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_notebook

HERE = Path(__file__).resolve().parent
LAB_MODULES = ["lab00_tour", "lab01_dynamo", "lab02_graph_breaks", "lab03_guards", "lab04_aot",
               "lab05_inductor", "lab06_cudagraphs", "lab07_performance", "lab08_distributed", "lab09_real_model",
               "lab10_modern"]
EXERCISE_HEADING = re.compile(r"^#+ Exercise (\d+\.\d+)\b", re.M)
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


COURSE_CONFIG = """\
# written by notebooks/build_labs.py --course: the tcompile labs as an nbgrader course
import sys

sys.path.insert(0, {notebooks!r})  # labs.grading: the starter-code stub (instructor side)
from labs.grading import StarterCode  # noqa: E402
from nbgrader.converters import GenerateAssignment  # noqa: E402
from nbgrader.preprocessors import ClearSolutions  # noqa: E402

c = get_config()  # noqa: F821
c.CourseDirectory.course_id = "tcompile-labs"
c.CourseDirectory.db_url = "sqlite:///gradebook.db"  # the course's root (nbgrader runs there): it may be moved
c.GenerateAssignment.preprocessors = [StarterCode if p is ClearSolutions else p
                                      for p in GenerateAssignment.class_traits()["preprocessors"].default()]
c.Execute.timeout = 300            # one cell: a cold Inductor compile on a loaded 2-core machine
"""


RELEASE_README = """# A tcompile lab

Install once, one command (Python 3.10+; the index gives the CPU build of torch, a small download), with the
tcompile wheel or folder your instructor hands out:

    pip install --extra-index-url https://download.pytorch.org/whl/cpu "./tcompile-0.1.0-py3-none-any.whl[labs]"

tcompile brings everything the labs use: the explorer, the checkers (`tcompile_labs.checks`), the GPU captures
and lab 8's job scripts; its `labs` extra adds what lab 9 runs (transformers for its GPT-2, the tlparse CLI). Then `jupyter lab` in this folder and run the notebook top to bottom. Each exercise:
edit the cell with the starting code; the locked cell after it checks your answer (✗ with a hint, or ✓).
Submit the notebook as it is.
"""


def assignment_name(filename: str) -> str:
    return "lab" + filename[:2]


def course_notebook(nb):
    """The notebook as nbgrader's source: each exercise a solution cell and a locked, graded test cell
    (visible checks, hidden tests, points); every other code cell locked. See labs/grading.py."""
    from labs import SOLUTION_FIRST_LINE, grading

    nb = nbformat.reads(nbformat.writes(nb), as_version=4)
    cells, exercise_id, pending = [], None, None
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if cell.cell_type == "markdown":
            exercise_id = (EXERCISE_HEADING.findall(cell.source) or [exercise_id])[-1]
            if not _is_solution(cell):
                cells.append(cell)
            continue
        if "exercise" in tags:
            pending = cell
            continue
        if "reveal" in tags:  # it prints a prediction's answer: the graded feedback says it instead
            continue
        if "solution" in tags:
            starter, _ = grading.split_checks(pending.source)
            body, checks = grading.split_checks(cell.source.removeprefix(SOLUTION_FIRST_LINE + "\n"))
            grade_id = "ex" + exercise_id.replace(".", "_")
            answer = nbformat.v4.new_code_cell("### BEGIN SOLUTION\n" + body + "\n### END SOLUTION")
            answer.metadata = {"nbgrader": {"grade": False, "solution": True, "locked": False,
                                            "grade_id": grade_id, "schema_version": 3},
                               "tcompile": {"starter": starter or "..."}}
            test = nbformat.v4.new_code_cell("\n".join(grading.visible_checks(checks)) + "\n### BEGIN HIDDEN TESTS\n"
                                             + grading.hidden_tests(exercise_id, checks)
                                             + "\n### END HIDDEN TESTS")
            test.metadata = {"nbgrader": {"grade": True, "solution": False, "locked": True,
                                          "points": grading.POINTS.get(exercise_id, 1),
                                          "grade_id": grade_id + "_tests", "schema_version": 3},
                             "tags": ["raises-exception"]}  # a failed check: Run All goes on
            cells += [answer, test]
            pending = None
            continue
        cell.source = grading.SETUP_IMPORT.sub("", cell.source)  # the answer checkers stay the instructor's
        cell.metadata = {"nbgrader": {"grade": False, "solution": False, "locked": True,
                                      "grade_id": f"cell_{len(cells)}", "schema_version": 3}}
        cells.append(cell)
    stem = "c"
    for i, cell in enumerate(cells):
        cell.id = f"{stem}-{i:03d}"
    nb.cells = cells
    nbformat.validate(nb)
    return nb


def write_course(root: Path, names=None) -> list[Path]:
    """``root``/source/labNN/NN_name.ipynb for each lab (with a README: how to install),
    ``root``/nbgrader_config.py and ``root``/tcompile_answers.py (the answer checkers the hidden tests load). The checkers, captures and job the labs use come with tcompile."""
    root.mkdir(parents=True, exist_ok=True)
    from labs import grading  # the hidden tests find the answer checkers at the course's root, wherever it is
    (root / grading.ANSWERS_COPY).write_text((HERE / "labs" / "answers.py").read_text(encoding="utf-8"),
                                             encoding="utf-8")
    (root / "nbgrader_config.py").write_text(
        COURSE_CONFIG.format(notebooks=str(HERE)), encoding="utf-8")
    written = []
    for name in names or LAB_MODULES:
        filename, nb = build(name)
        folder = root / "source" / assignment_name(filename)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "README.md").write_text(RELEASE_README, encoding="utf-8")
        path = folder / filename
        path.write_text(nbformat.writes(course_notebook(nb)) + "\n", encoding="utf-8")
        written.append(path)
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed notebooks; write nothing")
    parser.add_argument("--course", type=Path, help="write the labs as an nbgrader course (source/) there")
    parser.add_argument("--labs", nargs="*", help="with --course: only these lab modules (e.g. lab02_graph_breaks)")
    args = parser.parse_args(argv)
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    if args.course:
        for path in write_course(args.course.resolve(), args.labs):
            print(f"wrote {path} (nbgrader source)")
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
