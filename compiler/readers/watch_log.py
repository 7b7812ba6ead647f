"""A watch's alerts and its per-rank JSON-lines file (``tcompile_watch_rank_N.jsonl``): the data
``compiler.watch()`` writes while a loop runs and what ``compiler.readers.follow`` and ``load_job`` read.

One JSON object a line, appended and flushed as it happens, so a reader following the file sees each
line within a second. Kinds: ``start`` (format, version, rank, world size, pid, torch), ``steps``
(``first``: the index of the first step, ``seconds``: each step's wall time), ``compile`` (a compile
that ended: its step, id, frame, seconds, what it was), ``alert`` (an ``Alert``), ``stop``. A line
that is not whole yet (the writer is mid-line) is left for the next read; a line that is not a JSON
object of a known kind is counted, never fatal. Imports no torch.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

FORMAT = "tcompile-watch"
VERSION = [1, 0]
WATCH_PREFIX = "tcompile_watch_rank_"
WATCH_SUFFIX = ".jsonl"
LINE_KINDS = ("start", "steps", "compile", "alert", "stop")
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
    def from_json(cls, data: dict) -> "Alert":
        """An alert read from a file: known fields of the right type, others left out."""
        def typed(name, kinds, default=None):
            value = data.get(name)
            return value if isinstance(value, kinds) and not isinstance(value, bool) else default

        step = typed("step", int)
        return cls(kind=str(data.get("kind") or "unknown"), step=step if step is None or step >= 0 else None,
                   rank=typed("rank", int, 0), time=float(typed("time", (int, float), 0.0)),
                   sentence=str(data.get("sentence") or ""), compile_id=typed("compile_id", str),
                   compile_ids=[i for i in data.get("compile_ids") or [] if isinstance(i, str)]
                   if isinstance(data.get("compile_ids"), list) else [],
                   frame=typed("frame", str), guard=typed("guard", str),
                   guards=[g for g in data.get("guards") or [] if isinstance(g, str)]
                   if isinstance(data.get("guards"), list) else [], seconds=typed("seconds", (int, float)),
                   fix=data.get("fix") if isinstance(data.get("fix"), dict) else None)

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


class LineReader:
    """Reads the whole lines appended to a file since the last read; a last line not yet ended by a
    newline waits for the rest (a writer mid-line). ``limit`` bounds one read."""

    def __init__(self, path, limit: int = 64 << 20):
        self.path, self.offset, self.limit = Path(path), 0, limit
        self.partial = b""

    def lines(self) -> list[bytes]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                chunk = f.read(self.limit)
        except OSError:
            return []
        if not chunk:
            return []
        self.offset += len(chunk)
        data = self.partial + chunk
        *whole, self.partial = data.split(b"\n")
        return whole


@dataclass
class RankWatch:
    """What one rank's watch file holds so far: its start line, step times, compiles, alerts."""

    rank: int
    start: dict = field(default_factory=dict)
    seconds: list[float] = field(default_factory=list)
    compiles: list[dict] = field(default_factory=list)
    alerts: list[Alert] = field(default_factory=list)
    stop: dict | None = None
    bad_lines: int = 0

    @property
    def steps(self) -> int:
        return len(self.seconds)

    def add(self, raw: bytes) -> str | None:
        """Read one line into this rank; the line's kind, or None when it is not one this format writes."""
        try:
            line = json.loads(raw)
        except (ValueError, RecursionError):
            line = None
        kind = line.get("kind") if isinstance(line, dict) else None
        if kind not in LINE_KINDS:
            if raw.strip():
                self.bad_lines += 1
            return None
        if kind == "start":
            self.start = line
        elif kind == "steps":
            seconds = line.get("seconds")
            first = line.get("first")
            if isinstance(seconds, list) and isinstance(first, int) and first == len(self.seconds):
                self.seconds.extend(float(s) for s in seconds if isinstance(s, (int, float)))
            else:
                self.bad_lines += 1
        elif kind == "compile":
            self.compiles.append(line)
        elif kind == "alert":
            alert = Alert.from_json(line.get("alert") if isinstance(line.get("alert"), dict) else {})
            alert.rank = self.rank
            self.alerts.append(alert)
        else:
            self.stop = line
        return kind


def read_watch_file(path, rank: int) -> RankWatch:
    """A saved watch file, whole (a line still being written is left out)."""
    watch = RankWatch(rank)
    for raw in LineReader(path).lines():
        watch.add(raw)
    return watch
