"""The capture schema: every field of every stage, declared once, with its type. Two stages are declared
beside the parser that reads them again on load (``Graph``/``GraphNode`` in ``compiler.stages.fx_graph``,
``Guards``/``GuardRow`` in ``compiler.stages.guards``) and imported here. The stage builders import their types
from here; what this module imports (the parsers it reads saved text with) never imports it back.

A capture is plain data — JSON on disk — read into the typed objects below. The same code reads a
file and a capture just built in this process (``Capture.from_data``), so a loaded capture and a
live one are the same objects; only ``Capture.live`` (guard managers, the compiled function, raw
records) is live-only.

Reading checks every field against its declared type and raises ``CaptureFormatError`` naming
the JSON path (``compiles[0].guards: expected an object, got 5``). Keys this reader does not know
(written by a newer minor version) are kept and written back unchanged.

Each stage is an object the way ``jax.stages`` reads: declared attributes, ``available`` and
``reason``, ``as_text()`` that reads like the stage, ``_repr_html_`` drawn by ``explorer``.

    >>> node = GraphNode.from_data({"name": "sin", "op": "call_function", "target": "torch.sin", "line": 3})
    >>> node.name, node.line, node.shape
    ('sin', 3, None)
    >>> Graph.from_data({"available": True, "nodes": [{"name": "x", "line": "3"}]})
    Traceback (most recent call last):
    ...
    compiler.stages.data.CaptureFormatError: nodes[0].line: expected an integer, got '3'
    >>> print(Guards(available=False, reason="cache hit").as_text())
    [guards: unavailable — cache hit]
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Any, ClassVar

from compiler.drawing import draw
from compiler.stages.fix_schema import Fixes
from compiler.stages.fx_graph import Graph, GraphNode  # noqa: F401 (declared beside their parser, which reads them on load)
from compiler.stages.guards import GuardRow, Guards  # noqa: F401 (likewise)
from compiler.stages.data import (MAX_DEPTH, BuiltOnRead, CaptureFormatError, Data, Deferred,  # noqa: F401
                                   JsonFile, Stage, _converter, _dump, _fields, _Mismatch, _shown, _table,
                                   _text_table, check_document_header, paused_gc, read_json_text, utf8_text)

FORMAT = "tcompile-capture"
VERSION = [4, 0]  # major, minor: a reader accepts any minor of its major
# A new major saves what the readers of the one before would read wrong without a word — 3.0: provenance nodes'
# files by index, the IR after fusion as a difference, rows without their default fields; 4.0: Inductor's graphs
# as differences (``GraphDiff``), a provenance map built again from the stages left out, what the GPU measured of a
# kernel on its Inductor run's kernel (3.0: in ``kernel_extras``). Older files still load: each is read as it was
OLDER_MAJORS = (2, 3)


# --- reading and writing typed data -------------------------------------------------------------


def kernels_of(inductor: Inductor) -> Kernels:
    """The Kernels stage of a compile: a view of its Inductor runs' generated kernels — the runs' own ``Kernel``
    objects, each named by its run's role and holding what the GPU measured of it — and the runs' modules as one
    text (never saved: ``Compile.to_data``)."""
    if not inductor.available:
        return Kernels(available=False, reason=inductor.reason)
    runs = [r for r in inductor.runs if r.code.available]
    if not runs:
        return Kernels(available=False, reason=inductor.cache or "Inductor produced no output code")
    module = "\n\n".join(f"# ===== {r.role or 'module'} =====\n{r.code.module}" if len(runs) > 1 else r.code.module
                         for r in runs)
    return Kernels(available=True, module=module, kernels=[k for r in runs for k in r.code.kernels],
                   languages=sorted({lang for r in runs for lang in r.code.languages}))


def kernel_rows(compile: dict) -> list[dict]:
    """A compile's kernels in its data (``compiler.stages.data.plain_data``: roles kept): its Inductor runs' kernels,
    as ``kernels_of`` gives them — where code that reads and writes kernels as data finds them."""
    return [k for r in (compile.get("inductor") or {}).get("runs") or [] if (r.get("code") or {}).get("available")
            for k in r["code"].get("kernels") or []]


def _put_back(inductor: Inductor, extras: list[dict], saved: Kernels | None) -> None:
    """A compile saved before 4.0 kept what the GPU measured of each kernel beside its run's kernel: as
    ``kernel_extras`` (3.0: per kernel of ``kernels_of``, the keys whose values differ) or in a Kernels stage
    saved whole (each row a copy of a run's kernel). Each is put on the run's own kernel as the compile is read."""
    places = [(r.code.kernels, i) for r in inductor.runs if r.code.available for i in range(len(r.code.kernels))]
    if saved is not None and saved.available:
        extras = _differences(saved.kernels, [kernels[i] for kernels, i in places])
    for index, ((kernels, i), extra) in enumerate(zip(places, extras)):
        if extra:
            try:
                kernels[i] = _converter(Kernel)({**kernels[i].to_data(), **extra})
            except _Mismatch as exc:  # only the extras can be wrong (the runs were checked): name them in the path
                exc.where.append(f".kernel_extras[{index}]")
                raise


def _differences(rows: list[Kernel], kernels: list[Kernel]) -> list[dict]:
    """Per kernel, the keys whose values its saved row holds otherwise (a row matched to a kernel by role and name,
    in order)."""
    out: list[dict] = [{} for _ in kernels]
    free = list(range(len(kernels)))
    for row in rows:
        j = next((j for j in free if (kernels[j].role, kernels[j].name) == (row.role, row.name)), None)
        if j is not None:
            free.remove(j)
            own = kernels[j].to_data()
            out[j] = {key: value for key, value in row.to_data().items() if own.get(key) != value}
    return out


def key_of(role: str | None, name: str) -> str:
    """A kernel's or node's key in provenance: ``role:name`` (names repeat between forward and backward)."""
    return f"{role}:{name}" if role else name


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


# --- source and bytecode ------------------------------------------------------------------------

@dataclass(repr=False, eq=False)
class Source(Stage):
    NAME: ClassVar[str] = "source"
    filename: str | None = None
    firstlineno: int | None = None
    name: str | None = None
    text: str = ""
    resumes: str | None = None  # a resume frame shows the function it resumes …
    resume_line: int | None = None  # … from this line

    def _text(self):
        return self.text

    def _summary(self):
        return f"{self.name} at {self.filename}:{self.firstlineno}"


@dataclass(repr=False, eq=False)
class Instruction(Data):
    offset: int = 0
    opname: str = ""
    arg: int | None = None
    argrepr: str = ""
    line: int | None = None
    is_jump_target: bool = False


@dataclass(repr=False, eq=False)
class CodeListing(Data):
    """One code object as ``dis`` lists it."""

    name: str | None = None
    filename: str | None = None
    firstlineno: int | None = None
    text: str = ""
    instructions: list[Instruction] = field(default_factory=list)
    decompiled: str | None = None  # the code as Python, by depyf (transformed code, and a resume function's own)
    decompiled_reason: str | None = None  # why there is no decompiled text (depyf missing or failed)
    instructions_from_text: bool = False  # saved without ``instructions``: loading reads them from ``text``

    def __post_init__(self):
        if self.instructions_from_text:
            from compiler.stages.bytecode import instructions_of

            self.instructions = [Instruction(**row) for row in instructions_of(self.text) or []]
            self.instructions_from_text = False

    def to_data(self) -> dict:
        """Saved without the instructions when reading the text back gives them exactly (they are the text again)."""
        from compiler.stages.bytecode import instructions_of

        out = super().to_data()
        out.pop("instructions_from_text")
        if out["instructions"] and instructions_of(self.text) == out["instructions"]:
            del out["instructions"]
            out["instructions_from_text"] = True
        return out

    def __getattribute__(self, name):
        # a live capture decompiles on first read (compiler.stages.bytecode.decompiled_on_read)
        if name in _DECOMPILED:
            state = object.__getattribute__(self, "__dict__")
            if "_pending_code" in state:
                from compiler.stages.bytecode import decompile

                state.update(decompile(state.pop("_pending_code")))
        return object.__getattribute__(self, name)


_DECOMPILED = frozenset({"decompiled", "decompiled_reason"})


@dataclass(repr=False, eq=False)
class Bytecode(Stage):
    NAME: ClassVar[str] = "bytecode"
    original: CodeListing | None = None
    transformed: CodeListing | None = None
    is_resume: bool = False
    source: str | None = None  # where the listings came from (the bytecode hook or torch's artifacts)

    def _text(self):
        parts = [f"# original ({self.original.name})\n{self.original.text}" if self.original else None,
                 f"# transformed by Dynamo ({self.transformed.name})\n{self.transformed.text}"
                 if self.transformed else None]
        return "\n\n".join(p for p in parts if p)

    def _summary(self):
        counts = [f"{len(c.instructions)} instructions {what}" for what, c in
                  (("before", self.original), ("after", self.transformed)) if c]
        return ", ".join(counts)


# --- FX graphs (``Graph`` and ``GraphNode`` are declared in compiler.stages.fx_graph) --------------

@dataclass(repr=False, eq=False)
class AotGraphs(Stage):
    NAME: ClassVar[str] = "aot"
    graphs: dict[str, Graph] = field(default_factory=dict)  # by role: inference, joint, forward, backward
    training: bool = False

    def _text(self):
        return "\n\n".join(f"# ===== {role} =====\n{g.code}" for role, g in self.graphs.items())

    def _summary(self):
        return ", ".join(f"{role} ({g.op_count} ops)" for role, g in self.graphs.items())


# --- guards: ``Guards`` and ``GuardRow`` are declared in compiler.stages.guards -------------------

# --- graph breaks and recompiles ----------------------------------------------------------------

@dataclass(repr=False, eq=False)
class Location(Data):
    file: str | None = None
    line: int | None = None
    function: str | None = None
    code: str | None = None
    user: bool = True  # False: Python's runtime, Jupyter/IPython, torch or tcompile (not the model's code)
    cell: int | None = None  # the notebook cell this file is: In [cell] (IPython's execution count)


@dataclass(repr=False, eq=False)
class BreakRegistry(Data):
    """torch's graph-break registry entry for a GB code."""

    type: str | None = None
    context: str | None = None
    explanation: str | None = None
    hints: list[str] = field(default_factory=list)


@dataclass(repr=False, eq=False)
class GraphBreak(Data):
    headline: str = ""
    reason: str = ""
    gb_code: str | None = None
    explanation: str | None = None
    hints: list[str] = field(default_factory=list)
    file: str | None = None
    line: int | None = None
    code: str | None = None
    cell: int | None = None  # ``file`` is the notebook cell In [cell]
    stack: list[Location] = field(default_factory=list)  # outermost first; ``user`` marks the model's frames
    registry: BreakRegistry | None = None
    fatal: bool = False  # under fullgraph=True: the compile failed
    count: int = 1
    compile_id: str | None = None
    compile_ids: list[str] = field(default_factory=list)

    def as_text(self) -> str:
        where = f"{self.file}:{self.line}" if self.file else "unknown location"
        lines = [f"{self.gb_code or 'graph break'}: {self.headline} at {where}"
                 + (f" (x{self.count})" if self.count > 1 else "")]
        if self.code:
            lines.append(f"    {self.code}")
        if self.explanation:
            lines.append(f"  why: {self.explanation}")
        lines += [f"  hint: {h}" for h in self.hints]
        return "\n".join(lines)


@dataclass(repr=False, eq=False)
class Breaks(Stage):
    """Every graph break of the capture, deduplicated (``count`` per place). Indexable: ``cap.breaks[0]``."""

    NAME: ClassVar[str] = "breaks"
    items: list[GraphBreak] = field(default_factory=list)
    total: int = 0

    def __getitem__(self, index) -> GraphBreak:
        return self.items[index]

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self):
        return iter(self.items)

    def _text(self):
        if not self.items:
            return "no graph breaks"
        return "\n\n".join(item.as_text() for item in self.items)

    def _summary(self):
        return f"{self.total} graph breaks, {len(self.items)} unique"

    @property
    def table(self):
        return _table(self.items)


