"""The TORCH_TRACE file format, both ways: a log file → the very ``Record`` objects the live collector
makes (``compiler.capturing.records.record_from_metadata``; ``compiler.readers.trace_capture`` turns them
into a ``Capture``), and a capture's raw records → a TORCH_TRACE file that tlparse reads.

The format (torch/_logging/_internal.py, ``TorchLogsFormatter`` with ``trace=True``): one glog line
per record, ``V1123 05:20:30.348000 642 torch/_dynamo/utils.py:2126] {json envelope}``, followed,
when the envelope has ``"has_payload": "<md5 hex>"``, by the payload's lines, each prefixed by a tab.
The envelope is the dict an in-process handler sees as ``record.metadata``; ``{"str": [text, id]}``
envelopes fill the interned filename table.

The file is read as a stream, line by line: a corrupted envelope, a payload whose md5 does not
match, a stray line or a truncated last line is counted and reported (``TraceProblem``, naming the
file and line), never fatal — unless ``strict=True``.
"""
from __future__ import annotations

import calendar
import hashlib
import json
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from compiler.capturing.records import record_from_metadata

# The torch versions whose logs this code was written and tested against (2.3 → 2.14); a log from a
# newer or older torch still loads (unknown records are counted), with a one-line warning naming it.
NEWEST_KNOWN_TORCH = (2, 14)
OLDEST_KNOWN_TORCH = (2, 3)
_GLOG = re.compile(r"^(?:\[rank\d+\]:)?(?P<level>[VIWEC])(?P<month>\d\d)(?P<day>\d\d) "
                   r"(?P<clock>\d\d:\d\d:\d\d)\.(?P<micros>\d{6}) +(?P<thread>\d+) (?P<where>[^\]]*)\]")
_VERSION = re.compile(r"^(\d+)\.(\d+)")
BINARY_PROBE_BYTES = 8192


class TraceError(ValueError):
    """A path that is not a readable TORCH_TRACE log (missing, binary, no records), or a problem
    under ``strict=True``."""


class TraceWarning(UserWarning):
    """Something in a trace tcompile skipped or could not check (the message names file and line)."""


@dataclass
class TraceProblem:
    file: str
    line: int | None
    kind: str  # corrupted_json, payload_mismatch, stray_line, truncated, newer_torch, older_torch, torch_mismatch, empty_file
    message: str

    def __str__(self) -> str:
        return f"{self.file}{f':{self.line}' if self.line else ''}: {self.message}"


@dataclass
class TraceInfo:
    """Where a capture read from a trace came from, and what its reader counted and skipped."""

    file: str
    lines: int = 0
    records: int = 0
    strings: int = 0
    payload_mismatches: int = 0
    corrupted_lines: int = 0
    stray_lines: int = 0
    truncated: bool = False
    torch_version: str | None = None
    ranks: list[int] = field(default_factory=list)  # the ``rank`` fields of its records
    kinds: Counter = field(default_factory=Counter)
    problems: list[TraceProblem] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"file": self.file, "lines": self.lines, "records": self.records, "strings": self.strings,
                "payload_mismatches": self.payload_mismatches, "corrupted_lines": self.corrupted_lines,
                "stray_lines": self.stray_lines, "truncated": self.truncated, "torch_version": self.torch_version,
                "ranks": self.ranks, "problems": [str(p) for p in self.problems]}


# --- reading -------------------------------------------------------------------------------------

def _check_readable(path: Path) -> None:
    if not path.exists():
        raise TraceError(f"{path}: no such file or directory")
    if not path.is_file():
        raise TraceError(f"{path}: not a regular file")
    with open(path, "rb") as f:
        head = f.read(BINARY_PROBE_BYTES)
    if b"\0" in head:
        raise TraceError(f"{path}: a binary file, not a TORCH_TRACE log (it holds NUL bytes)")


def _glog_time(match, year: int, cache: dict) -> float:
    day = (match["month"], match["day"])
    base = cache.get(day)
    if base is None:
        try:
            base = calendar.timegm((year, int(match["month"]), int(match["day"]), 0, 0, 0))
        except ValueError:
            base = 0.0
        cache[day] = base
    h, m, s = match["clock"].split(":")
    return base + int(h) * 3600 + int(m) * 60 + int(s) + int(match["micros"]) / 1e6


