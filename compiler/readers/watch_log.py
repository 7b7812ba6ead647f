"""A watch's alerts and its per-rank JSON-lines file (``tcompile_watch_rank_N.jsonl``): the data
``compiler.watch()`` writes while a loop runs and what ``compiler.readers.follow`` and ``load_job`` read.

One JSON object a line, appended and flushed as it happens, so a reader following the file sees each
line within a second. Kinds: ``start`` (format, version, rank, world size, pid, torch), ``steps``
(``first``: the index of the first step, ``seconds``: each step's wall time), ``compile`` (a compile
that ended: its step, id, frame, seconds, what it was), ``alert`` (an ``Alert``), ``stop``. A line
that is not whole yet (the writer is mid-line) is left for the next read.

Read as a saved trace is (``compiler.readers.trace``): a line that is not a JSON object of a known kind, a field
of the wrong type or a number out of any sane range (a 400-digit integer, ``Infinity``, ``NaN``, a negative
time) is left out and listed in ``RankWatch.problems`` (file, line, cause), never raised. Bounded by design:
a line longer than ``MAX_LINE_BYTES`` is skipped and said (a line without a newline is held up to that much),
one read takes at most ``READ_BYTES``, step times merge into ``StepTimes`` (fixed size), a rank keeps at most
``MAX_KEPT`` compiles and alerts (the rest counted and said), texts are cut to ``MAX_TEXT`` characters. A file
truncated or replaced (a rank that restarted) is read again from its start, and ``LineReader.restarted`` says
so. Imports no torch.
"""
from __future__ import annotations

import json
import os
import stat
import time
from array import array
from dataclasses import asdict, dataclass, field
from pathlib import Path

from compiler.readers.trace import TraceProblem, shown_value
from compiler.stages.files import shown_path, without_surrogates
from compiler.stages.records import number

FORMAT = "tcompile-watch"
VERSION = [1, 0]
WATCH_PREFIX = "tcompile_watch_rank_"
WATCH_SUFFIX = ".jsonl"
LINE_KINDS = ("start", "steps", "compile", "alert", "stop")
MAX_LINE_BYTES = 1 << 20  # a longer line is no line a watch writes: skipped and said (a partial line's ceiling)
READ_BYTES = 4 << 20  # one read of a file (a poll) takes at most this much; the rest the next read
MAX_KEPT = 10_000  # compiles and alerts kept per rank (a recompile limit keeps a real run far below)
MAX_TEXT = 2_000  # characters of a sentence, frame or guard read from a file
MAX_PROBLEMS = 200  # problems listed per file; beyond, counted
STEPS_KEPT = 4_096  # step times a reader keeps per rank (merged two by two beyond: ``StepTimes``)
MAX_SECONDS = 1e6  # a step's or a compile's seconds: more than 11 days is no time a watch measured
MAX_TIME = 1e11  # a wall time (seconds since the epoch): beyond the year 5000 is no time
MAX_STEP = 1 << 40  # a step index or count beyond this is no step a loop reached
CHART_POINTS = 600
UNKNOWN = -1.0  # a step whose time is unknown (its line was lost or bad): kept in place, never drawn
# What an alert is about, most serious first (the order of ``severity``).
ALERT_KINDS = {
    "frame_skipped": "error",      # torch gave up on a frame: it runs eagerly on every call
    "recompile_limit": "error",    # a frame reached the recompile limit: new variants run eagerly
    "compile_failed": "error",
    "recompile": "warning",        # a guard failed: the frame compiled again
    "graph_break": "warning",
    "cudagraph_skip": "warning",
    "cudagraph_rerecord": "warning",
    "new_compile": "info",         # a frame compiled for the first time after the first steps
    "slow_step": "info",           # a step much slower than the median
}