@dataclass(repr=False, eq=False)
class RecompileReason(Data):
    text: str = ""
    guard: str = ""  # the guard that failed
    detail: str | None = None
    against: str | None = None  # the compile id whose guards failed
    note: str | None = None
    user_stack: str | None = None


@dataclass(repr=False, eq=False)
class Recompile(Stage):
    """Why this compile happened although the frame had compiled before."""

    NAME: ClassVar[str] = "recompile"
    reasons: list[RecompileReason] = field(default_factory=list)
    compile_id: str | None = None  # set in ``Capture.recompiles``
    name: str | None = None

    @property
    def failed_guard(self) -> str | None:
        """The first guard that failed (torch lists the reasons against each earlier compile)."""
        return self.reasons[0].guard if self.reasons else None

    def _text(self):
        head = f"recompile {self.compile_id} ({self.name})\n" if self.compile_id else ""
        return head + "\n".join(f"  against {r.against}: {r.text}" for r in self.reasons)

    def _summary(self):
        return f"{self.compile_id or ''} {self.failed_guard}"


@dataclass(repr=False, eq=False)
class SkippedFrame(Data):
    """A frame Dynamo gave up on: no graph, torch runs all of it eagerly on every call
    (``compiler.stages.skipped``)."""

    compile_id: str = ""
    function: str | None = None
    file: str | None = None
    line: int | None = None  # the function's first line
    reason: str = ""  # torch's name for why it skipped the frame ("graph break in loop")
    gb_code: str | None = None
    explanation: str | None = None
    cause: GraphBreak | None = None  # the graph break that started it, where it happened
    seconds: float | None = None  # time spent in this frame per compiled call, where measured (under a profiler)
    share: float | None = None  # … as a share of the compiled call's time
    call_seconds: float | None = None  # the compiled call's time in the same measurement: ``seconds`` ≤ it

    def as_text(self) -> str:
        where = f"{self.file}:{self.line}" if self.file else "unknown location"
        cause = (f"; caused by {self.cause.headline} at {self.cause.file}:{self.cause.line}"
                 if self.cause and self.cause.file else "")
        share = f"; {self.share:.0%} of the compiled call's time" if self.share is not None else ""
        return f"skipped frame {self.function} ({where}), {self.compile_id}: {self.reason}{cause}{share}"


