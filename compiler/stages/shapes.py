"""Dynamic shapes: the symbols Dynamo created (``create_symbol`` / ``create_unbacked_symbol``), the
symbolic guards it added (``guard_added_fast``) as sympy expressions, specializations, and the
symbolic index expressions of Inductor's IR with each symbol resolved to the input it stands for."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from compiler.stages.data import Data, Stage, _table, as_declared


# --- declared here, built below (``compiler.stages.schema`` ties the stages into a ``Compile``) ---

@dataclass(repr=False, eq=False)
class ShapeSymbol(Data):
    symbol: str | None = None
    kind: str = "backed"  # backed or unbacked
    source: str | None = None
    hint: Any = None
    range: str | None = None
    origin: str | None = None
    line: int | None = None


@dataclass(repr=False, eq=False)
class ShapeGuard(Data):
    expr: str = ""
    pretty: str | None = None
    latex: str | None = None
    line: int | None = None


@dataclass(repr=False, eq=False)
class Specialization(Data):
    symbol: str | None = None
    sources: list[str] | None = None
    value: Any = None
    reason: str | None = None
    line: int | None = None


@dataclass(repr=False, eq=False)
class IndexExpression(Data):
    index: str = ""
    expr: str = ""
    symbols: dict[str, str] = field(default_factory=dict)


@dataclass(repr=False, eq=False)
class Shapes(Stage):
    NAME: ClassVar[str] = "shapes"
    symbols: list[ShapeSymbol] = field(default_factory=list)
    guards: list[ShapeGuard] = field(default_factory=list)
    specializations: list[Specialization] = field(default_factory=list)
    index_expressions: list[IndexExpression] = field(default_factory=list)
    symbol_sources: dict[str, str] = field(default_factory=dict)

    def _text(self):
        lines = [f"{s.symbol} = {s.source}  range {s.range}  ({s.origin})" for s in self.symbols]
        lines += [f"guard: {g.expr}" for g in self.guards]
        return "\n".join(lines)

    def _summary(self):
        return f"{len(self.symbols)} symbols, {len(self.guards)} shape guards"

    @property
    def table(self):
        return _table(self.symbols)


_SIZE_SOURCE = re.compile(r"L\['(?P<arg>\w+)'\]\.size\(\)\[(?P<dim>\d+)\]")
_SYMBOL = re.compile(r"\b([suz]u?f?\d+)\b")
_INDEX_LINE = re.compile(r"^\s*(index\d+) = (.+)$", re.M)


def _user_line(entry: dict) -> int | None:
    stack = entry.get("user_stack") or []
    return stack[-1].get("line") if stack else None


def sympy_forms(expr: str) -> dict:
    """Pretty and LaTeX forms of one of torch's sympy expressions (parsed here, at capture time,
    from torch's own string — never from a loaded file)."""
    try:
        import sympy
        from sympy.parsing.sympy_parser import parse_expr

        parsed = parse_expr(expr, evaluate=False, local_dict={"int_oo": sympy.oo, "oo": sympy.oo})
        return {"latex": sympy.latex(parsed), "pretty": sympy.pretty(parsed, use_unicode=True)}
    except Exception:  # noqa: BLE001 — a form we can't parse is shown as torch wrote it
        return {"latex": None, "pretty": expr}


def symbol_origin(options: dict, recompile, guard_rows: list, source: str,
                  value_range: str | None = None) -> str:
    arg = _SIZE_SOURCE.search(source or "")
    if value_range and not value_range.rstrip("]").endswith("oo"):
        return "torch._dynamo.mark_dynamic"  # only a user-given min/max bounds a backed symbol
    marked = [g for g in guard_rows if g.kind == "DIMENSION_DYNAMIC_MARKING_GUARD"
              and "_dynamo_dynamic_indices" in g.condition and "== False" not in g.condition]
    if arg and any(f"L['{arg['arg']}']" in g.condition for g in marked):
        return "torch._dynamo.mark_dynamic"
    if options.get("dynamic") is True:
        return "dynamic=True"
    if any("size mismatch" in r.guard for r in recompile.reasons):
        return "automatic dynamic (a recompile after this size changed)"
    if source and "item()" not in source:
        return "dynamic: marked by mark_dynamic or inferred by torch"
    return "data-dependent (unbacked)"


