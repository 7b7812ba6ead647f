"""Raw records from torch's logging, collected while a capture is active.

Two sources:
- the structured trace (logger ``torch.__trace``): every LogRecord carries ``.metadata``
  (event type + compile context) and ``.payload``;
- plain artifact loggers that are not in the structured trace (Inductor IR before/after
  fusion, CUDA-graph messages). Their records carry no compile id, so the current one is read
  from torch's CompileContext at emit time, and the ``[f/c]`` prefix where torch writes one.

Several captures at once. The handlers on torch's loggers (and the artifact loggers' level and
``propagate`` flag) are installed once, by the first active ``RecordCollector``, and put back
exactly as they were when the last one is removed — whatever the order captures end in, also on
an error or a KeyboardInterrupt. A setting someone else made in between (``torch._logging.set_logs``
inside the block) is kept. Each record goes to the active collectors it belongs to:

- **per thread**: a record emitted on a thread that installed collectors goes to those collectors
  only (torch compiles on the calling thread, so two threads each capturing their own compile
  get only their own compile ids; nested captures on one thread all get it);
- a record emitted on a thread with no collector of its own — autograd's worker threads running a
  lazily compiled backward, helper threads — goes to the collectors that already saw its compile
  id, else to every active collector. Inductor's compile workers are subprocesses (their logs
  never reach this process's loggers), so they need no rule.

Tracebacks torch logs about an exception it then raises (``HELD_LOGGERS``) are held off the console
while a capture that receives them is active: when the capture ends with an error, tcompile reports
that error in one line and the held text stays in the capture (``CaptureError.logged``); otherwise
they go to torch's own handlers as they would have, when the capture ends.

The bytecode hook (``compiler.capturing.session``) follows the same rule (``receives``). What cannot be
split by thread: torch's Dynamo counters are process-wide, so a capture that overlapped another
one counts the other's frames too — ``overlapping_captures`` says how many others were active.
"""
from __future__ import annotations

import logging
import re
import sys
import threading
import time
from typing import Iterable

from compiler.stages.fx_graph import MODULE_STACK
from compiler.stages.records import Record, is_count, record_from_metadata


# Artifact loggers that are not part of the structured trace, by the name we record them under.
ARTIFACT_LOGGERS = {
    "ir_pre_fusion": "torch._inductor.debug.__ir_pre_fusion",
    "ir_post_fusion": "torch._inductor.debug.__ir_post_fusion",
    "cudagraphs_trees": "torch._inductor.cudagraph_trees.__cudagraphs",
    "cudagraphs_utils": "torch._inductor.cudagraph_utils.__cudagraphs",
    "recompiles": "torch._dynamo.guards.__recompiles",
}

_COMPILE_ID_PREFIX = re.compile(r"^\[(\d+)/(\d+)\]")

# Loggers that log a whole traceback (``log.exception``) of an exception torch raises right after:
# FakeTensorMode._dispatch_impl (torch/_subclasses/fake_tensor.py) logs "failed while attempting to run
# meta for aten.mm.default" and the meta kernel's traceback, then re-raises; Dynamo turns that into the
# TorchRuntimeError tcompile reports. torch's console handler on the ``torch`` logger prints it: in 2.14
# a ``_StderrHandler`` that writes to the current ``sys.stderr`` (torch/_logging/_internal.py), up to
# 2.13 a ``StreamHandler`` bound to the stderr torch was imported with (in Jupyter: the cell's output).
HELD_LOGGERS = ("torch._subclasses.fake_tensor",)



def _current_compile_id() -> str | None:
    from torch._guards import CompileContext

    cid = CompileContext.current_compile_id()
    if cid is None or cid.frame_id is None:
        return None
    return f"{cid.frame_id}/{cid.frame_compile_id}"


def _current_inductor_graph() -> str | None:
    """The name of the graph Inductor is lowering right now: None for a compile's own graph, the
    higher-order op's body (``true_graph_0``) while Inductor schedules a subgraph inside it."""
    import sys

    virtualized = sys.modules.get("torch._inductor.virtualized")  # never import Inductor for this
    if virtualized is None:
        return None
    try:
        return getattr(virtualized.V.graph, "name", None)
    except Exception:  # noqa: BLE001 — no graph handler installed (outside a lowering)
        return None