@dataclass(repr=False, eq=False)
class RecompileLimit(Data):
    """A frame that reached Dynamo's recompile limit: new variants run eagerly, with only a logged warning
    (``compiler.stages.recompiles.limit_hits``)."""

    compile_id: str = ""  # the refused compile
    frame_id: int = 0
    function: str | None = None
    file: str | None = None
    line: int | None = None
    compile_ids: list[str] = field(default_factory=list)  # the compiles the frame made
    limit: int | None = None
    limit_type: str = "recompile_limit"  # the torch._dynamo.config name
    limit_source: str | None = None  # where ``limit`` was read
    guard: str | None = None  # the guard that kept failing, its value stripped: "spatial_scale =="
    values: list[str] = field(default_factory=list)  # the values the guard was specialised to
    note: str | None = None  # torch's note on where the guard came from
    message: str | None = None  # torch's own message for the refused compile
    gb_code: str | None = None  # its graph-break registry code (GB0039)

    def as_text(self) -> str:
        return (f"recompile limit: {self.function} compiled {len(self.compile_ids)} times "
                f"({self.limit_type} = {self.limit}); failing guard {self.guard} {', '.join(self.values)}")


@dataclass(repr=False, eq=False)
class RecompileBudget(Data):
    """A frame that has used its recompile budget or is within two of it, counted as torch counts
    (``compiler.stages.recompiles.recompile_budgets``): at ``left == 0`` its next new variant runs eagerly;
    ``hit``: torch already refused one (``RecompileLimit``). Derived from the compiles on load, so a capture of
    any version says it; fixes that remove the failing guard are credited with it (``Fix.limit_frames``)."""

    frame_id: int = 0
    function: str | None = None
    file: str | None = None
    line: int | None = None
    compile_ids: list[str] = field(default_factory=list)  # the frame's compiles that made a cache entry
    used: int = 0  # cache entries counted against the limit after its last compile
    limit: int = 0
    limit_type: str = "recompile_limit"  # or accumulated_recompile_limit, whichever is nearer
    limit_source: str | None = None  # where ``limit`` was read
    left: int = 0  # new variants it may still compile
    hit: bool = False  # torch refused a compile of it (the limit actually bit)
    refused: list[str] = field(default_factory=list)  # the refused compiles
    guard: str | None = None  # the guard that kept failing, its value stripped: "spatial_scale =="
    values: list[str] = field(default_factory=list)  # the values it was specialised to, in order
    value_kind: str | None = None  # "float" / "int" when every value is a Python number of that kind
    note: str | None = None  # torch's note on where the guard came from

    def as_text(self) -> str:
        state = ("hit: new variants run eagerly" if self.hit else "used up: the next new variant runs eagerly"
                 if self.left == 0 else f"{self.left} left")
        guard = f"; failing guard {self.guard} {' / '.join(self.values)}" if self.guard else ""
        return f"{self.function}: {self.used} of {self.limit_type} = {self.limit} ({state}){guard}"


# --- AOT, Inductor and kernels ------------------------------------------------------------------

@dataclass(repr=False, eq=False)
class IrNode(Data):
    OMIT_DEFAULTS: ClassVar[bool] = True
    name: str = ""
    kind: str = ""
    ops: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    members: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)  # [first, last] line in the IR text
    detail: str | None = None
    extern_kernel: str | None = None
    text: str | None = None


DIFF_MAX_LINES = 40_000  # difflib's matching grows faster than linear: longer IR texts are saved whole


def line_diff(old: str, new: str) -> list | None:
    """``new`` as copies of ``old``'s lines (``[start, end]``) and the text in between, when that is at most
    three quarters of ``new``'s size; None otherwise (``apply_line_diff`` gives ``new`` back exactly)."""
    import difflib

    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    if not a or not b or max(len(a), len(b)) > DIFF_MAX_LINES:
        return None
    ops: list = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            ops.append([i1, i2])
        elif j2 > j1:
            ops.append("".join(b[j1:j2]))
    if _diff_size(ops) > 0.75 * len(new):
        return None
    return ops


def _diff_size(ops: list) -> int:
    return sum(len(op) if isinstance(op, str) else 12 for op in ops)


def apply_line_diff(old: str, ops: list, where: str = ".post_fusion_diff") -> str:
    lines = old.splitlines(keepends=True)
    out = []
    for op in ops:
        if isinstance(op, str):
            out.append(op)
        elif isinstance(op, list) and len(op) == 2 and all(type(i) is int for i in op) and 0 <= op[0] <= op[1] <= len(lines):
            out.extend(lines[op[0]:op[1]])
        else:
            exc = _Mismatch("a text or [start, end] of the lines of the text it differs from", op)
            exc.where.append(where)
            raise exc
    return "".join(out)


@dataclass(repr=False, eq=False)
class IrText(Data):
    """Inductor's scheduler nodes as its IR log prints them. Saved without its nodes where parsing the text
    gives them back (``nodes_from_text``)."""

    text: str = ""
    nodes: list[IrNode] = field(default_factory=list)
    nodes_from_text: bool = False
    available: ClassVar[bool] = True  # read like a stage's: False only for a run's missing IR (``MissingIr``)
    reason: ClassVar[str | None] = None

    def __post_init__(self):
        if self.nodes_from_text and self.text:  # (after fusion: once InductorIR rebuilt the text)
            self.nodes, self.nodes_from_text = _ir_nodes(self.text), False

    def to_data(self) -> dict:
        out = super().to_data()
        out.pop("nodes_from_text")
        if self.text and out["nodes"] and _dump(_ir_nodes(self.text)) == out["nodes"]:
            out["nodes"], out["nodes_from_text"] = [], True
        return out

    def as_text(self) -> str:
        return self.text


class MissingIr(IrText):
    """A run's IR before or after fusion where Inductor logged none (``InductorRun.ir_before`` / ``ir_after``):
    empty, ``available`` False and the ``reason`` — a cache hit named, which skips lowering and fusion. Made on
    read, never saved."""

    available = False

    def __init__(self, reason: str):
        super().__init__()
        self.reason = reason

    def as_text(self) -> str:
        return f"[ir: unavailable — {self.reason}]"


def _ir_nodes(text: str) -> list[IrNode]:
    from compiler.stages.inductor_ir import parse_ir

    return [IrNode.from_data(node, "nodes") for node in parse_ir(text)]


@dataclass(repr=False, eq=False)
class FusionRow(Data):
    OMIT_DEFAULTS: ClassVar[bool] = True
    fused: str = ""
    members: list[str] = field(default_factory=list)
    kind: str = ""
    is_fusion: bool = False
    kernel: str | None = None


@dataclass(repr=False, eq=False)
class InductorIR(Stage):
    """Inductor's IR before and after fusion. A saved stage keeps the text after fusion as its difference
    from the text before (``post_fusion_diff``: most fused nodes print the lines of the nodes they fuse),
    rebuilt whole on load."""

    NAME: ClassVar[str] = "ir"
    pre_fusion: IrText | None = None
    post_fusion: IrText | None = None
    fusion: list[FusionRow] = field(default_factory=list)
    nodes_before: int = 0
    nodes_after: int = 0
    post_fusion_diff: list[Any] | None = None  # set when saved without post_fusion.text (``line_diff``)

    def __post_init__(self):
        if self.post_fusion_diff is not None and self.pre_fusion is not None and self.post_fusion is not None:
            self.post_fusion.text = apply_line_diff(self.pre_fusion.text, self.post_fusion_diff)
            self.post_fusion_diff = None
            self.post_fusion.__post_init__()  # its nodes, parsed from the text just rebuilt

    def to_data(self) -> dict:
        out = super().to_data()
        out.pop("post_fusion_diff")
        if self.pre_fusion is not None and self.post_fusion is not None:
            ops = line_diff(self.pre_fusion.text, self.post_fusion.text)
            if ops is not None:
                out["post_fusion"]["text"], out["post_fusion_diff"] = "", ops
        return out

    def _text(self):
        return (self.post_fusion or IrText()).text

    def _summary(self):
        return f"{self.nodes_before} nodes before fusion, {self.nodes_after} after"


