"""The import graph of compiler/ and explorer/, read from the source (AST), every import counted —
module-level and inside functions — except those under ``if TYPE_CHECKING:``, which never run."""
from __future__ import annotations

import ast
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


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports (a ``from pkg import mod`` counts as importing ``pkg.mod``)."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()

    def resolve(base: str, level: int) -> str:
        if not level:
            return base
        parts = name.split(".") if is_package else name.split(".")[:-1]
        parts = parts[:len(parts) - (level - 1)]
        return ".".join(parts + ([base] if base else []))

    def visit(node):
        if isinstance(node, ast.If) and _type_checking_only(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = resolve(node.module or "", node.level)
            for alias in node.names:  # `from pkg import mod` imports pkg.mod; `from mod import name`, mod
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
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


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


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