@dataclass
class Alert:
    """One thing worth knowing now, as it happened: the ``step`` it happened in (counted from 0), the
    ``rank``, the wall ``time`` (seconds since the epoch), the compile id(s), a sentence, and the fix the
    fixes engine proposes (``compiler.analyses.fixes``; None where it has none)."""

    kind: str
    step: int | None
    rank: int
    time: float
    sentence: str
    compile_id: str | None = None
    compile_ids: list[str] = field(default_factory=list)
    frame: str | None = None
    guard: str | None = None  # the guard that failed (recompiles)
    guards: list[str] = field(default_factory=list)  # every guard failure its frames saw, torch's text (recompiles)
    seconds: float | None = None  # the compile's time (compiles), the step's time (slow steps)
    fix: dict | None = None  # {"kind", "title", "snippet"} of the proposed fix

    @property
    def severity(self) -> str:
        return ALERT_KINDS.get(self.kind, "info")

    def as_text(self) -> str:
        where = f"step {self.step}" if self.step is not None else "step ?"
        text = f"[rank {self.rank} {where}] {self.kind}: {self.sentence}"
        if self.fix:
            text += f"\n    fix: {self.fix.get('title')}\n" + "\n".join(
                "      " + line for line in str(self.fix.get("snippet") or "").splitlines())
        return text

    def to_json(self) -> dict:
        return {key: value for key, value in asdict(self).items() if value not in (None, [])}

    @classmethod
    def from_json(cls, data: dict, report=None) -> "Alert":
        """An alert read from a file: known fields of the right type and range, others left out (and, with
        ``report(field, value, why)``, said); texts cut to ``MAX_TEXT`` characters."""
        report = report or (lambda field, value, why: None)

        def typed(name, kinds, default=None):
            value = data.get(name)
            if value is None:
                return default
            if isinstance(value, kinds) and not isinstance(value, bool):
                return cut(value) if isinstance(value, str) else value
            report(f"alert.{name}", value, "of the wrong type; left out")
            return default

        def bounded(name, high):
            value = data.get(name)
            if value is None:
                return None
            found = bounded_number(value, high)
            if found is None:
                report(f"alert.{name}", value, f"not a number from 0 to {high:g}; left out")
            return found

        step = data.get("step")
        if step is not None and not is_step(step):
            report("alert.step", step, "not a step index; the step is unknown")
            step = None
        kind = typed("kind", str, "unknown") or "unknown"
        ids = data.get("compile_ids")
        if ids is not None and not isinstance(ids, list):
            report("alert.compile_ids", ids, "not a list; left out")
        ids = [cut(i) for i in ids[:100] if isinstance(i, str)] if isinstance(ids, list) else []
        guards = data.get("guards")
        if guards is not None and not isinstance(guards, list):
            report("alert.guards", guards, "not a list; left out")
        guards = [cut(g) for g in guards[:100] if isinstance(g, str)] if isinstance(guards, list) else []
        fix = data.get("fix")
        if fix is not None and not isinstance(fix, dict):
            report("alert.fix", fix, "not an object; left out")
        fix = ({k: cut(fix[k], 8 * MAX_TEXT) for k in ("kind", "title", "snippet") if isinstance(fix.get(k), str)}
               if isinstance(fix, dict) else None)
        return cls(kind=kind[:60], step=step, rank=0, time=bounded("time", MAX_TIME) or 0.0,
                   sentence=typed("sentence", str, "") or "", compile_id=typed("compile_id", str), compile_ids=ids,
                   frame=typed("frame", str), guard=typed("guard", str), guards=guards,
                   seconds=bounded("seconds", MAX_SECONDS),
                   fix=fix or None)

    def __repr__(self) -> str:
        return f"<Alert {self.kind} rank {self.rank} step {self.step}: {self.sentence[:80]}>"


def watch_file(job_dir, rank: int) -> Path:
    return Path(job_dir) / f"{WATCH_PREFIX}{int(rank)}{WATCH_SUFFIX}"