@dataclass(repr=False, eq=False)
class KernelGpu(Data):
    """GPU depth of one Triton kernel (``compiler.capturing.gpu``): what its compiled binary uses (from the launcher
    Inductor runs), its launch configuration, the bytes it moves per launch (``compiler.stages.kernels.
    triton_bytes``) and the bandwidth that achieves against the GPU's peak; Triton's kept IR levels."""

    registers: int | None = None  # per thread
    spills: int | None = None
    shared_bytes: int | None = None
    num_warps: int | None = None
    num_stages: int | None = None
    config: dict[str, Any] = field(default_factory=dict)  # block sizes of the launched config
    configs_compiled: int | None = None
    bytes_read: int | None = None  # per launch
    bytes_written: int | None = None
    bytes_per_call: int | None = None  # read + written, per launch
    bytes_method: str | None = None
    bytes_reason: str | None = None  # why the bytes are unknown
    bytes_args_per_call: int | None = None  # Inductor's estimate: every pointer argument's whole buffer
    accesses: list[dict[str, Any]] = field(default_factory=list)  # per pointer: kind, elements, bytes, how
    working_set_bytes: int | None = None  # distinct bytes touched per launch (an in-out buffer once)
    flops: float | None = None  # per launch (compiler.stages.kernel_costs.triton_costs)
    flops_method: str | None = None
    flops_dtype: str | None = None  # the peak FLOP/s it is read against (templates: their tensor-core dtype)
    time_us_per_launch: float | None = None
    achieved_bytes_per_s: float | None = None  # bytes ÷ time: effective bandwidth where served from L2
    peak_bytes_per_s: float | None = None
    bandwidth_share: float | None = None  # achieved ÷ DRAM peak, only where served from DRAM (≤ 1)
    served_from: str | None = None  # "DRAM", "L2" (above the DRAM peak, working set ≤ L2), None: unexplained
    l2_bytes: int | None = None
    measured_dram_bytes_read: float | None = None  # Nsight Compute, per launch (opt-in: compiler.capturing.ncu)
    measured_dram_bytes_written: float | None = None  # only what left L2 while the kernel ran
    measured_l2_bytes_written: float | None = None  # Nsight Compute: sectors written into L2 × 32 B, per launch
    ir: dict[str, str] = field(default_factory=dict)  # ttir, ttgir, llir, ptx
    ir_source: str | None = None
    notes: list[str] = field(default_factory=list)


@dataclass(repr=False, eq=False)
class KernelCost(Data):
    """FLOPs, bytes and the roofline of one kernel per call of its module (``compiler.stages.kernel_costs``);
    every number says its method."""

    reason: str | None = None  # why FLOPs are unknown (an op tcompile does not count)
    flops: float | None = None
    flops_method: str | None = None
    bytes: float | None = None
    bytes_method: str | None = None
    dtype: str | None = None  # the peak it is read against: fp32 (CUDA cores), tf32, bf16, fp16 …
    sites: int | None = None  # extern: calls in call()
    time_s: float | None = None  # GPU time per call of the module
    time_method: str | None = None
    intensity: float | None = None  # FLOPs per byte
    peak_flops_per_s: float | None = None
    peak_bytes_per_s: float | None = None
    peak_source: str | None = None
    ridge: float | None = None  # peak FLOP/s ÷ peak bytes/s
    l2_bytes: int | None = None
    working_set_bytes: float | None = None  # distinct bytes per launch, compared with the L2
    achieved_flops_per_s: float | None = None
    achieved_bytes_per_s: float | None = None
    bound: str | None = None  # "memory" or "compute"
    share: float | None = None  # of the DRAM peak (memory-bound, from DRAM) or of the peak FLOP/s
    served_from: str | None = None  # "DRAM", "L2"
    verdict: str | None = None
    measured_dram_bytes: float | None = None  # Nsight Compute, per call (opt-in)
    measured_method: str | None = None

    def __post_init__(self):
        from compiler.stages.roofline import out_of_bounds, reread

        if self.verdict and out_of_bounds(self):  # saved by an older version: read again with today's rules
            fresh = reread(self)
            self.__dict__["_as_saved"] = {name: getattr(self, name) for name in fresh}  # written back as it came
            for name, value in fresh.items():
                setattr(self, name, value)

    def to_data(self) -> dict:
        out = super().to_data()
        out.update(self.__dict__.get("_as_saved") or {})  # a file is saved as it was read: re-read again on load
        return out


@dataclass(repr=False, eq=False)
class Kernel(Data):
    name: str = ""
    language: str = ""  # cpp, triton, extern
    kind: str | None = None
    source: str | None = None
    comments: str | None = None
    call_args: list[str] = field(default_factory=list)
    aten_ops: list[str] = field(default_factory=list)
    source_nodes: list[str] = field(default_factory=list)
    ops_from_name: list[str] = field(default_factory=list)
    ir_node: str | None = None
    ir_nodes: list[str] = field(default_factory=list)
    ir_members: list[str] = field(default_factory=list)
    ir_ops: list[str] = field(default_factory=list)
    kernel_path: str | None = None
    kernel_info: dict[str, Any] | None = None  # triton_kernel_info (GPU)
    triton: dict[str, Any] | None = None  # @triton_heuristics metadata (GPU)
    role: str | None = None
    gpu_time_us_per_call: float | None = None
    profiled_calls: int | None = None
    gpu: KernelGpu | None = None  # Triton kernels: registers, spills, bandwidth, IR levels
    cost: KernelCost | None = None  # GPU: FLOPs, bytes, roofline (Triton and extern)

    def as_text(self) -> str:
        return self.source or ""


@dataclass(repr=False, eq=False)
class GeneratedCode(Stage):
    NAME: ClassVar[str] = "code"
    module: str = ""
    kernels: list[Kernel] = field(default_factory=list)
    languages: list[str] = field(default_factory=list)
    aot_id: str | None = None
    texts_from_module: bool = False  # saved without the kernels' source and comments: the module holds them

    def __post_init__(self):
        if self.texts_from_module:
            from compiler.stages.code_text import kernel_texts

            texts = kernel_texts(self.module)
            for k in self.kernels:
                if k.name in texts and k.language != "extern":
                    k.source, k.comments = texts[k.name]
            self.texts_from_module = False

    def to_data(self) -> dict:
        """Saved without each generated kernel's source and comments when they are the module's own text again."""
        from compiler.stages.code_text import kernel_texts

        out = super().to_data()
        out.pop("texts_from_module")
        texts = kernel_texts(self.module) if self.module else {}
        generated = [k for k in out["kernels"] if k.get("language") != "extern"]
        if generated and all(texts.get(k["name"]) == (k.get("source"), k.get("comments")) for k in generated):
            for k in generated:
                del k["source"], k["comments"]
            out["texts_from_module"] = True
        return out

    def _text(self):
        return self.module

    def _summary(self):
        return f"{len(self.kernels)} kernels ({', '.join(self.languages)})"


