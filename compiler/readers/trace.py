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
import functools
import hashlib
import json
import os
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from compiler.stages.files import atomic_file, shown_path, shown_text, without_surrogates
from compiler.stages.capture import METHODS
from compiler.stages.data import TraceError  # the error of this format, raised by the stage builders too
from compiler.stages.records import Record, is_count, record_from_metadata, record_kind

# The torch versions whose logs this code was written and tested against (2.3 → 2.14); a log from a
# newer or older torch still loads (unknown records are counted), with a one-line warning naming it.
NEWEST_KNOWN_TORCH = (2, 14)
OLDEST_KNOWN_TORCH = (2, 3)
_GLOG = re.compile(r"^(?:\[rank\d+\]:)?(?P<level>[VIWEC])(?P<month>\d\d)(?P<day>\d\d) "
                   r"(?P<clock>\d\d:\d\d:\d\d)\.(?P<micros>\d{6}) +(?P<thread>\d+) (?P<where>[^\]]*)\]")
_VERSION = re.compile(r"^(\d+)\.(\d+)")
_MD5 = re.compile(r"^[0-9a-f]{32}$")
_HIGH, _LOW = r"\\u[dD][89abAB][0-9a-fA-F]{2}", r"\\u[dD][c-fC-F][0-9a-fA-F]{2}"
_LONE_SURROGATE = re.compile(f"{_HIGH}(?!{_LOW})|(?<!{_HIGH}){_LOW}")  # a JSON escape of half a UTF-16 pair
BINARY_PROBE_BYTES = 8192
SHOWN_VALUE_CHARS = 80


class TraceWarning(UserWarning):
    """Something in a trace tcompile skipped or could not check (the message names file and line)."""


@dataclass
class TraceProblem:
    file: str
    line: int | None
    kind: str  # corrupted_json, payload_mismatch, stray_line, truncated, bad_field, bad_text, duplicate_records,
    #            no_compiles, newer_torch, torch_mismatch, empty_file, skipped_file, unreadable_file…
    message: str
    field: str | None = None  # the envelope field (``frame_id``, ``compilation_metrics.co_name``…) of a bad_field

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

def shown_value(value) -> str:
    """A value from a trace, for a message: its repr, cut to SHOWN_VALUE_CHARS."""
    try:
        text = repr(value)
    except (RecursionError, ValueError):  # nested too deep; an int too long to print
        text = f"<{type(value).__name__}>"
    text = shown_text(text)
    return text if len(text) <= SHOWN_VALUE_CHARS else text[:SHOWN_VALUE_CHARS - 1] + "…"


def _check_readable(path: Path) -> None:
    if not path.exists():
        raise TraceError(f"{shown_path(path)}: no such file or directory")
    if not path.is_file():
        raise TraceError(f"{shown_path(path)}: not a regular file")
    with open(path, "rb") as f:
        head = f.read(BINARY_PROBE_BYTES)
    if b"\0" in head:
        raise TraceError(f"{shown_path(path)}: a binary file, not a TORCH_TRACE log (it holds NUL bytes)")


def _glog_time(match, year: int, cache: dict) -> float:
    month, day, clock = match.group("month", "day", "clock")
    second = cache.get((month, day, clock))  # a log's records share their seconds: each is worked out once
    if second is None:
        try:
            base = calendar.timegm((year, int(month), int(day), 0, 0, 0))
        except ValueError:
            base = 0.0
        h, m, s = clock.split(":")
        second = base + int(h) * 3600 + int(m) * 60 + int(s)
        if len(cache) > 100_000:
            cache.clear()
        cache[month, day, clock] = second
    return second + int(match["micros"]) / 1e6


