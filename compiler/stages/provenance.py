"""Provenance: which kernels a line of the user's code became, and what each line costs.

The map (``provenance_stage``) links, in both directions::

    source line ↔ Dynamo FX nodes ↔ AOT forward/backward nodes ↔ post-grad nodes
                ↔ scheduler nodes before fusion ↔ after fusion ↔ kernel (or extern call)

Where it comes from. Inductor's own provenance tracking (``trace.provenance_tracking_level``) is
NOT used: turning it on writes ``# [Provenance debug handles] kernel:N`` lines into the generated
module (and changes the FX-graph cache key), so the user's compiled code would not be
byte-identical — ``tests/test_provenance.py`` shows it. Instead everything comes from what the
capture already holds:

- source lines: the ``# File: …:line`` comments torch prints above FX nodes. AOT backward nodes
  carry the stack trace of the forward node they differentiate (torch copies it by ``seq_nr``),
  so backward kernels map to the forward lines they differentiate.
- post-grad nodes that Inductor's pattern passes created (``mm`` + ``add`` → ``addmm``) also take
  the lines of the AOT nodes they replaced: the AOT nodes gone from the post-grad graph whose
  inputs are all among the new node's inputs (or other replaced nodes).
- kernel → its origin nodes, as torch names them (``KernelProvenance.origin``), never inferred from shapes:
  Inductor writes ``# Topologically Sorted Source Nodes: [a, b], Original ATen: […]`` above every call of a
  Triton kernel or an extern op in ``call()`` (``torch/_inductor/utils.py`` ``get_kernel_metadata``: each origin
  FX node's ``meta["from_node"][0]`` — the pre-grad (Dynamo) node in a forward graph, the backward graph's own node
  otherwise), and a Triton kernel's definition maps each source node to its post-grad nodes (``#   a => mul,
  sin``). A source node's lines: its pre-grad node's ``# File`` line (forward), else its post-grad node's (whose
  ``# File`` line is its ``stack_trace``), else its AOT node's (``_origin_resolver``). Each call is a
  ``KernelSite``; an extern op's time goes, call by call, to its own node (the one of its op, else the last of its
  sorted sources), calls weighed by their FLOPs (``extern_costs``); a fused kernel's time to its sources by their
  post-grad nodes (views count less). Lines in other functions or files are kept, each with its share.
- ``origin_nodes`` / ``origin_places``: the nodes torch named and all their lines — every line in ``places`` is
  among them (the rule ``python -m compiler check`` reads). ``origin`` None and ``no_origin`` saying why: a C++
  kernel (CPU) carries no origin comment, so its lines are inferred from the scheduler IR — each buffer a
  scheduler node writes matched to a post-grad node (graph inputs by name, outputs by position, extern calls by
  op and shape, others by shape and stored op, downstream of its inputs; ``match_ir_nodes``) — and said so
  (``how``); a capture saved before origins were kept is built again from its saved code where its times come back
  (GPU), else its kernels say their lines are unchecked.

From a TORCH_TRACE log written with Inductor's provenance tracking on, the log's own record is read
too (``inductor_tracking``): its node maps (pre-grad ↔ post-grad ↔ kernel, artifact
``inductor_provenance_tracking_node_mappings``) link kernels to post-grad nodes first, and the same links
are kept as line numbers of the logged graph and code texts, counted exactly as tlparse's provenance
highlighter counts them (``tlparse_line_mappings``; tests/test_trace_provenance.py compares with tlparse).

Cost per line (``apply_times``): each kernel's measured time per call of the function is spread
over its lines in proportion to its post-grad nodes from each line. GPU: the profiler times
already on the kernels (``gpu_time_us_per_call``). CPU: ``measure_kernel_times``.

How CPU kernel times are measured (``measure_kernel_times``), and why it does not change what the
user's function runs: after the capture, the compiled function is called a few more times on
copies of the arguments with a ``sys.setprofile`` hook installed for just those calls (and removed
in ``finally``). The hook only observes: Python reports each call of a C function — the C++
kernels are ``cpp_pybinding`` builtins and extern calls are builtins like ``torch.addmm`` — made
from the generated module's ``call()``; the hook reads the clock around each one and names it by
the module global (or ``extern_kernels`` attribute) it is. The generated code, its kernels and
its inputs are exactly what the compiled function runs; nothing is patched or recompiled. The same
hook counts entries into each compile's transformed bytecode (Dynamo's cache entries), i.e. how
many times a call of the function ran each cached compile. The hook adds ~1 µs per Python-level
call to the timed calls, which inflates very small kernels; shares are what to read.
"""
from __future__ import annotations

import json
import math
import re
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from compiler.stages.base import key_of
from compiler.stages.bytecode import Source
from compiler.stages.fx_graph import Graph, GraphNode
from compiler.stages.inductor_ir import IrNode
from compiler.stages.kernels import Inductor, InductorRun, Kernel, Kernels
from compiler.stages.compile_time import compile_seconds
from compiler.stages.data import Data, Stage, _Mismatch, _table, built
from compiler.stages.kernel_costs import call_section, extern_costs

if TYPE_CHECKING:  # annotations only: schema imports this module
    from compiler.stages.schema import AotGraphs, Compile


# --- declared here, built below (``compiler.stages.schema`` ties the stages into a ``Compile``) ---

def node_kernels(nodes: list[ProvenanceNode], kernels: list[KernelProvenance],
                 lines: list[LineProvenance]) -> list[list[str]]:
    """The kernels of each provenance node (the other direction of the map, so never saved: ``Provenance``
    rebuilds it on load): post-grad and IR nodes from the kernels that name them, Dynamo and AOT nodes
    through their lines, in their own file."""
    found: list[list[str]] = [[] for _ in nodes]
    by_level_key = {(n.level, key_of(n.role, n.name)): i for i, n in enumerate(nodes)}
    for k in kernels:
        for level, names in (("post_grad", k.post_grad_nodes), ("ir_pre_fusion", k.ir_nodes),
                             ("ir_post_fusion", k.fused_nodes)):
            for name in names:
                i = by_level_key.get((level, key_of(k.role, name)))
                if i is not None and k.key not in found[i]:
                    found[i].append(k.key)
    kernels_of_line: dict[tuple, set] = {}  # by (file, line): line 13 of one file is not another's
    for row in lines:
        kernels_of_line.setdefault((row.file, row.line), set()).update(row.kernels)
        kernels_of_line.setdefault((None, row.line), set()).update(row.kernels)  # for a node torch gave no file
    for i, n in enumerate(nodes):
        if n.level in ("dynamo", "aot"):
            found[i] = sorted(set().union(*(kernels_of_line.get((n.file, line), ()) for line in n.lines)))
    return found


@dataclass(repr=False, eq=False)
class ProvenanceNode(Data):
    """One node of one level (``dynamo``, ``aot``, ``post_grad``, ``ir_pre_fusion``, ``ir_post_fusion``)
    with the source lines it came from and the kernels it ended up in (``role:name`` keys)."""
    OMIT_DEFAULTS: ClassVar[bool] = True

    level: str = ""
    role: str | None = None  # inference, forward, backward (None for Dynamo's graph)
    name: str = ""
    target: str | None = None
    lines: list[int] = field(default_factory=list)
    file: str | None = None
    kernels: list[str] = field(default_factory=list)
    post_grad_nodes: list[str] = field(default_factory=list)  # IR nodes: the post-grad nodes they compute


@dataclass(repr=False, eq=False)
class KernelPlace(Data):
    """One source line a kernel's work came from, in its own file, with its share of the kernel's work."""
    OMIT_DEFAULTS: ClassVar[bool] = True

    file: str | None = None
    line: int = 0
    share: float = 0.0


@dataclass(repr=False, eq=False)
class KernelSite(Data):
    """One call of a kernel in the generated ``call()`` and the nodes torch says it was generated from: the
    ``# Topologically Sorted Source Nodes: [a, b]`` comment Inductor writes above the call (``source_nodes``:
    each origin FX node's ``meta["from_node"][0]`` name — a pre-grad (Dynamo) node, or the backward graph's own
    node), ``own_node``: an extern call's own node (the last of its sorted sources: the one whose value the call
    returns), ``places``: the source lines of those nodes, ``share``: this call's share of the kernel's time."""
    OMIT_DEFAULTS: ClassVar[bool] = True

    source_nodes: list[str] = field(default_factory=list)
    own_node: str | None = None
    places: list[KernelPlace] = field(default_factory=list)
    share: float = 0.0