@dataclass(repr=False, eq=False)
class InductorRun(Data):
    """One Inductor compile: inference, or the forward or backward of a training graph."""

    role: str | None = None
    pre_grad: Graph = field(default_factory=Graph)
    post_grad: Graph = field(default_factory=Graph)
    ir: InductorIR = field(default_factory=InductorIR)
    code: GeneratedCode = field(default_factory=GeneratedCode)

    def __post_init__(self):
        for kernel in self.code.kernels:  # a run's kernels are named by its role (provenance keys, the Kernels rows)
            kernel.role = self.role

    def to_data(self) -> dict:
        """Saved without each kernel's role: it is the run's."""
        out = super().to_data()
        for kernel in out["code"]["kernels"]:
            kernel.pop("role")
        return out

    @property
    def ir_before(self) -> IrText:
        """Inductor's IR before fusion (where there is none, a ``MissingIr`` saying why)."""
        return self.ir.pre_fusion or self._missing_ir()

    @property
    def ir_after(self) -> IrText:
        """Inductor's IR after fusion (where there is none, a ``MissingIr`` saying why)."""
        return self.ir.post_fusion or self._missing_ir()

    def _missing_ir(self) -> "MissingIr":
        return MissingIr(self.ir.reason or ("Inductor logged no IR for this run" if self.ir.available
                                            else "no reason recorded"))


@dataclass(repr=False, eq=False)
class Inductor(Stage):
    NAME: ClassVar[str] = "inductor"
    runs: list[InductorRun] = field(default_factory=list)
    cache: str | None = None  # why lowering and fusion were not seen (a cache hit)

    def _text(self):
        return "\n\n".join(f"# ===== {run.role or 'inference'}: IR after fusion =====\n{run.ir_after.text}"
                           for run in self.runs)

    def _summary(self):
        return f"{len(self.runs)} Inductor compiles ({', '.join(r.role or 'inference' for r in self.runs)})"


@dataclass(repr=False, eq=False)
class Kernels(Stage):
    """Every kernel of the compile's generated code (all Inductor runs)."""

    NAME: ClassVar[str] = "kernels"
    module: str = ""
    kernels: list[Kernel] = field(default_factory=list)
    languages: list[str] = field(default_factory=list)

    def _text(self):
        return self.module

    def _summary(self):
        return f"{len(self.kernels)} kernels"

    @property
    def table(self):
        return _table(self.kernels)


# --- provenance: source line ↔ nodes ↔ kernels, cost per line, amortization -------------------------

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


@dataclass(repr=False, eq=False)
class AutotuneChoice(Data):
    name: str = ""
    description: str | None = None
    time_ms: float | None = None
    chosen: bool = False
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(repr=False, eq=False)
class Autotune(Data):
    op: str | None = None
    compile_id: str | None = None
    input_sizes: list[Any] = field(default_factory=list)
    choices: list[AutotuneChoice] = field(default_factory=list)


# --- timings, shapes ----------------------------------------------------------------------------

@dataclass(repr=False, eq=False)
class Phase(Data):
    name: str = ""
    label: str = ""
    seconds: float = 0.0
    count: int = 1


@dataclass(repr=False, eq=False)
class TimingEvent(Data):
    name: str = ""
    label: str = ""
    seconds: float = 0.0
    start: float = 0.0
    depth: int = 0


@dataclass(repr=False, eq=False)
class CacheEvent(Data):
    artifact: str = ""
    cache_state: str | None = None
    cache_status_detailed: str | None = None
    key: str | None = None
    cache_bypass_reason: str | None = None
    reason: str | None = None


@dataclass(repr=False, eq=False)
class LineCompileTime(Data):
    """Compile seconds spent on one line of the user's code in one phase (``compiler.stages.compile_time``);
    ``line`` None: time torch spent on no line (guard building, C++ compile, imports: ``code`` says which)."""

    file: str | None = None
    line: int | None = None
    code: str | None = None
    module: str | None = None  # the nn.Module path, where torch knew it
    phase: str = ""
    seconds: float = 0.0
    share: float = 0.0  # of this compile's sampled time
    samples: int = 0
    error_s: float = 0.0  # ± √(Σ interval²) of its samples: interval × √samples when they are even


@dataclass(repr=False, eq=False)
class CacheKeyInput(Data):
    """One input of a cache key as torch logs it (``[hash] name: value``)."""

    hash: str | None = None
    name: str = ""
    value: str = ""


@dataclass(repr=False, eq=False)
class CacheEntry(Data):
    """One cache one compile consulted (``compiler.stages.caches``): ``state`` hit, miss, bypass, disabled,
    not used, not logged, ran (autotuning), off/updated/unchanged (PGO, automatic dynamic)."""

    cache: str = ""
    state: str = ""
    graph: str | None = None  # forward / backward, where a compile looked up one entry per graph
    detail: str | None = None  # torch's cache_status_detailed, or what happened
    reason: str | None = None  # torch's bypass reason, or why the cache was not consulted
    key: str | None = None
    key_inputs: list[CacheKeyInput] = field(default_factory=list)
    saved_s: float | None = None  # a hit: the compile time torch stored with the entry (what the hit saved)
    would_save_s: float | None = None  # a miss: what torch measured this compile took (what a hit would skip)
    seconds: float | None = None  # time spent in it (C++ compiler runs, autotuning)


@dataclass(repr=False, eq=False)
class Caches(Stage):
    """Every cache of one compile, hit / miss / bypass with torch's reason (``compiler.stages.caches``)."""

    NAME: ClassVar[str] = "caches"
    entries: list[CacheEntry] = field(default_factory=list)

    def state(self, cache: str) -> str | None:
        """The state of ``cache`` (e.g. ``"FX graph"``); several entries (forward, backward) joined by ``/``."""
        states = [e.state for e in self.entries if e.cache == cache]
        return "/".join(states) if states else None

    def _text(self):
        return _text_table(self.entries, ["cache", "graph", "state", "detail", "reason", "saved_s", "would_save_s"])

    def _summary(self):
        return ", ".join(f"{e.cache} {e.state}" for e in self.entries[:2])

    @property
    def table(self):
        return _table([{k: v for k, v in e.to_data().items() if k != "key_inputs"} for e in self.entries])


@dataclass(repr=False, eq=False)
class CacheRunCompile(Data):
    compile_id: str = ""
    compile_s: float | None = None
    entries: list[CacheEntry] = field(default_factory=list)
    phases: list[Phase] = field(default_factory=list)  # torch's timed phases of this compile in that run
    top_lines: list[LineCompileTime] = field(default_factory=list)  # where the sampler saw most of its time


@dataclass(repr=False, eq=False)
class CacheRun(Data):
    """One fresh process compiling the captured calls (``compiler.analyses.cache_runs``): cold, warm or mega-cache."""

    name: str = ""
    compile_s: float | None = None  # torch's compile seconds, summed over the run's compiles
    saved_s: float | None = None  # the cold run's compile seconds minus this run's
    calls_s: float | None = None  # compiling and calling, as the child timed it
    process_s: float | None = None  # the whole child process (interpreter start and imports included)
    compiles: list[CacheRunCompile] = field(default_factory=list)
    counters: dict[str, Any] = field(default_factory=dict)  # torch's inductor and aot_autograd counters
    loaded_artifacts: dict[str, int] | None = None  # mega-cache: artifacts load_cache_artifacts put back, by kind
    outputs_equal: bool | None = None
    output_note: str | None = None
    error: str | None = None