class PayloadRef:
    """Where a payload lies in its TORCH_TRACE file: the bytes of its lines (``start``:``end``), read
    again on demand (``read``) and checked against the md5 they had when the file was first read, so
    a loaded trace does not hold every graph, generated program and IR dump in memory."""

    __slots__ = ("path", "start", "end", "md5", "line")

    def __init__(self, path: str, start: int, end: int, md5: str, line: int):
        self.path, self.start, self.end, self.md5, self.line = path, start, end, md5, line

    def __len__(self) -> int:
        return self.end - self.start

    def read(self) -> str:
        return _read_payload(self.path, self.start, self.end, self.md5, self.line)


@functools.lru_cache(maxsize=16)  # a stage reads one payload a few times in a row
def _read_payload(path: str, start: int, end: int, md5: str, line: int) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(start)
            raw = f.read(end - start)
    except OSError as exc:
        raise TraceError(f"{shown_path(path)}: cannot read the payload of line {line} again "
                         f"({exc.strerror or exc}); load it again") from None
    data = payload_bytes(raw)
    if len(raw) != end - start or hashlib.md5(data, usedforsecurity=False).hexdigest() != md5:
        raise TraceError(f"{shown_path(path)}: changed since it was loaded (the payload of line {line} no longer "
                         "matches what was read); load it again")
    return data.decode("utf-8", "replace")


def payload_bytes(raw: bytes) -> bytes:
    """The payload held by a run of payload lines: each tab-indented line without its tab, a blank line
    as an empty one (an editor stripped its tab), joined by newlines; CRLF read as LF."""
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    parts = []
    for line in raw.split(b"\n"):
        if line.endswith(b"\r"):
            line = line[:-1]
        parts.append(line[1:] if line.startswith(b"\t") else b"")
    return b"\n".join(parts)


class TraceRecord(Record):
    """A record read from a TORCH_TRACE file: a large payload stays in the file (a ``PayloadRef``) and
    is read when ``payload`` is asked for."""

    @property
    def payload(self) -> str | None:
        value = self.__dict__.get("_payload")
        return value.read() if isinstance(value, PayloadRef) else value

    @payload.setter
    def payload(self, value) -> None:
        self.__dict__["_payload"] = value

    @property
    def payload_size(self) -> int:
        value = self.__dict__.get("_payload")
        return 0 if value is None else len(value)


class _Pending:
    """A record whose payload lines are still being read: its md5 is computed as the lines come; the
    lines themselves are kept only while the payload is small (``PAYLOAD_IN_MEMORY``)."""

    __slots__ = ("metadata", "lineno", "when", "start", "end", "hash", "count", "pieces", "size")

    def __init__(self, metadata, lineno, when, start):
        self.metadata, self.lineno, self.when = metadata, lineno, when
        self.start = self.end = start  # the payload's bytes in the file
        self.hash = hashlib.md5(usedforsecurity=False)
        self.count, self.size, self.pieces = 0, 0, []

    def add(self, piece: bytes, end: int, lines: int = 1) -> None:
        """``lines`` payload lines (``piece``: their text without tabs, joined by newlines) end at ``end``."""
        if self.count:
            self.hash.update(b"\n")
        self.hash.update(piece)
        self.count += lines
        self.size += len(piece) + 1
        self.end = end
        if self.pieces is not None:
            self.pieces.append(piece)
            if self.size > PAYLOAD_IN_MEMORY:
                self.pieces = None


PAYLOAD_IN_MEMORY = 4096  # bytes: a larger payload is read from the file when asked for (PayloadRef)
READ_BYTES = 1 << 22  # the file is read in blocks of this many bytes, cut at line ends
_RUN_END = re.compile(rb"\n(?!\t)")  # where a run of tab-indented (payload) lines ends