@dataclass(repr=False, eq=False)
class KernelProvenance(Data):
    """One kernel (or extern call) of one Inductor run, back to its nodes and source lines.

    Where the lines come from (``origin``): the nodes torch names as the kernel's origins — ``"trace"``:
    Inductor's provenance tracking in a TORCH_TRACE log (kernel → post-grad nodes); ``"comments"``: the
    generated code's own comments (a Triton kernel's ``Source node to ATen node mapping``, the ``Topologically
    Sorted Source Nodes`` above each call: ``sites``). ``origin_nodes`` are those nodes (post-grad names, or the
    source-node names of the comments), ``origin_places`` their source lines (share: of the origin nodes).
    Every place in ``places`` is among ``origin_places``. ``origin`` None: torch named no origin (``no_origin``
    says why: a C++ kernel on CPU carries no origin comment; a capture saved before origins were kept); its
    lines, if any, were inferred from Inductor's scheduler IR (``how``)."""
    OMIT_DEFAULTS: ClassVar[bool] = True

    key: str = ""  # "role:name" (kernel names repeat between forward and backward)
    name: str = ""
    role: str | None = None
    language: str = ""
    lines: list[int] = field(default_factory=list)
    line_weights: dict[str, float] = field(default_factory=dict)  # str(line) → share of this kernel's work
    places: list[KernelPlace] = field(default_factory=list)  # (file, line) → share: lines of several files apart
    post_grad_nodes: list[str] = field(default_factory=list)
    ir_nodes: list[str] = field(default_factory=list)  # scheduler nodes before fusion
    fused_nodes: list[str] = field(default_factory=list)  # … after fusion
    how: str | None = None  # which metadata linked it (IR buffers, kernel comments, …)
    file: str | None = None  # the source file of its first line (``places`` names each line's own)
    seconds: float | None = None  # measured time per call of the function
    calls: float | None = None  # invocations per call of the function
    origin: str | None = None  # "trace" or "comments": where torch named its origin nodes; None: it named none
    origin_nodes: list[str] = field(default_factory=list)
    origin_places: list[KernelPlace] = field(default_factory=list)
    no_origin: str | None = None  # why torch named no origin (origin None)
    sites: list[KernelSite] = field(default_factory=list)  # its calls in call(), each with its origin comment


@dataclass(repr=False, eq=False)
class LineProvenance(Data):
    """One source line that produced work: its nodes at every level, its kernels, its cost."""
    OMIT_DEFAULTS: ClassVar[bool] = True

    line: int = 0
    file: str | None = None
    code: str | None = None
    dynamo_nodes: list[str] = field(default_factory=list)
    aot_nodes: list[str] = field(default_factory=list)  # "role:name"
    post_grad_nodes: list[str] = field(default_factory=list)  # "role:name"
    ir_nodes: list[str] = field(default_factory=list)  # "role:name"
    kernels: list[str] = field(default_factory=list)  # "role:name"
    seconds: float | None = None  # this line's share of measured kernel time, per call of the function
    time_share: float | None = None


@dataclass(repr=False, eq=False)
class InductorTracking(Data):
    """Inductor's own provenance record of one Inductor run, as a TORCH_TRACE log holds it when torch
    ran with ``trace.provenance_tracking_level`` on (artifact ``inductor_provenance_tracking_node_mappings``;
    older logs: ``inductor_post_to_pre_grad_nodes``, ``inductor_triton_kernel_to_post_grad_nodes``), and
    the same links as line numbers of the logged graph and code texts, counted as tlparse counts them."""

    role: str | None = None
    version: float | None = None
    pre_to_post: dict[str, list[str]] = field(default_factory=dict)  # pre-grad node → post-grad nodes
    post_to_pre: dict[str, list[str]] = field(default_factory=dict)
    kernel_to_post: dict[str, list[str]] = field(default_factory=dict)  # "kernel[:debug handle]" → post-grad nodes
    post_to_kernel: dict[str, list[str]] = field(default_factory=dict)
    kernel_stack_traces: dict[str, list[str]] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)  # pre_grad/post_grad/code/aot_code → the artifact counted
    # tlparse's lineMappings: preToPost, postToPre, pyCodeToPost, postToPyCode, cppCodeToPost, postToCppCode,
    # each str(line) → lines (1-based, in the texts named above)
    line_mappings: dict[str, dict[str, list[int]]] = field(default_factory=dict)


@dataclass(repr=False, eq=False)
class Provenance(Stage):
    """Source line ↔ Dynamo nodes ↔ AOT nodes ↔ post-grad nodes ↔ scheduler nodes ↔ kernels, both
    ways (``compiler.stages.provenance`` says how it is derived and what is best effort)."""

    NAME: ClassVar[str] = "provenance"
    method: str = ""
    lines: list[LineProvenance] = field(default_factory=list)
    kernels: list[KernelProvenance] = field(default_factory=list)
    nodes: list[ProvenanceNode] = field(default_factory=list)
    time_source: str | None = None  # where kernel times came from (None: not measured)
    unattributed_seconds: float | None = None  # measured time of kernels with no source line
    inductor_tracking: list[InductorTracking] = field(default_factory=list)  # from a trace, per run
    notes: list[str] = field(default_factory=list)
    node_kernels_derived: bool = False  # saved without each node's kernels: loading derives them again
    # saved nodes name their file by its index in node_files (a few files, thousands of nodes)
    node_files: list[str | None] | None = None
    node_file_index: list[int] | None = None

    def __post_init__(self):
        if self.node_files is not None:
            index = self.node_file_index or []
            if len(index) != len(self.nodes) or any(not 0 <= i < len(self.node_files) for i in index):
                exc = _Mismatch(f"one index into node_files ({len(self.node_files)}) per node ({len(self.nodes)})",
                                index[:3])
                exc.where.append(".node_file_index")
                raise exc
            for node, i in zip(self.nodes, index):
                node.file = self.node_files[i]
            self.node_files = self.node_file_index = None
        if self.node_kernels_derived:
            for node, found in zip(self.nodes, node_kernels(self.nodes, self.kernels, self.lines)):
                node.kernels = found
            self.node_kernels_derived = False

    def to_data(self) -> dict:
        """The saved map leaves out each node's kernels when they are the other direction of the kernels'
        and lines' own links (``node_kernels``): a third of a big model's map. Each node's file is an index into
        ``node_files`` (its fields at their defaults are left out: ``OMIT_DEFAULTS``)."""
        out = super().to_data()
        for key in ("node_kernels_derived", "node_files", "node_file_index"):
            out.pop(key)
        nodes = out["nodes"]
        if nodes and node_kernels(self.nodes, self.kernels, self.lines) == [n.get("kernels", []) for n in nodes]:
            for n in nodes:
                n.pop("kernels", None)
            out["node_kernels_derived"] = True
        if nodes:
            files = {file: i for i, file in enumerate(dict.fromkeys(n.get("file") for n in nodes))}
            out["node_files"], out["node_file_index"] = list(files), [files[n.pop("file", None)] for n in nodes]
        return out

    def kernels_of_line(self, line: int, file: str | None = None) -> list[str]:
        return [k for row in self.lines if row.line == line and file in (None, row.file) for k in row.kernels]

    def lines_of_kernel(self, name: str, role: str | None = None) -> list[int]:
        found = [k for k in self.kernels if name in (k.key, k.name) and role in (None, k.role)]
        return sorted({line for k in found for line in k.lines})

    def places_of_kernel(self, name: str, role: str | None = None) -> list[tuple[str | None, int]]:
        """The (file, line) pairs a kernel's work came from."""
        found = [k for k in self.kernels if name in (k.key, k.name) and role in (None, k.role)]
        return sorted({(p.file, p.line) for k in found for p in k.places}, key=lambda p: (p[0] or "", p[1]))

    def nodes_of_line(self, line: int, level: str | None = None) -> list[ProvenanceNode]:
        return [n for n in self.nodes if line in n.lines and level in (None, n.level)]

    def kernel(self, name: str, role: str | None = None) -> KernelProvenance | None:
        return next((k for k in self.kernels if name in (k.key, k.name) and role in (None, k.role)), None)

    def _text(self):
        rows = [f"line {r.line:>5}  {(r.time_share or 0) * 100:5.1f}%  {r.code or ''}\n"
                f"             kernels: {', '.join(r.kernels) or '-'}" for r in self.lines]
        return "\n".join(rows)

    def _summary(self):
        return f"{len(self.lines)} lines, {len(self.kernels)} kernels"

    @property
    def table(self):
        return _table(self.lines)