@dataclass(repr=False, eq=False)
class CacheRuns(Stage):
    """What a cache hit saves, measured in fresh processes: cold, warm, mega-cache (``cap.measure_caches()``)."""

    NAME: ClassVar[str] = "cache_runs"
    runs: list[CacheRun] = field(default_factory=list)
    artifacts_bytes: int | None = None  # size of torch.compiler.save_cache_artifacts()'s bytes
    method: str | None = None
    compile_kwargs: dict[str, Any] = field(default_factory=dict)

    def run(self, name: str) -> CacheRun | None:
        return next((r for r in self.runs if r.name == name), None)

    def _text(self):
        lines = [f"{'run':<11} {'compile s':>9} {'saved s':>8}  caches"]
        for r in self.runs:
            states = "; ".join(f"{c.compile_id}: " + ", ".join(f"{e.cache} {e.state}" for e in c.entries[:2])
                               for c in r.compiles)
            lines.append(f"{r.name:<11} {r.compile_s if r.compile_s is not None else '-':>9} "
                         f"{r.saved_s if r.saved_s is not None else '-':>8}  {r.error or states}")
        return "\n".join(lines)

    def _summary(self):
        warm = self.run("warm")
        return f"warm rerun saves {warm.saved_s:.3g} s" if warm and warm.saved_s is not None else "measured"

    @property
    def table(self):
        return _table([{k: v for k, v in r.to_data().items() if k not in ("compiles",)} for r in self.runs])


@dataclass(repr=False, eq=False)
class Timings(Stage):
    NAME: ClassVar[str] = "timings"
    phases: list[Phase] = field(default_factory=list)
    events: list[TimingEvent] = field(default_factory=list)
    cache: list[CacheEvent] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    by_line: list[LineCompileTime] = field(default_factory=list)  # sampled: compile time by line of user code
    by_line_method: str | None = None  # how by_line was measured and how exact it is (None: not sampled)

    def _text(self):
        return _text_table(self.phases, ["label", "seconds", "count"])

    def _summary(self):
        return f"{len(self.phases)} phases"

    @property
    def table(self):
        return _table(self.phases)


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


@dataclass(repr=False, eq=False)
class CompileError(Data):
    type: str | None = None
    message: str | None = None
    file: str | None = None
    line: int | None = None


ORIGINS = ("dynamo", "aot_inductor")  # what produced a Compile (Compile.origin)

# A stage a saved compile leaves out when building it again from the compile's other saved stages gives it exactly
# (``Compile.provenance_from_stages``), by the function its builder's module registers here on import (the
# provenance map: ``compiler.stages.provenance``, imported with ``compiler``; it imports this module, not back).
REBUILT_ON_LOAD: dict[str, Any] = {}


@dataclass(repr=False, eq=False)
class GraphDiff(Data):
    """One Inductor graph of a saved compile, saved as its line difference (``line_diff``) from another graph of
    the compile: the pre-grad graph is the Dynamo graph as Inductor received it (most often the same code less
    a line), the post-grad graph the AOT graph after Inductor's passes. Loading gives the code back exactly."""

    run: int = 0  # the Inductor run (``Compile.inductor.runs``)
    graph: str = "pre_grad"  # pre_grad or post_grad
    base: str = "graph"  # "graph" (the Dynamo graph) or "aot:<role>" (one of ``Compile.aot.graphs``)
    ops: list[Any] = field(default_factory=list)

    @staticmethod
    def of(compile: "Compile", out: dict) -> list["GraphDiff"]:
        """The diffs for ``compile`` being saved as ``out``; each graph's code in ``out`` is emptied. A pre-grad
        graph is diffed from the Dynamo graph, a post-grad graph from whichever AOT graph gives the smallest diff."""
        graphs = {"pre_grad": [("graph", compile.graph)],
                  "post_grad": [(f"aot:{role}", g) for role, g in compile.aot.graphs.items()]}
        bases = {which: [(name, g.code) for name, g in named if g.available and g.code] for which, named in graphs.items()}
        diffs = []
        for i, run in enumerate(compile.inductor.runs):
            for which in ("pre_grad", "post_grad"):
                code = getattr(run, which).code
                saved = out["inductor"]["runs"][i][which]
                if not code or saved.get("code") != code:
                    continue
                options = [(name, line_diff(base, code)) for name, base in bases[which]]
                options = [(name, ops) for name, ops in options if ops is not None]
                if options:
                    name, ops = min(options, key=lambda o: _diff_size(o[1]))
                    saved["code"] = ""
                    diffs.append(GraphDiff(run=i, graph=which, base=name, ops=ops))
        return diffs

    def restore(self, compile: "Compile") -> None:
        if self.graph not in ("pre_grad", "post_grad") or not 0 <= self.run < len(compile.inductor.runs):
            exc = _Mismatch("a pre_grad or post_grad graph of one of the compile's Inductor runs",
                            f"{self.graph} of run {self.run}")
            exc.where.append(".graph_diffs")
            raise exc
        base = (compile.graph if self.base == "graph" else
                compile.aot.graphs.get(self.base.removeprefix("aot:")) if self.base.startswith("aot:") else None)
        if base is None:
            exc = _Mismatch("graph or aot:<one of the compile's AOT graphs>", self.base)
            exc.where.append(".graph_diffs")
            raise exc
        graph = getattr(compile.inductor.runs[self.run], self.graph)
        if graph.code:  # saved with its code after all (a file edited by hand): the code it holds stands
            return
        graph.code = apply_line_diff(base.code, self.ops, ".graph_diffs")
        graph.__post_init__()  # its nodes, parsed from the code just rebuilt (on their first read)


