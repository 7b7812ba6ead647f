"""One TORCH_TRACE log → a ``Capture``: the log's records (``compiler.readers.trace.read_records``, the
very ``Record`` objects the live collector makes) → ``compiler.stages.assemble`` → a Capture. What only a
trace needs goes into that one build: the AOTInductor compile of records with no compile id
(``compiler.readers.aot_inductor.READER``) and why a trace lacks the stages it cannot hold (``_absent``).

In: a log file path. Leaves: a ``Capture`` with ``trace`` (a ``TraceInfo``: counts and problems) and the
raw ``trace_records`` / ``trace_strings`` (so ``Capture.save_trace`` writes it back).
"""
from __future__ import annotations

import re
import warnings
from collections import Counter
from pathlib import Path

from compiler.readers.aot_inductor import READER
from compiler.stages.capture import Capture
from compiler.stages.schema import STAGES, CaptureData
from compiler.stages.data import Deferred
from compiler.stages.files import shown_path
from compiler.readers.trace import (NEWEST_KNOWN_TORCH, OLDEST_KNOWN_TORCH, TraceError, TraceInfo, TraceProblem,
                                    TraceWarning, StoredRecords, _torch_version, read_records, shown_value, version_tuple)


def _problems_to_warnings(info: TraceInfo) -> None:
    counts = Counter(p.kind for p in info.problems)
    for kind, count in counts.items():
        first = next(p for p in info.problems if p.kind == kind)
        more = f" (and {count - 1} more like it)" if count > 1 else ""
        warnings.warn(TraceWarning(f"{first}{more}"), stacklevel=4)


def load_trace_file(path, strict: bool = False, warn: bool = True, sources: str = "trace"):
    """One TORCH_TRACE log → a ``Capture`` assembled exactly like a live one. The capture keeps its
    raw ``records`` and ``strings`` (so ``save_trace`` can write it back) and ``trace`` (a
    ``TraceInfo``: counts and problems). No local file the log names is read unless ``sources="local"``
    (``compiler.source_files``)."""
    from compiler.stages.assemble import assemble
    from compiler.stages.source_files import SourceFiles

    source_files = SourceFiles(sources)
    path = Path(path)
    info = TraceInfo(file=shown_path(path))
    strings: dict = {}
    records = list(_lean(read_records(path, strict=strict, info=info, strings=strings)))
    if not records and not strings:
        if path.stat().st_size == 0:
            raise TraceError(f"{info.file}: an empty file, not a TORCH_TRACE log")
        raise TraceError(f"{info.file}: no TORCH_TRACE records in {info.lines} lines (is this a torch trace log?)")
    info.torch_version = _torch_version(records)
    known = version_tuple(info.torch_version)
    if known and known > NEWEST_KNOWN_TORCH:
        info.problems.append(TraceProblem(
            str(path), None, "newer_torch",
            f"written by torch {info.torch_version}, newer than tcompile knows "
            f"({'.'.join(map(str, NEWEST_KNOWN_TORCH))}); records of kinds it does not know are kept and counted"))
    elif known and known < OLDEST_KNOWN_TORCH:
        info.problems.append(TraceProblem(
            str(path), None, "older_torch",
            f"written by torch {info.torch_version}, older than tcompile reads "
            f"({'.'.join(map(str, OLDEST_KNOWN_TORCH))}); records of kinds it does not know are kept and counted"))
    environment = {"torch": info.torch_version, "source": "TORCH_TRACE", "trace_file": info.file,
                   "device": _device(records)}
    if info.ranks:
        environment["rank"] = info.ranks[0]
    options = {"backend": "unknown", "source": "torch_trace", "trace_file": info.file}

    def report(record, field, value, why):  # a field the stages read that is not what torch writes
        found = TraceProblem(info.file, record.line, "bad_field", f"{field} = {shown_value(value)}: {why}", field)
        if strict:
            raise TraceError(str(found))
        info.problems.append(found)

    saved = assemble(records, strings, {}, options, environment, None, {},
                     measurements={"runtime": _unavailable(UNAVAILABLE["runtime"])}, sources=source_files,
                     report=report, absent=_absent(environment), no_compile_id=READER)
    count = len(records)
    del records  # the capture holds what the stages made of them; save_trace reads them again (StoredRecords)
    _report_unparsed_stages(saved, info, strict)
    capture = Capture.of(saved, trace=info, trace_records=StoredRecords(path, count), trace_strings=strings)
    if count and not saved.compiles:
        info.problems.append(TraceProblem(
            info.file, None, "no_compiles",
            f"none of its {count} records names a compile (frame_id and frame_compile_id), and none is an "
            "AOTInductor compile: no compile can be shown"))
    if warn:
        _problems_to_warnings(info)
    return capture


def _quiet(record, field, value, why) -> None:
    return None


