"""The import graph of compiler/ and explorer/, read from the source (AST), every import counted —
module-level and inside functions — except those under ``if TYPE_CHECKING:``, which never run. An
import names the module or package it reads from: ``from . import cell`` depends on the package (its
``__init__``) as well as on ``cell``; ``from .cell import unquote`` on ``cell`` alone.

compiler/'s floors (compiler/__init__'s docstring): ``floor_of`` a module, and ``upward`` the imports
that point up a floor."""
from __future__ import annotations

import ast
import functools
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("compiler", "explorer")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for package in PACKAGES for p in sorted((REPO / package).rglob("*.py"))}


def _type_checking_only(node: ast.If) -> bool:
    return isinstance(node.test, (ast.Name, ast.Attribute)) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports_of(name: str, path: Path, known: dict[str, Path], *, annotations: bool = False) -> set[str]:
    """The project modules ``name`` imports (a ``from pkg import mod`` counts as importing ``pkg.mod``);
    ``annotations``: those under ``if TYPE_CHECKING:`` too (a circle of names, if not of imports run)."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()

    def resolve(base: str, level: int) -> str:
        if not level:
            return base
        parts = name.split(".") if is_package else name.split(".")[:-1]
        parts = parts[:len(parts) - (level - 1)]
        return ".".join(parts + ([base] if base else []))

    def visit(node):
        if isinstance(node, ast.If) and _type_checking_only(node) and not annotations:
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = resolve(node.module or "", node.level)
            found.add(base)  # the module or package named runs first: `from . import cell` imports the package
            for alias in node.names:  # `from pkg import mod` imports pkg.mod too
                if f"{base}.{alias.name}" in known:
                    found.add(f"{base}.{alias.name}")
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    out = set()
    for target in found:
        while target and target not in known:  # `import a.b.c` → the deepest project module named
            target = target.rpartition(".")[0]
        if target and target != name:
            out.add(target)
    return out


def graph(*, annotations: bool = False) -> dict[str, set[str]]:
    """Each module's project imports (``annotations``: those under ``if TYPE_CHECKING:`` too); the tree is read
    once per process (a test may change what it is given)."""
    return {name: set(targets) for name, targets in _graph(annotations).items()}


@functools.cache
def _graph(annotations: bool) -> dict[str, frozenset[str]]:
    known = modules()
    return {name: frozenset(imports_of(name, path, known, annotations=annotations)) for name, path in known.items()}


# compiler/'s floors, bottom first (compiler/__init__'s docstring); the package's top modules may import all.
FLOORS = (("reference", "drawing"), ("stages",), ("readers",), ("capturing",), ("analyses",), ("__init__", "__main__"))


def floor_of(name: str) -> int | None:
    """The floor of a compiler/ module (0 the bottom), None outside compiler/."""
    parts = name.split(".")
    if parts[0] != "compiler":
        return None
    room = parts[1] if len(parts) > 1 else "__init__"
    return next(i for i, rooms in enumerate(FLOORS) if room in rooms)


def upward(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Every import in compiler/ of a module on a higher floor, as (importer, imported)."""
    return sorted((name, target) for name, targets in edges.items() if floor_of(name) is not None
                  for target in targets if floor_of(target) is not None and floor_of(target) > floor_of(name))


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def strongconnect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            strongconnect(v)
    return out


if __name__ == "__main__":
    g = graph()
    for component in cycles(g):
        print(f"circle of {len(component)}: {', '.join(component)}")
    for name, targets in sorted(g.items()):
        up = sorted(t for t in targets if name.startswith("compiler") and t.startswith("explorer"))
        if up:
            print(f"{name} imports {', '.join(up)}")
    for name, target in upward(g):
        print(f"{name} imports {target}, a floor up")