@dataclass(repr=False, eq=False)
class Compile(Data):
    """Everything captured for one frame compile (compile id ``frame/compile``)."""

    compile_id: str
    frame_id: int = 0
    frame_compile_id: int = 0
    attempts: int = 1
    # "dynamo": a frame torch.compile compiled. "aot_inductor": AOTInductor compiled an exported program;
    # its records carry no Dynamo compile id (tlparse files them under -_-_-_-, the compile id kept here),
    # so there is no frame, source, bytecode, Dynamo graph or guards (those stages say so).
    origin: str = "dynamo"
    name: str | None = None
    status: str = "incomplete"  # compiled, skipped, failed, incomplete
    metrics: dict[str, Any] = field(default_factory=dict)  # torch's compilation_metrics
    restart_reasons: list[str] = field(default_factory=list)
    error: CompileError | None = None
    source: Source = field(default_factory=Source)
    bytecode: Bytecode = field(default_factory=Bytecode)
    graph: Graph = field(default_factory=Graph)
    guards: Guards = field(default_factory=Guards)
    recompile: Recompile = field(default_factory=Recompile)
    aot: AotGraphs = field(default_factory=AotGraphs)
    inductor: Inductor = field(default_factory=Inductor)
    # a view of the Inductor runs' kernels (``kernels_of``), made with the compile; never saved
    kernels: Kernels = field(default_factory=Kernels, init=False, metadata={"live": True})
    timings: Timings = field(default_factory=Timings)
    caches: Caches = field(default_factory=Caches)
    shapes: Shapes = field(default_factory=Shapes)
    provenance: Provenance = field(default_factory=Provenance)
    amortization: Amortization = field(default_factory=Amortization)
    autotune: list[Autotune] = field(default_factory=list)
    # read from older files only: 3.0's flag (the Kernels stage left out), what it saved each kernel's GPU
    # measurement as, and the Kernels stage 2.x saved whole
    kernels_from_inductor: bool = False
    kernel_extras: list[dict[str, Any]] = field(default_factory=list)
    saved_kernels: Kernels | None = field(default=None, metadata={"key": "kernels"})
    graph_diffs: list[GraphDiff] = field(default_factory=list)  # saved only: Inductor's graphs as differences
    provenance_from_stages: bool = False  # saved without ``provenance``: built from the stages on first read

    def __post_init__(self):
        if self.origin not in ORIGINS:
            exc = _Mismatch(" or ".join(map(repr, ORIGINS)), self.origin)
            exc.where.append(".origin")
            raise exc
        if self.kernel_extras or self.saved_kernels is not None:  # a file from before 4.0
            _put_back(self.inductor, self.kernel_extras, self.saved_kernels)
        self.kernels_from_inductor, self.kernel_extras, self.saved_kernels = False, [], None
        self.kernels = kernels_of(self.inductor)
        for diff in self.graph_diffs:
            diff.restore(self)
        self.graph_diffs = []
        if self.provenance_from_stages:
            self.__dict__["provenance"] = Deferred(Provenance, functools.partial(REBUILT_ON_LOAD["provenance"], self))
            self.__dict__["_provenance_from_stages"] = True  # (so saving it again needs no check)
            self.provenance_from_stages = False
        self._provenance_before_origins()

    def _provenance_before_origins(self) -> None:
        """A provenance map saved before tcompile kept each kernel's origin nodes (``KernelProvenance.origin``):
        built again from the saved stages — its generated code holds torch's origin comments — where that gives
        back its times (GPU times sit on the kernels); else kept, each kernel saying its lines are unchecked."""
        saved = self.__dict__.get("provenance")
        if not isinstance(saved, Provenance) or not saved.available or not saved.kernels or any(
                k.origin or k.no_origin for k in saved.kernels):
            return
        if ("provenance" in REBUILT_ON_LOAD and not saved.inductor_tracking
                and (saved.time_source is None or saved.time_source.startswith("GPU"))):
            self.__dict__["provenance"] = Deferred(Provenance, functools.partial(REBUILT_ON_LOAD["provenance"], self))
            return
        for k in saved.kernels:
            k.no_origin = ("saved before tcompile kept each kernel's origin nodes: its lines are as recorded then "
                           "(matched through the scheduler IR), not checked against torch's origins")

    def to_data(self) -> dict:
        """The saved compile: its Kernels stage is the Inductor runs' kernels, saved there once."""
        out = super().to_data()
        for key in ("kernels_from_inductor", "kernel_extras", "kernels", "graph_diffs", "provenance_from_stages"):
            del out[key]
        diffs = GraphDiff.of(self, out)
        if diffs:
            out["graph_diffs"] = [d.to_data() for d in diffs]
        if self._provenance_is_rebuilt(out.get("provenance")):
            del out["provenance"]
            out["provenance_from_stages"] = True
        return out

    def _provenance_is_rebuilt(self, saved: dict | None) -> bool:
        """Whether loading builds this provenance map again exactly from the saved stages: one read so
        (``provenance_from_stages``), or one a build from the stages gives as saved (a trace's provenance tracking
        and CPU kernel times are not among them)."""
        if self.__dict__.get("_provenance_from_stages"):
            return True
        if not saved or not saved.get("available") or saved.get("inductor_tracking") or "provenance" not in REBUILT_ON_LOAD:
            return False
        try:
            return REBUILT_ON_LOAD["provenance"](self).to_data() == saved
        except Exception:  # noqa: BLE001 — a map that cannot be built again is saved whole
            return False

    def __repr__(self) -> str:
        return f"<Compile {self.compile_id} {self.name} {self.status}>"

    def _on_built(self, name: str, stage) -> None:
        """A stage built on its first read (``BuiltOnRead``) knows its compile, as ``Capture`` tells the others."""
        if "_capture" in self.__dict__:
            stage.__dict__["_compile"] = self

    @property
    def compile_seconds(self) -> float | None:
        """This compile's time (``compiler.stages.compile_time.compile_seconds``: forward and backward; the
        compile_fx_aot span for AOTInductor), None where torch logged none."""
        from compiler.stages.compile_time import compile_seconds

        return compile_seconds(self.origin, self.metrics, self.timings)

    def stage(self, name: str) -> Stage:
        if name not in STAGES:
            raise KeyError(f"no stage {name!r}; stages: {', '.join(STAGES)}")
        return getattr(self, name)

    def as_text(self) -> str:
        return "\n\n".join(f"=== {name} ===\n{getattr(self, name).as_text()}" for name in STAGES)

    def _repr_html_(self) -> str:
        return draw("compile", self, self.as_text)


# A compile's provenance map is built on its first read (``assemble`` gives it as ``Deferred``): it parses every
# graph of the compile, and a loaded trace of thousands of compiles shows a few of them.
Compile.provenance = BuiltOnRead("provenance")

STAGES = tuple(f.name for f in dataclasses.fields(Compile)
               if isinstance(f.default_factory, type) and issubclass(f.default_factory, Stage))


# --- capture-wide stages ------------------------------------------------------------------------

@dataclass(repr=False, eq=False)
class CallTiming(Data):
    median_s: float = 0.0
    min_s: float = 0.0
    max_s: float = 0.0
    q1_s: float = 0.0
    q3_s: float = 0.0
    samples: int = 0
    calls_per_sample: int = 1


@dataclass(repr=False, eq=False)
class Runtime(Stage):
    NAME: ClassVar[str] = "runtime"
    device: str = "cpu"
    eager: CallTiming | None = None
    compiled: CallTiming | None = None
    speedup: float | None = None
    first_call_s: float | None = None
    threads: int | None = None
    cpu_count: int | None = None
    load_average: float | None = None
    busy: bool = False  # the machine was loaded while timing: numbers are less reliable
    method: str | None = None
    note: str | None = None
    recompiles_while_timing: int = 0  # frames compiled while being timed (the timed code was not steady)
    wall_s: float | None = None  # how long timing took

    def _text(self):
        lines = [f"eager {self.eager.median_s:.6g} s, compiled {self.compiled.median_s:.6g} s (median)"
                 if self.eager and self.compiled else "",
                 f"speedup {self.speedup:.2f}x" if self.speedup else "", self.method or "",
                 "warning: the machine was busy while timing" if self.busy else ""]
        return "\n".join(line for line in lines if line)

    def _summary(self):
        return f"speedup {self.speedup:.2f}x" if self.speedup else "measured"


@dataclass(repr=False, eq=False)
class CudaGraphEvent(Data):
    kind: str = ""
    message: str | None = None
    compile_id: str | None = None
    function: str | None = None
    graph_id: int | None = None
    key: str | None = None
    reason: str | None = None
    user_reason: str | None = None
    found_from: Location | None = None
    time: float | None = None


@dataclass(repr=False, eq=False)
class CudaGraphMemory(Data):
    reserved_growth_bytes: int = 0
    note: str | None = None


@dataclass(repr=False, eq=False)
class CudaGraphs(Stage):
    NAME: ClassVar[str] = "cudagraphs"
    used: bool = False
    skipped: bool = False
    warmups: int = 0
    recorded: int = 0
    replays: int = 0
    re_recordings: int = 0
    trees: list[str] = field(default_factory=list)
    events: list[CudaGraphEvent] = field(default_factory=list)
    skip_reasons: list[str] = field(default_factory=list)
    skip_reasons_user: list[str] = field(default_factory=list)
    skip_locations: list[Location] = field(default_factory=list)
    counters: dict[str, Any] = field(default_factory=dict)
    calls_under_capture: int | None = None
    memory: CudaGraphMemory | None = None

    def _text(self):
        lines = [f"warm-ups {self.warmups}, recordings {self.recorded}, replays {self.replays}, "
                 f"re-recordings {self.re_recordings}"]
        lines += [f"skipped: {r}" for r in self.skip_reasons_user or self.skip_reasons]
        return "\n".join(lines)

    def _summary(self):
        return "skipped" if self.skipped else f"{self.recorded} recorded, {self.replays} replays"


