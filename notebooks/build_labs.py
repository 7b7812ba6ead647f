#!/usr/bin/env python
"""Writes tcompile's teaching labs (``notebooks/NN_name.ipynb``) from the cells in ``labs/``.

    python notebooks/build_labs.py           # write every lab (outputs cleared)
    python notebooks/build_labs.py --check   # exit 1 if a committed .ipynb differs from its source

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
"""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_notebook

HERE = Path(__file__).resolve().parent
LAB_MODULES = ["lab00_tour", "lab01_dynamo", "lab02_graph_breaks", "lab03_guards", "lab04_aot",
               "lab05_inductor", "lab06_cudagraphs", "lab07_performance", "lab08_distributed"]
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed notebooks; write nothing")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE))
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