def _lines_and_runs(f):
    """The file's bytes as ``(raw, lines)`` items, in order: a run of ``lines`` > 0 whole payload lines
    (each begins with a tab and ends with a newline; the run is ASCII and holds no CR — a log torch wrote),
    which the reader takes in one piece, or any other single line (``lines == 0``), which it reads alone.
    A payload is most of a log's lines: taking a run at once keeps the per-line work in C."""
    carry: list[bytes] = []
    while True:
        block = f.read(READ_BYTES)
        if not block:
            if carry:
                yield b"".join(carry), 0  # the last line, with no newline
            return
        last = block.rfind(b"\n")
        if last < 0:
            carry.append(block)
            continue
        if carry:
            carry.append(block)
            block = b"".join(carry)
            last = block.rfind(b"\n")
            carry = []
        limit, pos = last + 1, 0
        if limit < len(block):
            carry.append(block[limit:])
        while pos < limit:
            if block[pos] == 9:  # a tab
                end = _RUN_END.search(block, pos, limit).end()
                run = block[pos:end]
                if run.isascii() and b"\r" not in run:
                    yield run, run.count(b"\n")
                else:  # each line alone (a CR inside a line is no line end: split at newlines only)
                    for line in run[:-1].split(b"\n"):
                        yield line + b"\n", 0
            else:
                end = block.index(b"\n", pos, limit) + 1
                yield block[pos:end], 0
            pos = end