@dataclass(repr=False, eq=False)
class Amortization(Stage):
    """When compiling paid off: compile seconds ÷ the measured saving per call."""

    NAME: ClassVar[str] = "amortization"
    compile_s: float | None = None
    saving_per_call_s: float | None = None
    break_even_calls: int | None = None  # calls after which compiling paid off (None: it never does)
    calls_per_function_call: float | None = None  # how often one call of the function ran this compile
    calls_under_capture: float | None = None  # calls this cached compile served during the capture
    method: str | None = None

    def _text(self):
        saving = (f"saving {self.saving_per_call_s:.3g} s per call" if self.saving_per_call_s is not None
                  else "saving unknown")
        return f"compile {self.compile_s or 0:.3g} s, {saving}: {self._summary()}"

    def _summary(self):
        if self.break_even_calls:
            return f"paid off after {self.break_even_calls} calls"
        if self.saving_per_call_s is None:  # not measured: neither paid off nor not
            untimed = (self.method or "").startswith(NOT_TIMED)
            return f"paid off: unknown: {'no timed calls' if untimed else 'this graph is not timed alone'}"
        return "never paid off"


NOT_TIMED = "no timed calls"  # an Amortization.method that starts so: the run timed nothing


LEVELS = ("dynamo", "aot", "post_grad", "ir_pre_fusion", "ir_post_fusion")
_LAYOUT = re.compile(r"^\s*(?P<buf>\w+)\.layout = \w+\('[^']*', torch\.\w+, size=\[(?P<size>[^\]]*)\]", re.M)
_STORE = re.compile(r"ops\.store(?:_reduction)?\('(?P<buf>\w+)', \w+, (?P<var>\w+)")
_OP_DEF = re.compile(r"^\s*(?P<var>\w+) = ops\.(?P<op>\w+)\((?P<args>.*)\)\s*$", re.M)
_REUSE = re.compile(r"^\s*(?P<new>buf\d+) = (?P<old>buf\d+); del (?P=old)\s*# reuse", re.M)
_SOURCE_MAP = re.compile(r"^#\s+(?P<src>\w+) => (?P<nodes>[\w, ]+)$", re.M)
_OP_ALIASES = {"truediv": "div", "floordiv": "div", "reduction": "sum"}
VIEWISH = ("view", "reshape", "permute", "expand", "squeeze", "unsqueeze", "t", "transpose", "alias",
           "slice", "select", "as_strided", "_unsafe_view", "getitem")


# --- the map ------------------------------------------------------------------------------------

def provenance_stage(graph: Graph, aot: AotGraphs, inductor: Inductor, source: Source, *, origin: str = "dynamo",
                     kernels: Kernels | None = None, kernel_times: dict | None = None, tracking: list | None = None,
                     no_ir_note: str | None = None) -> Provenance:
    """The provenance map of one compile, from its typed stages, with the measured time of each kernel
    spread over its lines (``apply_times``: GPU times on ``kernels``' rows, CPU times in ``kernel_times``).
    ``tracking``: per Inductor run, the texts of a trace's provenance-tracking artifacts (or None).
    ``no_ir_note``: what a run with no scheduler IR says, where its source cannot hold IR (a trace)."""
    if not graph.available and origin != "aot_inductor":  # AOTInductor: no Dynamo graph
        return Provenance(available=False, reason=graph.reason or "Dynamo produced no FX graph")
    notes: list[str] = []
    runs = inductor.runs if inductor.available else []
    inductor_tracking = [InductorTracking.from_data(inductor_tracking_of(t, run.role, notes), "inductor_tracking")
                         for t, run in zip(tracking or [], runs) if t]
    nodes = [_node("dynamo", None, n.name, n.target, n.file, _own_lines(n)) for n in _compute(graph.nodes)]
    aot_graphs = {role: g for role, g in aot.graphs.items() if g.available and role != "joint"}
    for role, g in aot_graphs.items():
        nodes += [_node("aot", role, n.name, n.target, n.file, _own_lines(n)) for n in _compute(g.nodes)]
    found: list[KernelProvenance] = []
    by_role = {t.role: t for t in inductor_tracking}
    for run in runs:
        found += _run_provenance(run, aot_graphs, nodes, notes, by_role.get(run.role), no_ir_note, graph.nodes)
    if not inductor.available:
        notes.append(f"no kernels: {inductor.reason}")
    comment_code = {(n.file, n.line): n.code for g in [graph, *aot_graphs.values()] for n in g.nodes if n.line}
    lines = _lines(nodes, found, source, comment_code)
    for n, kernels_of_node in zip(nodes, node_kernels(nodes, found, lines)):
        n.kernels = kernels_of_node
    method = ("metadata: FX '# File' comments, AOT/post-grad node names, Inductor IR buffers and kernel "
              "call arguments")
    if inductor_tracking:
        method = "Inductor's provenance tracking (read from the trace), then " + method
    provenance = Provenance(available=True, method=method, lines=lines, kernels=found, nodes=nodes,
                            inductor_tracking=inductor_tracking, notes=notes)
    try:
        aot_ids = {r.role: r.code.aot_id for r in runs}
        apply_times(provenance, kernels.kernels if kernels is not None else [], kernel_times, aot_ids)
    except Exception as exc:  # noqa: BLE001 — a cost bug costs only the costs
        notes.append(f"times not applied ({type(exc).__name__}: {exc})")
    return provenance


def from_stages(compile: Compile) -> Provenance:
    """A saved compile's provenance map built again from its saved stages (``Compile.provenance_from_stages``):
    what a capture saves in its place when this gives the map it holds exactly."""
    return provenance_stage(compile.graph, compile.aot, compile.inductor, compile.source, origin=compile.origin,
                            kernels=compile.kernels)


def _compute(graph_nodes: list[GraphNode]) -> list[GraphNode]:
    return [n for n in graph_nodes if n.op not in ("placeholder", "output", "alias")]


def _own_lines(node: GraphNode) -> list[int]:
    return [node.line] if node.line else []


def _node(level, role, name, target, file, lines, post_grad_nodes=()) -> ProvenanceNode:
    return ProvenanceNode(level=level, role=role, name=name, target=target, lines=sorted(set(lines)), file=file,
                          kernels=[], post_grad_nodes=list(post_grad_nodes))


def _add(entry, attribute: str, value) -> None:
    if entry is not None and value not in getattr(entry, attribute):
        getattr(entry, attribute).append(value)


