"""A notebook cell turned into one Python function, so ``torch.compile`` can compile the cell.

    def tcompile_cell(x, model):        # line 1: where the %%tcompile line stands
        y = model(x)                    # the cell's lines, at their notebook line numbers
        print(y.shape)
        z = y.relu()
        return (y, z)                   # names the cell assigns, written back afterwards

- Names the cell reads from the notebook before assigning them become parameters, so Dynamo sees
  them as inputs (``L['x']``) and guards on them as on any function argument. Python modules,
  functions and classes stay globals (``G['torch']``): the function's globals are the notebook
  namespace.
- Names the cell assigns are returned and written back into the namespace after the call; a name
  the cell ``del``-etes at top level is removed from the namespace. A name assigned only on some
  paths (inside ``if``/``for``/``try``) is passed in first, so it stays bound (with its old value,
  or ``UNSET`` when the notebook had none, which is then not written back).
- The parameters' defaults are the values the cell ran with, so a what-if check can change one
  input (``cap.what_if(cap.live.compiled_fn, x=torch.randn(8))``) and keep the others.
- A last bare expression (not ending in ``;``) is kept and returned as the cell's value.
- The function's source is registered in ``linecache`` under a unique fake filename
  (``<tcompile-cell-N>``): graph-break messages, FX ``# File:`` comments and tracebacks show the
  cell's own lines, numbered as in the notebook (the ``%%tcompile`` line is line 1); under IPython the
  file is registered as the running cell, so tracebacks and tcompile's views name it ``In [N]``.

Not supported (as in a function body): ``return``/``yield``/``await`` at top level, ``from m import *``
and IPython syntax (``%magics``, ``!shell``) — they raise ``SyntaxError``.
"""
from __future__ import annotations

import ast
import inspect
import itertools
import linecache
import types
from dataclasses import dataclass, field

FUNCTION_NAME = "tcompile_cell"
OUT = "_tcompile_out"
INDENT = "    "
_counter = itertools.count(1)


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET = _Unset()  # a name the cell may assign but the notebook did not have


@dataclass
class CompiledCell:
    fn: types.FunctionType  # the cell as a plain (eager) function
    filename: str  # the fake file its source is registered under in linecache
    source: str  # that source
    params: list[str]  # parameters, in order
    outputs: list[str]  # names returned and written back, in order (the cell's value last, as OUT)
    deleted: list[str] = field(default_factory=list)  # names the cell deletes at top level
    reads: list[str] = field(default_factory=list)  # names the cell reads before assigning them
    reused: bool = False  # ``fn`` runs the code object of an earlier run of the same cell

    @property
    def has_value(self) -> bool:
        return OUT in self.outputs

    def arguments(self, namespace: dict) -> list:
        """The values to call ``fn`` with: the notebook's, or UNSET where it has none."""
        return [namespace.get(name, UNSET) for name in self.params]

    def write_back(self, namespace: dict, result: tuple):
        """Store the returned names in ``namespace``; return the cell's value (or None)."""
        values = dict(zip(self.outputs, result))
        value = values.pop(OUT, None)
        for name, val in values.items():
            if val is not UNSET:
                namespace[name] = val
        for name in self.deleted:
            namespace.pop(name, None)
        return value


