"""The house a newcomer can read (issue 21): data flows one way — capturing → stages → readers →
analyses in compiler/, explorer/ on top — checked on the source itself (AST, every import counted,
also those inside functions)."""
from __future__ import annotations

import import_graph

FOLDERS = ("capturing", "stages", "readers", "analyses", "reference")


def test_no_import_circles_in_compiler_or_explorer():
    assert import_graph.cycles(import_graph.graph()) == []


def test_compiler_never_imports_explorer():
    graph = import_graph.graph()
    upward = {name: sorted(t for t in targets if t.split(".")[0] == "explorer")
              for name, targets in graph.items() if name.split(".")[0] == "compiler"}
    assert {name: targets for name, targets in upward.items() if targets} == {}


def test_compiler_is_laid_out_by_the_flow():
    """Every module sits in one of the five folders (besides the package's entry points and the
    drawing registry), and each folder says in its docstring what enters and what leaves."""
    import importlib

    loose = sorted(name for name in import_graph.modules()
                   if name.count(".") == 1 and name.startswith("compiler.")
                   and name.split(".")[1] not in FOLDERS + ("__main__", "drawing"))
    assert loose == []
    for folder in FOLDERS:
        doc = importlib.import_module(f"compiler.{folder}").__doc__ or ""
        assert "In:" in doc and "Leaves:" in doc, folder


def test_the_checker_sees_a_circle_made_inside_a_function():
    edges = import_graph.graph()
    edges["compiler.stages.schema"] = edges["compiler.stages.schema"] | {"compiler.capturing.run"}
    assert any("compiler.stages.schema" in component for component in import_graph.cycles(edges))