class WatchLog:
    """The per-rank file a watch appends to: one JSON line per event, flushed at once (a follower reads
    each line within a second). Writing never raises into the user's loop: a failure stops the file and
    is kept in ``error``."""

    def __init__(self, job_dir, rank: int, world_size: int | None, torch_version: str | None):
        self.path = watch_file(job_dir, rank)
        self.rank = rank
        self.error: str | None = None
        self.pending: list[float] = []  # step times not written yet
        self.first = 0  # the index of pending[0]
        self.written_at = time.monotonic()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.file = open(self.path, "w", encoding="utf-8")  # a new run of this rank starts the file again
        except OSError as exc:
            self.file, self.error = None, f"{self.path}: {exc.strerror or exc}"
            return
        self.write({"kind": "start", "format": FORMAT, "version": VERSION, "rank": rank, "world_size": world_size,
                    "pid": os.getpid(), "host": os.uname().nodename if hasattr(os, "uname") else None,
                    "torch": torch_version, "time": time.time()})

    def write(self, *lines: dict) -> None:
        if self.file is None:
            return
        try:
            self.file.write("".join(json.dumps(line, separators=(",", ":"), default=str) + "\n" for line in lines))
            self.file.flush()
        except (OSError, ValueError) as exc:  # disk full, closed: the loop goes on, the file stops
            self.error = f"{self.path}: {getattr(exc, 'strerror', None) or exc}"
            self.close()

    def step(self, seconds: float, now: float) -> None:
        """Keep a step's time; write the steps kept at most once a second."""
        self.pending.append(seconds)
        if now - self.written_at >= 1.0:
            self.flush_steps(now)

    def flush_steps(self, now: float | None = None) -> None:
        if self.pending:
            self.write({"kind": "steps", "first": self.first, "seconds": [round(s, 6) for s in self.pending],
                        "time": time.time()})
            self.first += len(self.pending)
            self.pending = []
        self.written_at = time.monotonic() if now is None else now

    def close(self, stop: dict | None = None) -> None:
        if stop is not None and self.file is not None:
            self.flush_steps()
            self.write(stop)
        if self.file is not None:
            try:
                self.file.close()
            except OSError:
                pass
            self.file = None


def bounded_number(value, high: float) -> float | None:
    """``value`` as a float when it is a number from 0 to ``high`` (not a bool, NaN, infinite, or an int no
    float holds); else None."""
    return float(value) if number(value) and 0 <= value <= high else None