# --- the one set of handlers on torch's loggers, shared by every active collector -------------------

_lock = threading.RLock()
_active: tuple[RecordCollector, ...] = ()  # installed collectors, oldest first
_installed: dict[str, list[tuple]] = {}  # group → (logger, handler, level set?, old level, old propagate)


def _targets(compile_id: str | None, artifact: str | None) -> list[RecordCollector]:
    """The collectors that receive a record emitted on the current thread (see the module docstring);
    ``artifact``: the record comes from that artifact logger (``ARTIFACT_LOGGERS``), for the collectors
    that asked for it."""
    thread = threading.get_ident()
    chosen = ([c for c in _active if c.thread == thread] or [c for c in _active if compile_id in c.compile_ids]
              or list(_active))
    return [c for c in chosen if artifact is None or artifact in c.artifact_kinds]


def receives(collector: RecordCollector, compile_id: str | None) -> bool:
    """Whether ``collector`` gets what torch emits for ``compile_id`` on the current thread."""
    with _lock:
        return collector in _targets(compile_id, artifact=None)


class _Unparsed(tuple):
    """A structured record as it arrived — (metadata, payload, time) — parsed into a ``Record`` only when
    the collector's ``records`` are read (at the build), not inside torch's compile."""

    def parse(self) -> Record:
        metadata, payload, when = self
        return record_from_metadata(metadata, payload, when)


def _routing_id(metadata: dict) -> str | None:
    """The compile id ``record_from_metadata`` will give these metadata (ids that are not counts are
    left out there, so they give None here)."""
    frame, attempt = metadata.get("frame_id"), metadata.get("frame_compile_id")
    return f"{frame}/{attempt}" if is_count(frame) and is_count(attempt) else None


def _module_stacks() -> dict[str, list[str]] | None:
    """Torch's ``nn_module_stack`` of the graph Dynamo is logging (``dynamo_output_graph``): innermost module path →
    the nodes in it. The printed graph names a node's module only through its parameters; the graph module itself
    is what the record's ``payload_fn`` prints (``lambda: gm.print_readable(…)`` in OutputGraph), read here from
    ``trace_structured``'s frame, observe only: each node's ``meta``, nothing called, nothing kept. None: not found
    (another torch), the graph then grouped by its parameters' names as a trace's is."""
    from compiler.capturing.compile_sampler import module_path

    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_name != "trace_structured":
        frame = frame.f_back
    payload_fn = frame.f_locals.get("payload_fn") if frame is not None else None
    for cell in getattr(payload_fn, "__closure__", None) or ():
        try:
            nodes = getattr(getattr(cell.cell_contents, "graph", None), "nodes", None)
        except ValueError:  # an empty cell
            continue
        if nodes is None or not hasattr(cell.cell_contents, "print_readable"):
            continue
        out: dict[str, list[str]] = {}
        for node in nodes:
            path = module_path((getattr(node, "meta", None) or {}).get("nn_module_stack"))
            if path and node.op not in ("placeholder", "output", "get_attr"):
                out.setdefault(path, []).append(node.name)
        return out
    return None


class _TraceHandler(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)

    def emit(self, record: logging.LogRecord) -> None:
        metadata = dict(getattr(record, "metadata", None) or {})
        if isinstance(metadata.get("dynamo_output_graph"), dict):
            try:
                stacks = _module_stacks()
            except Exception:  # noqa: BLE001 — observe only: a graph not read is grouped by its parameters' names
                stacks = None
            if stacks is not None:
                metadata["dynamo_output_graph"] = {**metadata["dynamo_output_graph"], MODULE_STACK: stacks}
        if "str" in metadata:  # filename interning: [string, id], sent once per process
            text, index = metadata["str"]
            for collector in _active:
                collector.strings[index] = text
            return
        compile_id = _routing_id(metadata)
        entry = _Unparsed((metadata, getattr(record, "payload", None), time.time()))
        for collector in _targets(compile_id, artifact=None):
            collector._add(entry, compile_id)


