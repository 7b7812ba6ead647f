"""Raw records from torch's logging, collected while a capture is active.

Two sources:
- the structured trace (logger ``torch.__trace``): every LogRecord carries ``.metadata``
  (event type + compile context) and ``.payload``;
- plain artifact loggers that are not in the structured trace (Inductor IR before/after
  fusion, CUDA-graph messages). Their records carry no compile id, so the current one is read
  from torch's CompileContext at emit time, and the ``[f/c]`` prefix where torch writes one.

Everything installed here is removed and every logger setting restored in ``uninstall()``.
"""
from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field

CONTEXT_KEYS = ("frame_id", "frame_compile_id", "attempt", "rank", "compiled_autograd_id", "has_payload")

# Artifact loggers that are not part of the structured trace, by the name we record them under.
ARTIFACT_LOGGERS = {
    "ir_pre_fusion": "torch._inductor.debug.__ir_pre_fusion",
    "ir_post_fusion": "torch._inductor.debug.__ir_post_fusion",
    "cudagraphs_trees": "torch._inductor.cudagraph_trees.__cudagraphs",
    "cudagraphs_utils": "torch._inductor.cudagraph_utils.__cudagraphs",
    "recompiles": "torch._dynamo.guards.__recompiles",
}

_COMPILE_ID_PREFIX = re.compile(r"^\[(\d+)/(\d+)\]")


@dataclass
class Record:
    """One event: its type (``dynamo_start``, ``artifact:recompile_reasons``…), context and payload."""

    kind: str
    compile_id: str | None  # "frame/compile", None outside a compile
    attempt: int
    metadata: dict
    payload: str | None
    time: float = field(default_factory=time.time)

    def to_json(self) -> dict:
        return {"kind": self.kind, "compile_id": self.compile_id, "attempt": self.attempt,
                "metadata": self.metadata, "payload": self.payload, "time": self.time}


def record_kind(metadata: dict) -> str:
    """The event type of a structured record: its first non-context key."""
    for key in metadata:
        if key not in CONTEXT_KEYS:
            if key == "artifact":
                return "artifact:" + str(metadata["artifact"].get("name"))
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


def record_from_metadata(metadata: dict, payload: str | None, when: float | None = None) -> Record:
    """The Record of one structured-trace envelope: the live handler and the TORCH_TRACE file reader
    (``compiler.trace``) both build records here."""
    kind = record_kind(metadata)
    kind = RENAMED_KINDS.get(kind, kind)
    if kind == "compilation_metrics" and isinstance(metadata.get(kind), dict):
        _fill_renamed_metrics(metadata[kind])
    record = Record(kind=kind, compile_id=_compile_id_of(metadata),
                    attempt=int(metadata.get("attempt", 0) or 0), metadata=metadata, payload=payload)
    if when is not None:
        record.time = when
    return record


def _compile_id_of(metadata: dict) -> str | None:
    if "frame_id" in metadata and "frame_compile_id" in metadata:
        return f"{metadata['frame_id']}/{metadata['frame_compile_id']}"
    return None


def _current_compile_id() -> str | None:
    from torch._guards import CompileContext

    cid = CompileContext.current_compile_id()
    if cid is None or cid.frame_id is None:
        return None
    return f"{cid.frame_id}/{cid.frame_compile_id}"


class _TraceHandler(logging.Handler):
    def __init__(self, sink: list[Record], strings: dict[int, str], listeners: list):
        super().__init__(logging.DEBUG)
        self.sink = sink
        self.strings = strings
        self.listeners = listeners

    def emit(self, record: logging.LogRecord) -> None:
        metadata = dict(getattr(record, "metadata", None) or {})
        if "str" in metadata:  # filename interning: [string, id]
            text, index = metadata["str"]
            self.strings[index] = text
            return
        self.sink.append(record_from_metadata(metadata, getattr(record, "payload", None)))
        for listener in self.listeners:
            listener(self.sink[-1])


class _ArtifactHandler(logging.Handler):
    def __init__(self, sink: list[Record], kind: str):
        super().__init__(logging.DEBUG)
        self.sink = sink
        self.kind = kind

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        compile_id = _current_compile_id()
        match = _COMPILE_ID_PREFIX.match(message)
        if compile_id is None and match:
            compile_id = f"{match.group(1)}/{match.group(2)}"
        self.sink.append(Record(kind="log:" + self.kind, compile_id=compile_id, attempt=0,
                                metadata={"logger": record.name, "level": record.levelname},
                                payload=message))


class RecordCollector:
    """Attach handlers to torch's loggers; ``uninstall`` puts every logger back as it was."""

    def __init__(self, with_artifact_logs: bool = True):
        self.records: list[Record] = []
        self.strings: dict[int, str] = {}
        self.with_artifact_logs = with_artifact_logs
        self.listeners: list = []  # called with each structured record as it arrives
        self._restore: list[tuple[logging.Logger, logging.Handler, int, bool]] = []

    def install(self) -> None:
        from torch._logging._internal import trace_log
        from torch._logging.structured import INTERN_TABLE

        # Filenames interned before we attached are not re-sent: invert torch's table.
        self.strings.update({index: text for text, index in INTERN_TABLE.items()})
        self._attach(trace_log, _TraceHandler(self.records, self.strings, self.listeners), set_level=False)
        if self.with_artifact_logs:
            for kind, name in ARTIFACT_LOGGERS.items():
                self._attach(logging.getLogger(name), _ArtifactHandler(self.records, kind), set_level=True)

    def _attach(self, logger: logging.Logger, handler: logging.Handler, set_level: bool) -> None:
        self._restore.append((logger, handler, logger.level, logger.propagate))
        logger.addHandler(handler)
        if set_level:
            # Level DEBUG turns the artifact on; propagate False keeps it off the user's stderr.
            logger.setLevel(logging.DEBUG)
            logger.propagate = False

    def uninstall(self) -> None:
        while self._restore:
            logger, handler, level, propagate = self._restore.pop()
            logger.removeHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate

    def filename(self, index) -> str | None:
        if isinstance(index, int):
            return self.strings.get(index)
        return index