def is_step(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MAX_STEP


def cut(text: str, limit: int = MAX_TEXT) -> str:
    """A text read from a file, cut to ``limit`` characters (saying so) and writable (no lone surrogates)."""
    text = without_surrogates(text)
    return text if len(text) <= limit else text[:limit] + f"… [cut: {len(text):,} characters]"


class StepTimes:
    """Each step's wall time in seconds, bounded: up to ``limit`` values; beyond, neighbouring steps are
    merged two by two into the slower of them (``stride`` steps a value), so a slow step stays visible."""

    def __init__(self, limit: int = 250_000):
        self.limit = max(2, int(limit))
        self.values = array("d")
        self.stride = 1
        self.count = 0
        self._bucket, self._in_bucket = UNKNOWN, 0

    def append(self, seconds: float) -> None:
        """One step's time (``UNKNOWN``: a step whose time is not known)."""
        self.count += 1
        if self.stride == 1:
            self.values.append(seconds)
        else:
            self._bucket = max(self._bucket, seconds)
            self._in_bucket += 1
            if self._in_bucket < self.stride:
                return
            self.values.append(self._bucket)
            self._bucket, self._in_bucket = UNKNOWN, 0
        if len(self.values) >= self.limit:
            v = self.values
            self.values = array("d", map(max, v[0::2], v[1::2]))
            if len(v) % 2:
                self._bucket, self._in_bucket = v[-1], self.stride
            self.stride *= 2

    def __len__(self) -> int:
        return self.count

    def __eq__(self, other) -> bool:
        return isinstance(other, StepTimes) and (self.count, self.stride, self.values, self._bucket, self._in_bucket) == (
            other.count, other.stride, other.values, other._bucket, other._in_bucket)

    def __repr__(self) -> str:
        return f"<StepTimes {self.count} steps, {len(self.values)} kept (stride {self.stride})>"

    def skip(self, steps: int) -> None:
        """``steps`` steps whose times are unknown (a lost line): in place, at a cost bounded by ``limit``."""
        while steps > 0:
            if self.stride > 1 and self._in_bucket:  # fill the bucket begun
                take = min(steps, self.stride - self._in_bucket - 1)
                self.count, self._in_bucket, steps = self.count + take, self._in_bucket + take, steps - take
                if steps:
                    self.append(UNKNOWN)
                    steps -= 1
                continue
            whole = min(steps // self.stride, self.limit - len(self.values) - 1)
            if whole > 0:
                self.values.extend(array("d", [UNKNOWN]) * whole)
                self.count, steps = self.count + whole * self.stride, steps - whole * self.stride
            if steps:
                self.append(UNKNOWN)
                steps -= 1

    def series(self, points: int = CHART_POINTS) -> list[list[float]]:
        """[first step, seconds] pairs for a chart: at most ``points``, each the slowest step of its stretch
        (a stretch of steps whose times are all unknown is left out)."""
        v, stride = self.values, self.stride
        per = max(1, -(-len(v) // points))
        return [[i * stride, top] for i in range(0, len(v), per) if (top := max(v[i:i + per])) >= 0]

    def known(self) -> list[float]:
        """The times kept (merged where ``stride`` > 1), without the unknown ones."""
        return [value for value in self.values if value >= 0]

    def nbytes(self) -> int:
        return self.values.itemsize * self.values.buffer_info()[1] + 64


class LineReader:
    """Reads the whole lines appended to a file since the last read; a last line not yet ended by a newline
    waits for the rest (a writer mid-line), up to ``max_line`` bytes: a longer line is skipped and said
    (``problems``: (line, message)). One read takes at most ``limit`` bytes (``more``: there is more to read).
    A file truncated, replaced (another file under its name) or rewritten from its start is read again
    from its start: ``restarted`` says why (until the next read). ``inside``: a directory the file must lie in —
    a file that becomes a symlink out of it (checked whenever the file is another) is not read, and said."""

    HEAD = 256  # bytes of the file's start kept to tell a file rewritten from its start

    def __init__(self, path, limit: int = READ_BYTES, max_line: int = MAX_LINE_BYTES, inside=None):
        self.path, self.offset, self.limit, self.max_line = Path(path), 0, limit, max_line
        self.inside = os.path.realpath(inside) if inside is not None else None
        self.partial = b""
        self.line = 0  # lines given so far (the number of the last one)
        self.skipping: int | None = None  # bytes of an over-long line skipped so far
        self.identity: tuple | None = None
        self.head = b""
        self.more = False
        self.restarted: str | None = None
        self.error: str | None = None  # why the file cannot be read now (said once per cause)
        self.problems: list[tuple[int | None, str]] = []

    def lines(self) -> list[bytes]:
        return [raw for _, raw in self.numbered()]

    def numbered(self) -> list[tuple[int, bytes]]:
        """The new whole lines, with their line numbers."""
        self.restarted, self.more = None, False
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO never blocks
        except OSError as exc:
            self._cannot(f"cannot be read ({exc.strerror or exc})")
            return []
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                self._cannot("not a regular file, not read")
                return []
            identity = (info.st_dev, info.st_ino)
            if identity != self.identity and self.inside is not None and os.path.commonpath(
                    [self.inside, os.path.realpath(self.path)]) != self.inside:
                self._cannot("a symlink to a file outside the directory, not followed")
                return []
            self.error = None
            if self.identity is not None and identity != self.identity:
                self._restart("replaced by another file")
            elif info.st_size < self.offset:
                self._restart("truncated")
            elif self.head and os.pread(fd, len(self.head), 0) != self.head:
                self._restart("rewritten from its start")
            self.identity = identity
            f.seek(self.offset)
            chunk = f.read(self.limit)
            if len(self.head) < self.HEAD and (chunk or self.offset):
                self.head = os.pread(fd, self.HEAD, 0)[:self.offset + len(chunk)]
        self.more = len(chunk) == self.limit
        self.offset += len(chunk)
        return self._split(chunk)

    def _split(self, chunk: bytes) -> list[tuple[int, bytes]]:
        out, start = [], 0
        while (end := chunk.find(b"\n", start)) >= 0:
            piece, start = chunk[start:end], end + 1
            self.line += 1
            if self.skipping is not None:
                self._too_long(self.skipping + len(piece))
                self.skipping = None
                continue
            if self.partial:
                piece, self.partial = self.partial + piece, b""
            if len(piece) > self.max_line:
                self._too_long(len(piece))
            else:
                out.append((self.line, piece))
        rest = chunk[start:]
        if self.skipping is not None:
            self.skipping += len(rest)
        elif len(self.partial) + len(rest) > self.max_line:  # a partial line's ceiling
            self.skipping, self.partial = len(self.partial) + len(rest), b""
        else:
            self.partial += rest
        return out

    def _too_long(self, size: int) -> None:
        self.problems.append((self.line, f"{size:,} bytes, longer than the {self.max_line:,}-byte limit of a line; "
                                         "skipped"))

    def _restart(self, why: str) -> None:
        self.offset, self.partial, self.line, self.skipping, self.head = 0, b"", 0, None, b""
        self.restarted = why

    def _cannot(self, why: str) -> None:
        if why != self.error:
            self.problems.append((None, why))
        self.error = why


@dataclass
class RankWatch:
    """What one rank's watch file holds so far: its start line, step times (``times``: bounded), compiles,
    alerts, and what was left out (``problems``)."""

    rank: int
    file: str = ""  # the file, as shown in problems
    start: dict = field(default_factory=dict)
    times: StepTimes = field(default_factory=lambda: StepTimes(STEPS_KEPT))
    compiles: list[dict] = field(default_factory=list)
    alerts: list[Alert] = field(default_factory=list)
    stop: dict | None = None
    bad_lines: int = 0
    problems: list[TraceProblem] = field(default_factory=list)
    left_out: int = 0  # problems beyond MAX_PROBLEMS, counted
    dropped: dict = field(default_factory=dict)  # kind → lines beyond MAX_KEPT, counted

    @property
    def steps(self) -> int:
        return self.times.count

    @property
    def seconds(self) -> list[float]:
        """The step times kept (one per step until ``STEPS_KEPT`` steps; merged beyond), unknown ones left out."""
        return self.times.known()

    def problem(self, line: int | None, kind: str, message: str, field: str | None = None) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(TraceProblem(self.file or f"rank {self.rank}", line, kind, message, field))
        else:
            self.left_out += 1
            if self.left_out == 1:
                self.problems.append(TraceProblem(self.file or f"rank {self.rank}", line, "left_out",
                                                  f"more than {MAX_PROBLEMS} problems: the rest are counted, not listed"))

    def add(self, raw: bytes, line: int | None = None) -> str | None:
        """Read one line into this rank; the line's kind, or None when it is not one this format writes."""
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            data = None
        kind = data.get("kind") if isinstance(data, dict) else None
        if not isinstance(kind, str) or kind not in LINE_KINDS:
            if raw.strip():
                self.bad_lines += 1
                self.problem(line, "corrupted_json", "not a JSON object of a kind a watch writes (start, steps, "
                             "compile, alert, stop); skipped")
            return None

        def report(name, value, why):
            self.problem(line, "bad_field", f"{name} = {shown_value(value)}: {why}", name)

        if kind == "start":
            self.start = {k: v for k, v in without_surrogates(data).items()
                          if isinstance(v, (str, int, list)) and not isinstance(v, bool) and len(str(v)) < MAX_TEXT}
        elif kind == "steps":
            self._steps(data, report)
        elif kind == "compile":
            if self.has_room("compile", line):
                self.compiles.append(self._compile(data, report))
        elif kind == "alert":
            body = data.get("alert")
            if not isinstance(body, dict):
                report("alert", body, "not an object; the alert is skipped")
            elif self.has_room("alert", line):
                alert = Alert.from_json(body, report)
                alert.rank = self.rank
                self.alerts.append(alert)
                return kind
            return None
        else:
            self.stop = {"kind": "stop"}
        return kind

    def _steps(self, data: dict, report) -> None:
        first, seconds = data.get("first"), data.get("seconds")
        if not is_step(first) or not isinstance(seconds, list):
            report("steps", {"first": first, "seconds": seconds if not isinstance(seconds, list) else "[…]"},
                     "not a step index and a list of step times; these steps are unknown (later lines say where "
                     "they begin)")
            return
        if first > self.steps:
            gap = first - self.steps
            which = f"step {self.steps} is" if gap == 1 else f"steps {self.steps}–{first - 1} are"
            report("steps.first", first, f"{which} missing (a line lost): unknown time{'s' if gap > 1 else ''}")
            self.times.skip(gap)
        elif first < self.steps:
            report("steps.first", first, f"steps from {first} again (the steps read reach {self.steps}); the "
                                         "repeated ones skipped")
            seconds = seconds[self.steps - first:]
        bad = 0
        for i, value in enumerate(seconds):
            time_ = bounded_number(value, MAX_SECONDS)
            if time_ is None:
                bad += 1
                if bad == 1:
                    report(f"steps.seconds[{i}]", value, f"not a step time (0 to {MAX_SECONDS:g} s); that "
                                                          "step's time is unknown")
            self.times.append(UNKNOWN if time_ is None else time_)
        if bad > 1:
            report("steps.seconds", f"{bad} values", "not step times; their steps' times are unknown")

    def _compile(self, data: dict, report) -> dict:
        out = {}
        step = data.get("step")
        if step is not None and not is_step(step):
            report("compile.step", step, "not a step index; the step is unknown")
            step = None
        out["step"] = step
        for name in ("compile_id", "frame", "what"):
            value = data.get(name)
            if value is not None and not isinstance(value, str):
                report(f"compile.{name}", value, "not a text; left out")
            out[name] = cut(value, 200) if isinstance(value, str) else None
        for name, high in (("seconds", MAX_SECONDS), ("time", MAX_TIME)):
            value = data.get(name)
            found = bounded_number(value, high) if value is not None else None
            if value is not None and found is None:
                report(f"compile.{name}", value, f"not a number from 0 to {high:g}; left out")
            out[name] = found
        return out

    def has_room(self, kind: str, line: int | None) -> bool:
        kept = len(self.compiles if kind == "compile" else self.alerts)
        if kept < MAX_KEPT:
            return True
        self.dropped[kind] = self.dropped.get(kind, 0) + 1
        if self.dropped[kind] == 1:
            self.problem(line, "left_out", f"more than {MAX_KEPT:,} {kind} lines: the rest are counted, not kept")
        return False

    def reader_problems(self, reader: LineReader) -> None:
        """What ``reader`` itself found (over-long lines, a file it cannot read), listed in ``problems``."""
        for line, message in reader.problems:
            self.problem(line, "long_line" if line else "unreadable_file", message)
        reader.problems.clear()


def read_watch_file(path, rank: int) -> RankWatch:
    """A saved watch file, whole (read ``READ_BYTES`` at a time; a line still being written is left out)."""
    watch = RankWatch(rank, shown_path(path))
    reader = LineReader(path)
    while True:
        for line, raw in reader.numbered():
            watch.add(raw, line)
        watch.reader_problems(reader)
        if not reader.more:
            return watch
