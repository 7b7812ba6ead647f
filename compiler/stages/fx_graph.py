"""FX graphs as torch prints them (``GraphModule.print_readable``), parsed into nodes and edges, and their
declared types (``Graph``, ``GraphNode``; ``compiler.stages.schema`` ties them into a ``Compile``): a
graph is parsed from its code when it is built and again when a saved one is read.

Used for Dynamo's output graph and for every later graph printed the same way (AOTAutograd,
Inductor pre/post-grad). Parsing torch's own readable text (rather than holding live
GraphModules) keeps captures plain data and lets one parser read torch 2.11 and 2.13 alike.
"""
from __future__ import annotations

import dataclasses
import functools
import re
import textwrap
from dataclasses import dataclass, field
from typing import ClassVar

from compiler.stages.data import Data, Stage, _dump, _fields, _table, as_declared

# Past this size a graph's code is not parsed again on load (a 200 MB code would be millions of nodes,
# tens of seconds and gigabytes); saving keeps the nodes of such a graph instead. ~60,000 nodes.
MAX_PARSED_CODE_CHARS = 16_000_000

# torch's line comment above FX nodes (torch/fx/graph.py, ``append_stacktrace_summary``): ``# File: f:N in fn,
# code: …``; from 2.14 a backward node (``meta["autograd_backward"]``) says ``# Backward of forward node: File: …``
# — the forward line it differentiates, as 2.13 printed it without the prefix.
_FILE_COMMENT = re.compile(r"#\s*(?:Backward of forward node:\s*)?File:\s*(?P<file>.+?):(?P<line>\d+) in (?P<fn>[^,]+), "
                           r"code: (?P<code>.*)$")
# ``name: "f32[…]" = expr``; a node typed by ``node.type`` rather than its value prints ``name : torch.Tensor = expr``
_ASSIGN = re.compile(r'^(?P<names>[\w, ]+?)\s*(?::\s*(?:"(?P<type>[^"]*)"|(?P<ptype>[\w.\[\], ]+?)))?\s*=\s*(?P<expr>.+)$')
# a placeholder of the signature, typed as torch prints it ("f32[3]") or, in older graphs, by its class (torch.Tensor)
_PLACEHOLDER = re.compile(r'(?P<name>\w+)\s*:\s*(?:"(?P<type>[^"]*)"|[A-Za-z_][\w\.]*)')
_TENSOR_TYPE = re.compile(r"^(?P<dtype>[a-z]+\d*)\[(?P<shape>[^\]]*)\](?:\[(?P<stride>[^\]]*)\])?(?P<device>[a-z]*:?\d*)$")
_PARAM_NAME = re.compile(r"^[lg]_(?P<path>.+?)_(?:parameters|buffers)_(?P<leaf>\w+?)_$")
_IDENT = re.compile(r"(?<![\w.'\"])[A-Za-z_]\w*")
_NESTED_CLASS = re.compile(r"^(?P<indent> *)class (?P<name>\w+)\(")
_GET_ATTR = re.compile(r"^self\.(?P<attr>[\w.]+)$")
NOT_OPS = ("placeholder", "output", "alias", "get_attr")  # nodes that compute nothing

DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "f64": "float64", "i64": "int64",
          "i32": "int32", "i16": "int16", "i8": "int8", "u8": "uint8", "b8": "bool", "c64": "complex64",
          "f8e4m3fn": "float8_e4m3fn", "f8e5m2": "float8_e5m2"}


def _dims(text: str | None) -> list[str] | None:
    return [d for d in map(str.strip, text.split(",")) if d] if text is not None else None


@functools.lru_cache(maxsize=4096)  # a graph repeats few types; the result is read, never changed
def parse_type(type_text: str | None) -> dict:
    """``f32[8, 4][4, 1]cpu`` → dtype, shape, stride, device; ``Sym(s77)`` → symbolic value."""
    if not type_text:
        return {}
    match = _TENSOR_TYPE.match(type_text.strip())
    if match:
        return {"dtype": DTYPES.get(match["dtype"], match["dtype"]), "shape": _dims(match["shape"]),
                "stride": _dims(match["stride"]), "device": match["device"] or None}
    return {"type": type_text}