def _run_provenance(run: InductorRun, aot_graphs: dict[str, Graph], nodes: list[ProvenanceNode], notes: list[str],
                    tracking: InductorTracking | None = None, no_ir_note: str | None = None,
                    dynamo_nodes: list[GraphNode] = ()) -> list[KernelProvenance]:
    role = run.role
    post = run.post_grad
    if not post.available:
        notes.append(f"{role or 'inference'}: no post-grad graph ({post.reason})")
        return []
    post_nodes = post.nodes
    aot_graph = aot_graphs.get(role) or aot_graphs.get("inference")
    post_places = _post_grad_places(post_nodes, aot_graph.nodes if aot_graph else [])
    post_lines = {name: sorted({line for _, line in places}) for name, places in post_places.items()}
    if tracking:  # a post-grad node with no '# File' line of its own: the lines of its pre-grad nodes
        pre_lines = {n.name: n.line for n in run.pre_grad.nodes if n.line}
        pre_files = {n.name: n.file for n in run.pre_grad.nodes}
        own = {n.name for n in post_nodes if n.line}
        for name, pre_names in tracking.post_to_pre.items():
            lines = sorted({pre_lines[p] for p in pre_names if p in pre_lines})
            if name in post_lines and name not in own and lines:
                post_lines[name] = lines
                post_places[name] = sorted({(pre_files.get(p), pre_lines[p]) for p in pre_names if p in pre_lines},
                                           key=_place_order)
    files = {n.name: n.file for n in post_nodes}
    nodes += [_node("post_grad", role, n.name, n.target, n.file, post_lines.get(n.name, []))
              for n in _compute(post_nodes)]
    ir, code = run.ir, run.code
    ir_map: dict[str, list[str]] = {}
    fused: dict[str, list[str]] = {}
    if ir.available:
        pre = ir.pre_fusion.nodes
        ir_map = match_ir_nodes(pre, ir.pre_fusion.text, post_nodes, code.module or "")
        for n in pre:
            lines = [line for p in ir_map.get(n.name, []) for line in post_lines.get(p, [])]
            nodes.append(_node("ir_pre_fusion", role, n.name, n.extern_kernel or n.kind, None, lines,
                               ir_map.get(n.name, [])))
        for row in ir.fusion:
            fused[row.fused] = row.members
            members = [p for m in row.members for p in ir_map.get(m, [])]
            lines = [line for p in members for line in post_lines.get(p, [])]
            nodes.append(_node("ir_post_fusion", role, row.fused, row.kind, None, lines, dict.fromkeys(members)))
    elif ir.reason:
        linked = "Inductor's provenance tracking" if tracking else "their comments only"
        missing = no_ir_note or f"no scheduler IR ({ir.reason})"
        notes.append(f"{role or 'inference'}: {missing}; kernels linked by {linked}")
    if not code.available:
        return []
    post_ir = ir.post_fusion.nodes if ir.available and ir.post_fusion else []
    kernel_ir = kernels_to_ir(code.kernels, post_ir, code.module or "")
    tracked = _kernel_to_post(tracking, {n.name for n in post_nodes}) if tracking else {}
    targets = {n.name: (n.target or "") for n in post_nodes}
    pre_nodes = run.pre_grad.nodes if run.pre_grad.available and run.pre_grad.nodes else dynamo_nodes
    resolve = _origin_resolver(role, pre_nodes, post_nodes, aot_graph.nodes if aot_graph else [], post_places)
    sites = kernel_sites(code.module or "", [k.name for k in code.kernels])
    out = []
    for kernel in code.kernels:
        fused_names = kernel_ir.get(kernel.name, [])
        members = [m for f in fused_names for m in fused.get(f, [f])]
        entry = KernelProvenance(key=key_of(role, kernel.name), name=kernel.name, role=role,
                                 language=kernel.language or "", ir_nodes=members, fused_nodes=list(fused_names))
        if tracked.get(kernel.name):  # Inductor's own record: kernel → post-grad nodes
            post_names = tracked[kernel.name]
            places = _weights(post_names, post_places, targets)
            entry.how, entry.origin, entry.origin_nodes = "Inductor's provenance tracking (trace)", "trace", post_names
            entry.origin_places = _place_list(_weights(post_names, post_places, targets, views=1.0))
        elif any(site for site, _ in sites.get(kernel.name, [])) or _SOURCE_MAP.search(kernel.comments or ""):
            post_names, places = _from_origin_comments(kernel, entry, sites.get(kernel.name, []), resolve,
                                                       post_places, targets, code.module or "")
            if not post_names:  # an extern call's post-grad node is not named in its comment: the IR's, as nodes only
                post_names = list(dict.fromkeys(p for m in members for p in ir_map.get(m, [])))
        else:  # torch named no origin: the scheduler IR's buffers, matched to post-grad nodes (best effort)
            post_names = list(dict.fromkeys(p for m in members for p in ir_map.get(m, [])))
            places = _weights(post_names, post_places, targets)
            entry.how = "inferred from the scheduler IR's buffers (torch named no origin)" if post_names else None
            entry.no_origin = ("torch wrote no origin for it: Inductor comments the nodes of Triton kernels and "
                               "extern calls, not of C++ kernels" if kernel.language == "C++" else
                               "torch wrote no origin comment for it in the generated code")
        weights: dict[str, float] = defaultdict(float)
        for (_, line), weight in places.items():
            weights[str(line)] += weight
        entry.lines, entry.line_weights = sorted(int(k) for k in weights), dict(weights)
        entry.places = _place_list(places)
        entry.post_grad_nodes = list(post_names)
        entry.file = next((file for file, _ in places if file), None) or next(
            (files[p] for p in post_names if files.get(p)), None)
        out.append(entry)
    return out


# ``# Topologically Sorted Source Nodes: [a, b], Original ATen: [...]`` above a kernel's call (torch/_inductor/utils.py
# ``get_kernel_metadata``): the origin nodes' ``meta["from_node"][0]`` names, "Unsorted" when they span graphs
_SOURCE_NODES = re.compile(r"^\s*# (?P<sorted>Topologically Sorted|Unsorted) Source Nodes: \[(?P<names>[^\]]*)\]")


def kernel_sites(module: str, names: list[str]) -> dict[str, list[tuple[list[str], bool]]]:
    """Each kernel's calls in the generated ``call()`` (and its CUDA-graph partitions), in order, each with the
    source nodes of the origin comment right above it ([] where there is none) and whether torch sorted them."""
    call = call_section(module)
    out: dict[str, list[tuple[list[str], bool]]] = {name: [] for name in names}
    if not call or not names:
        return out
    called = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, sorted(names, key=len, reverse=True)))
                        + r")(?:\.run)?\(")
    pending = None
    for line in call.splitlines():
        comment = _SOURCE_NODES.match(line)
        if comment:
            pending = ([n.strip() for n in comment["names"].split(",") if n.strip()],
                       comment["sorted"] == "Topologically Sorted")
            continue
        stripped = line.lstrip()
        if stripped.startswith("def "):
            pending = None
            continue
        found = called.search(line) if not stripped.startswith("#") else None
        if found:
            out[found[1]].append(pending or ([], False))
            pending = None
    return out


def _origin_resolver(role, pre_nodes, post_nodes, aot_nodes, post_places):
    """A source-node name of an origin comment → its (file, line) places, None where no graph has it. Forward
    names are pre-grad (Dynamo) nodes, looked up there first; a backward graph's own nodes first there."""
    pre = {n.name: [(n.file, n.line)] if n.line else [] for n in pre_nodes if n.op not in ("placeholder", "output")}
    post = {n.name: post_places.get(n.name, []) for n in _compute(post_nodes)}
    aot = {n.name: [(n.file, n.line)] if n.line else [] for n in _compute(aot_nodes)}
    levels = (post, aot, pre) if role == "backward" else (pre, post, aot)

    def resolve(name: str) -> list[tuple] | None:
        return next((level[name] for level in levels if name in level), None)
    return resolve


def _from_origin_comments(kernel, entry, sites, resolve, post_places, targets, module) -> tuple[list, dict]:
    """A kernel's post-grad nodes and its work by (file, line) from Inductor's origin comments: each call's
    ``Source Nodes`` (``sites``), and a Triton kernel's ``Source node to ATen node mapping`` (source node →
    post-grad nodes, for the nodes of its first call). An extern call's time goes to its own node (the last of its
    sorted sources: the one whose value it returns); a fused kernel's to its sources, each by its post-grad nodes
    (views count less). Calls share the kernel's time by FLOPs (extern calls whose FLOPs tcompile knows), else
    equally."""
    mapping = {m["src"]: [n.strip() for n in m["nodes"].split(",") if n.strip()]
               for m in _SOURCE_MAP.finditer(kernel.comments or "")}
    commented = [(names, is_sorted) for names, is_sorted in sites if names]
    if not commented:  # no call comment (a kernel defined but called otherwise): its definition's mapping
        commented = [(list(mapping), True)]
    extern = kernel.language == "extern"
    flops = extern_costs(kernel.name, module, per_site=True).get("site_flops") if extern else None
    site_flops = [f for f, (names, _) in zip(flops or [], sites) if names] if flops and len(flops) == len(sites) else None
    total_flops = sum(site_flops) if site_flops else 0
    places: dict[tuple, float] = defaultdict(float)
    origin_places: dict[tuple, float] = defaultdict(float)
    post_names: list[str] = []
    for i, (names, is_sorted) in enumerate(commented):
        share = site_flops[i] / total_flops if total_flops else 1 / len(commented)
        found_of: dict[str, dict] = {}
        for name in names:
            mapped = [p for p in mapping.get(name, []) if p in targets]
            post_names += mapped
            found_of[name] = _weights(mapped, post_places, targets) if mapped else \
                {place: 1 / len(found) for found in [resolve(name) or []] for place in found}
            for place in found_of[name]:
                origin_places[place] += 1
        own = _own_node(kernel.name, names, found_of, targets) if extern and is_sorted else None
        site_places: dict[tuple, float] = defaultdict(float)
        for name in [own] if own else names:
            mapped = [p for p in mapping.get(name, []) if p in targets]
            weight = sum(0.1 if _op_of(targets[p]) in VIEWISH else 1.0 for p in mapped) if mapped else 1.0
            for place, w in found_of[name].items():
                site_places[place] += weight * w
        site_total = math.fsum(site_places.values())
        entry.sites.append(KernelSite(source_nodes=names, own_node=own, share=share,
                                      places=_place_list({p: w / site_total for p, w in site_places.items()})
                                      if site_total else []))
        for place, w in site_places.items():
            places[place] += share * w / site_total
    placed = math.fsum(places.values())  # calls whose origin nodes have no line give theirs to the others
    places = {p: w / placed for p, w in places.items()} if placed else {}
    entry.origin, entry.how = "comments", "Inductor's origin comments in the generated code"
    entry.origin_nodes = list(dict.fromkeys(n for names, _ in commented for n in names))
    count = math.fsum(origin_places.values())
    entry.origin_places = _place_list({p: w / count for p, w in origin_places.items()}) if count else []
    return list(dict.fromkeys(post_names)), dict(sorted(places.items(), key=lambda i: _place_order(i[0])))