UNREAD_METRICS = ("dynamo_config", "inductor_config")  # ~80 % of a compilation_metrics record; no stage reads them
# Record kinds whose body no stage reads (known, counted, written back whole by save_trace): the describe_* records
# (one per tensor, storage and source Dynamo saw: 73 % of a 64-layer MLP log's record bodies), the backward's
# metrics, shape-env bookkeeping, the Dynamo graph's tensor sizes (its payload is the graph, kept).
UNREAD_BODIES = frozenset({"describe_tensor", "describe_storage", "describe_source", "bwd_compilation_metrics",
                           "propagate_real_tensors", "expression_created", "dynamo_output_graph"})


def _lean(records):
    """The records as read, less what no stage reads and would be held for every compile while the trace
    assembles (``save_trace`` reads the file again, so it writes them back whole): a chromium event keeps
    only the fields its timings read (``fold_events``: name, ph, ts, args.compile_id) — half of a
    trace's records are such events — except an instant event (cache lookups, automatic dynamic: the caches
    stage reads its args), a compilation_metrics record not its configs, and a record of ``UNREAD_BODIES`` no body."""
    from compiler.stages.timings import chromium_event

    for record in records:
        if record.kind == "chromium_event":
            event = chromium_event(record, _quiet)
            if event is not None and event.get("ph") != "i":  # else kept whole: assemble reports a bad one
                slim = {key: event[key] for key in ("name", "ph", "ts") if key in event}
                compile_id = (event.get("args") or {}).get("compile_id")
                if compile_id is not None:
                    slim["args"] = {"compile_id": compile_id}
                record.metadata, record.payload = {"chromium_event": slim}, None
        elif record.kind == "compilation_metrics":
            metrics = record.metadata.get("compilation_metrics")
            if isinstance(metrics, dict):
                for key in UNREAD_METRICS:
                    metrics.pop(key, None)
        elif record.kind in UNREAD_BODIES and record.metadata.get(record.kind):
            record.metadata[record.kind] = {}
        yield record


def _report_unparsed_stages(saved: CaptureData, info: TraceInfo, strict: bool) -> None:
    """A stage whose parser failed on what the trace holds, or whose values do not fit its declared type, is
    shown as unavailable (``assemble._guarded``, ``_declared``); it is also one of the trace's problems."""
    from compiler.stages.data import PARSE_FAILED

    for c in saved.compiles:
        reasons = set()  # kernels repeat the reason of the inductor stage they come from
        for stage in STAGES:
            value = c.__dict__[stage]
            if type(value) is Deferred:  # built on first read (provenance), so its failure is its reason then;
                if not strict:           # strict: built now, so that a failure ends the load
                    continue
                value = getattr(c, stage)
            reason = value.reason or ""
            if reason.startswith(PARSE_FAILED) and reason not in reasons:
                reasons.add(reason)
                found = TraceProblem(info.file, None, "bad_stage", f"compile {c.compile_id}: the {stage} "
                                     f"stage is left out: {reason.removeprefix(PARSE_FAILED).strip()}")
                if strict:
                    raise TraceError(str(found))
                info.problems.append(found)


def _unavailable(reason: str) -> dict:
    return {"available": False, "reason": reason}


# Stages a TORCH_TRACE log cannot hold, and why (shown in place of the stage).
UNAVAILABLE = {
    "bytecode": "a TORCH_TRACE log holds no bytecode listing for this compile (torch logs its "
                "*_BYTECODE artifacts only for some frames, in newer versions); capture live to see it",
    "ir": "Inductor's IR before/after fusion is not part of TORCH_TRACE (torch writes it only to the "
          "ir_pre_fusion/ir_post_fusion debug loggers); capture live to see it",
    "runtime": "a TORCH_TRACE log holds no runtime measurement; explore() the function live to time it",
    "what_if": "what-if checks need the live guards of the process that compiled; a trace holds their text only",
    "cudagraphs": "a TORCH_TRACE log holds no CUDA graph records (torch writes them only to its cudagraphs "
                  "loggers); capture live to see them",
}


def _device(records) -> str | None:
    for record in records:
        if record.kind == "inductor_output_code" and record.payload:
            return "cuda" if "triton" in record.payload[:20000] else "cpu"
        if record.kind == "graph_dump" and record.payload and \
                (record.metadata.get("graph_dump") or {}).get("name") == "inductor_aot_wrapper_code":
            included = re.search(r"aoti_include/(\w+)\.h", record.payload[:2000])  # AOTInductor: cpu.h, cuda.h…
            if included:
                return included[1]
    return None


def _absent(environment: dict) -> dict:
    """Why a trace lacks the stages it cannot hold (``assemble``'s ``absent``): built in, never edited after."""
    absent = {"bytecode": UNAVAILABLE["bytecode"], "ir": UNAVAILABLE["ir"], "ir_note": NO_IR_NOTE}
    if environment.get("device") not in (None, "cpu"):  # on CPU: "this capture ran on CPU" is the reason
        absent["cudagraphs"] = UNAVAILABLE["cudagraphs"]
    return absent


NO_IR_NOTE = ("the trace holds no scheduler IR for this graph (torch writes it only to the "
              "ir_pre_fusion/ir_post_fusion debug loggers)")
