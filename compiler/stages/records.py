"""Records: what torch logs, one typed ``Record`` each — the one input of every stage builder, the same type
from a live run (``compiler.capturing.records.RecordCollector``) and from a TORCH_TRACE file
(``compiler.readers.trace``). Each field tcompile reads is checked here (``record_from_metadata``), and the
number checks (``is_count``, ``number``) are the ones every floor uses."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

CONTEXT_KEYS = ("frame_id", "frame_compile_id", "attempt", "rank", "compiled_autograd_id", "has_payload")


@dataclass
class Record:
    """One event: its type (``dynamo_start``, ``artifact:recompile_reasons``…), context and payload."""

    kind: str
    compile_id: str | None  # "frame/compile", None outside a compile
    attempt: int
    metadata: dict
    payload: str | None
    time: float = field(default_factory=time.time)
    line: int | None = None  # the line of its envelope in a TORCH_TRACE file (None for a live record)
    payload_failed: bool = False  # its payload did not match the md5 the trace gave (or gave none usable)

    def to_json(self) -> dict:
        return {"kind": self.kind, "compile_id": self.compile_id, "attempt": self.attempt,
                "metadata": self.metadata, "payload": self.payload, "time": self.time}


def record_kind(metadata: dict) -> str:
    """The event type of a structured record: its first non-context key."""
    for key in metadata:
        if key not in CONTEXT_KEYS:
            if key == "artifact":
                body = metadata["artifact"]
                return "artifact:" + str(body.get("name") if isinstance(body, dict) else None)
            return key
    return "unknown"


# Names that drifted across torch versions (2.3 → 2.13): the older name → the one tcompile reads.
RENAMED_KINDS = {"inductor_pre_grad_graph": "artifact:before_pre_grad_graph"}
RENAMED_METRICS = {"entire_frame_compile_time_s": "dynamo_cumulative_compile_time_us",
                   "backend_compile_time_s": "aot_autograd_cumulative_compile_time_us",
                   "inductor_compile_time_s": "inductor_cumulative_compile_time_us",
                   "code_gen_time_s": "inductor_code_gen_cumulative_compile_time_us"}


def _fill_renamed_metrics(metrics: dict) -> None:
    """Torch ~2.6 logged some compile times only in microseconds under other names."""
    for name, micros in RENAMED_METRICS.items():
        if metrics.get(name) is None and isinstance(metrics.get(micros), (int, float)):
            metrics[name] = metrics[micros] / 1e6


# A field of a trace that is not what torch writes: report(field, value, why). The trace reader
# turns each into a TraceProblem naming the file and line; a live capture passes none.
Report = Callable[[str, object, str], None]
MAX_ID = 1 << 62  # larger ids are no frame torch numbered


def is_count(value) -> bool:
    """An id or a line number as torch writes it: a non-negative int (not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MAX_ID


def number(value) -> bool:
    """A time or a size: a finite int or float (not a bool)."""
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, int) and not isinstance(value, bool) and -MAX_NUMBER < value < MAX_NUMBER


MAX_NUMBER = 1e308  # an int of 400 digits is no time or size (and ``math.isfinite`` of it raises OverflowError)


def _text(value) -> bool:
    return isinstance(value, str)


def _text_list(value) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


# The compilation_metrics fields tcompile reads, and what each must be (null is always allowed);
# a field of another type is dropped and reported. The times it reads must be numbers (torch writes
# some other ``*_us`` fields as JSON text, e.g. triton_kernel_compile_times_us: those are not read).
METRIC_TIMES = ("entire_frame_compile_time_s", "backend_compile_time_s", "inductor_compile_time_s",
                "code_gen_time_s", "dynamo_time_before_restart_s", "guard_latency_us", "structured_logging_overhead_s",
                "start_time_us", "end_time_us", "backward_cumulative_compile_time_us",
                "dynamo_cumulative_compile_time_us", "aot_autograd_cumulative_compile_time_us",
                "inductor_cumulative_compile_time_us", "inductor_code_gen_cumulative_compile_time_us")
METRIC_CHECKS = {"co_name": _text, "co_filename": _text, "co_firstlineno": is_count, "fail_type": _text,
                 "fail_reason": _text, "fail_user_frame_filename": _text, "fail_user_frame_lineno": is_count,
                 "restart_reasons": _text_list, "has_guarded_code": lambda v: isinstance(v, bool),
                 "recompile_reason": _text, "guard_count": is_count, "pytorch_version": _text, "compile_id": _text,
                 **{name: number for name in METRIC_TIMES}}


def check_metrics(metrics: dict, report: Report, field: str = "compilation_metrics") -> dict:
    """``metrics`` without the fields of the wrong type (each one reported)."""
    bad = {}
    for key, value in metrics.items():
        check = METRIC_CHECKS.get(key)
        if value is not None and check is not None and not check(value):
            bad[key] = value
    for key, value in bad.items():
        what = "a number" if key in METRIC_TIMES else "a valid value of this field"
        report(f"{field}.{key}", value, f"not {what}; the field is left out")
    return {k: v for k, v in metrics.items() if k not in bad} if bad else metrics


def _ignore(field: str, value, why: str) -> None:
    return None


def record_from_metadata(metadata: dict, payload: str | None, when: float | None = None,
                         report: Report | None = None, record_type: type = Record) -> Record:
    """The Record of one structured-trace envelope: the live handler and the TORCH_TRACE file reader
    (``compiler.trace``) both build records here. Each field tcompile reads is type-checked: a
    wrong one is reported (``report``) and left out of the record, never fatal."""
    report = report or _ignore
    metadata = _checked_envelope(metadata, report)
    kind = record_kind(metadata)
    kind = RENAMED_KINDS.get(kind, kind)
    if kind == "compilation_metrics" and isinstance(metadata.get(kind), dict):
        metadata[kind] = check_metrics(metadata[kind], report)
        _fill_renamed_metrics(metadata[kind])
    record = record_type(kind=kind, compile_id=_compile_id_of(metadata),
                    attempt=metadata.get("attempt") or 0, metadata=metadata, payload=payload)
    if when is not None:
        record.time = when
    return record


def _checked_envelope(metadata: dict, report: Report) -> dict:
    """The envelope with its context ids checked (ids are counts) and its body a JSON object, as
    torch writes every one; what is not is reported and left out (a bad body becomes ``{}``)."""
    bad = [key for key in ("frame_id", "frame_compile_id", "attempt", "rank", "compiled_autograd_id")
           if key in metadata and metadata[key] is not None and not is_count(metadata[key])]
    kind = next((key for key in metadata if key not in CONTEXT_KEYS), None)
    bad_body = kind is not None and not isinstance(metadata[kind], dict)
    if not bad and not bad_body:
        return metadata
    for key in bad:
        report(key, metadata[key], "not a non-negative integer; left out"
               + (" (the record belongs to no compile)" if key in ("frame_id", "frame_compile_id") else ""))
    if bad_body:
        report(kind, metadata[kind], "not a JSON object, as torch writes every record; read as {}")
    return {key: ({} if bad_body and key == kind else value) for key, value in metadata.items() if key not in bad}


def _compile_id_of(metadata: dict) -> str | None:
    if metadata.get("frame_id") is not None and metadata.get("frame_compile_id") is not None:
        return f"{metadata['frame_id']}/{metadata['frame_compile_id']}"
    return None