def _own_node(fn: str, names: list[str], found_of: dict, targets: dict) -> str | None:
    """An extern call's own node among its sorted source nodes: the one the extern op's post-grad node is (same
    op), else the last with a source line (its sources are sorted: the call's value is computed last)."""
    op = _op_of(fn)
    same_op = [n for n in names if found_of[n] and _op_of(targets.get(n)) == op]
    with_line = [n for n in names if found_of[n]]
    return (same_op or with_line or [None])[-1]


def _place_list(places: dict) -> list[KernelPlace]:
    return [KernelPlace(file=file, line=line, share=w) for (file, line), w in places.items()]


def _place_order(place: tuple) -> tuple:
    return (place[0] or "", place[1])


def _post_grad_places(post_nodes: list[GraphNode], aot_nodes: list[GraphNode]) -> dict[str, list[tuple]]:
    """Each post-grad node's source lines as (file, line) pairs: its own ``# File`` line, plus — for a
    node a pattern pass created — the lines of the AOT nodes it replaced (each in its own file)."""
    aot_names = {n.name for n in aot_nodes}
    post_names = {n.name for n in post_nodes}
    removed = [n for n in _compute(aot_nodes) if n.name not in post_names]
    out = {}
    for node in _compute(post_nodes):
        lines = [(node.file, line) for line in _own_lines(node)]
        if aot_names and node.name not in aot_names and removed:
            inputs, found = set(node.inputs), set()
            changed = True
            while changed:
                changed = False
                for r in removed:
                    if r.name not in found and r.inputs and set(r.inputs) <= inputs | found:
                        found.add(r.name)
                        changed = True
            lines += [(r.file, r.line) for r in removed if r.name in found and r.line]
        out[node.name] = sorted(set(lines), key=_place_order)
    return out


def _weights(post_names: list[str], post_places: dict, targets: dict[str, str], views: float = 0.1) -> dict[tuple, float]:
    """Share of a kernel's work per (file, line): its post-grad nodes (``targets``: post-grad node → its target)
    counted per line (views count ``views``)."""
    totals: dict[tuple, float] = defaultdict(float)
    for name in post_names:
        places = post_places.get(name) or []
        op = targets.get(name, "").split(".")[-2] if targets.get(name, "").count(".") >= 2 else targets.get(name, "")
        weight = views if op in VIEWISH else 1.0
        for place in places:
            totals[place] += weight / len(places)
    total = math.fsum(totals.values())  # (sum's rounding differs between Python 3.11 and 3.12)
    return {place: w / total for place, w in sorted(totals.items(), key=lambda i: _place_order(i[0]))} if total else {}


def _from_comments(comments: str, post_nodes: list[GraphNode]) -> list[str]:
    """Triton kernels: ``#   a => mul, sin`` (Source node to ATen node mapping) names post-grad nodes."""
    names = {n.name for n in post_nodes}
    found = [name.strip() for m in _SOURCE_MAP.finditer(comments) for name in m["nodes"].split(",")]
    return list(dict.fromkeys(n for n in found if n in names))


# --- Inductor's own provenance record, from a trace -----------------------------------------------

_HANDLE = re.compile(r":\d+$")  # "triton_poi_fused_mul_1:2": the kernel's debug handle (one launch)


def _json_object(text: str | None, what: str, notes: list[str]) -> dict:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        notes.append(f"{what}: not JSON ({exc}); ignored")
        return {}
    if not isinstance(value, dict):
        notes.append(f"{what}: not a JSON object; ignored")
        return {}
    return value


def _name_lists(value, what: str, notes: list[str]) -> dict[str, list[str]]:
    """``{name: [name, …]}`` from the log, every name a string (anything else is dropped, with a note)."""
    if not isinstance(value, dict):
        return {}
    out = {str(k): [v for v in names if isinstance(v, str)] for k, names in value.items() if isinstance(names, list)}
    if len(out) != len(value) or any(len(out[str(k)]) != len(v) for k, v in value.items() if str(k) in out):
        notes.append(f"{what}: entries that are not lists of names were dropped")
    return out


def inductor_tracking_of(texts: dict, role: str | None, notes: list[str]) -> dict:
    """One Inductor run's provenance-tracking artifacts (raw texts by artifact name) → ``InductorTracking``
    data. The newer ``inductor_provenance_tracking_node_mappings`` holds all four maps; older logs held
    ``inductor_post_to_pre_grad_nodes`` (post-grad node → pre-grad node records) and
    ``inductor_triton_kernel_to_post_grad_nodes`` instead."""
    mappings = _json_object(texts.get("inductor_provenance_tracking_node_mappings"),
                            "inductor_provenance_tracking_node_mappings", notes)
    out = {"role": role, "version": None, "pre_to_post": {}, "post_to_pre": {}, "kernel_to_post": {},
           "post_to_kernel": {}, "kernel_stack_traces": {}, "texts": {}, "line_mappings": {}}
    if mappings:
        version = mappings.get("version")
        out["version"] = float(version) if isinstance(version, (int, float)) and not isinstance(version, bool) else None
        for key, attribute in (("preToPost", "pre_to_post"), ("postToPre", "post_to_pre"),
                           ("cppCodeToPost", "kernel_to_post"), ("postToCppCode", "post_to_kernel")):
            out[attribute] = _name_lists(mappings.get(key), f"node mappings {key}", notes)
    else:
        old = _json_object(texts.get("inductor_post_to_pre_grad_nodes"), "inductor_post_to_pre_grad_nodes", notes)
        out["post_to_pre"] = {post: [r["name"] for r in records if isinstance(r, dict) and isinstance(r.get("name"), str)]
                              for post, records in old.items() if isinstance(records, list)}
        for post, pres in out["post_to_pre"].items():
            for pre in pres:
                out["pre_to_post"].setdefault(pre, []).append(post)
        out["kernel_to_post"] = _name_lists(_json_object(texts.get("inductor_triton_kernel_to_post_grad_nodes"),
                                                         "inductor_triton_kernel_to_post_grad_nodes", notes),
                                            "inductor_triton_kernel_to_post_grad_nodes", notes)
        for kernel, posts in out["kernel_to_post"].items():
            for post in posts:
                out["post_to_kernel"].setdefault(post, []).append(kernel)
    out["kernel_stack_traces"] = _name_lists(_json_object(
        texts.get("inductor_provenance_tracking_kernel_stack_traces"),
        "inductor_provenance_tracking_kernel_stack_traces", notes), "kernel stack traces", notes)
    pre_name = next((n for n in ("before_pre_grad_graph",) if texts.get(n)), None)
    post_name = next((n for n in ("after_post_grad_graph", "inductor_post_grad_graph") if texts.get(n)), None)
    counted = {"pre_grad": pre_name, "post_grad": post_name,
               "code": "inductor_output_code" if texts.get("inductor_output_code") else None,
               "aot_code": "inductor_aot_wrapper_code" if texts.get("inductor_aot_wrapper_code") else None}
    out["texts"] = {k: v for k, v in counted.items() if v}
    out["line_mappings"] = tlparse_line_mappings(out, *(texts.get(counted[k]) or "" if counted[k] else ""
                                                        for k in ("pre_grad", "post_grad", "code", "aot_code")))
    return out


def tracking_from_records(records, notes: list[str] | None = None) -> dict:
    """``inductor_tracking_of`` over a run of raw trace records (the first payload of each artifact or
    graph dump, by name) — e.g. an AOTInductor log, whose records carry no compile id, so that
    ``load_trace`` builds no compile from them."""
    texts: dict[str, str] = {}
    for record in records:
        name = record.kind.split(":", 1)[-1]
        if name == "graph_dump":
            name = str((record.metadata.get("graph_dump") or {}).get("name"))
        if record.payload and name not in texts:
            texts[name] = record.payload
    return inductor_tracking_of(texts, None, notes if notes is not None else [])


def _kernel_to_post(tracking: InductorTracking, post_names: set[str]) -> dict[str, list[str]]:
    """Kernel name (debug handles dropped: one kernel, several launches) → its post-grad nodes."""
    out: dict[str, list[str]] = {}
    for kernel, posts in tracking.kernel_to_post.items():
        entry = out.setdefault(_HANDLE.sub("", kernel), [])
        entry += [p for p in posts if p in post_names and p not in entry]
    return out


def _graph_node_lines(text: str) -> dict[str, int]:
    """tlparse's node → line of a graph text: each line not blank and not a comment, cut at the first
    '=' then the first ':', names the node; a later line of the same name wins."""
    out = {}
    for i, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            name = stripped.split("=", 1)[0].split(":", 1)[0].strip()
            if name:
                out[name] = i
    return out