@dataclass(repr=False, eq=False)
class CudaGraphComparison(Stage):
    NAME: ClassVar[str] = "cudagraph_comparison"
    mode: str | None = None
    with_cudagraphs: CallTiming | None = None
    without_cudagraphs: CallTiming | None = None
    speedup: float | None = None
    memory_reserved_growth_bytes: int | None = None

    def _text(self):
        return f"with CUDA graphs {self.speedup:.2f}x faster" if self.speedup else ""


@dataclass(repr=False, eq=False)
class ProfiledGraphShare(Data):
    """The part of a profiled kernel's launches made inside one compiled graph's call."""

    gpu_time_us_per_call: float = 0.0
    calls: int = 0  # launches over the profiled calls
    launched_by: dict[str, float] = field(default_factory=dict)


@dataclass(repr=False, eq=False)
class ProfiledKernel(Data):
    name: str = ""
    gpu_time_us: float = 0.0
    calls: int = 0
    gpu_time_us_per_call: float = 0.0
    # the aten op whose launch ran it (the profiler's correlation, outermost aten op) → µs per call
    launched_by: dict[str, float] = field(default_factory=dict)
    # the compiled graph whose call launched it (Inductor's FX graph cache key, from its
    # ``## Call CompiledFxGraph <key> ##`` profiler range) → that part of its launches
    graphs: dict[str, ProfiledGraphShare] = field(default_factory=dict)

    def to_data(self) -> dict:
        out = super().to_data()
        for key in ("launched_by", "graphs"):
            if not out[key]:  # profiles recorded before them: saved as they were
                del out[key]
        return out


@dataclass(repr=False, eq=False)
class GpuProfile(Stage):
    NAME: ClassVar[str] = "gpu_profile"
    iters: int = 0
    kernels: list[ProfiledKernel] = field(default_factory=list)
    gpu_time_us_per_call: float | None = None
    wall_time_us_per_call: float | None = None
    launch_overhead_share: float | None = None
    peak_bytes_per_s: float | None = None  # the GPU's peak DRAM bandwidth
    peak_source: str | None = None  # device query, or the table of known GPUs

    def _text(self):
        return _text_table(self.kernels, ["name", "gpu_time_us_per_call", "calls"])


@dataclass(repr=False, eq=False)
class CaptureError(Data):
    """The exception that ended the captured block, and the stage it came from in the user's terms."""

    type: str = ""
    message: str = ""
    stage: str = ""
    module: str | None = None
    cause: str | None = None
    compile_id: str | None = None
    last_record: str | None = None
    traceback: str | None = None
    logged: str | None = None  # tracebacks torch logged about it during the capture, kept off the console

    def as_text(self) -> str:
        return f"{self.type} in {self.stage}: {self.message}"


@dataclass(repr=False, eq=False)
class Summary(Data):
    frames: int = 0
    compiles: int = 0
    graphs: int = 0
    graph_breaks: int = 0
    unique_graph_breaks: int = 0
    recompiles: int = 0
    guards: int = 0
    kernels: int = 0
    compile_time_s: float = 0.0
    failed_compiles: int = 0
    skipped_frames: int = 0  # frames torch ran eagerly because Dynamo gave up on them
    recompile_limits: int = 0  # frames that reached the recompile limit


def _unavailable(stage_type, reason: str):
    return lambda: stage_type(available=False, reason=reason)


@dataclass(repr=False, eq=False)
class CaptureData(Data, JsonFile):
    """The saved part of a capture; ``Capture`` adds the live-only state and the methods. Loads from
    a file or dict with its header checked first (analyses that need only the data, like ``diff``, read
    captures as this)."""

    format: str
    version: list[int]
    environment: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    compiles: list[Compile] = field(default_factory=list)
    breaks: Breaks = field(default_factory=lambda: Breaks(available=True))
    # each compile's ``recompile`` stage with its compile id and name: derived (``__post_init__``), saved for readers
    recompiles: list[Recompile] = field(default_factory=list, metadata={"derived": True})
    skipped_frames: list[SkippedFrame] = field(default_factory=list)
    recompile_limits: list[RecompileLimit] = field(default_factory=list)
    # frames at or within two of their recompile limit: derived from the compiles on load (``__post_init__``), not saved
    recompile_budgets: list[RecompileBudget] = field(default_factory=list, metadata={"live": True})
    cudagraphs: CudaGraphs = field(default_factory=_unavailable(CudaGraphs, "not recorded"))
    runtime: Runtime = field(default_factory=_unavailable(Runtime, "not measured"))
    first_call_s: float | None = None
    gpu_profile: GpuProfile | None = None
    cudagraph_comparison: CudaGraphComparison | None = None
    counters: dict[str, Any] = field(default_factory=dict)  # torch's dynamo counters during the capture
    error: CaptureError | None = None
    unknown_records: dict[str, int] = field(default_factory=dict)  # record kinds tcompile does not know, counted
    extra_records: list[Any] = field(default_factory=list)  # … and those records, trimmed
    summary: Summary = field(default_factory=Summary)
    # proposed fixes and what trying them measured (compiler.analyses.fixes); None: not proposed (an older capture)
    proposed_fixes: Fixes | None = field(default=None, metadata={"key": "fixes"})
    # what would save compile time, proposed and tried (compiler.analyses.compile_fixes); None: not proposed
    proposed_compile_fixes: Fixes | None = field(default=None, metadata={"key": "compile_fixes"})
    cache_runs: CacheRuns | None = None  # cap.measure_caches(): cold / warm / mega-cache in fresh processes

    def __post_init__(self):
        self.recompiles = recompiles_of(self.compiles)
        self.recompile_budgets = budgets_of(self)

    @classmethod
    def from_data(cls, data, path: str = ""):
        check_header(data)
        return super().from_data(data, path)

    def to_data(self) -> dict:
        """Written in this reader's format: its version (a newer minor of its major stays: its unknown fields
        are written back as they came)."""
        out = super().to_data()
        same_major = isinstance(self.version, list) and len(self.version) == 2 and self.version[0] == VERSION[0]
        out["version"] = [VERSION[0], max(VERSION[1], self.version[1])] if same_major else list(VERSION)
        return out


def recompiles_of(compiles: list[Compile]) -> list[Recompile]:
    """``CaptureData.recompiles``: the compiles whose ``recompile`` stage is available, each as that stage
    (the same reasons) named by its compile — the recompiles are held once, in the compiles."""
    out = []
    for c in compiles:
        stage = c.recompile
        if stage.available:
            named = Recompile(available=True, reason=stage.reason, reasons=stage.reasons, compile_id=c.compile_id,
                              name=c.name)
            if "_unknown" in stage.__dict__:
                named.__dict__["_unknown"] = stage.__dict__["_unknown"]
            out.append(named)
    return out


def budgets_of(data: CaptureData) -> list[RecompileBudget]:
    """``CaptureData.recompile_budgets``: frames at or near their recompile limit (``recompile_budgets``)."""
    from compiler.stages.budgets import recompile_budgets

    environment = data.environment if isinstance(data.environment, dict) else {}
    limits = environment.get("recompile_limits")
    return [RecompileBudget(**item) for item in recompile_budgets(
        data.compiles, data.options if isinstance(data.options, dict) else {}, limits if isinstance(limits, dict) else {})]


def check_header(data) -> None:
    """Reject anything that is not a capture of a version this reader knows (before reading fields)."""
    check_document_header(data, FORMAT, VERSION, "capture", OLDER_MAJORS)