def compile_cell(cell: str, namespace: dict, reuse: bool = False) -> CompiledCell:
    """Build the function for ``cell``. Raises SyntaxError with notebook line numbers.

    ``reuse=True``: when the same cell text with the same parameters was built before, run that
    earlier build's code object again (Dynamo keeps its compiles on the code object, so a re-run
    can reuse them — what ``--stance fail_on_recompile`` needs); ``reused`` says whether it did."""
    filename = f"<tcompile-cell-{next(_counter)}>"
    tree = ast.parse("\n" + cell, filename)  # the leading newline stands for the %%tcompile line
    _reject_top_level(tree.body, filename)
    body = tree.body
    has_value = bool(body) and isinstance(body[-1], ast.Expr) and not _quiet(cell)
    if has_value:
        body[-1] = ast.copy_location(ast.Assign(targets=[ast.Name(OUT, ast.Store())], value=body[-1].value),
                                     body[-1])
    names = analyse(body)
    params = [n for n in names.reads if n in namespace and _is_value(namespace[n])]
    params += [n for n in names.must_bind if n not in params]
    outputs = names.outputs  # OUT, when there is a value, is assigned last: it comes last
    key = (cell, tuple(params), tuple(outputs))
    earlier = _BUILT.get(key) if reuse else None
    if earlier is not None and linecache.getlines(earlier[1]):
        code, filename, source = earlier
        fn = types.FunctionType(code, namespace, FUNCTION_NAME)
    else:
        earlier = None
        source = _source_text(cell, params, outputs)
        fn = _build(body, params, outputs, source, filename, namespace)
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        _BUILT[key] = (fn.__code__, filename, source)
        while len(_BUILT) > _KEEP_BUILT:
            _BUILT.pop(next(iter(_BUILT)))
    fn.__defaults__ = tuple(namespace.get(name, UNSET) for name in params) or None  # what-if: change one input
    _name_as_notebook_cell(filename)
    return CompiledCell(fn, filename, source, params, outputs, names.deleted, reads=list(names.reads),
                        reused=earlier is not None)


_KEEP_BUILT = 64
_BUILT: dict = {}  # (cell text, params, outputs) → (code object, filename, source) of its latest build


def _name_as_notebook_cell(filename: str) -> None:
    """Register ``filename`` in IPython's map of cell file names to execution counts, as IPython does
    for its own cells: tracebacks and tcompile's views then call it ``In [N]`` like any cell."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    names = getattr(getattr(shell, "compile", None), "_filename_map", None)
    if isinstance(names, dict) and names:
        names[filename] = next(reversed(names.values()))  # the running cell: the last one IPython compiled


def _quiet(cell: str) -> bool:
    """A trailing ``;`` hides the cell's value, as in IPython (comments after it allowed)."""
    try:
        from IPython.core.displayhook import DisplayHook

        return DisplayHook.semicolon_at_end_of_expression(cell)
    except (ImportError, AttributeError):  # older IPython
        return cell.rstrip().endswith(";")


def _is_value(obj) -> bool:
    """Tensors, numbers, containers, nn.Modules… are inputs; modules, functions, classes stay globals."""
    return not (isinstance(obj, (types.ModuleType, type)) or inspect.isroutine(obj))


def _source_text(cell: str, params: list[str], outputs: list[str]) -> str:
    lines = [f"def {FUNCTION_NAME}({', '.join(params)}):"]
    lines += [INDENT + line if line.strip() else "" for line in cell.splitlines()]
    lines.append(INDENT + _return_text(outputs))
    return "\n".join(lines) + "\n"


def _return_text(outputs: list[str]) -> str:
    return f"return ({', '.join(outputs)}{',' if len(outputs) == 1 else ''})"


def _build(body, params, outputs, source, filename, namespace) -> types.FunctionType:
    for stmt in body:
        for node in ast.walk(stmt):  # the cell's lines are indented in the registered source
            if hasattr(node, "col_offset"):
                node.col_offset += len(INDENT)
                if getattr(node, "end_col_offset", None) is not None:
                    node.end_col_offset += len(INDENT)
    module = ast.parse(f"def {FUNCTION_NAME}({', '.join(params)}):\n{INDENT}{_return_text(outputs)}")
    function = module.body[0]
    ret = function.body[0]
    ast.increment_lineno(ret, source.count("\n") - 2)  # the last line of the source
    function.body = (body or []) + [ret]
    ast.fix_missing_locations(module)
    scope: dict = {}
    exec(compile(module, filename, "exec"), namespace, scope)  # globals: the notebook namespace
    return scope[FUNCTION_NAME]


def _reject_top_level(body, filename: str) -> None:
    """What a cell cannot do but a function could (``return``), or the reverse (``yield``)."""
    for stmt in body:
        for node in _walk_scope(stmt):
            if isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom, ast.Await)):
                what = {ast.Return: "'return'", ast.Await: "'await'"}.get(type(node), "'yield'")
                _refuse(f"{what} outside function (a %%tcompile cell is compiled as a function body, "
                        "but must behave like a cell)", filename, node)
            if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
                _refuse("'from … import *' cannot be compiled (a %%tcompile cell is compiled as a function "
                        "body): import it in a plain cell first", filename, node)


