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

Built here: the map's declared types and ``provenance_stage``; beside it, ``inductor_tracking`` (Inductor's own
record read from a trace), ``ir_matching`` (scheduler nodes ↔ post-grad nodes), ``run_costs`` (CPU kernel times,
amortization, the line table).
"""
from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import ClassVar

from compiler.stages.base import key_of
from compiler.stages.bytecode import Source
from compiler.stages.fx_graph import AotGraphs, Graph, GraphNode
from compiler.stages.inductor_tracking import InductorTracking, _kernel_to_post, inductor_tracking_of
from compiler.stages.ir_matching import _op_of, kernels_to_ir, match_ir_nodes
from compiler.stages.kernels import Inductor, InductorRun, Kernel, Kernels
from compiler.stages.data import Data, Stage, _Mismatch, _table
from compiler.stages.kernel_costs import call_section, extern_costs


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




LEVELS = ("dynamo", "aot", "post_grad", "ir_pre_fusion", "ir_post_fusion")
_SOURCE_MAP = re.compile(r"^#\s+(?P<src>\w+) => (?P<nodes>[\w, ]+)$", re.M)
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
