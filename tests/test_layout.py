"""The house a newcomer can read (issues 21, 36): compiler/ stands on floors — reference < stages <
readers < capturing < analyses < the package's top modules — every import pointing down, explorer/ on
top, no circle anywhere; checked on the source itself (AST, every import counted, also those inside
functions)."""
from __future__ import annotations

import import_graph
import pytest

pytestmark = pytest.mark.any_torch  # compiles nothing, reads only saved files (make test-torch leaves it out)

FOLDERS = ("capturing", "stages", "readers", "analyses", "reference")


def test_no_import_circles_in_compiler_or_explorer():
    assert import_graph.cycles(import_graph.graph()) == []


def test_no_circle_even_through_annotations():
    """provenance.py ↔ schema.py was the last circle (issue 46): schema imported the provenance map's types,
    provenance named ``AotGraphs`` and ``Compile`` from schema under ``if TYPE_CHECKING:``. Two modules that need
    each other's names are one module in two files: counted with those imports too, none is left."""
    assert import_graph.cycles(import_graph.graph(annotations=True)) == []


MAX_LINES = 900  # provenance.py was 1.3k lines, four jobs in one file (issue 46)


def test_no_module_is_over_the_line_budget():
    long = {name: n for name, path in import_graph.modules().items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_every_import_in_compiler_points_down_a_floor():
    assert import_graph.upward(import_graph.graph()) == []


def test_every_module_in_compiler_is_on_a_floor():
    assert [name for name in import_graph.modules() if name.startswith("compiler")
            and import_graph.floor_of(name) is None] == []


def _planted(tmp_path, name: str, source: str) -> dict[str, set[str]]:
    """The real graph with module ``name`` read from ``source`` instead (a case planted to be caught)."""
    path = tmp_path / (name.rpartition(".")[2] + ".py")
    path.write_text(source, encoding="utf-8")
    edges = import_graph.graph()
    edges[name] = import_graph.imports_of(name, path, import_graph.modules())
    return edges


def test_the_floor_check_sees_an_upward_import_made_inside_a_function(tmp_path):
    """The way stages/capture.py reached the analyses before (issue 36), planted again: caught."""
    edges = _planted(tmp_path, "compiler.stages.planted",
                     "def what_if(cap):\n    from compiler.analyses import whatif\n    return whatif\n")
    assert import_graph.upward(edges) == [("compiler.stages.planted", "compiler.analyses"),
                                          ("compiler.stages.planted", "compiler.analyses.whatif")]
    edges = _planted(tmp_path, "compiler.readers.planted", "from compiler.capturing.records import RecordCollector\n")
    assert import_graph.upward(edges) == [("compiler.readers.planted", "compiler.capturing.records")]


def test_the_circle_check_sees_a_package_imported_by_its_own_module(tmp_path):
    """explorer/magics.py as it was (issue 36): ``from . import cell`` names the package, whose
    ``load_ipython_extension`` imports magics — a circle, caught."""
    edges = _planted(tmp_path, "explorer.magics", "from . import cell as cell_mod\n")
    assert ["explorer", "explorer.magics"] in import_graph.cycles(edges)


def test_registered_methods_are_all_there():
    """Every ``METHODS[...]`` a Capture method calls is filled once ``compiler`` is imported (its docstring)."""
    import re

    import compiler  # noqa: F401
    from compiler.stages import capture

    called = set(re.findall(r'METHODS\["(\w+)"\]', import_graph.modules()["compiler.stages.capture"].read_text()))
    assert called and called <= set(capture.METHODS)


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


# the stage modules that tie the stages together and may import ``compiler.stages.schema`` (issue 36)
SCHEMA_READERS = {"compiler.stages.schema", "compiler.stages.assemble", "compiler.stages.capture"}


def _builders_importing_schema(edges: dict[str, set[str]]) -> list[str]:
    return sorted(name for name, targets in edges.items() if name.startswith("compiler.stages.")
                  and name not in SCHEMA_READERS and "compiler.stages.schema" in targets)


def test_each_stage_is_declared_beside_its_builder():
    """A builder module imports its declared types from itself and lower stage modules; ``schema`` imports
    them all (and ties them into a Compile), so a builder importing ``schema`` would be a circle (issue 36)."""
    assert _builders_importing_schema(import_graph.graph()) == []


def test_the_builder_check_sees_a_schema_import_inside_a_function(tmp_path):
    """kernel_costs.py as it was (issue 36): a function reading ``ProfiledKernel`` from schema, planted: caught."""
    edges = _planted(tmp_path, "compiler.stages.planted",
                     "def own(rows):\n    from compiler.stages.schema import ProfiledKernel\n    return rows\n")
    assert _builders_importing_schema(edges) == ["compiler.stages.planted"]