def _python_kernel_lines(text: str, kernels) -> dict[str, list[int]]:
    """tlparse's kernel → lines of the generated Python module: the lines from ``def call(args)`` on
    that name it (a kernel with a debug handle: the line after the handle's comment), counted from the
    ``# AOT ID`` line, leading blank lines dropped."""
    lines = text.splitlines()
    while lines and not lines[0]:
        lines.pop(0)
    start = next((i for i, line in enumerate(lines) if "def" in line and "call" in line and "(args)" in line), 0)
    first = next((i for i, line in enumerate(lines) if "# AOT ID:" in line), 0)
    out: dict[str, list[int]] = {}
    for kernel in kernels:
        pure = kernel.split(":", 1)[0]
        found = False
        if ":" in kernel:
            i = next((i for i in range(start, len(lines)) if kernel in lines[i]), None)
            if i is not None:
                j = next((j for j in range(i + 1, len(lines)) if pure in lines[j]), None)
                if j is not None:
                    out.setdefault(kernel, []).append(j + 1 - first)
                    found = True
        if not found:
            for i in range(start, len(lines)):
                if pure in lines[i]:
                    out.setdefault(kernel, []).append(i + 1 - first)
    return out


def _cpp_kernel_lines(text: str, kernels) -> dict[str, list[int]]:
    """tlparse's kernel → lines of an AOTInductor C++ wrapper, from ``::run_impl(`` on."""
    lines = text.splitlines()
    while lines and not lines[0]:
        lines.pop(0)
    start = next((i for i, line in enumerate(lines) if "::run_impl(" in line), 0)

    def valid(line, prefix):
        return bool(line.strip()) and not line.strip().startswith(prefix)

    out: dict[str, list[int]] = {}
    for kernel in kernels:
        pure = kernel.split(":", 1)[0]
        found = False
        if ":" in kernel:
            for i in range(start, len(lines)):
                if valid(lines[i], "def") and valid(lines[i], "static inline void") and kernel in lines[i]:
                    j = next((j for j in range(i + 1, len(lines)) if pure in lines[j]), None)
                    if j is not None:
                        out.setdefault(kernel, []).append(j + 1)
                        found = True
                        break
        if not found:
            for i in range(start, len(lines)):
                if pure in lines[i]:
                    out.setdefault(kernel, []).append(i + 1)
    return out


def tlparse_line_mappings(tracking: dict, pre_text: str, post_text: str, code_text: str, aot_text: str) -> dict:
    """The node maps as line numbers of the texts, as tlparse's provenance highlighter computes them
    (its ``lineMappings``: ``preToPost``, ``postToPre``, ``pyCodeToPost``, ``postToPyCode``,
    ``cppCodeToPost``, ``postToCppCode``; keys are str(line))."""
    pre, post = _graph_node_lines(pre_text), _graph_node_lines(post_text)
    kernels = list(tracking["kernel_to_post"])
    py, cpp = _python_kernel_lines(code_text, kernels), _cpp_kernel_lines(aot_text, kernels)

    def nodes(source, source_lines, target_lines):
        out = {}
        for name, targets in source.items():
            found = [target_lines[t] for t in targets if t in target_lines]
            if name in source_lines and found:
                out[str(source_lines[name])] = found
        return out

    def kernel_to_post(kernel_lines):
        out = {}
        for kernel, posts in tracking["kernel_to_post"].items():
            found = [post[p] for p in posts if p in post]
            for line in kernel_lines.get(kernel, []) if found else []:
                out[str(line)] = found
        return out

    def post_to_kernel(kernel_lines):
        out = {}
        for name, kernel_names in tracking["post_to_kernel"].items():
            found = [line for k in kernel_names for line in kernel_lines.get(k, [])]
            if name in post and found:
                out[str(post[name])] = found
        return out

    return {"preToPost": nodes(tracking["pre_to_post"], pre, post),
            "postToPre": nodes(tracking["post_to_pre"], post, pre),
            "pyCodeToPost": kernel_to_post(py), "postToPyCode": post_to_kernel(py),
            "cppCodeToPost": kernel_to_post(cpp), "postToCppCode": post_to_kernel(cpp)}


# --- scheduler nodes ↔ post-grad nodes ------------------------------------------------------------

def _op_of(target: str | None) -> str:
    """``torch.ops.aten.sum.dim_IntList`` → ``sum``; ``extern_kernels.addmm`` → ``addmm``."""
    parts = [p for p in (target or "").split(".") if p]
    if len(parts) >= 2 and parts[0] in ("torch", "aten") or "ops" in parts:
        parts = [p for p in parts if p not in ("torch", "ops", "aten", "prims", "default")]
        return parts[0] if parts else ""
    return parts[-1] if parts else ""


def match_ir_nodes(pre_nodes: list[IrNode], ir_text: str, post_nodes: list[GraphNode], module: str) -> dict[str, list[str]]:
    """Scheduler node (before fusion) → the post-grad nodes it computes. Best effort (see module doc)."""
    by_name = {n.name: n for n in post_nodes}
    order = {n.name: i for i, n in enumerate(post_nodes)}
    descendants = _descendants(post_nodes)
    anchor = {n.name: n.name for n in post_nodes if n.op == "placeholder"}
    anchor.update(_output_anchors(post_nodes, module))
    shapes = {m["buf"]: [d.strip() for d in m["size"].split(",") if d.strip()] for m in _LAYOUT.finditer(ir_text or "")}
    text_lines = (ir_text or "").splitlines()
    claimed = set(anchor.values())
    result: dict[str, list[str]] = {}
    # Candidate sets as bit masks over the post-grad nodes' positions: the first candidate of a kind is
    # the lowest bit of an AND (a scan of every node per scheduler node grew with the graph squared)
    bit = {n.name: 1 << order[n.name] for n in post_nodes}
    computing = [n for n in post_nodes if n.op not in ("placeholder", "output")]
    by_op: dict[str, int] = defaultdict(int)
    by_shape: dict = defaultdict(int)
    for n in computing:
        by_op[_op_of(n.target)] |= bit[n.name]
        by_shape[tuple(n.shape) if n.shape is not None else None] |= bit[n.name]
    computing_mask = sum(bit[n.name] for n in computing)
    claimed_mask = sum(bit.get(name, 0) for name in claimed)
    for node in pre_nodes:
        reads = {anchor[r] for r in node.reads if r in anchor}
        writes = node.writes
        realized = anchor.get(writes[0]) if writes else None
        if realized is None:
            downstream = computing_mask  # the nodes that have every read among their ancestors
            for r in reads:
                downstream &= descendants.get(r, 0)
            if writes and writes[0] in shapes:
                downstream &= by_shape[None] | by_shape.get(tuple(shapes[writes[0]]), 0)
            if node.extern_kernel:  # of the op: the first not claimed yet, else the first
                of_op = downstream & by_op.get(_op_of(node.extern_kernel), 0)
                kinds = (of_op & ~claimed_mask, of_op)
            else:  # the first storing the op, unclaimed before claimed, then any other
                of_op = downstream & by_op.get(_stored_op(text_lines, node), 0)
                kinds = (of_op & ~claimed_mask, of_op, downstream & ~claimed_mask, downstream)
            first = next((mask & -mask for mask in kinds if mask), 0)
            realized = post_nodes[first.bit_length() - 1].name if first else None
        if realized is None:
            result[node.name] = []
            continue
        for w in writes:
            anchor.setdefault(w, realized)
        claimed.add(realized)
        claimed_mask |= bit.get(realized, 0)
        result[node.name] = _inlined(realized, reads, claimed, by_name, order)
    return result


def _inlined(realized: str, reads: set[str], claimed: set[str], by_name: dict, order: dict) -> list[str]:
    """``realized`` and the nodes computed inside it: walk back through inputs to the node's reads."""
    if realized in reads:
        return [realized]
    found, stack = [], [realized]
    while stack:
        name = stack.pop()
        node = by_name.get(name)
        if name in found or node is None or node.op == "placeholder":
            continue
        if name != realized and (name in reads or name in claimed):
            continue
        found.append(name)
        stack += node.inputs
    return sorted(found, key=order.__getitem__)


def _descendants(post_nodes: list[GraphNode]) -> dict[str, int]:
    """Each node's descendants, as a bit mask over the nodes' positions (ints: one OR per edge, where sets
    of names grew with the graph squared)."""
    order = {n.name: i for i, n in enumerate(post_nodes)}
    out: dict[str, int] = {}
    for node in reversed(post_nodes):  # topological order, backwards: consumers first
        out.setdefault(node.name, 0)
        below = out[node.name] | (1 << order[node.name])
        for i in set(node.inputs):
            out[i] = out.get(i, 0) | below
    return out


