"""Cell helpers for the lab sources (see ``notebooks/build_labs.py``)."""
from __future__ import annotations

import textwrap

from nbformat.v4 import new_code_cell, new_markdown_cell

__all__ = ["code", "exercise", "goals", "md", "reveal", "setup", "solution", "solution_note"]


def _text(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


def md(text: str):
    return new_markdown_cell(_text(text))


def code(text: str, tags=()):
    cell = new_code_cell(_text(text))
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def reveal(text: str):
    """A cell that measures what a prediction exercise asked for (and so prints its answer): in the labs as they
    are, after the prediction; left out of the nbgrader course, whose graded feedback says the measured value
    (issue 47: a locked cell after a prediction must not print the answer)."""
    return code(text, tags=["reveal"])


def exercise(text: str, fails: bool = True):
    return code(text, tags=["exercise", "raises-exception"] if fails else ["exercise"])


SOLUTION_FIRST_LINE = "# Solution: expand (•••) to read"
SOLUTION_NOTE_PREFIX = "**Solution"  # how solution_note's cell starts (the student edition drops it)


def solution(text: str):
    """A collapsed solution cell. JupyterLab shows a collapsed cell's first line, so that line is a neutral
    marker (or the ``%%`` magic line, which must come first)."""
    text = _text(text)
    if not text.startswith("%%"):
        text = f"{SOLUTION_FIRST_LINE}\n{text}"
    cell = code(text, tags=["solution"])
    cell.metadata["jupyter"] = {"source_hidden": True}
    return cell


def solution_note(what: str = "") -> object:
    """The line above a hidden solution: where it is and how to open it."""
    return md(f"{SOLUTION_NOTE_PREFIX}{(' — ' + what) if what else ''}** (collapsed: click the `•••` below to show it; "
              "running it replaces your answer with the fixed version and runs the checker).")


def setup(extra: str = ""):
    """The first code cell of every lab: the magics, torch, tcompile and the checkers."""
    return code("%load_ext explorer\nimport warnings\n\nimport torch\n\nimport compiler\nimport explorer\n"
                "from tcompile_labs.checks import *\n"
                "from labs.answers import *           # the instructor's answer checkers (not in a student release)\n\n"
                "# torch notes that fresh (cache-free) compiles also turn profile-guided dynamism off; we know\n"
                "warnings.filterwarnings(\"ignore\", message=\"dynamo_pgo force disabled\")\n"
                "_ = torch.manual_seed(0)"
                + (f"\n{_text(extra)}" if extra else ""))


def goals(title: str, goals_md: str, runtime: str):
    return md(f"# {title}\n\n**Learning goals** — after this lab you can\n\n{_text(goals_md)}\n\n"
              f"*{_text(runtime)}* Run the cells top to bottom; exercises are marked **Exercise**: edit the "
              "starting code until its checker prints ✓ (a ✗ names what is wrong and gives a hint).")