def shapes_stage(records, options: dict, recompile, guard_rows: list, ir_texts: list[str]) -> Shapes:
    """``recompile``: the compile's ``Recompile`` stage (its failed guards say where a size became dynamic);
    ``guard_rows``: its ``Guards`` stage's ``GuardRow``s."""
    symbols = []
    for record in records:
        entry = record.metadata.get(record.kind) or {}
        if record.kind == "create_symbol":
            symbols.append({"symbol": entry.get("symbol"), "hint": entry.get("val"), "range": entry.get("vr"),
                            "source": entry.get("source"), "kind": "backed", "line": _user_line(entry),
                            "origin": symbol_origin(options, recompile, guard_rows, entry.get("source"),
                                                     entry.get("vr"))})
        elif record.kind == "create_unbacked_symbol":
            symbols.append({"symbol": entry.get("symbol"), "hint": None, "range": entry.get("vr"),
                            "source": None, "kind": "unbacked", "line": _user_line(entry),
                            "origin": "data-dependent (unbacked: .item(), nonzero() …)"})
    guards = [{"expr": e["expr"], "line": _user_line(e), **sympy_forms(e["expr"])}
              for e in (r.metadata.get(r.kind) or {} for r in records if r.kind in ("guard_added_fast", "guard_added"))
              if e.get("expr")]
    specializations = [{"symbol": e.get("symbol"), "sources": e.get("sources"), "value": e.get("value"),
                        "reason": e.get("reason"), "line": _user_line(e)}
                       for e in (r.metadata.get(r.kind) or {} for r in records
                                 if r.kind == "symbolic_shape_specialization")]
    specializations += [{"symbol": None, "sources": [g.condition], "value": None, "reason": g.note, "line": g.line}
                        for g in guard_rows if g.note and ("specializ" in g.note or "duck sizing" in g.note)]
    specializations += [{"symbol": None, "sources": [r.guard], "value": None, "line": None,
                         "reason": "0/1 specialization: a size of 0 or 1 is always compiled as a static "
                                   f"constant, so this call could not reuse the dynamic compile {r.against}"}
                        for r in recompile.reasons
                        if re.match(r"^2 <= \S*size\(\)\[\d+\]$", r.guard)]
    if not symbols and not guards and not specializations:
        return Shapes(available=False, reason="every shape in this compile is static (no shape symbols were created)")
    sources = {s["symbol"]: s["source"] for s in symbols if s["source"]}
    return as_declared(Shapes, {  # the symbols' fields are torch's records: checked as on load
        "available": True, "symbols": symbols, "guards": guards, "specializations": specializations,
        "symbol_sources": sources, "index_expressions": index_expressions(ir_texts, sources)})


def index_expressions(ir_texts: list[str], sources: dict) -> list[dict]:
    """Inductor IR index expressions that mention shape symbols, with the symbols resolved."""
    seen, out = set(), []
    for text in ir_texts:
        for name, expr in _INDEX_LINE.findall(text or ""):
            symbols = [s for s in _SYMBOL.findall(expr) if s in sources]
            if symbols and expr not in seen:
                seen.add(expr)
                out.append({"index": name, "expr": expr, "symbols": {s: sources[s] for s in symbols}})
    return out


def check_shape_guards(guard_rows: list, f_locals: dict, symbol_sources: dict) -> list[dict]:
    """Evaluate the size guards (``L['b'].size()[0] == L['a'].size()[0]``) of a compile's guard rows
    (``compiler.stages.schema.GuardRow``) on would-be arguments."""
    results = []
    source_symbol = {v: k for k, v in symbol_sources.items()}
    for row in guard_rows:
        condition = row.condition
        if row.kind != "LAMBDA_GUARD" or ".size()[" not in condition:
            continue
        values = {}
        for match in _SIZE_SOURCE.finditer(condition):
            value = _size_of(f_locals, match["arg"], int(match["dim"]))
            if value is None:
                break
            values[match.group(0)] = value
        else:
            numeric = _SIZE_SOURCE.sub(lambda m: str(values[m.group(0)]), condition)
            passed = _safe_compare(numeric)
            symbolic = _SIZE_SOURCE.sub(lambda m: source_symbol.get(m.group(0), m.group(0)), condition)
            results.append({"condition": condition, "symbolic": symbolic, "with_values": numeric,
                            "passed": passed, "note": row.note})
    return results


def _size_of(f_locals: dict, name: str, dim: int):
    value = f_locals.get(name)
    shape = getattr(value, "shape", None)
    return int(shape[dim]) if shape is not None and dim < len(shape) else None


def _safe_compare(expr: str) -> bool | None:
    """Evaluate an integer comparison such as ``8 <= 16 == 16`` without eval."""
    import ast
    import operator

    ops = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
           ast.Gt: operator.gt, ast.GtE: operator.ge}
    arith = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
             ast.Mod: operator.mod}

    def value(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in arith:
            return arith[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        raise ValueError(ast.dump(node))

    try:
        tree = ast.parse(expr, mode="eval").body
        if not isinstance(tree, ast.Compare):
            return None
        left = value(tree.left)
        for op, right_node in zip(tree.ops, tree.comparators):
            right = value(right_node)
            if type(op) not in ops or not ops[type(op)](left, right):
                return False
            left = right
        return True
    except (ValueError, SyntaxError, ZeroDivisionError):
        return None
