"""Records → typed capture data (``CaptureData``). A table of record kinds says which stage each one feeds;
a record of a kind nobody knows is kept (trimmed) and counted, never fatal.

Each builder of ``STAGE_BUILDERS`` returns its declared stage type (declared beside it), every field
read from torch's records checked as it is built (``compiler.stages.data.as_declared``): source, bytecode, graph, guards, recompile, AOT,
timings, caches, the Inductor runs (their graphs, scheduler IR and generated code, each kernel with what the
GPU measured of it and its costs), provenance (with each kernel's measured time spread over its lines) and
shapes (the compile's Kernels stage is a view of the runs' kernels, made with the ``Compile``); later builders
read the typed stages before them (``CompileInput.built``). What is read across compiles
— a compile's name from its frame (``_frame_names``), a resume function's source (``_resumed_sources``), each
compile's amortization (``compiler.stages.run_costs.amortizations``) — is read from the built stages before
each ``Compile`` is made, once (``_compile``). The capture-wide stages (breaks, skipped frames, recompile
limits, CUDA graphs, the measurements: ``_typed``) and the ``Summary`` are typed as built, and the
``CaptureData`` is made once from them: nothing is set on it or on a compile afterwards. What a source cannot
hold (``absent``) and the compile of records with no compile id (``NoCompileId``) are part of this one build."""
from __future__ import annotations

import dataclasses
import functools
import inspect
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from compiler.stages import breaks as breaks_mod
from compiler.stages.bytecode import bytecode_stage, decompiled_on_read
from compiler.stages import caches as caches_mod
from compiler.stages.compile_time import by_line as compile_time_by_line, event_spans, samples_by_compile
from compiler.stages.data import TraceError, as_declared, parse_failed
from compiler.stages.fx_graph import dynamo_graph_stage, graph_stage, same_code
from compiler.stages.guards import guards_stage
from compiler.stages.inductor_ir import ir_stage
from compiler.stages.kernels import attach_kernel_info, code_stage, kernel_of_nodes, link_to_ir
from compiler.stages.base import resume_origin, unavailable
from compiler.stages.provenance import provenance_stage
from compiler.stages.run_costs import amortizations
from compiler.stages import skipped as skipped_mod
from compiler.stages.recompiles import limit_hits, recompile_stage
from compiler.stages.records import is_count
from compiler.stages.schema import (FORMAT, VERSION, AotGraphs, Autotune, Breaks, Bytecode, Caches, CaptureData,
                                    CaptureError, CaptureFormatError, Compile, CompileError, CudaGraphComparison,
                                    CudaGraphs, GeneratedCode, GpuProfile, Graph, Guards, Inductor, InductorIR,
                                    InductorRun, Kernel, Kernels, Provenance, Recompile, RecompileLimit, Runtime, Shapes,
                                    SkippedFrame, Source, Summary, Timings, kernels_of, paused_gc)
from compiler.stages.data import Deferred
from compiler.stages.shapes import shapes_stage
from compiler.stages.source_files import SourceFiles
from compiler.stages.timings import chromium_event, fold_events, timings_stage

# Inductor's own provenance record (torch run with trace.provenance_tracking_level on; compiler.stages.provenance)
TRACKING_ARTIFACTS = ("inductor_provenance_tracking_node_mappings", "inductor_provenance_tracking_kernel_stack_traces",
                      "inductor_post_to_pre_grad_nodes", "inductor_triton_kernel_to_post_grad_nodes")
AOT_GRAPHS = {"aot_inference_graph": "inference", "aot_joint_graph": "joint",
              "aot_forward_graph": "forward", "aot_backward_graph": "backward"}
INDUCTOR_ARTIFACTS = ("artifact:triton_kernel_info", "artifact:before_pre_grad_graph", "artifact:after_pre_grad_graph",
                      "artifact:before_post_grad_graph", "artifact:inductor_post_grad_graph",
                      "artifact:after_post_grad_graph", "inductor_output_code", "log:ir_pre_fusion",
                      "log:ir_post_fusion", *(f"artifact:{name}" for name in TRACKING_ARTIFACTS))
# the same record under another kind (torch logs some both as an artifact and as a plain event)
KIND_ALIASES = {"inductor_post_grad_graph": "artifact:inductor_post_grad_graph"}
CACHE_ARTIFACTS = ("artifact:fx_graph_cache_hit", "artifact:fx_graph_cache_miss", "artifact:fx_graph_cache_bypass",
                   "artifact:aotautograd_cache_hit", "artifact:aotautograd_cache_miss",
                   "artifact:aotautograd_cache_bypass")
# Kinds read outside the per-compile builders (capture-wide stages: breaks, recompile logs, CUDA graphs,
# metrics of the backward and at runtime) or knowingly not shown (torch's own reproducers, configs).
OTHER_KNOWN = {"bwd_compilation_metrics", "compilation_metrics_runtime", "artifact:dynamo_graph_break_reason",
               "log:recompiles", "log:cudagraphs_trees", "log:cudagraphs_utils", "artifact:fx_graph_runnable",
               "artifact:torch._functorch.config", "artifact:aot_forward_graph_fw_metadata",
               "artifact:runtime_wrapper_orchestration", "artifact:before_joint_graph", "artifact:after_joint_graph",
               "dynamo_guards", "artifact:backward_prologue", "artifact:backward_epilogue",
               "artifact:compiled_function_forward", "artifact:compiled_function_backward",
               "artifact:compiled_fn_wrapper", "missing_fake_kernel", "mismatched_fake_kernel",
               "artifact:dynamo_error",  # a failed compile's traceback: its reason is the compile's error (fail_reason)
               "artifact:torch_version"}  # the torch that wrote a log: read by compiler.readers.trace (_torch_version)
EXTRA_PAYLOAD_LIMIT = 20_000


def _is_known(kind: str) -> bool:
    return kind in KNOWN or kind in KIND_ALIASES or kind.endswith("_BYTECODE")