def read_records(path, strict: bool = False, info: TraceInfo | None = None, strings: dict | None = None):
    """Yield the ``Record`` of each envelope in a TORCH_TRACE file, streaming; ``str`` envelopes go
    into ``strings`` (id → text) instead. Problems are counted into ``info``."""
    path = Path(path)
    _check_readable(path)
    info = info if info is not None else TraceInfo(file=str(path))
    strings = strings if strings is not None else {}
    year = time.gmtime().tm_year
    day_cache: dict = {}
    pending = None  # [metadata, envelope line number, payload lines, when]

    def problem(kind, line, message):
        found = TraceProblem(str(path), line, kind, message)
        if strict:
            raise TraceError(str(found))
        info.problems.append(found)

    def md5(text):
        return hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest()

    def finish(entry, trailing_blanks=0):
        metadata, lineno, payload_lines, when = entry
        payload = None
        expected = metadata.get("has_payload")
        if expected is not None:
            payload = "\n".join(payload_lines)
            actual = md5(payload)
            if actual != expected and trailing_blanks:  # the payload ended in blank lines
                with_blanks = "\n".join(payload_lines + [""] * trailing_blanks)
                if md5(with_blanks) == expected:
                    payload, actual = with_blanks, expected
            if actual != expected:
                info.payload_mismatches += 1
                problem("payload_mismatch", lineno,
                        f"payload md5 {actual} does not match has_payload {expected} "
                        f"({len(payload_lines)} payload lines); the record is kept as read")
        info.records += 1
        info.kinds[_kind_name(metadata)] += 1
        if "rank" in metadata and isinstance(metadata["rank"], int) and metadata["rank"] not in info.ranks:
            info.ranks.append(metadata["rank"])
        return record_from_metadata(metadata, payload, when)

    with open(path, encoding="utf-8", errors="replace", newline="\n") as f:
        lineno = blanks = 0
        for lineno, line in enumerate(f, 1):
            ends = line.endswith("\n")
            line = line[:-1] if ends else line
            if line.endswith("\r"):  # a log copied through Windows (CRLF); torch's md5 is over "\n"
                line = line[:-1]
            if line.startswith("\t"):
                if pending is not None and "has_payload" in pending[0]:
                    pending[2].extend([""] * blanks)  # blank payload lines whose tab an editor stripped
                    pending[2].append(line[1:])
                    blanks = 0
                else:
                    info.stray_lines += 1
                    problem("stray_line", lineno, "a payload line with no record that expects a payload; skipped")
                continue
            if not line.strip():
                blanks += 1
                continue
            if pending is not None:
                yield finish(pending, blanks)
                pending = None
            blanks = 0
            match = _GLOG.match(line)
            start = line.find("{", match.end() if match else 0)
            if not match or start < 0:
                info.stray_lines += 1
                problem("stray_line", lineno, "not a structured-trace line (no glog prefix and JSON envelope); "
                        "skipped")
                continue
            try:
                metadata = json.loads(line[start:])
                if not isinstance(metadata, dict):
                    raise ValueError("the envelope is not a JSON object")
            except ValueError as exc:
                if not ends:
                    info.truncated = True
                    problem("truncated", lineno, "the last line is cut off (the job was still writing, "
                            "or the file was truncated); skipped")
                else:
                    info.corrupted_lines += 1
                    problem("corrupted_json", lineno, f"corrupted JSON envelope ({exc}); skipped")
                continue
            if "str" in metadata and len(metadata) <= 2:
                try:
                    text, index = metadata["str"]
                    strings[index] = text
                    info.strings += 1
                except (TypeError, ValueError):
                    info.corrupted_lines += 1
                    problem("corrupted_json", lineno, "a malformed string-table entry; skipped")
                continue
            pending = [metadata, lineno, [], _glog_time(match, year, day_cache)]
        if pending is not None:
            if not ends and "has_payload" in pending[0]:
                info.truncated = True
            yield finish(pending, blanks)
        info.lines = lineno


def _kind_name(metadata: dict) -> str:
    from compiler.capturing.records import record_kind

    return record_kind(metadata)


def _torch_version(records) -> str | None:
    """torch's ``torch_version`` artifact (2.12+), else ``compilation_metrics.pytorch_version`` (2.11)."""
    for record in records:
        if record.kind == "artifact:torch_version" and record.payload:
            try:
                return str(json.loads(record.payload).get("pytorch_version"))
            except (ValueError, AttributeError):
                return None
    for record in records:
        if record.kind == "compilation_metrics":
            version = (record.metadata.get("compilation_metrics") or {}).get("pytorch_version")
            if version:
                return str(version)
    return None


def version_tuple(version: str | None) -> tuple[int, int] | None:
    match = _VERSION.match(version or "")
    return (int(match[1]), int(match[2])) if match else None


# --- writing -------------------------------------------------------------------------------------

def _glog_prefix(when: float) -> str:
    t = time.gmtime(when)
    micros = int((when % 1) * 1e6)
    return f"V{t.tm_mon:02d}{t.tm_mday:02d} {t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}.{micros:06d} 0 tcompile/trace.py:0]"


def _interned(records, strings: dict) -> dict:
    """The string table the records refer to: given, or (for a live capture) torch's own."""
    if strings:
        return strings
    try:
        from torch._logging.structured import INTERN_TABLE

        return {index: text for text, index in INTERN_TABLE.items()}
    except ImportError:
        return {}


def trace_lines(records, strings: dict):
    """The lines of a TORCH_TRACE file holding ``records``: the string table first, then each
    record's envelope and its tab-indented payload with a fresh md5 (``log:*`` records from plain
    loggers are not part of TORCH_TRACE and are left out)."""
    first = min((r.time for r in records), default=time.time())
    for index, text in sorted(strings.items()):
        yield f"{_glog_prefix(first)} {json.dumps({'str': [text, index]})}"
    for record in records:
        if record.kind.startswith("log:"):
            continue
        metadata = {k: v for k, v in record.metadata.items() if k != "has_payload"}
        if record.payload is not None:
            metadata["has_payload"] = hashlib.md5(record.payload.encode("utf-8"), usedforsecurity=False).hexdigest()
        line = f"{_glog_prefix(record.time)} {json.dumps(metadata, default=repr)}"
        if record.payload is not None:
            line += "".join(f"\n\t{part}" for part in record.payload.split("\n"))
        yield line


def save_trace(capture, path) -> Path:
    """Write ``capture``'s raw records as a TORCH_TRACE log (what ``TORCH_TRACE=dir`` writes, one file).

    A live capture and one read from a trace keep their raw records; a capture loaded from tcompile
    JSON does not (it holds the assembled stages only), so it cannot be written as a trace."""
    records = capture.trace_records or (capture.live.records if capture.live is not None else None)
    if not records:
        raise TraceError("save_trace needs the raw records of the capture: a live capture or one read from a "
                         "TORCH_TRACE log has them; a capture loaded from tcompile JSON holds only the assembled "
                         "stages (save it with .save(path) instead)")
    path = Path(path)
    strings = _interned(records, capture.trace_strings)
    with open(path, "w", encoding="utf-8") as f:
        for line in trace_lines(records, strings):
            f.write(line + "\n")
    return path