def _output_anchors(post_nodes: list[GraphNode], module: str) -> dict[str, str]:
    """Output buffers of the generated ``call`` ↔ the post-grad graph's outputs, by position."""
    output = next((n for n in post_nodes if n.op == "output"), None)
    call = module[module.rfind("def call("):] if "def call(" in module else ""
    returned = re.search(r"^\s*return \((?P<names>[^)]*)\)", call, re.M)
    if output is None or returned is None:
        return {}
    graph_out = [a.strip() for a in (output.args or "").strip("()[] ").split(",") if a.strip()]
    code_out = [a.strip() for a in returned["names"].split(",") if a.strip()]
    if len(graph_out) != len(code_out):
        return {}
    names = {n.name for n in post_nodes}
    aliases = {m["new"]: m["old"] for m in _REUSE.finditer(call)}
    out = {}
    for buf, node in zip(code_out, graph_out):
        if node in names:
            out.setdefault(buf, node)
            if buf in aliases:
                out.setdefault(aliases[buf], node)
    return out


def _stored_op(text_lines: list[str], node: IrNode) -> str:
    """The op whose value a scheduler node stores (``store('buf1', …, mul)`` → ``mul``)."""
    first, last = (node.lines or [0, -1])[:2]
    body = "\n".join(text_lines[first:last + 1])
    store = _STORE.search(body)
    if not store:
        return ""
    defs = {m["var"]: (m["op"], m["args"]) for m in _OP_DEF.finditer(body)}
    op, args = defs.get(store["var"], ("", ""))
    if op == "reduction":
        kind = re.search(r"'(\w+)'", args)
        return kind.group(1) if kind else "sum"
    return _OP_ALIASES.get(op, op)


def kernels_to_ir(kernels: list[Kernel], post_fusion: list[IrNode], module: str) -> dict[str, list[str]]:
    """Kernel name → the scheduler nodes (after fusion) it runs: generated kernels by the buffers they
    are passed (then by reused buffers), extern calls by the op the IR names."""
    out: dict[str, list[str]] = {k.name: [] for k in kernels}
    computed = [n for n in post_fusion if "Extern" not in n.kind]
    for kernel in kernels:
        if kernel.language == "extern":
            out[kernel.name] = [n.name for n in post_fusion if n.extern_kernel == kernel.name
                                or _op_of(n.extern_kernel) == _op_of(kernel.name)]
    call = module[module.find("def call("):] if "def call(" in module else module
    generated = sorted((k for k in kernels if k.language != "extern"),
                       key=lambda k: call.find(f"{k.name}(") % (len(call) + 1))
    for node in computed:  # a buffer's writer is the first kernel called with it (later ones read it)
        owner = next((k for k in generated if set(node.writes) & set(k.call_args)), None)
        if owner:
            out[owner.name].append(node.name)
    claimed = {name for names in out.values() for name in names}
    aliases = defaultdict(set)
    for m in _REUSE.finditer(module):
        aliases[m["old"]].add(m["new"])
    for node in computed:
        if node.name in claimed:
            continue
        names = {a for w in node.writes for a in aliases.get(w, ())}
        owner = next((k for k in kernels if k.language != "extern" and names & set(k.call_args)), None)
        if owner:
            out[owner.name].append(node.name)
    return out


def _lines(nodes: list[ProvenanceNode], kernels: list[KernelProvenance], source: Source,
           comment_code: dict) -> list[LineProvenance]:
    """One row per (file, line) that produced work, ordered by file then line."""
    rows: dict[tuple, LineProvenance] = {}
    codes = _code_lines(source)

    def row(file, line):
        key = (file, line)
        if key not in rows:
            rows[key] = LineProvenance(line=line, file=file, code=codes.get((file, line)))
        return rows[key]

    column = {"dynamo": "dynamo_nodes", "aot": "aot_nodes", "post_grad": "post_grad_nodes",
              "ir_pre_fusion": "ir_nodes"}
    files = {}
    for n in nodes:
        if n.level in ("dynamo", "aot", "post_grad") and n.file:
            for line in n.lines:
                files.setdefault(line, n.file)
    for n in nodes:
        if n.level not in column:
            continue
        for line in n.lines:
            entry = row(n.file or files.get(line), line)
            _add(entry, column[n.level], n.name if n.level == "dynamo" else key_of(n.role, n.name))
    for k in kernels:  # a kernel's lines can be in several files (the user's, torch.nn's): each line its own
        for place in k.places:
            _add(row(place.file or files.get(place.line) or k.file, place.line), "kernels", k.key)
    for entry in rows.values():
        entry.code = entry.code or comment_code.get((entry.file, entry.line))
    return [rows[k] for k in sorted(rows, key=lambda k: (k[0] or "", k[1]))]


def _code_lines(source) -> dict:
    """``source``: the compile's ``Source`` stage → its text by (file, line)."""
    if not source.available or not source.text:
        return {}
    first = source.firstlineno or 1
    return {(source.filename, first + i): text.strip() for i, text in enumerate(source.text.splitlines())}


# --- cost per line ------------------------------------------------------------------------------

def apply_times(provenance: Provenance, kernels: list[Kernel], kernel_times: dict | None, aot_ids: dict) -> None:
    """Put measured time on each kernel of a provenance map being built (``provenance_stage``) and spread
    it over its lines.

    ``kernels`` are the compile's ``Kernels`` rows (GPU: ``gpu_time_us_per_call`` from the profiler);
    ``kernel_times`` is ``measure_kernel_times``' result (CPU); ``aot_ids`` maps each role to the AOT id
    of its generated module (how the measurement names modules)."""
    if not provenance.available:
        return
    measured = {}
    source = None
    for k in kernels:
        if k.gpu_time_us_per_call is not None:
            measured[key_of(k.role, k.name)] = (k.gpu_time_us_per_call * 1e-6, k.profiled_calls)
            source = "GPU profiler (torch.profiler, per-kernel device time)"
    if not measured and kernel_times and kernel_times.get("available"):
        calls = kernel_times.get("function_calls") or 1
        for entry in provenance.kernels:
            times = (kernel_times.get("modules") or {}).get(aot_ids.get(entry.role) or "", {})
            if entry.name in times:
                t = times[entry.name]
                measured[entry.key] = (t["seconds"] / calls, t["calls"] / calls)
        source = kernel_times.get("method")
    if not measured:
        return
    per_line: dict[tuple, float] = defaultdict(float)
    unattributed = 0.0
    for entry in provenance.kernels:
        if entry.key not in measured:
            continue
        entry.seconds, entry.calls = measured[entry.key]
        if not entry.line_weights:
            unattributed += entry.seconds
        for file, line, share in [(p.file, p.line, p.share) for p in entry.places] or [
                (entry.file, int(line), weight) for line, weight in entry.line_weights.items()]:
            per_line[(file, line)] += entry.seconds * share
    total = sum(per_line.values())
    for row in provenance.lines:
        seconds = per_line.get((row.file, row.line)) or sum(
            v for (f, line), v in per_line.items() if line == row.line and f is None)
        row.seconds = seconds
        row.time_share = seconds / total if total else None
    provenance.time_source = source
    provenance.unattributed_seconds = unattributed
    backward = [k for k in provenance.kernels if k.role == "backward"]
    if backward and not any(k.seconds for k in backward):
        provenance.notes.append("backward kernels without a time: the timed calls did not run backward "
                                "(call .backward() inside the function to time it)")