def read_records(path, strict: bool = False, info: TraceInfo | None = None, strings: dict | None = None):
    """Yield the ``Record`` of each envelope in a TORCH_TRACE file, streaming; ``str`` envelopes go
    into ``strings`` (id → text) instead. Problems are counted into ``info``. A payload over
    ``PAYLOAD_IN_MEMORY`` bytes stays in the file (``TraceRecord``, ``PayloadRef``); what the reader
    keeps per line is one hash of each envelope (to find a log copied twice)."""
    path = Path(path)
    _check_readable(path)
    absolute = os.path.abspath(path)
    info = info if info is not None else TraceInfo(file=shown_path(path))
    strings = strings if strings is not None else {}
    year = time.gmtime().tm_year
    second_cache: dict = {}  # (month, day, clock) → seconds since the epoch
    pending: _Pending | None = None
    seen: dict[int, int] = {}  # hash of an envelope line (its time, thread and JSON) → its line number
    duplicates: list[tuple[int, int]] = []  # (line, the earlier line it repeats)
    skip_payload = repeated = False
    blank_end = 0  # where the last blank line ends (a payload's trailing blank lines)

    def problem(kind, line, message, field=None):
        found = TraceProblem(info.file, line, kind, message, field)
        if strict:
            raise TraceError(str(found))
        info.problems.append(found)

    def reporter(line):
        def report(field, value, why):
            problem("bad_field", line, f"{field} = {shown_value(value)}: {why}", field)
        return report

    def finish(entry: _Pending, trailing_blanks=0):
        metadata, lineno = entry.metadata, entry.lineno
        payload, failed = None, False
        expected = metadata.get("has_payload")
        actual = entry.hash.hexdigest()
        if "has_payload" in metadata and not (isinstance(expected, str) and _MD5.match(expected)):
            failed = True  # kept, unchecked; save_trace writes it back unchecked, never with a fresh md5
            payload = "" if entry.count else None
            problem("bad_field", lineno, f"has_payload = {shown_value(expected)}: not an md5 hex digest; the "
                    f"{entry.count} payload lines are kept unchecked", "has_payload")
        elif expected is not None:
            payload = ""
            if actual != expected and trailing_blanks:  # the payload ended in blank lines
                with_blanks = entry.hash.copy()
                with_blanks.update(b"\n" * (trailing_blanks if entry.count else trailing_blanks - 1))
                if with_blanks.hexdigest() == expected:
                    actual, entry.end = expected, blank_end
                    if entry.pieces is not None:
                        entry.pieces += [b""] * trailing_blanks
            if actual != expected:
                failed = True
                info.payload_mismatches += 1
                problem("payload_mismatch", lineno,
                        f"payload md5 {actual} does not match has_payload {expected} "
                        f"({entry.count} payload lines); the record is kept as read")
        if payload is not None:
            if entry.pieces is not None:
                payload = b"\n".join(entry.pieces).decode("utf-8", "replace")
            else:
                payload = PayloadRef(absolute, entry.start, entry.end, actual, lineno)
        info.records += 1
        info.kinds[record_kind(metadata)] += 1
        record = record_from_metadata(metadata, None, entry.when, reporter(lineno), record_type=TraceRecord)
        record.payload = payload
        rank = record.metadata.get("rank")
        if is_count(rank) and rank not in info.ranks:
            info.ranks.append(rank)
        record.line, record.payload_failed = lineno, failed
        return record

    with open(path, "rb") as f:
        lineno = blanks = position = 0
        ends = True
        for raw, run in _lines_and_runs(f):
            start, position = position, position + len(raw)
            if run:  # whole payload lines, ASCII, no CR: as the line-by-line branch below, at once
                lineno += run
                if skip_payload:
                    continue
                if pending is not None and "has_payload" in pending.metadata:
                    for _ in range(blanks):
                        pending.add(b"", start)
                    pending.add(raw[1:-1].replace(b"\n\t", b"\n"), position, run)
                    blanks = 0
                    continue
                for stray in range(lineno - run + 1, lineno + 1):
                    info.stray_lines += 1
                    problem("stray_line", stray, "a payload line with no record that expects a payload; skipped")
                continue
            lineno += 1
            if not raw.isascii() and _not_text(raw):
                problem("bad_text", lineno, "holds bytes that are not UTF-8 text, read as U+FFFD (or that character "
                        "itself)")
            ends = raw.endswith(b"\n")
            body = raw[:-1] if ends else raw
            if body.endswith(b"\r"):  # a log copied through Windows (CRLF); torch's md5 is over "\n"
                body = body[:-1]
            if body.startswith(b"\t"):
                if skip_payload:
                    continue
                if pending is not None and "has_payload" in pending.metadata:
                    for _ in range(blanks):  # blank payload lines whose tab an editor stripped
                        pending.add(b"", start)
                    pending.add(body[1:], position)
                    blanks = 0
                else:
                    info.stray_lines += 1
                    problem("stray_line", lineno, "a payload line with no record that expects a payload; skipped")
                continue
            if not body.strip():
                blanks += 1
                blank_end = position
                continue
            if pending is not None:
                yield finish(pending, blanks)
                pending = None
            blanks, skip_payload = 0, False
            line = body.decode("utf-8", "replace")
            match = _GLOG.match(line)
            brace = line.find("{", match.end() if match else 0)
            if not match or brace < 0:
                info.stray_lines += 1
                problem("stray_line", lineno, "not a structured-trace line (no glog prefix and JSON envelope); "
                        "skipped")
                continue
            try:
                metadata = json.loads(line[brace:])
                if not isinstance(metadata, dict):
                    raise ValueError("the envelope is not a JSON object")
            except (ValueError, RecursionError) as exc:
                why = "nested deeper than Python reads" if isinstance(exc, RecursionError) else exc
                if not ends:
                    info.truncated = True
                    problem("truncated", lineno, "the last line is cut off (the job was still writing, "
                            "or the file was truncated); skipped")
                else:
                    info.corrupted_lines += 1
                    problem("corrupted_json", lineno, f"corrupted JSON envelope ({why}); skipped")
                continue
            if ("\\ud" in line or "\\uD" in line) and _LONE_SURROGATE.search(line, brace):
                metadata = without_surrogates(metadata)
                problem("bad_text", lineno, "a string holds a lone surrogate (\\ud800…, not Unicode text); "
                        "shown as U+FFFD")
            if "str" in metadata and len(metadata) <= 2:
                entry = metadata["str"]
                if isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str) and is_count(entry[1]):
                    repeated = repeated or strings.get(entry[1]) == entry[0]  # a process interns a name once
                    strings[entry[1]] = entry[0]
                    info.strings += 1
                else:
                    info.corrupted_lines += 1
                    problem("bad_field", lineno, f"str = {shown_value(entry)}: not a string-table entry "
                            "[text, index]; skipped", "str")
                continue
            key = hash(line)
            seen_before = seen.get(key)
            # torch itself may log one chromium event twice in a millisecond: a repeat of one counts only
            # in a second copy of the log (its string table or another record repeated)
            if seen_before is not None and (repeated or next(iter(metadata), None) != "chromium_event"):
                repeated = True
                duplicates.append((lineno, seen_before))
                if strict:
                    problem("duplicate_records", lineno, f"the same record as line {seen_before}")
                skip_payload = True
                continue
            seen.setdefault(key, lineno)
            pending = _Pending(metadata, lineno, _glog_time(match, year, second_cache), position)
        if pending is not None:
            if not ends and "has_payload" in pending.metadata:
                info.truncated = True
            yield finish(pending, blanks)
        info.lines = lineno
    if duplicates:
        (line, first), more = duplicates[0], len(duplicates) - 1
        problem("duplicate_records", line,
                f"{len(duplicates)} records repeat earlier ones exactly (same time, thread and content; first: the "
                f"record of line {first}): the log holds the same records twice (concatenated or copied twice?); "
                "the repeats are skipped" + (f" ({more} more after this one)" if more else ""))