@functools.lru_cache(maxsize=65536)  # every node's inputs are looked up; names repeat across graphs
def module_path_of(name: str) -> str | None:
    """``l_self_modules_fc1_parameters_weight_`` → ``fc1``; ``g_m_modules_0_…`` → ``m.0``."""
    match = _PARAM_NAME.match(name)
    if not match:
        return None
    parts = match["path"].split("_modules_")
    head = parts[0]
    if head in ("self", "l_self"):
        parts = parts[1:]
    return ".".join(parts) or None


_BINARY = re.compile(r"^(?P<a>[\w.]+) (?P<op>\*\*|//|[-+*/%@&|^]|<<|>>|==|!=|<=|>=|<|>) (?P<b>[\w.\-]+)$")
_OPERATOR_NAMES = {"+": "add", "-": "sub", "*": "mul", "/": "truediv", "//": "floordiv", "%": "mod",
                   "**": "pow", "@": "matmul", "&": "and_", "|": "or_", "^": "xor", "<<": "lshift",
                   ">>": "rshift", "==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}


def _split_call(expr: str) -> tuple[str, str]:
    """``torch.sin(x)`` → (``torch.sin``, ``x``); ``sin * 1`` → (``operator.mul``, ``sin, 1``)."""
    expr = expr.split(";")[0].strip()
    binary = _BINARY.match(expr)
    if binary:
        return f"operator.{_OPERATOR_NAMES[binary['op']]}", f"{binary['a']}, {binary['b']}"
    if "(" in expr and expr.endswith(")"):
        head, _, rest = expr.partition("(")
        return head.strip(), rest[:-1]
    return expr, ""


def _op_kind(target: str, locals_: set[str], called: bool = True) -> str:
    """FX's op kind of a printed node: ``self.sub(…)`` call_module, ``x.view(…)`` call_method; the rest —
    ``torch.sin(…)``, operators, ``x[0]``, an attribute read ``x.shape`` (FX's ``getattr``) — call_function."""
    if target.startswith("self."):
        return "call_module"
    first = target.split(".")[0]
    if called and first in locals_ and "." in target:
        return "call_method"
    return "call_function"


def split_subgraphs(text: str) -> tuple[str, dict[str, str]]:
    """A readable graph's own text, and the text of each module nested in it by name.

    ``print_readable`` prints a higher-order op's bodies (``torch.cond``'s ``cond_true_0``,
    ``while_loop``'s ``body_fn_0``, ``map_body_0``, checkpoint's ``wrap_body_0``, invoke_subgraph's
    ``subgraph_0``…) as classes nested in the graph's class, after its ``forward``, at the indent of
    that ``forward``; each may nest its own.
    """
    lines = text.splitlines()
    forward_indent = next((len(line) - len(line.lstrip()) for line in lines
                           if line.lstrip().startswith("def forward(")), None)
    own: list[str] = []
    nested: dict[str, list[str]] = {}
    current = None
    for line in lines:
        if current is not None:
            if not line.strip() or len(line) - len(line.lstrip()) > forward_indent:
                nested[current].append(line)
                continue
            current = None
        match = _NESTED_CLASS.match(line)
        if match and forward_indent is not None and len(match["indent"]) == forward_indent:
            current = match["name"]
            nested[current] = [line]
            continue
        own.append(line)
    return "\n".join(own), {name: textwrap.dedent("\n".join(block)).strip("\n") for name, block in nested.items()}


def parse_readable(text: str | None) -> dict:
    """Nodes (placeholders, calls, output) and edges of a readable FX graph, and of each graph
    nested in it (``subgraphs``: a higher-order op's bodies, by name, each parsed alone). The node
    that fetches a body (``cond_true_0 = self.cond_true_0``) is a ``get_attr`` node of that name,
    and the op that runs it has it among its inputs, so the edges connect.

    Every statement torch's FX code generator writes for a node (``torch/fx/graph.py``, ``emit_node``) is
    one node here, so the nodes other than ``alias`` are the GraphModule's nodes, one for one, with FX's op
    kinds: placeholders (the signature's parameters, typed or not), ``name: "T" = call(…)``, operators
    (``a + b``, ``-a``, ``a[0]``: call_function), in-place operators, which FX writes as two statements
    (``x_11 += input_2;  x_12: "f32[…]" = x_11``: one ``operator.iadd`` node ``x_12`` reading both),
    ``a[i] = b;  setitem = a``, attribute reads (``a.shape``: call_function ``getattr``), ``self.sub(…)``
    (call_module), ``self.attr`` (get_attr), the ``return`` (output). ``alias`` rows are the
    ``l_x_ = L_x_`` renames of placeholders: not nodes of torch's."""
    if not text:
        return {"nodes": [], "edges": [], "subgraphs": {}}
    text, nested = split_subgraphs(text)
    nodes: list[dict] = []
    names: set[str] = set()
    location: dict = {}
    signature: list[str] | None = None
    for line in _logical_lines(text):
        if signature is None and line.startswith("def forward("):
            signature = [line.split("#")[0]]
            if _signature_closed(line):
                _add_placeholders(" ".join(signature), nodes, names)
            continue
        if signature is not None and len(signature) and not _signature_closed(signature[-1]):
            signature.append(line.split("#")[0])
            if _signature_closed(line):
                _add_placeholders(" ".join(signature), nodes, names)
            continue
        comment = _FILE_COMMENT.search(line) if "File:" in line else None
        if comment:
            location = {"file": comment["file"], "line": int(comment["line"]), "function": comment["fn"],
                        "code": comment["code"]}
            continue
        if not line or line.startswith(("#", "class ", "def ")):
            if line.startswith("# No stacktrace found"):  # torch's comment: the nodes below have no line
                location = {}
            continue
        if line.startswith("return"):
            args = line[len("return"):].strip()
            nodes.append({"name": "output", "op": "output", "target": "output", "args": args,
                          "inputs": [n for n in _IDENT.findall(args) if n in names]})
            continue
        statements = _statements(line)
        inplace = _inplace_node(statements, names, location)
        if inplace:
            nodes.append(inplace)
            names.add(inplace["name"])
            continue
        assign = _ASSIGN.match(statements[0])
        if not assign:
            continue
        expr = assign["expr"]
        target, args = _split_call(expr)
        if target.endswith("tree_flatten_spec"):  # joint graphs unpack (primals, tangents): those two are no nodes
            unpacked = set(_IDENT.findall(args))
            nodes[:] = [n for n in nodes if not (n["op"] == "placeholder" and n["name"] in unpacked)]
            names.difference_update(unpacked)
            for name in assign["names"].split(","):
                _add_placeholder(name.strip(), None, nodes, names)
            continue
        first_name = assign["names"].split(",")[0].strip()
        type_text = assign["type"] or assign["ptype"]
        inputs = [n for n in dict.fromkeys(_IDENT.findall(f"{target} {args}")) if n in names]
        attr = _GET_ATTR.match(target) if not args else None
        if attr:  # ``cond_true_0 = self.cond_true_0``: a body or a constant of the module
            names.add(first_name)
            nodes.append({"name": first_name, "op": "get_attr", "target": attr["attr"], "args": "",
                          "inputs": [], **parse_type(type_text), **location})
            continue
        if target in names and not args:  # alias such as ``l_x_ = L_x_``
            node_input = target
            names.add(first_name)
            nodes.append({"name": first_name, "op": "alias", "target": node_input, "args": node_input,
                          "inputs": [node_input], **parse_type(type_text)})
            continue
        module = next((m for m in map(module_path_of, inputs) if m), None)
        nodes.append({"name": first_name, "op": _op_kind(target, names, expr.endswith(")")), "target": target,
                      "args": args, "inputs": inputs, **parse_type(type_text), **location,
                      **({"module": module} if module else {})})
        names.update(n.strip() for n in assign["names"].split(","))
    _inherit_modules(nodes)
    edges = [[src, node["name"]] for node in nodes for src in node.get("inputs", [])]
    return {"nodes": nodes, "edges": edges, "subgraphs": {name: graph_stage(body, "") for name, body in nested.items()}}


# FX's in-place operators (torch/fx/graph.py ``inplace_methods``), printed ``a += b;  name = a``
_INPLACE = re.compile(r"^(?P<a>[\w.]+) (?P<op>\+|-|\*\*|\*|//|/|%|@|&|\||\^|<<|>>)= (?P<b>.+)$")
_SETITEM = re.compile(r"^(?P<a>\w+)\[(?P<index>.*)\] = (?P<b>.+)$")
_INPLACE_NAMES = {"+": "iadd", "-": "isub", "*": "imul", "/": "itruediv", "//": "ifloordiv", "%": "imod",
                  "**": "ipow", "@": "imatmul", "&": "iand", "|": "ior", "^": "ixor", "<<": "ilshift", ">>": "irshift"}


def _inplace_node(statements: list[str], names: set[str], location: dict) -> dict | None:
    """The node of ``x_11 += input_2;  x_12: "f32[…]" = x_11`` (or ``a[i] = b;  setitem = a``), else None."""
    if len(statements) < 2:
        return None
    first = _INPLACE.match(statements[0])
    setitem = None if first else _SETITEM.match(statements[0])
    assign = _ASSIGN.match(statements[1])
    match = first or setitem
    if not match or not assign or assign["expr"].strip() != match["a"]:
        return None
    if first:
        target, args = f"operator.{_INPLACE_NAMES[first['op']]}", f"{first['a']}, {first['b']}"
    else:
        target, args = "operator.setitem", f"{setitem['a']}, {setitem['index']}, {setitem['b']}"
    inputs = [n for n in dict.fromkeys(_IDENT.findall(args)) if n in names]
    module = next((m for m in map(module_path_of, inputs) if m), None)
    return {"name": assign["names"].split(",")[0].strip(), "op": "call_function", "target": target, "args": args,
            "inputs": inputs, **parse_type(assign["type"] or assign["ptype"]), **location,
            **({"module": module} if module else {})}


def _statements(line: str) -> list[str]:
    """A printed node's statements: FX joins them with ``;  `` (the in-place form, then ``a = b = None``
    deleting values no longer used); a ``;`` inside a string or brackets is no separator."""
    return _split_top(line, ";") if ";" in line else [line]


@functools.cache
def _split_marks(separator: str) -> re.Pattern:
    """The characters ``_split_top`` looks at: quotes, brackets and the separator (a graph's long lines are mostly
    names, skipped at C speed)."""
    return re.compile("[\"'()\\[\\]{}" + re.escape(separator) + "]")


def _split_top(line: str, separator: str) -> list[str]:
    """``line`` cut at each ``separator`` outside strings and brackets, pieces stripped, empty ones dropped."""
    out, depth, quote, start = [], 0, None, 0
    for mark in _split_marks(separator).finditer(line):
        i, ch = mark.start(), mark.group()
        if quote:
            if ch == quote and line[i - 1] != "\\":
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == separator and depth == 0:
            out.append(line[start:i].strip())
            start = i + 1
    out.append(line[start:].strip())
    return [s for s in out if s]


def _signature_closed(line: str) -> bool:
    code = line.split("#")[0].rstrip()
    return code.endswith(":") and (code.endswith("):") or re.search(r"\)\s*->.*:$", code) is not None)


def _logical_lines(text: str):
    """Stripped lines, with a statement that spans several lines (open brackets) joined into one."""
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("#") and not pending:
            yield line
            continue
        code = line.split("  #")[0] if not line.startswith("def forward") else line
        pending = f"{pending} {code}".strip() if pending else line
        if _depth(pending) <= 0 or pending.startswith("def forward"):
            yield pending
            pending = ""
    if pending:
        yield pending


_BRACKETS = re.compile(r"[][(){}\"]")


def _depth(text: str) -> int:
    if not _BRACKETS.search(text):
        return 0
    if '"' in text:
        text = re.sub(r'"[^"]*"', "", text)
    return (text.count("(") + text.count("[") + text.count("{")
            - text.count(")") - text.count("]") - text.count("}"))


def _add_placeholders(signature: str, nodes: list[dict], names: set[str]) -> None:
    """The placeholders of ``def forward(self, x: "f32[4]", y, *args):`` — every parameter but ``self``,
    typed or not (a placeholder FX knows no value of is printed without a type)."""
    params = signature[signature.index("(") + 1:]
    for param in _split_top(params.rsplit(")", 1)[0], ","):
        name = re.match(r"\**(?P<name>\w+)", param.strip())
        if name:
            typed = _PLACEHOLDER.match(param.strip().lstrip("*"))
            _add_placeholder(name["name"], typed["type"] if typed else None, nodes, names)


def _add_placeholder(name: str, type_text: str | None, nodes: list[dict], names: set[str]) -> None:
    if not name or name == "self" or name in names:
        return
    names.add(name)
    module = module_path_of(name.lower())
    nodes.append({"name": name, "op": "placeholder", "target": name, "args": "", "inputs": [],
                  **parse_type(type_text), **({"module": module} if module else {})})


def _inherit_modules(nodes: list[dict]) -> None:
    """A node with no parameter input of its own belongs to the module of the node it consumes
    when that node is the only producer (e.g. ``relu`` after ``fc1``): cheap, best effort."""
    by_name = {n["name"]: n for n in nodes}
    for node in nodes:
        if node.get("module") or node["op"] in ("placeholder", "output", "get_attr"):
            continue
        parents = {by_name[i].get("module") for i in node.get("inputs", []) if i in by_name} - {None}
        if len(parents) == 1:
            node["module_guess"] = parents.pop()


def same_code(a: str | None, b: str | None) -> bool:
    """Two printed graphs that differ at most in torch's trailing ``# graph id: N`` comment (Inductor's
    pre-grad graph is often the Dynamo graph as is)."""
    return bool(a) and bool(b) and _without_graph_id(a) == _without_graph_id(b)


def _without_graph_id(text: str) -> str:
    body = text.rstrip()
    head, _, last = body.rpartition("\n")
    return head.rstrip() if last.strip().startswith("# graph id:") else body


def graph_stage(text: str | None, reason_if_missing: str, module_stack: dict | None = None) -> Graph:
    """The Graph stage of a printed graph: its code, parsed into nodes on first read (``_ParsedOnRead``), so
    a trace of thousands of graphs holds their text, not their nodes, until a view asks."""
    if not text:
        return Graph(available=False, reason=reason_if_missing)
    if len(text) > MAX_PARSED_CODE_CHARS:  # parsed now: a graph this big is saved with its nodes
        return parsed_graph_stage(text, module_stack)
    return Graph(available=True, code=text, parsed_from_code=True, module_stack=module_stack or {})


def dynamo_graph_stage(records, reason_if_missing: str) -> Graph:
    """Dynamo's graph of a compile, from its last ``dynamo_output_graph`` record: the printed graph, and, from a live
    capture, torch's ``nn_module_stack`` of its nodes (``MODULE_STACK``, added by ``compiler.capturing.records``;
    anything but lists of names is left out)."""
    found = [r for r in records if r.kind == "dynamo_output_graph" and r.payload]
    if not found:
        return graph_stage(None, reason_if_missing)
    stacks = (found[-1].metadata.get("dynamo_output_graph") or {}).get(MODULE_STACK)
    if not isinstance(stacks, dict) or not all(isinstance(k, str) and isinstance(v, list)
                                               and all(isinstance(n, str) for n in v) for k, v in stacks.items()):
        stacks = None
    return graph_stage(found[-1].payload, reason_if_missing, stacks)


def parsed_graph_stage(text: str, module_stack: dict | None = None) -> Graph:
    """The Graph stage of a printed graph with its nodes, edges, op count and nested graphs parsed."""
    parsed = parse_readable(text)
    graph = as_declared(Graph, {"available": True, "code": text, **parsed,
                                "op_count": sum(n["op"] not in NOT_OPS for n in parsed["nodes"])})
    if module_stack:
        graph.module_stack = module_stack
        with_module_stack(graph.nodes, module_stack)
    return graph


# --- the declared types ---------------------------------------------------------------------------

def _parsed_graph(code: str, module_stack: dict | None = None) -> dict:
    """``_PARSED_GRAPH`` of a graph, parsed from its code (``parsed_graph_stage``), its nodes' modules torch's
    where it named them (``module_stack``)."""
    parsed = parsed_graph_stage(code, module_stack)
    return {k: getattr(parsed, k) for k in _PARSED_GRAPH}


MODULE_STACK = "tcompile_module_stack"  # the key a live capture adds to the dynamo_output_graph record's metadata


def with_module_stack(nodes: list[GraphNode], module_stack: dict[str, list[str]] | None) -> None:
    """Each op's module as torch's ``nn_module_stack`` names it (``Graph.module_stack``: innermost module path →
    its nodes; an op in no list ran in the compiled function's own code, outside every submodule), in place of what
    its parameters' names give or a guess from its inputs: an op in a module's own ``forward`` (a residual add), or
    of a module without parameters (an input transform, an interpolate), is in its module."""
    if not module_stack:
        return
    of = {name: path for path, names in module_stack.items() for name in names}
    # a parameter's module comes from its name, lower-cased by Dynamo for a global (``G_BLOCK_…`` → ``block.0``):
    # spelt as torch's module path where only the case differs, so a module is one group, not two
    paths = {".".join(path.split(".")[:i]) for path in module_stack for i in range(1, path.count(".") + 2)}
    spelt = {path.lower(): path for path in paths}
    for node in nodes:
        if node.op not in ("placeholder", "output", "get_attr", "alias"):
            node.module, node.module_guess = of.get(node.name), None
        elif node.module and node.module.lower() in spelt:
            node.module = spelt[node.module.lower()]
        elif node.module_guess and node.module_guess.lower() in spelt:
            node.module_guess = spelt[node.module_guess.lower()]


@dataclass(repr=False, eq=False)
class GraphNode(Data):
    OMIT_DEFAULTS: ClassVar[bool] = True
    name: str = ""
    op: str = ""  # placeholder, call_function, call_method, call_module, get_attr, output, alias
    target: str | None = None
    args: str | None = None
    inputs: list[str] = field(default_factory=list)
    type: str | None = None
    dtype: str | None = None
    shape: list[str] | None = None
    stride: list[str] | None = None
    device: str | None = None
    file: str | None = None
    line: int | None = None
    function: str | None = None
    code: str | None = None
    module: str | None = None  # nn.Module path, from torch's comments
    module_guess: str | None = None  # … or guessed from parameter names


_PARSED_GRAPH = ("nodes", "edges", "op_count", "subgraphs")  # what parsing a graph's code gives (parse_readable)


class _ParsedOnRead:
    """A field of ``Graph`` that parsing its code gives: parsed on the first read of any of them (the code
    of a graph built or loaded with ``parsed_from_code``), then kept."""

    def __init__(self, name: str):
        self.name = name

    def __get__(self, graph, owner=None):
        if graph is None:
            return self
        values = graph.__dict__
        if self.name not in values:
            like = values.pop("_parsed_like", None)  # a graph of the same nodes (Graph.with_code)
            values.update({k: getattr(like, k) for k in _PARSED_GRAPH} if like is not None else
                          _parsed_graph(values["code"], values.get("module_stack")) if values.get("code") else
                          {k: f() for k, f in _PARSED_EMPTY.items()})
        return values[self.name]

    def __set__(self, graph, value):
        graph.__dict__[self.name] = value


_PARSED_EMPTY = {"nodes": list, "edges": list, "op_count": int, "subgraphs": dict}



@dataclass(repr=False, eq=False)
class Graph(Stage):
    """An FX graph as torch printed it, parsed into nodes and edges.

    A saved graph leaves out what parsing its code gives back (``parsed_from_code``): the nodes are
    the code again, in another form (a GPT-2 capture holds four graphs of ~1,000 nodes each)."""

    NAME: ClassVar[str] = "graph"
    code: str = ""
    nodes: list[GraphNode] = field(default_factory=list)
    edges: list[list[str]] = field(default_factory=list)
    op_count: int = 0
    subgraphs: dict[str, Graph] = field(default_factory=dict)  # higher-order ops' bodies, by name
    # torch's nn_module_stack (a live capture): innermost module path → its nodes (``with_module_stack``)
    module_stack: dict[str, list[str]] = field(default_factory=dict)
    parsed_from_code: bool = False  # saved without _PARSED_GRAPH: loading parses the code for them
    not_parsed: str | None = field(default=None, metadata={"live": True})  # why the nodes are missing

    def __post_init__(self):
        values = self.__dict__
        if self.parsed_from_code and self.code and not values.get("nodes"):
            if len(self.code) > MAX_PARSED_CODE_CHARS:
                self.not_parsed = (f"the graph's code ({len(self.code):,} characters) is over "
                                   f"{MAX_PARSED_CODE_CHARS:,}: not parsed into nodes on load")
            else:  # parsed on first read (_ParsedOnRead)
                for name in _PARSED_GRAPH:
                    values.pop(name, None)

    def to_data(self) -> dict:
        if "nodes" not in self.__dict__:  # never read: saved as it came, without parsing it now
            out = {key: _dump(getattr(self, name)) for name, key, _, _ in _fields(type(self))
                   if name not in _PARSED_GRAPH and name != "parsed_from_code"}
            out.update(self.__dict__.get("_unknown", {}))
            out["parsed_from_code"] = True
            if not out["module_stack"]:  # a trace's graph: none (files saved before it existed stay the same)
                del out["module_stack"]
            return out
        out = super().to_data()
        out.pop("parsed_from_code")
        if not out["module_stack"]:
            del out["module_stack"]
        if self.code and self.available and out["nodes"] and len(self.code) <= MAX_PARSED_CODE_CHARS:
            parsed = _parsed_graph(self.code, self.module_stack)
            if all(_dump(parsed[k]) == out[k] for k in _PARSED_GRAPH):
                for k in _PARSED_GRAPH:
                    del out[k]
                out["parsed_from_code"] = True
        return out

    def with_code(self, code: str) -> "Graph":
        """This graph printed as ``code``, which parses to the same nodes (Inductor's pre-grad graph is often the
        Dynamo graph as is, less its ``# graph id`` line): its nodes are this graph's, parsed once, on the first
        read of either."""
        if "nodes" in self.__dict__:
            return dataclasses.replace(self, code=code)
        twin = object.__new__(Graph)
        twin.__dict__ = {**{k: v for k, v in self.__dict__.items() if k != "_compile"}, "code": code,
                         "_parsed_like": self}
        return twin

    def _text(self):
        return self.code

    def _summary(self):
        return f"{self.op_count} ops, {len(self.nodes)} nodes"

    @property
    def table(self):
        """The nodes as a pandas DataFrame."""
        return _table(self.nodes)


for _name in _PARSED_GRAPH:
    setattr(Graph, _name, _ParsedOnRead(_name))


@dataclass(repr=False, eq=False)
class AotGraphs(Stage):
    """AOTAutograd's FX graphs of one compile, by role (built by ``compiler.stages.assemble.aot_stage``)."""
    NAME: ClassVar[str] = "aot"
    graphs: dict[str, Graph] = field(default_factory=dict)  # by role: inference, joint, forward, backward
    training: bool = False

    def _text(self):
        return "\n\n".join(f"# ===== {role} =====\n{g.code}" for role, g in self.graphs.items())

    def _summary(self):
        return ", ".join(f"{role} ({g.op_count} ops)" for role, g in self.graphs.items())