def assemble(records, strings: dict, hooks: dict, options: dict, environment: dict,
             error: dict | None, counters: dict, autotune: list | None = None,
             measurements: dict | None = None, sources: SourceFiles | None = None, report=None,
             compile_samples: tuple | None = None, absent: dict | None = None,
             no_compile_id: "NoCompileId | None" = None) -> CaptureData:
    """Everything captured, as typed capture data (each Compile and capture-wide stage made once). ``measurements`` are what was measured after the
    compile (``runtime``, ``first_call_s``, ``gpu_profile``, ``cudagraph_comparison``,
    ``cudagraph_memory``): inputs to this one build, never written into a capture afterwards.
    ``sources`` says where source text comes from (``compiler.stages.source_files``; default: live, linecache).
    ``report(record, field, value, why)`` hears of each value read from a record that is not what
    torch writes (a loaded trace's problems); the value is left out, never fatal.
    ``compile_samples``: (samples, method) of the compile sampler (``compiler.capturing.compile_sampler``).
    ``absent``: why the stages this source cannot hold are missing, by stage (``bytecode``, ``ir``,
    ``cudagraphs``; ``ir_note``: what provenance says of a run with no IR) — a TORCH_TRACE log's reasons,
    built in instead of "not captured". ``no_compile_id``: the reader of one more compile from the records
    that name none (``compiler.readers.aot_inductor.READER``)."""
    with paused_gc():  # parsing makes ~10^5 small objects and no cycles: collecting took up to half the time
        return _assemble(records, strings, hooks, options, environment, error, counters, autotune, measurements,
                         sources or SourceFiles("live"), report or _ignore, compile_samples, absent or {},
                         no_compile_id)


def _ignore(record, field, value, why) -> None:
    return None


@dataclass(frozen=True)
class NoCompileId:
    """A reader of one compile from the records with no compile id (AOTInductor's): ``build(records,
    strings, options, events, absent)`` → its ``Compile`` or None, and which records it ``consumed`` (no
    longer unknown)."""

    build: Any
    consumed: Any


def _assemble(records, strings, hooks, options, environment, error, counters, autotune, measurements,
              sources, report, compile_samples=None, absent=None, no_compile_id=None) -> CaptureData:
    absent = absent or {}
    measurements = measurements or {}
    by_compile: dict[str, list] = defaultdict(list)
    events = []
    instants: dict[str, list] = defaultdict(list)  # chromium instant events (cache lookups, automatic dynamic)
    loose = []
    unknown = Counter()
    extra, extra_of = [], []  # unknown records, trimmed, and the records they are
    for record in records:
        if record.kind == "chromium_event":
            event = chromium_event(record, report)
            if event:
                events.append(event)
                compile_id = (event.get("args") or {}).get("compile_id")
                if event.get("ph") == "i" and compile_id:
                    instants[compile_id].append(event)
            continue
        if not _is_known(record.kind):
            unknown[record.kind] += 1
            extra.append({**record.to_json(), "payload": (record.payload or "")[:EXTRA_PAYLOAD_LIMIT]})
            extra_of.append(record)
        (by_compile[record.compile_id] if record.compile_id else loose).append(record)
    timing_events = fold_events(events)
    samples = _samples_by_compile(timing_events, compile_samples)
    autotune_of = defaultdict(list)  # the autotune choices recorded beside the records (compiler.capturing.autotune)
    for choice in autotune or []:
        autotune_of[choice["compile_id"]].append(choice)
    building = [compile_stages(cid, by_compile[cid], strings, hooks.get(cid), options, timing_events.get(cid, []),
                               sources, report, absent, samples.get(cid), instants.get(cid, []), measurements,
                               environment.get("device_name"), autotune_of.get(cid, []))
                for cid in sorted(by_compile, key=_compile_sort_key)]
    # what was measured after the compile, capture-wide (each compile's own share — its kernels' GPU times and
    # costs, its time per source line — is built into its stages: ``_kernels``, ``_provenance``)
    runtime = measurements.get("runtime") or unavailable("not measured")
    gpu_profile = ({k: v for k, v in measurements["gpu_profile"].items() if k != "triton_kernels"}  # live details
                   if measurements.get("gpu_profile") else None)
    paid_off = amortizations(building, runtime, measurements.get("kernel_times"), options.get("calls_under_capture"),
                             gpu_profile)
    own_names = [c.metrics.get("co_name") or c.built["source"].name for c in building]
    compiles = [_compile(c, name, source, paid_off[c.compile_id]) for c, name, source
                in zip(building, _frame_names(building, own_names), _resumed_sources(building, own_names))]
    # a skipped frame's breaks are why it was skipped, and a frame over the recompile limit is a recompile
    # finding: neither is a graph break (torch's graph_break counter counts neither)
    breaks_of = {c.compile_id: _compile_breaks(c) for c in building}
    skipped = [skipped_mod.skipped_frame(c, breaks_of[c.compile_id], sources) for c in compiles
               if skipped_mod.is_skipped(c, options)]
    not_breaks = {item["compile_id"] for item in skipped} | {c.compile_id for c in compiles
                                                            if skipped_mod.is_recompile_limit(c)}
    items = [dict(item, compile_id=c.compile_id) for c in compiles for item in breaks_of[c.compile_id]
             if c.compile_id not in not_breaks]
    breaks = _typed(Breaks, {"available": True, "items": breaks_mod.dedupe(items), "total": len(items)}, "breaks")
    skipped_frames = [_typed(SkippedFrame, item, f"skipped_frames[{i}]") for i, item
                      in enumerate(skipped_mod.with_share(skipped, measurements.get("frame_times")))]
    recompile_limits = [_typed(RecompileLimit, hit, f"recompile_limits[{i}]") for i, hit
                        in enumerate(limit_hits(compiles, environment.get("recompile_limits") or {}))]
    unknown_records, extra_records = dict(unknown), extra
    extra_compile = no_compile_id.build(records, strings, options, events, absent) if no_compile_id else None
    if extra_compile is not None:  # the compile of the records that name none, last; what it read is not unknown
        compiles.append(extra_compile)
        unknown_records, extra_records = _less_consumed(no_compile_id, records, unknown, extra, extra_of)
    return CaptureData(
        format=FORMAT, version=list(VERSION), environment=dict(environment), options=dict(options),
        compiles=compiles, breaks=breaks, skipped_frames=skipped_frames, recompile_limits=recompile_limits,
        cudagraphs=_cudagraphs(loose + records_of(by_compile), counters, options, environment, absent, measurements),
        runtime=_typed(Runtime, runtime, "runtime"), first_call_s=measurements.get("first_call_s"),
        gpu_profile=_typed(GpuProfile, gpu_profile, "gpu_profile") if gpu_profile else None,
        cudagraph_comparison=(_typed(CudaGraphComparison, measurements["cudagraph_comparison"], "cudagraph_comparison")
                              if measurements.get("cudagraph_comparison") else None),
        counters=dict(counters), error=_typed(CaptureError, error, "error") if error is not None else None,
        unknown_records=unknown_records, extra_records=extra_records,
        summary=summarize(compiles, breaks, skipped_frames, recompile_limits))