def measure_kernel_times(fn, args=(), kwargs=None, *, calls: int = 5, warmup: int = 2, live_codes=None) -> dict:
    """CPU time per kernel of the generated code, from calls of the compiled function ``fn``.

    Calls ``fn`` ``warmup`` times, then ``calls`` times under a ``sys.setprofile`` hook (see the module
    doc: observe only; installed for these calls and removed in ``finally``) on copies of the
    arguments (the run's copies: ``compiler.capturing.runtime.copy_arguments``). → ``{"available", "method", "function_calls", "modules": {aot_id: {kernel: {"seconds",
    "calls"}}}, "compiles": {compile_id: calls}}`` — totals over the timed calls; ``compiles`` counts
    entries into each compile's transformed bytecode (``live_codes``: compile id → original code)."""
    kwargs = kwargs or {}
    for _ in range(warmup):
        fn(*args, **kwargs)
    transformed = _transformed_codes(live_codes or {})
    modules: dict[int, tuple[str, dict, dict]] = {}  # id(module globals) → (aot id, names by id, totals)
    started: dict[int, float] = {}
    compiles: dict[str, int] = defaultdict(int)
    extern = _extern_namespace()
    clock = time.perf_counter

    def hook(frame, event, arg):
        if event == "call":
            code = frame.f_code
            if code in transformed:
                compiles[transformed[code]] += 1
            elif code.co_name == "call" and id(frame.f_globals) not in modules \
                    and "benchmark_compiled_module" in frame.f_globals:
                modules[id(frame.f_globals)] = _module_entry(frame.f_globals)
            return
        module = modules.get(id(frame.f_globals))
        if module is None:
            return
        if event == "c_call":
            started[id(arg)] = clock()
        elif id(arg) in started:  # c_return, c_exception
            elapsed = clock() - started.pop(id(arg))
            name = module[1].get(id(arg)) or _extern_name(arg, extern)
            if name:
                entry = module[2].setdefault(name, {"seconds": 0.0, "calls": 0})
                entry["seconds"] += elapsed
                entry["calls"] += 1

    previous = sys.getprofile()
    sys.setprofile(hook)
    try:
        for _ in range(calls):
            fn(*args, **kwargs)
    finally:
        sys.setprofile(previous)
    out: dict[str, dict] = {}
    for aot_id, _, totals in modules.values():
        out.setdefault(aot_id, {}).update(totals)
    return {"available": True, "function_calls": calls, "modules": out, "compiles": dict(compiles),
            "method": "CPU: sys.setprofile timing of each kernel call made by the generated module's call(), "
                      f"over {calls} calls of the compiled function after the capture"}


def _transformed_codes(live_codes: dict) -> dict:
    try:
        from torch._C._dynamo.eval_frame import _debug_get_cache_entry_list
    except ImportError:
        return {}
    out = {}
    for code in set(live_codes.values()):
        for entry in _debug_get_cache_entry_list(code):
            out[entry.code] = str(entry.compile_id)
    return out


def _module_entry(module_globals: dict) -> tuple[str, dict, dict]:
    aot_id = ""
    try:
        with open(module_globals.get("__file__") or "", encoding="utf-8") as f:
            match = re.match(r"# AOT ID: \['(?P<id>[^']+)'\]", f.readline())
            aot_id = match["id"] if match else ""
    except OSError:
        pass
    names = {id(v): k for k, v in module_globals.items() if callable(v) and not isinstance(v, type)
             and re.match(r"^(cpp|triton|cuda)_", k)}
    return aot_id, names, {}


def _extern_namespace():
    try:
        from torch._inductor.select_algorithm import extern_kernels
    except ImportError:
        return None
    return extern_kernels


def _extern_name(fn, extern) -> str | None:
    name = getattr(fn, "__name__", None)
    if name and extern is not None and getattr(extern, name, None) is fn:
        return f"extern_kernels.{name}"
    return None


# --- amortization -------------------------------------------------------------------------------

def amortizations(compiles: list, runtime: dict, kernel_times: dict | None, calls_under_capture,
                  gpu_profile: dict | None = None) -> dict[str, Amortization]:
    """Per compile (a ``Compile``, or one being assembled — ``compiler.stages.assemble.CompileInput``, its stages
    by attribute as well), by compile id: compile seconds ÷ measured
    saving per call → calls until compiling paid off, and how many calls the cached compile served (CPU:
    ``kernel_times['compiles']``, entries into its transformed bytecode per call of the function; GPU:
    ``gpu_calls_per_function_call``, its kernels' launches in the profile). A failure leaves every compile's
    amortization out, with the reason."""
    try:
        return _amortizations(compiles, runtime, kernel_times, calls_under_capture, gpu_profile)
    except Exception as exc:  # noqa: BLE001
        return {c.compile_id: Amortization(available=False, reason=f"not computed ({type(exc).__name__}: {exc})")
                for c in compiles}


def _amortizations(compiles, runtime, kernel_times, calls_under_capture, gpu_profile) -> dict[str, Amortization]:
    eager, compiled = (runtime or {}).get("eager"), (runtime or {}).get("compiled")
    saving = eager["median_s"] - compiled["median_s"] if eager and compiled else None
    served = (kernel_times or {}).get("compiles") or {}
    per_call = {cid: n / (kernel_times.get("function_calls") or 1) for cid, n in served.items()} if served else {}
    launched = False
    if not served and (gpu_profile or {}).get("available"):
        per_call, launched = gpu_calls_per_function_call(compiles, gpu_profile), True
        served = per_call
    used = {c.compile_id for c in compiles if per_call.get(c.compile_id)}
    kernel_seconds = {}  # read only to split a saving over compiles: a compile's provenance is built on read
    if saving is not None and len(used) > 1:
        kernel_seconds = {c.compile_id: sum(k.seconds or 0 for k in provenance.kernels) for c in compiles
                          if c.compile_id in used and (provenance := built(c.provenance)).available}
    total_kernel = sum(kernel_seconds.get(cid, 0) for cid in used)
    counted = ("launches of the compile's kernels in the GPU profile ÷ their launches per call of its "
               "generated code" if launched else
               "entries into the compile's transformed bytecode, counted by the kernel-timing run's "
               "sys.setprofile hook")
    method = ("saving = eager − compiled median per call (compiler.capturing.runtime)"
              + (", split over compiles by their measured kernel time" if len(used) > 1 else "")
              + f"; calls served = {counted}" if served else f"{NOT_TIMED}: saving and calls served unknown")
    out = {}
    for c in compiles:
        compile_s = compile_seconds(c.origin, c.metrics, c.timings)
        share = saving_per_call = break_even = None
        if saving is not None and c.compile_id in used:
            share = 1.0 if len(used) == 1 else (kernel_seconds.get(c.compile_id, 0) / total_kernel
                                                if total_kernel else 1.0 / len(used))
        if share is not None:
            saving_per_call = saving * share
            if saving * share > 0 and compile_s is not None:
                break_even = math.ceil(compile_s / (saving * share))
        out[c.compile_id] = Amortization(
            available=compile_s is not None,
            reason=None if compile_s is not None else "torch recorded no compile time for this compile",
            compile_s=compile_s, saving_per_call_s=saving_per_call, break_even_calls=break_even,
            calls_per_function_call=per_call.get(c.compile_id) if served else None,
            calls_under_capture=(calls_under_capture * per_call[c.compile_id]
                                 if calls_under_capture and per_call.get(c.compile_id) else None),
            method=method)
    return out


def gpu_calls_per_function_call(compiles: list, profile: dict) -> dict[str, float]:
    """Per compile id: how many times one call of the function ran the compile, from the GPU profile —
    each profiled Triton kernel's launches per profiled call ÷ its launches per call of the generated
    code (``.run(`` sites in the module of its role); the smallest over the compile's kernels (a kernel
    of the same name in another compile would only add launches)."""
    iters = profile.get("iters") or 1
    out = {}
    for c in compiles:
        modules = {r.role: r.code.module or "" for r in c.inductor.runs if r.code.available}
        ratios = []
        for k in c.kernels.kernels:
            sites = len(re.findall(rf"(?<![\w.]){re.escape(k.name)}\.run\(", modules.get(k.role, "")))
            if k.language == "Triton" and k.profiled_calls and sites:
                ratios.append(k.profiled_calls / iters / sites)
        if ratios:
            out[c.compile_id] = min(ratios)
    return out


def line_table(capture):
    """One row per source line that produced work, over every compile: ``line``, ``code``, ``nodes``
    (Dynamo's FX nodes of the line), ``kernels``, ``time_share`` (of all measured kernel time that has
    a line; sums to 1), ``seconds`` (per call of the function), ``file``, ``compile_ids``."""
    import pandas as pd

    compiles = [c for c in capture.compiles if c.provenance.available]
    rows: dict[tuple, dict] = {}
    for c in compiles:
        prefix = f"{c.compile_id} " if len(compiles) > 1 else ""
        for r in c.provenance.lines:
            row = rows.setdefault((r.file, r.line), {"line": r.line, "code": r.code, "nodes": [], "kernels": [],
                                                     "time_share": None, "seconds": None, "file": r.file,
                                                     "compile_ids": []})
            row["nodes"] += [n for n in r.dynamo_nodes if n not in row["nodes"]]
            row["kernels"] += [prefix + k for k in r.kernels if prefix + k not in row["kernels"]]
            row["compile_ids"].append(c.compile_id)
            if r.seconds is not None:
                row["seconds"] = (row["seconds"] or 0.0) + r.seconds
    total = sum(r["seconds"] or 0.0 for r in rows.values())
    for row in rows.values():
        row["time_share"] = (row["seconds"] or 0.0) / total if total else None
    columns = ["line", "code", "nodes", "kernels", "time_share", "seconds", "file", "compile_ids"]
    return pd.DataFrame([rows[k] for k in sorted(rows, key=lambda k: (k[0] or "", k[1]))], columns=columns)
