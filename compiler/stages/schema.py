"""The capture schema: what ties the stages together — ``Compile`` (one frame's compile, one object per stage),
``CaptureData`` (the saved file: its header, version and compiles), the stages measured around the compiles
(``Runtime``, ``CudaGraphComparison``) — and every stage's declaration, imported from beside its builder:
``Source``/``Bytecode`` in ``compiler.stages.bytecode``, ``Graph`` in ``fx_graph``, ``Guards`` in ``guards``,
``Breaks`` in ``breaks``, ``Recompile`` in ``recompiles``, ``SkippedFrame`` in ``skipped``, ``InductorIR`` in
``inductor_ir``, ``Inductor``/``Kernels`` in ``kernels``, ``Provenance`` in ``provenance``, ``Amortization`` in ``run_costs``, ``AotGraphs`` in ``fx_graph``,
``Timings`` in ``timings``, ``Caches``/``CacheRuns`` in ``caches``, ``Shapes`` in ``shapes``, ``CudaGraphs``
in ``cudagraphs``, ``GpuProfile`` in ``gpu_profile``. ``from compiler.stages.schema import X`` reads any of
them. A builder module imports its types from itself and the stage modules below it, never from here
(tests/test_layout.py).

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
from compiler.stages.fx_graph import AotGraphs, Graph, GraphNode  # noqa: F401 (declared beside their parser, which reads them on load)
from compiler.stages.guards import GuardRow, Guards  # noqa: F401 (likewise)
from compiler.stages.data import (MAX_DEPTH, BuiltOnRead, CaptureFormatError, Data, Deferred,  # noqa: F401
                                   JsonFile, Stage, _converter, _dump, _fields, _Mismatch, _shown, _table,
                                   _text_table, check_document_header, paused_gc, read_json_text, utf8_text)

# every stage's declaration, beside its builder; read from here too: ``from compiler.stages.schema import X``
from compiler.stages.base import key_of  # noqa: F401
from compiler.stages.breaks import BreakRegistry, Breaks, GraphBreak, Location  # noqa: F401
from compiler.stages.budgets import RecompileBudget  # noqa: F401
from compiler.stages.bytecode import Bytecode, CodeListing, Instruction, Source  # noqa: F401
from compiler.stages.caches import CacheEntry, CacheKeyInput, CacheRun, CacheRunCompile, CacheRuns, Caches  # noqa: F401
from compiler.stages.cudagraphs import CudaGraphEvent, CudaGraphMemory, CudaGraphs  # noqa: F401
from compiler.stages.gpu_profile import GpuProfile, ProfiledGraphShare, ProfiledKernel  # noqa: F401
from compiler.stages.inductor_ir import (DIFF_MAX_LINES, FusionRow, InductorIR, IrNode, IrText, MissingIr,  # noqa: F401
                                         _diff_size, apply_line_diff, line_diff)
from compiler.stages.kernel_costs import kernel_rows, reread_bandwidths  # noqa: F401
from compiler.stages.kernels import (Autotune, AutotuneChoice, GeneratedCode, Inductor, InductorRun,  # noqa: F401
                                     Kernel, KernelCost, KernelGpu, Kernels, kernels_of)
from compiler.stages.inductor_tracking import InductorTracking  # noqa: F401
from compiler.stages.provenance import (KernelPlace, KernelProvenance, KernelSite, LineProvenance,  # noqa: F401
                                        Provenance, ProvenanceNode, node_kernels, provenance_stage)
from compiler.stages.run_costs import NOT_TIMED, Amortization  # noqa: F401
from compiler.stages.recompiles import Recompile, RecompileLimit, RecompileReason  # noqa: F401
from compiler.stages.repro_results import DriftBisection, Minified  # noqa: F401
from compiler.stages.shapes import IndexExpression, ShapeGuard, Shapes, ShapeSymbol, Specialization  # noqa: F401
from compiler.stages.skipped import SkippedFrame  # noqa: F401
from compiler.stages.timings import CacheEvent, LineCompileTime, Phase, TimingEvent, Timings  # noqa: F401

FORMAT = "tcompile-capture"
VERSION = [4, 1]  # major, minor: a reader accepts any minor of its major (4.1: ``minified``, ``drift_bisection``)
# A new major saves what the readers of the one before would read wrong without a word — 3.0: provenance nodes'
# files by index, the IR after fusion as a difference, rows without their default fields; 4.0: Inductor's graphs
# as differences (``GraphDiff``), a provenance map built again from the stages left out, what the GPU measured of a
# kernel on its Inductor run's kernel (3.0: in ``kernel_extras``). Older files still load: each is read as it was
OLDER_MAJORS = (2, 3)


# --- files saved before 4.0: each kernel's GPU measurement put back -------------------------------


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


# --- a compile: one object per stage --------------------------------------------------------------


@dataclass(repr=False, eq=False)
class CompileError(Data):
    type: str | None = None
    message: str | None = None
    file: str | None = None
    line: int | None = None


ORIGINS = ("dynamo", "aot_inductor")  # what produced a Compile (Compile.origin)

def provenance_from_stages(compile: Compile) -> Provenance:
    """A saved compile's provenance map built again from its saved stages (``Compile.provenance_from_stages``):
    what a capture saves in its place when this gives the map it holds exactly."""
    return provenance_stage(compile.graph, compile.aot, compile.inductor, compile.source, origin=compile.origin,
                            kernels=compile.kernels)


# A stage a saved compile leaves out when building it again from the compile's other saved stages gives it exactly
# (``Compile.provenance_from_stages``), by its builder: the provenance map (``compiler.stages.provenance``).
REBUILT_ON_LOAD: dict[str, Any] = {"provenance": provenance_from_stages}


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
    minified: Minified | None = None  # cap.minify(): torch's minifier on the failing compile (compiler.analyses.minify)
    drift_bisection: DriftBisection | None = None  # cap.bisect_drift(): CompilerBisector (compiler.analyses.bisect_drift)

    def __post_init__(self):
        self.recompiles = recompiles_of(self.compiles)
        self.recompile_budgets = budgets_of(self)
        if self.gpu_profile is not None:  # an older GPU capture's shares of DRAM peak above 100 %: read again (2.x)
            reread_bandwidths(self.compiles, (self.environment or {}).get("device_name"))

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