def _typed(cls, value, where: str):
    """A capture-wide stage (graph breaks, skipped frames, recompile limits, CUDA graphs) as its declared
    type, every field checked as it is built. Its values come from records already checked field by field
    (``report``), so a mismatch is tcompile's: one line naming the stage and the field."""
    try:
        return cls.from_data(value, where)
    except CaptureFormatError as exc:
        raise TraceError(f"what the records hold does not form a capture ({exc})") from None


def _cudagraphs(records, counters, options, environment, absent: dict, measurements: dict):
    """The CUDA-graphs stage (``compiler.stages.cudagraphs``), typed: a source that cannot hold it says
    why (``absent``), and the CUDA-graph memory measured after the compile is one input of this build."""
    from compiler.stages.cudagraphs import cudagraphs_stage

    stage = cudagraphs_stage(records, counters, options, environment, options.get("calls_under_capture"))
    if not stage["available"] and absent.get("cudagraphs"):
        stage = unavailable(absent["cudagraphs"])
    elif stage["available"] and measurements.get("cudagraph_memory"):
        stage["memory"] = measurements["cudagraph_memory"]
    return _typed(CudaGraphs, stage, "cudagraphs")


def _less_consumed(reader: NoCompileId, records, unknown: Counter, extra: list, extra_of: list) -> tuple[dict, list]:
    """The unknown records' counts and trimmed copies, less those the no-compile-id reader read."""
    used = Counter(r.kind for r in records if not r.compile_id and reader.consumed(r))
    counts = {kind: n - used[kind] for kind, n in unknown.items() if n - used[kind] > 0}
    return counts, [e for e, r in zip(extra, extra_of) if r.compile_id or not reader.consumed(r)]


def _samples_by_compile(timing_events: dict, compile_samples: tuple | None) -> dict[str, tuple]:
    """The compile sampler's samples (``compiler.capturing.compile_sampler``), by compile: (samples, method)."""
    if compile_samples is None:
        return {}
    samples, method = compile_samples
    return {cid: (found, method) for cid, found in samples_by_compile(samples, event_spans(timing_events)).items()}


def _timings(c: "CompileInput") -> Timings:
    """The timings stage, with compile time by line (``compiler.stages.compile_time``) where it was sampled."""
    by_line = None
    if (c.events or c.metrics) and c.compile_samples and c.compile_samples[0]:
        samples, method = c.compile_samples
        try:
            by_line = compile_time_by_line(samples, method, c.sources)
        except Exception as exc:  # noqa: BLE001 — a bug here must not cost the timings stage
            by_line = {"by_line_method": f"tcompile could not sum the samples ({type(exc).__name__}: {exc})"}
    return timings_stage(c.events, c.metrics, _cache_events(c.records, c.report), by_line)


def _resumed_sources(building: list["CompileInput"], names: list) -> list[Source]:
    """Each compile's source; a resume function's own source is one line: show the function it resumes,
    with the line (``names``: each compile's own name)."""
    by_name = {(c.built["source"].filename, name): c.built["source"] for c, name in zip(building, names)
               if c.built["source"].available}
    out = []
    for c, name in zip(building, names):
        source = c.built["source"]
        origin = resume_origin(name)
        original = origin and by_name.get((source.filename, origin[0]))
        out.append(dataclasses.replace(original, name=name, resumes=origin[0], resume_line=origin[1])
                   if original else source)
    return out


def _frame_names(building: list["CompileInput"], names: list) -> list:
    """Each compile's name (``names``: its own); a compile torch logged no name for (one refused at the
    recompile limit) is of the same frame as its siblings: the frame's function name."""
    of_frame = {_frame_of(c.compile_id): name for c, name in zip(building, names) if name}
    return [name or of_frame.get(_frame_of(c.compile_id), name) for c, name in zip(building, names)]


def _frame_of(compile_id: str) -> int:
    return int(compile_id.partition("/")[0])


def records_of(by_compile):
    return [r for rs in by_compile.values() for r in rs]


def _compile_sort_key(compile_id: str):
    frame, _, number = compile_id.partition("/")
    return (int(frame) if frame.isdigit() else 1 << 30, int(number) if number.isdigit() else 0)


def _last_payload(records, kind):
    found = [r.payload for r in records if r.kind == kind and r.payload]
    return found[-1] if found else None


def _guarded(stage_type, build, *args):
    """One stage's build, as ``stage_type``; if torch wrote something this parser does not understand, that
    stage says so and every other stage is still built."""
    try:
        return build(*args)
    except TraceError:  # strict=True: a bad field ends the load
        raise
    except Exception as exc:  # noqa: BLE001 — a parsing bug must not cost the user the other stages
        return stage_type(available=False, reason=parse_failed(exc))