def _refuse(message: str, filename: str, node: ast.AST):
    raise SyntaxError(message, (filename, node.lineno, node.col_offset + 1, None))


def _walk_scope(node):
    """ast.walk without descending into nested functions, lambdas and classes."""
    yield node
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
        return
    for child in ast.iter_child_nodes(node):
        yield from _walk_scope(child)


# --- which names the cell reads, assigns and deletes ------------------------------------------

_SIMPLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Import, ast.ImportFrom, ast.Delete,
           ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Pass, ast.Assert, ast.Raise)


@dataclass
class Names:
    reads: list[str]  # read before any certain assignment: parameters when the notebook has them
    must_bind: list[str]  # must be bound on entry (assigned on some paths, or deleted): parameters
    outputs: list[str]  # assigned: returned and written back
    deleted: list[str]  # deleted at top level: removed from the notebook


def analyse(body: list[ast.stmt]) -> Names:
    """Statement by statement: a name is "set" after a top-level assignment, "maybe" after one inside
    a compound statement, "deleted"/"maybe-deleted" after a ``del``."""
    state: dict[str, str] = {}
    reads: list[str] = []
    declared_global: set[str] = set()
    for stmt in body:
        scope = _Scope()
        scope.visit(stmt)
        declared_global |= set(scope.globals)
        for name in scope.loads + scope.dels:
            if state.get(name) != "set" and name not in reads:
                reads.append(name)
        simple = isinstance(stmt, _SIMPLE)
        for name in scope.stores:
            state[name] = "set" if simple or state.get(name) == "set" else "maybe"
        for name in scope.dels:
            state[name] = "deleted" if simple else "maybe-deleted"
    state = {n: s for n, s in state.items() if n not in declared_global}
    return Names(
        reads=[n for n in reads if n not in declared_global],
        must_bind=[n for n, s in state.items() if s in ("maybe", "maybe-deleted")]
        + [n for n in reads if state.get(n) == "deleted"],
        outputs=[n for n, s in state.items() if s in ("set", "maybe")],
        deleted=[n for n, s in state.items() if s == "deleted"])


class _Scope(ast.NodeVisitor):
    """Names one statement loads, stores and deletes in the cell's own scope."""

    def __init__(self):
        self.loads: list[str] = []
        self.stores: list[str] = []
        self.dels: list[str] = []
        self.globals: list[str] = []

    def visit_Name(self, node):
        {ast.Load: self.loads, ast.Store: self.stores, ast.Del: self.dels}[type(node.ctx)].append(node.id)

    def visit_AugAssign(self, node):
        if isinstance(node.target, ast.Name):
            self.loads.append(node.target.id)
        self.generic_visit(node)

    def visit_FunctionDef(self, node):  # the body runs later, in its own scope
        for expr in node.decorator_list + node.args.defaults + [d for d in node.args.kw_defaults if d]:
            self.visit(expr)
        self.stores.append(node.name)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        for expr in node.args.defaults + [d for d in node.args.kw_defaults if d]:
            self.visit(expr)

    def visit_ClassDef(self, node):
        for expr in node.decorator_list + node.bases + [k.value for k in node.keywords]:
            self.visit(expr)
        self.stores.append(node.name)

    def _visit_comprehension(self, node):  # its targets are its own
        inner = _Scope()
        inner.generic_visit(node)
        self.loads += [n for n in inner.loads if n not in inner.stores]

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _visit_comprehension

    def visit_Import(self, node):
        self.stores += [(alias.asname or alias.name).split(".")[0] for alias in node.names]

    visit_ImportFrom = visit_Import

    def visit_Global(self, node):
        self.globals += node.names


def unquote(text: str) -> str:
    """IPython's argument splitter keeps quotes: ``'{"a": 1}'`` → ``{"a": 1}``."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text
