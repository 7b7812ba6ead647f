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

from compiler.readers.files import atomic_file, shown_path, shown_text, without_surrogates
from compiler.capturing.records import is_count, record_from_metadata

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


class TraceError(ValueError):
    """A path that is not a readable TORCH_TRACE log (missing, binary, no records), or a problem
    under ``strict=True``."""


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
    info = info if info is not None else TraceInfo(file=shown_path(path))
    strings = strings if strings is not None else {}
    year = time.gmtime().tm_year
    day_cache: dict = {}
    pending = None  # [metadata, envelope line number, payload lines, when]
    seen: dict[int, int] = {}  # hash of an envelope line (its time, thread and JSON) → its line number
    duplicates: list[tuple[int, int]] = []  # (line, the earlier line it repeats)
    skip_payload = repeated = False

    def problem(kind, line, message, field=None):
        found = TraceProblem(info.file, line, kind, message, field)
        if strict:
            raise TraceError(str(found))
        info.problems.append(found)

    def reporter(line):
        def report(field, value, why):
            problem("bad_field", line, f"{field} = {shown_value(value)}: {why}", field)
        return report

    def md5(text):
        return hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest()

    def finish(entry, trailing_blanks=0):
        metadata, lineno, payload_lines, when = entry
        payload, failed = None, False
        expected = metadata.get("has_payload")
        if "has_payload" in metadata and not (isinstance(expected, str) and _MD5.match(expected)):
            failed = True  # kept, unchecked; save_trace writes it back unchecked, never with a fresh md5
            payload = "\n".join(payload_lines) if payload_lines else None
            problem("bad_field", lineno, f"has_payload = {shown_value(expected)}: not an md5 hex digest; the "
                    f"{len(payload_lines)} payload lines are kept unchecked", "has_payload")
        elif expected is not None:
            payload = "\n".join(payload_lines)
            actual = md5(payload)
            if actual != expected and trailing_blanks:  # the payload ended in blank lines
                with_blanks = "\n".join(payload_lines + [""] * trailing_blanks)
                if md5(with_blanks) == expected:
                    payload, actual = with_blanks, expected
            if actual != expected:
                failed = True
                info.payload_mismatches += 1
                problem("payload_mismatch", lineno,
                        f"payload md5 {actual} does not match has_payload {expected} "
                        f"({len(payload_lines)} payload lines); the record is kept as read")
        info.records += 1
        info.kinds[_kind_name(metadata)] += 1
        record = record_from_metadata(metadata, payload, when, reporter(lineno))
        rank = record.metadata.get("rank")
        if is_count(rank) and rank not in info.ranks:
            info.ranks.append(rank)
        record.line, record.payload_failed = lineno, failed
        return record

    with open(path, encoding="utf-8", errors="replace", newline="\n") as f:
        lineno = blanks = 0
        for lineno, line in enumerate(f, 1):
            if "\ufffd" in line:  # cheap; decoding per line in Python cost a third more time
                problem("bad_text", lineno, "holds bytes that are not UTF-8 text, read as U+FFFD (or that character "
                        "itself)")
            ends = line.endswith("\n")
            line = line[:-1] if ends else line
            if line.endswith("\r"):  # a log copied through Windows (CRLF); torch's md5 is over "\n"
                line = line[:-1]
            if line.startswith("\t"):
                if skip_payload:
                    continue
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
            blanks, skip_payload = 0, False
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
            if _LONE_SURROGATE.search(line, start):
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
            seen_before = seen.get(hash(line))
            # torch itself may log one chromium event twice in a millisecond: a repeat of one counts only
            # in a second copy of the log (its string table or another record repeated)
            if seen_before is not None and (repeated or next(iter(metadata), None) != "chromium_event"):
                repeated = True
                duplicates.append((lineno, seen_before))
                if strict:
                    problem("duplicate_records", lineno, f"the same record as line {seen_before}")
                skip_payload = True
                continue
            seen.setdefault(hash(line), lineno)
            pending = [metadata, lineno, [], _glog_time(match, year, day_cache)]
        if pending is not None:
            if not ends and "has_payload" in pending[0]:
                info.truncated = True
            yield finish(pending, blanks)
        info.lines = lineno
    if duplicates:
        (line, first), more = duplicates[0], len(duplicates) - 1
        problem("duplicate_records", line,
                f"{len(duplicates)} records repeat earlier ones exactly (same time, thread and content; first: the "
                f"record of line {first}): the log holds the same records twice (concatenated or copied twice?); "
                "the repeats are skipped" + (f" ({more} more after this one)" if more else ""))


def _kind_name(metadata: dict) -> str:
    from compiler.capturing.records import record_kind

    return record_kind(metadata)


def _torch_version(records) -> str | None:
    """torch's ``torch_version`` artifact (2.12+), else ``compilation_metrics.pytorch_version`` (2.11)."""
    for record in records:
        if record.kind == "artifact:torch_version" and record.payload:
            try:
                version = json.loads(record.payload).get("pytorch_version")
            except (ValueError, AttributeError, RecursionError):
                return None
            return shown_text(version) if isinstance(version, str) else None
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
    with atomic_file(path) as f:  # compiler.readers.files: the old file or the whole new one, never a part
        for line in trace_lines(records, strings):
            f.write(line + "\n")
    return path