class _ArtifactHandler(logging.Handler):
    def __init__(self, kind: str):
        super().__init__(logging.DEBUG)
        self.kind = kind

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        compile_id = _current_compile_id()
        match = _COMPILE_ID_PREFIX.match(message)
        if compile_id is None and match:
            compile_id = f"{match.group(1)}/{match.group(2)}"
        metadata = {"logger": record.name, "level": record.levelname}
        graph = _current_inductor_graph() if self.kind.startswith("ir_") else None
        if graph:
            metadata["graph"] = graph
        entry = Record(kind="log:" + self.kind, compile_id=compile_id, attempt=0, metadata=metadata,
                       payload=message)
        for collector in _targets(compile_id, artifact=self.kind):
            collector._add(entry, compile_id)


class _Held:
    """One logged traceback held off the console for the collectors that received it."""

    def __init__(self, record: logging.LogRecord, holders):
        self.record, self.holders, self.reported = record, set(holders), False
        self.text = f"{record.levelname} {record.name}: {record.getMessage()}"
        if record.exc_info:
            self.text += "\n" + logging.Formatter().formatException(record.exc_info)


class _HoldFilter(logging.Filter):
    """A filter on a ``HELD_LOGGERS`` logger: an ERROR with a traceback emitted on a capturing thread (or
    for a compile id a collector saw) is held by those collectors instead of reaching any handler."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.ERROR or not record.exc_info:
            return True
        with _lock:
            thread, compile_id = threading.get_ident(), _current_compile_id()
            holders = ([c for c in _active if c.thread == thread]
                       or [c for c in _active if compile_id is not None and compile_id in c.compile_ids])
            if not holders:
                return True
            held = _Held(record, holders)
            for collector in holders:
                collector.held.append(held)
                collector.logged.append(held.text)
        return False


def _attach_group(group: str) -> None:
    from torch._logging._internal import trace_log

    if group == "held":
        hold = _HoldFilter()
        _installed[group] = [(logging.getLogger(name), hold) for name in HELD_LOGGERS]
        for logger, _ in _installed[group]:
            logger.addFilter(hold)
        return
    if group == "trace":
        targets = [(trace_log, _TraceHandler(), False)]
    else:  # "artifact:<kind>"
        kind = group.partition(":")[2]
        targets = [(logging.getLogger(ARTIFACT_LOGGERS[kind]), _ArtifactHandler(kind), True)]
    undo = _installed[group] = []
    levels = []
    for logger, handler, set_level in targets:
        undo.append((logger, handler, set_level, logger.level, logger.propagate))
        logger.addHandler(handler)
        if set_level:
            # Level DEBUG turns the artifact on; propagate False keeps it off the user's stderr.
            levels.append((logger, logging.DEBUG))
            logger.propagate = False
    _set_levels(levels)


def _set_levels(levels: list[tuple[logging.Logger, int]]) -> None:
    """``logger.setLevel(level)`` for each pair, without ``setLevel``'s clearing of every logger's
    level cache in the process (~2,600 with torch's; that was most of what entering and leaving a
    capture cost): only these loggers' own caches are cleared — torch's artifact loggers have no
    child loggers whose cached answer could depend on them. A logging without the per-logger cache
    gets ``setLevel``."""
    for logger, level in levels:
        cache = getattr(logger, "_cache", None)
        if isinstance(cache, dict):
            logger.level = level
            cache.clear()
        else:
            logger.setLevel(level)


def _detach_group(group: str) -> None:
    """Remove our handlers and put back the level and propagate flag we changed — unless someone
    (``torch._logging.set_logs`` inside the block) has set them since: theirs stay."""
    if group == "held":
        for logger, hold in _installed.pop(group):
            logger.removeFilter(hold)
        return
    levels = []
    for logger, handler, set_level, level, propagate in reversed(_installed.pop(group)):
        logger.removeHandler(handler)
        if set_level and (logger.level, logger.propagate) == (logging.DEBUG, False):
            levels.append((logger, level))
            logger.propagate = propagate
    _set_levels(levels)


def _sync_handlers() -> None:
    """Handlers installed exactly while some active collector needs them."""
    wanted = {"trace": bool(_active), "held": bool(_active),
              **{f"artifact:{kind}": any(kind in c.artifact_kinds for c in _active) for kind in ARTIFACT_LOGGERS}}
    for group, want in wanted.items():
        if want and group not in _installed:
            _attach_group(group)
        elif not want and group in _installed:
            _detach_group(group)


class RecordCollector:
    """Records torch logs while installed; ``uninstall`` puts every logger back as it was.

    Any number of collectors may be installed at once, nested or in several threads, and removed in
    any order: the handlers on torch's loggers are shared and installed once (see the module docstring).
    """

    def __init__(self, with_artifact_logs: bool | Iterable[str] = True):
        self._entries: list[Record | _Unparsed] = []  # in arrival order; parsed when ``records`` is read
        self._parsed = 0  # entries before this index are Records
        self.strings: dict[int, str] = {}
        # the artifact loggers listened to: all (True), none (False) or those named (ARTIFACT_LOGGERS' kinds)
        kinds = ARTIFACT_LOGGERS if with_artifact_logs is True else () if with_artifact_logs is False \
            else with_artifact_logs
        unknown = set(kinds) - set(ARTIFACT_LOGGERS)
        if unknown:
            raise ValueError(f"unknown artifact logs {sorted(unknown)}: the kinds are {sorted(ARTIFACT_LOGGERS)}")
        self.artifact_kinds = frozenset(kinds)
        self.listeners: list = []  # called (with no argument) as each structured record arrives
        self.thread: int | None = None  # the thread that installed this collector
        self.compile_ids: set[str] = set()
        self.overlapping_captures = 0  # other collectors active at some point while this one was
        self.held: list[_Held] = []  # tracebacks torch logged (HELD_LOGGERS), kept off the console for now
        self.logged: list[str] = []  # … their text, kept

    def install(self) -> None:
        global _active
        from torch._logging.structured import INTERN_TABLE

        with _lock:
            if self in _active:
                return
            # Filenames interned before we attached are not re-sent: invert torch's table.
            self.strings.update({index: text for text, index in INTERN_TABLE.items()})
            self.thread = threading.get_ident()
            for other in _active:
                other.overlapping_captures += 1
            self.overlapping_captures += len(_active)
            _active = (*_active, self)
            try:
                _sync_handlers()
            except BaseException:
                self.uninstall()
                raise

    def uninstall(self, reported: bool = False) -> None:
        """``reported``: the capture reports the error these held tracebacks were about, so they are
        dropped from the console (their text stays in ``logged``); else each goes to torch's handlers
        once no other collector holds it."""
        global _active
        with _lock:
            _active = tuple(c for c in _active if c is not self)
            _sync_handlers()
            held, self.held = self.held, []
            release = []
            for entry in held:
                entry.holders.discard(self)
                entry.reported = entry.reported or reported
                if not entry.holders and not entry.reported:
                    release.append(entry.record)
        for record in release:  # torch's handlers, as the logger would have called them (no filters)
            logging.getLogger(record.name).callHandlers(record)

    @property
    def records(self) -> list[Record]:
        """Every record received, in arrival order (structured ones parsed on this first read)."""
        entries = self._entries
        for i in range(self._parsed, len(entries)):
            if isinstance(entries[i], _Unparsed):
                entries[i] = entries[i].parse()
        self._parsed = len(entries)
        return entries

    def _add(self, entry: Record | _Unparsed, compile_id: str | None) -> None:
        if compile_id:
            self.compile_ids.add(compile_id)
        self._entries.append(entry)
        if isinstance(entry, _Unparsed):
            for listener in self.listeners:
                listener()

    def filename(self, index) -> str | None:
        if isinstance(index, int):
            return self.strings.get(index)
        return index