@dataclass
class CompileInput:
    """What one compile's stage builders read: its records, and what they are read with. ``built``
    holds the stages built so far, by name: a builder may read an earlier one (guards read the
    source's file, Inductor the Dynamo graph, provenance everything before it)."""

    records: list
    strings: dict
    options: dict
    events: list
    sources: SourceFiles
    report: Any = _ignore  # (record, field, value, why): a value read that is not what torch writes
    compile_id: str = ""
    hook_data: dict | None = None
    backend: str = "unknown"
    origin: str = "dynamo"  # or "aot_inductor": no Dynamo frame
    metrics: dict = field(default_factory=dict)
    absent: dict = field(default_factory=dict)  # why stages the source cannot hold are missing (``assemble``)
    compile_samples: tuple | None = None  # (samples, method) of the compile sampler for this compile
    tracking: list = field(default_factory=list)  # per Inductor run, its tracking texts: inductor → provenance
    built: dict = field(default_factory=dict)
    instants: list = field(default_factory=list)  # its chromium instant events (cache lookups, automatic dynamic)
    autotune: list = field(default_factory=list)  # the autotune choices recorded for this compile, as data
    # what was measured after the compile (``assemble``'s ``measurements``: the GPU profile, CPU kernel times)
    measurements: dict = field(default_factory=dict)
    device_name: str | None = None  # the GPU's, for its peaks (``compiler.stages.kernel_costs.device_peaks``)

    def last_payload(self, kind: str) -> str | None:
        return _last_payload(self.records, kind)

    @property
    def kernels(self) -> Kernels:
        """The Inductor runs' kernels, as the Compile's view of them (``kernels_of``)."""
        return kernels_of(self.built["inductor"])

    def __getattr__(self, name):
        """A stage built so far reads as the Compile's attribute does (``c.inductor``): what reads every
        compile before the Compiles are made (``compiler.stages.run_costs.amortizations``) reads either."""
        built = self.__dict__.get("built") or {}
        if name in built:
            return built[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @functools.cached_property
    def cache_note(self) -> str | None:
        return _cache_note(self.records)


@dataclass(frozen=True)
class StageBuilder:
    """One stage of a compile: the record kinds it reads and the function that builds it from them.
    ``needs_frame``: a Dynamo frame's stage, which a compile with no frame (AOTInductor) does not have."""

    stage: str
    reads: tuple[str, ...]
    build: Any  # (CompileInput) -> the stage, as ``type``
    type: Any  # the declared stage type (compiler.stages.schema)
    needs_frame: bool = False


def _inductor(c: CompileInput) -> Inductor:
    """The Inductor runs (``inductor_stage``), each generated kernel with what the GPU profile measured of it and
    its costs (``compiler.stages.kernel_costs``) where the GPU was profiled: built in, before the stage is kept."""
    return _measured(c, inductor_stage(c.records, c.backend, c.cache_note, c.built["graph"], c.tracking,
                                       c.absent.get("ir")))


def _measured(c: CompileInput, inductor: Inductor) -> Inductor:
    """The runs again, their kernels made of their rows once the GPU profile is matched to them and costed."""
    profile = c.measurements.get("gpu_profile")
    if not profile or not kernels_of(inductor).available:
        return inductor
    from compiler.stages.gpu_profile import compile_profile, graphs_of_compile, match_profile
    from compiler.stages.kernel_costs import device_peaks, kernel_costs

    rows = [[k.to_data() for k in r.code.kernels] for r in inductor.runs]  # the GPU code reads and fills rows as data
    every = [row for run_rows in rows for row in run_rows]
    try:
        profile = compile_profile(profile, graphs_of_compile(c.compile_id, caches_mod.graph_keys(c.built["caches"])))
        match_profile(every, profile, profile.get("triton_kernels"))
        if profile.get("available"):
            modules = {r.role: r.code.module for r in inductor.runs if r.code.available}
            kernel_costs(every, modules, profile, device_peaks(c.device_name))
    except Exception as exc:  # noqa: BLE001 — a measuring bug costs the measurements, never the Inductor stage
        note = f"not measured: the GPU profile could not be matched to this compile's kernels ({type(exc).__name__}: {exc})"
        for kernel in (k for r in inductor.runs for k in r.code.kernels if k.gpu is not None):
            kernel.gpu.notes.append(note)
        return inductor
    return dataclasses.replace(inductor, runs=[
        dataclasses.replace(r, code=dataclasses.replace(r.code, kernels=[Kernel.from_data(row, "kernels") for row in
                                                                         run_rows]))
        for r, run_rows in zip(inductor.runs, rows)])


def _provenance(c: CompileInput) -> Deferred:
    """The compile's provenance map, built on the first read of it (``Compile.provenance``): it parses every
    graph of the compile, which a loaded trace of thousands of compiles otherwise never does. The build holds
    the stages it reads, not the compile's records; a failure is the stage's reason (``_guarded``)."""
    graph, aot, inductor, source = (c.built[k] for k in ("graph", "aot", "inductor", "source"))
    kernels = c.kernels
    origin, tracking, no_ir = c.origin, c.tracking, c.absent.get("ir_note")
    kernel_times = c.measurements.get("kernel_times")

    def build() -> Provenance:
        with paused_gc():  # as in ``assemble``: many small objects, no cycles
            return as_declared(Provenance, _guarded(Provenance, lambda: provenance_stage(
                graph, aot, inductor, source, origin=origin, kernels=kernels, kernel_times=kernel_times,
                tracking=tracking, no_ir_note=no_ir)))
    return Deferred(Provenance, build)


def _shapes(c: CompileInput) -> Shapes:
    """The shapes stage; the last to read the guard rows as built, so from here on they are the guard tree parsed
    again on read (``Guards.forget_rows``): a trace of thousands of compiles holds their trees, not their rows."""
    try:
        return shapes_stage(c.records, c.options, c.built["recompile"], c.built["guards"].rows,
                            _ir_texts(c.built["inductor"]))
    finally:
        c.built["guards"].forget_rows()


def _ir_texts(inductor: Inductor) -> list[str]:
    return [run.ir.pre_fusion.text for run in inductor.runs if run.ir.available]


NO_GRAPH = ("Dynamo produced no FX graph for this frame (no tensor operations were traced, or tracing failed "
            "before the graph was built)")
SHAPE_RECORDS = ("create_symbol", "create_unbacked_symbol", "guard_added_fast", "guard_added",
                 "symbolic_shape_specialization", "propagate_real_tensors", "expression_created",
                 "describe_tensor", "describe_storage", "describe_source")

# The one table of stage builders, in build order, keyed by the record kinds each reads (as tlparse's
# parser table): a live capture, a TORCH_TRACE log and an AOTInductor log all build their compiles
# through it (``build_stages``). A kind no builder reads and ``OTHER_KNOWN`` does not name is unknown:
# kept (trimmed) and counted.
STAGE_BUILDERS = (
    StageBuilder("source", ("dynamo_start", "compilation_metrics"),
                 lambda c: source_stage(c.records, c.strings, c.metrics, c.sources, c.report), needs_frame=True,
                 type=Source),
    StageBuilder("bytecode", ("*_BYTECODE",), lambda c: decompiled_on_read(as_declared(Bytecode, bytecode_stage(
        c.hook_data, {r.kind[len("artifact:"):]: r.payload for r in c.records if r.kind.endswith("_BYTECODE")})),
        c.hook_data), needs_frame=True, type=Bytecode),
    StageBuilder("graph", ("dynamo_output_graph",),
                 lambda c: dynamo_graph_stage(c.records, NO_GRAPH), needs_frame=True, type=Graph),
    StageBuilder("guards", ("dynamo_cpp_guards_str",), lambda c: guards_stage(
        c.last_payload("dynamo_cpp_guards_str"), c.built["source"].filename, c.metrics,
        _source_lines(c.built["source"])), needs_frame=True, type=Guards),
    StageBuilder("recompile", ("artifact:recompile_reasons",),
                 lambda c: recompile_stage(c.last_payload("artifact:recompile_reasons"), c.metrics), needs_frame=True,
                 type=Recompile),
    StageBuilder("aot", tuple(AOT_GRAPHS), lambda c: aot_stage(c.records, c.backend, c.cache_note), type=AotGraphs),
    StageBuilder("timings", ("chromium_event", "compilation_metrics", *CACHE_ARTIFACTS), _timings, type=Timings),
    StageBuilder("caches", caches_mod.RECORD_KINDS, lambda c: caches_mod.caches_stage(
        c.records, c.events, c.instants, c.options, c.backend, report=c.report, autotune=c.autotune), type=Caches),
    StageBuilder("inductor", INDUCTOR_ARTIFACTS, _inductor, type=Inductor),
    StageBuilder("provenance", tuple(f"artifact:{name}" for name in TRACKING_ARTIFACTS), _provenance,
                 type=Provenance),
    StageBuilder("shapes", SHAPE_RECORDS, lambda c: _shapes(c), type=Shapes),
)


KNOWN = OTHER_KNOWN | {kind for builder in STAGE_BUILDERS for kind in builder.reads if not kind.startswith("*")}


def build_stages(inputs: CompileInput, overrides: dict | None = None, no_frame: dict | None = None) -> dict:
    """Every stage of one compile, through ``STAGE_BUILDERS`` in order, each guarded (``_guarded``).
    ``overrides``: another builder for a stage (AOTInductor's own generated code); ``no_frame``: for a
    compile with no Dynamo frame, the reason each frame stage is absent."""
    for builder in STAGE_BUILDERS:
        if no_frame is not None and builder.needs_frame:
            inputs.built[builder.stage] = builder.type(available=False, reason=no_frame[builder.stage])
            continue
        built = _guarded(builder.type, (overrides or {}).get(builder.stage, builder.build), inputs)
        inputs.built[builder.stage] = _said_absent(builder, built, inputs.absent)
    return inputs.built


def _said_absent(builder: StageBuilder, built, absent: dict):
    """A stage its source cannot hold (``absent``: a TORCH_TRACE log's bytecode and scheduler IR) says
    why, in place of the reason a live capture would give."""
    stage = builder.stage
    if stage == "bytecode" and absent.get("bytecode") and not built.available:
        return Bytecode(available=False, reason=absent["bytecode"])
    return built


def compile_stages(compile_id, records, strings, hook_data, options, events, sources: SourceFiles,
                   report=None, absent: dict | None = None, compile_samples: tuple | None = None,
                   instants=None, measurements: dict | None = None, device_name: str | None = None,
                   autotune: list | None = None) -> CompileInput:
    """One compile's records and what they are read with, its stages built (``built``, each its declared type)."""
    metrics = next((r.metadata["compilation_metrics"] for r in reversed(records) if r.kind == "compilation_metrics"), {})
    inputs = CompileInput(records, strings, options, events, sources, report or _ignore, compile_id=compile_id,
                          hook_data=hook_data, backend=str(options.get("backend") or "unknown"), metrics=metrics,
                          absent=absent or {}, compile_samples=compile_samples, instants=instants or [],
                          measurements=measurements or {}, device_name=device_name, autotune=autotune or [])
    build_stages(inputs)
    return inputs


def _compile(c: CompileInput, name: str | None, source: Source, amortization) -> Compile:
    """The Compile of one compile's built stages, made once, with what was read across compiles: its name
    (``_frame_names``), its source (``_resumed_sources``) and its amortization."""
    frame_id, _, frame_compile_id = c.compile_id.partition("/")
    return Compile(
        compile_id=c.compile_id, frame_id=int(frame_id), frame_compile_id=int(frame_compile_id or 0),
        attempts=max((r.attempt for r in c.records), default=0) + 1, name=name, status=_status(c.records, c.metrics),
        metrics=compile_metrics(c.metrics), restart_reasons=list(c.metrics.get("restart_reasons") or []),
        error=compile_error(c.metrics), **{**c.built, "source": source}, amortization=amortization,
        autotune=[_typed(Autotune, choice, f"autotune[{i}]") for i, choice in enumerate(c.autotune)])


def compile_metrics(metrics: dict) -> dict:
    """torch's compilation_metrics as a compile keeps them: without the configs (most of the record)."""
    return {k: v for k, v in metrics.items() if k not in ("dynamo_config", "inductor_config")}


def compile_error(metrics: dict) -> CompileError | None:
    """Why a compile failed, from its compilation_metrics (None: it did not)."""
    if not metrics.get("fail_type"):
        return None
    return CompileError(type=metrics.get("fail_type"), message=metrics.get("fail_reason"),
                        file=metrics.get("fail_user_frame_filename"), line=metrics.get("fail_user_frame_lineno"))


def _compile_breaks(c: CompileInput) -> list[dict]:
    """The compile's graph breaks, parsed from its records (and, under fullgraph=True, its metrics)."""
    return [breaks_mod.parse_break(r.payload, c.sources) for r in c.records
            if r.kind == "artifact:dynamo_graph_break_reason" and r.payload] + _fatal_break(c.metrics, c.sources)


def _fatal_break(metrics, sources: SourceFiles) -> list[dict]:
    """Under fullgraph=True a graph break is an error, logged only in the compile's metrics."""
    if "Unsupported" not in str(metrics.get("fail_type")) or not metrics.get("fail_reason"):
        return []
    item = breaks_mod.parse_break(metrics["fail_reason"], sources)
    item.update(fatal=True, file=metrics.get("fail_user_frame_filename") or item["file"],
                line=metrics.get("fail_user_frame_lineno") or item["line"])
    if not item.get("code"):
        item["code"] = sources.line(item["file"], item["line"])
    return [item]


def _source_lines(source: Source) -> range | None:
    if not source.available:
        return None
    return range(source.firstlineno, source.firstlineno + source.text.count("\n") + 1)


def _status(records, metrics) -> str:
    if metrics.get("fail_type"):
        return "failed"
    if not metrics:
        return "incomplete"
    return "compiled" if metrics.get("has_guarded_code", True) else "skipped"


def source_stage(records, strings, metrics, sources: SourceFiles, report=_ignore) -> Source:
    start_record = next((r for r in records if r.kind == "dynamo_start"), None)
    frame = _start_frame(start_record, report) if start_record else {}
    filename = metrics.get("co_filename") or strings.get(frame.get("filename"), frame.get("filename"))
    firstlineno = metrics.get("co_firstlineno") or frame.get("line")
    name = metrics.get("co_name") or frame.get("name")
    # the metrics are torch's record: each stage is checked as on load (``as_declared``)
    if not filename or not firstlineno:
        return as_declared(Source, unavailable("torch recorded no frame for this compile", name=name))
    if not isinstance(filename, str) or not isinstance(firstlineno, int):
        return as_declared(Source, unavailable(
            f"torch's record names no usable frame (file {filename!r}, line {firstlineno!r})", name=name))
    lines, why_not = sources.lines(filename)
    text = "".join(inspect.getblock(lines[firstlineno - 1:])) if 0 < firstlineno <= len(lines) else ""
    if not text:
        return as_declared(Source, unavailable(why_not or f"{filename} has no line {firstlineno}",
                                               filename=filename, firstlineno=firstlineno, name=name))
    return as_declared(Source, {"available": True, "filename": filename, "firstlineno": firstlineno, "name": name,
                                "text": text})


FRAME_CHECKS = {"filename": lambda v: isinstance(v, str) or is_count(v), "line": is_count,
                "name": lambda v: isinstance(v, str)}


def _start_frame(record, report) -> dict:
    """The innermost frame of a ``dynamo_start`` stack, with the fields that are not what torch
    writes left out (and reported)."""
    stack = record.metadata["dynamo_start"].get("stack")  # the body is a dict (compiler.capturing.records)
    if stack is None:
        return {}
    if not isinstance(stack, list) or (stack and not isinstance(stack[-1], dict)):
        report(record, "dynamo_start.stack", stack, "not a list of frames; no frame read")
        return {}
    frame = stack[-1] if stack else {}
    bad = {k: v for k, v in frame.items() if k in FRAME_CHECKS and v is not None and not FRAME_CHECKS[k](v)}
    for key, value in bad.items():
        report(record, f"dynamo_start.stack[-1].{key}", value, "not a valid value of this field; left out")
    return {k: v for k, v in frame.items() if k not in bad}


def _cache_note(records) -> str | None:
    kinds = {r.kind for r in records}
    if "artifact:fx_graph_cache_hit" in kinds or "artifact:aotautograd_cache_hit" in kinds:
        which = "AOTAutograd" if "artifact:aotautograd_cache_hit" in kinds else "FX graph"
        return (f"{which} cache hit: compiled code was loaded from Inductor's cache, so this compile did not "
                "lower, schedule or fuse; capture with fresh=True (--fresh) to see every Inductor stage")
    return None


def _cache_events(records, report) -> list[dict]:
    events = []
    for record in records:
        if record.kind in CACHE_ARTIFACTS:
            payload = caches_mod.payload_object(record, report)
            events.append({"artifact": record.kind.split(":", 1)[1],
                           **{k: payload.get(k) for k in ("cache_state", "cache_status_detailed", "key",
                                                           "cache_bypass_reason", "reason") if payload.get(k)}})
    return events


def aot_stage(records, backend: str, cache_note: str | None) -> AotGraphs:
    graphs = {}
    for record in records:
        if record.kind in AOT_GRAPHS and record.payload:
            role = AOT_GRAPHS[record.kind]
            graphs[role if role not in graphs else f"{role}_{sum(k.startswith(role) for k in graphs)}"] = \
                graph_stage(record.payload, "")
    if graphs:
        return AotGraphs(available=True, graphs=graphs, training="joint" in graphs or "forward" in graphs)
    if cache_note:
        return AotGraphs(available=False, reason=cache_note)
    if backend == "eager":
        return AotGraphs(available=False, reason="backend 'eager' runs the Dynamo graph as is: no AOTAutograd graphs")
    return AotGraphs(available=False, reason="no AOTAutograd graph was logged: the backend does not use AOTAutograd, "
                                             "or compilation stopped before it")


def inductor_stage(records, backend: str, cache_note: str | None, dynamo_graph: Graph | None = None,
                   tracking: list | None = None, no_ir: str | None = None) -> Inductor:
    """One entry per Inductor compile (inference, or forward and backward), each followed by one per
    higher-order-op body it scheduled (role ``subgraph true_graph_0``). ``tracking``: filled with each
    run's provenance-tracking texts (None where untracked), for the provenance builder; not stored.
    ``no_ir``: why a run has no scheduler IR, where the source cannot hold it (a trace; ``assemble``'s ``absent``)."""
    runs: list[dict] = []
    current: dict | None = None
    pre_grad: dict = {}
    for record in records:
        kind = KIND_ALIASES.get(record.kind, record.kind)
        if kind not in INDUCTOR_ARTIFACTS:
            continue
        key = kind.split(":", 1)[-1]
        if key in ("before_pre_grad_graph", "after_pre_grad_graph"):
            pre_grad.setdefault(key, record.payload)
            continue
        body = record.metadata.get("graph") if key.startswith("ir_") else None
        if body and current is not None:  # a higher-order op's body, scheduled inside the current compile
            current.setdefault("subgraphs", {}).setdefault(body, {}).setdefault(key, record.payload)
            continue
        if key == "before_post_grad_graph" or current is None or key in current:
            current, pre_grad = dict(pre_grad), {}  # each Inductor compile starts at post-grad
            runs.append(current)
        current.setdefault(key, record.payload)
    if not runs:
        if cache_note:
            return Inductor(available=False, reason=cache_note)
        if backend not in ("inductor", "unknown"):
            return Inductor(available=False, reason=f"backend {backend!r} does not run Inductor")
        return Inductor(available=False,
                        reason="Inductor did not run for this compile (another backend, or it failed earlier)")
    built, texts = [], []
    for run in runs:
        built.append(_inductor_run(run, cache_note, dynamo_graph, no_ir))
        texts.append(_tracking_texts(run))
        parent = built[-1]
        bodies = _in_graph_order(run["subgraphs"], parent.post_grad.subgraphs) if run.get("subgraphs") else []
        built += [_subgraph_run(name, body, parent, cache_note, no_ir) for name, body in bodies]
        texts += [None] * len(bodies)
    if tracking is not None:
        tracking[:] = texts
    return Inductor(available=True, cache=cache_note, runs=built)


def _in_graph_order(bodies: dict, in_graph: dict) -> list[tuple[str, dict]]:
    """Bodies in the order the parent's post-grad graph defines them (``true_graph_0`` before
    ``false_graph_0``), not the order Inductor lowered them in: torch 2.14 lowers ``cond`` as
    ``ir.Switch.create(pred, [false_fn, true_fn], …)`` (torch/_inductor/lowering.py), false branch
    first; 2.13's ``ir.Conditional.create`` lowered the true branch first. Bodies the graph does not
    name keep their logged order, after the others."""
    order = {name: i for i, name in enumerate(in_graph)}
    logged = list(bodies.items())
    return sorted(logged, key=lambda item: (order.get(item[0], len(order)), logged.index(item)))


def _subgraph_run(name: str, run: dict, parent: InductorRun, cache_note, no_ir: str | None) -> InductorRun:
    """A higher-order op's body (``torch.cond``'s branches, a loop body…) that Inductor lowered and
    scheduled inside its parent's compile — not another compile: its own IR, its post-grad graph
    from the parent's, its kernels in the parent's generated code."""
    within = parent.role or "inference"
    post = parent.post_grad.subgraphs.get(name) or Graph(available=False,
                                                          reason=f"part of the {within} compile's post-grad graph")
    return InductorRun(role=f"subgraph {name}" + (f" ({within})" if within != "inference" else ""),
                       pre_grad=Graph(available=False, reason=f"part of the {within} compile's pre-grad graph"),
                       post_grad=post,
                       ir=_ir(ir_stage(run.get("ir_pre_fusion"), run.get("ir_post_fusion"), cache_note), no_ir),
                       code=GeneratedCode(available=False, reason=f"generated inside the {within} compile's code"))


def _inductor_run(run: dict, cache_note, dynamo_graph: Graph | None = None, no_ir: str | None = None) -> InductorRun:
    code = code_stage(run.get("inductor_output_code"), cache_note or "Inductor produced no output code")
    ir = ir_stage(run.get("ir_pre_fusion"), run.get("ir_post_fusion"), cache_note)
    if code.get("available") and ir.get("available"):
        link_to_ir(code["kernels"], ir["post_fusion"]["nodes"])
        kernel_of_nodes(code["kernels"], ir["fusion"])
    if code.get("available") and run.get("triton_kernel_info"):
        attach_kernel_info(code["kernels"], run["triton_kernel_info"])
    role = (code.get("aot_id") or "").split("_", 1)[-1] or None
    missing = "not logged for this Inductor compile"
    pre_grad = run.get("after_pre_grad_graph") or run.get("before_pre_grad_graph")
    if dynamo_graph is not None and dynamo_graph.available and same_code(pre_grad, dynamo_graph.code):
        pre_grad_stage = dynamo_graph.with_code(pre_grad)  # the same nodes: parsed once, when first read
    else:
        pre_grad_stage = graph_stage(pre_grad, "pre-grad passes run on the Dynamo graph once (forward compile only)")
    post_grad = graph_stage(run.get("inductor_post_grad_graph") or run.get("after_post_grad_graph"), missing)
    # typed once its fusion rows and kernels know each other (link_to_ir, kernel_of_nodes)
    return InductorRun(role=role, pre_grad=pre_grad_stage, post_grad=post_grad, ir=_ir(ir, no_ir),
                       code=as_declared(GeneratedCode, code))


def _ir(ir: dict, no_ir: str | None = None) -> InductorIR:
    """One Inductor run's scheduler IR (``compiler.stages.inductor_ir``) as its declared type; where the
    source cannot hold IR (``no_ir``), a run without it says why."""
    typed = as_declared(InductorIR, ir)
    return InductorIR(available=False, reason=no_ir) if no_ir and not typed.available else typed


def _tracking_texts(run: dict) -> dict | None:
    """The texts of one Inductor run that provenance reads Inductor's tracking against (none: not tracked)."""
    if not any(run.get(name) for name in TRACKING_ARTIFACTS):
        return None
    return {k: v for k, v in run.items() if isinstance(v, str)}



def _has_graph(compile: Compile) -> bool:
    """A Dynamo graph, or the exported program an AOTInductor compile compiled (its AOT/Inductor graphs)."""
    if compile.origin == "aot_inductor":
        return bool(compile.aot.available or compile.inductor.available)
    return compile.graph.available


def summarize(compiles: list[Compile], breaks: Breaks, skipped_frames: list, recompile_limits: list) -> Summary:
    return Summary(
        frames=len({c.frame_id for c in compiles if c.origin == "dynamo"}),
        compiles=len(compiles),
        graphs=sum(_has_graph(c) for c in compiles),
        graph_breaks=breaks.total,
        unique_graph_breaks=len(breaks.items),
        recompiles=sum(c.recompile.available for c in compiles),
        guards=sum(c.guards.count for c in compiles if c.guards.available),
        kernels=sum(len([k for k in c.kernels.kernels if k.language != "extern"]) for c in compiles),
        compile_time_s=round(sum(c.compile_seconds or 0 for c in compiles), 4),
        failed_compiles=sum(c.status == "failed" for c in compiles),
        skipped_frames=len(skipped_frames),
        recompile_limits=len(recompile_limits),
    )


def recompute(data: dict) -> None:
    """Redo the costs of a saved GPU capture (dict) from what it keeps — each run's generated module, the
    profiled times, the device's name: Triton bytes and FLOPs, extern FLOPs and times, the roofline, the
    bandwidth reading, the time per source line and the amortization; a provenance map drawn before kernels kept
    each line's file is drawn again. For captures recorded before these existed; ``data`` with nothing left out
    (``compiler.stages.data.plain_data`` of a loaded capture), as a capture is before it is saved. The kernel
    rows are redone as data (``compiler.stages.kernel_costs.add_roofline``), the map and the amortization from
    the capture they make (``compiler.stages.provenance``), written back as data."""
    import copy
    import dataclasses

    from compiler.stages.data import plain_data
    from compiler.stages.kernel_costs import add_roofline, call_section, kernel_rows
    from compiler.stages.kernels import triton_bytes
    from compiler.stages.provenance import apply_times, provenance_stage
    from compiler.stages.run_costs import amortizations

    for c in data.get("compiles", []):
        modules = {r.get("role"): r["code"]["module"] for r in (c.get("inductor") or {}).get("runs", [])
                   if (r.get("code") or {}).get("available")}
        for k in kernel_rows(c):
            module = modules.get(k.get("role")) or (next(iter(modules.values())) if len(modules) == 1 else None)
            if k.get("language") != "Triton" or module is None:
                continue
            fresh = triton_bytes(k["name"], k.get("source") or "", call_section(module))
            gpu = k["gpu"] = {**(k.get("gpu") or {}), **fresh}
            for key in ("bandwidth_share", "served_from", "accesses", "working_set_bytes", "flops", "flops_method",
                        "flops_dtype"):
                if key not in fresh:
                    gpu.pop(key, None)
            if gpu.get("time_us_per_launch") and gpu.get("bytes_per_call"):
                gpu["achieved_bytes_per_s"] = gpu["bytes_per_call"] / (gpu["time_us_per_launch"] * 1e-6)
    add_roofline(data)
    typed = CaptureData.from_data(data)
    gpu = bool((data.get("gpu_profile") or {}).get("available"))
    compiles = []
    for c, saved in zip(typed.compiles, data.get("compiles", [])):
        provenance = c.provenance
        if provenance.available and c.graph.nodes and any(k.line_weights and not k.places for k in provenance.kernels):
            # a map drawn before kernels kept each line's own file: drawn again, as a live capture draws it
            # (from the graphs, IR and code it keeps; a trace's provenance tracking is not kept, so not here)
            provenance = provenance_stage(c.graph, c.aot, c.inductor, c.source, origin=c.origin, kernels=c.kernels)
        elif gpu:  # kernel time per source line (extern calls now have theirs)
            provenance = copy.deepcopy(provenance)
            apply_times(provenance, c.kernels.kernels, None, {r.role: r.code.aot_id for r in c.inductor.runs})
        if provenance is not c.provenance:
            saved["provenance"] = plain_data(provenance)
            saved.pop("provenance_from_stages", None)
        compiles.append(dataclasses.replace(c, provenance=provenance))
    if gpu:
        paid_off = amortizations(compiles, data.get("runtime") or {}, None, typed.options.get("calls_under_capture"),
                                 data.get("gpu_profile"))
        for saved in data.get("compiles", []):
            saved["amortization"] = plain_data(paid_off[saved["compile_id"]])