def _not_text(raw: bytes) -> bool:
    """A line that is not UTF-8, or holds U+FFFD itself (what a lossy copy left)."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return b"\xef\xbf\xbd" in raw


class StoredRecords:
    """The raw records of a loaded trace, read again from its file each time they are iterated
    (``save_trace``), so a loaded capture does not hold them; the file must be as it was loaded."""

    def __init__(self, path, count: int):
        self.path = Path(path)
        self.count = count
        self.stamp = self._stamp()

    def _stamp(self):
        try:
            stat = self.path.stat()
        except OSError:
            return None
        return stat.st_size, stat.st_mtime_ns

    def __len__(self) -> int:
        return self.count

    def __bool__(self) -> bool:
        return self.count > 0

    def __iter__(self):
        if self._stamp() != self.stamp:
            raise TraceError(f"{shown_path(self.path)}: changed or removed since it was loaded; its records are "
                             "read from it again when asked for: load it again")
        yield from read_records(self.path, info=TraceInfo(file=shown_path(self.path)), strings={})


def _torch_version(records, report) -> str | None:
    """torch's ``torch_version`` artifact (2.12+), else ``compilation_metrics.pytorch_version`` (2.11). A
    version that is not text goes to ``report(record, field, value, why)`` and is left out."""
    for record in records:
        if record.kind == "artifact:torch_version" and record.payload:
            try:
                body = json.loads(record.payload)
            except (ValueError, RecursionError):
                report(record, "torch_version", record.payload[:80], "not JSON")
                break
            if not isinstance(body, dict):
                report(record, "torch_version", body, "not an object")
                break
            version = body.get("pytorch_version")
            if isinstance(version, str):
                return shown_text(version)
            report(record, "torch_version.pytorch_version", version, "not a version string")
            break
    for record in records:
        if record.kind == "compilation_metrics":
            version = record.metadata["compilation_metrics"].get("pytorch_version")  # checked: str or None
            if version:
                return version
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
    record's envelope and its tab-indented payload with a fresh md5 — except a payload that failed its
    check when it was read, which keeps the md5 (or the bad ``has_payload``) it came with, so a checker
    (``tlparse --strict``) still rejects it (``log:*`` records from plain loggers are not part of
    TORCH_TRACE and are left out)."""
    first = min((r.time for r in records), default=time.time())
    for index, text in sorted(strings.items()):
        yield f"{_glog_prefix(first)} {json.dumps({'str': [text, index]})}"
    for record in records:
        if record.kind.startswith("log:"):
            continue
        metadata = {k: v for k, v in record.metadata.items() if k != "has_payload"}
        if record.payload_failed:
            metadata["has_payload"] = record.metadata.get("has_payload")
        elif record.payload is not None:
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
    with atomic_file(path) as f:  # compiler.stages.files: the old file or the whole new one, never a part
        for line in trace_lines(records, strings):
            f.write(line + "\n")
    return path


METHODS["save_trace"] = save_trace  # Capture.save_trace (compiler.stages.capture)
