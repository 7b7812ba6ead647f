"""Follow a running job from another process: ``compiler.watch(job_dir)`` in a notebook, ``python -m compiler
watch DIR`` in a terminal.

Reads what the ranks append to the directory, as it is written: each rank's watch file
(``tcompile_watch_rank_N.jsonl``, written by ``compiler.watch(job_dir=DIR)``: steps, compiles and alerts
with their step and fix) and TORCH_TRACE logs (``dedicated_log_torch_trace_rank_N_*.log``: compiles,
recompiles and graph breaks, without steps) for a rank that writes no watch file. Only whole lines are
read; a record whose payload is still being written waits for the rest (its md5, computed as the lines come,
says when it is whole; one whose next record begins first — cut, or two writers interleaved — is left out and
said).

Read as the loader reads (``compiler.readers.job``, ``compiler.readers.watch_log``): the same entries refused
(symlinks out of the directory, FIFOs, a rank that is no number, a second file of one rank), every line or
field left out listed in ``problems`` (and an event), never raised; a file truncated or replaced (a rank that
restarted) followed from its new start, said. Bounded: a poll reads at most ``READ_BYTES`` a file and stops
at its ``deadline``; a rank keeps a fixed-size step histogram; a payload's head is kept, the rest hashed.
Ranks appear as their first line does; divergences between ranks (``compiler.readers.divergences``, the
loaded job's own account) are named as soon as every rank is past the step where some ranks did something
the others did not (a record written later, for logs without steps).
Imports no torch.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from compiler.drawing import draw, in_jupyter_kernel, renderer
from compiler.readers.divergences import Divergence, Divergences, plain_reason, size_change_fix
from compiler.readers.job import _RANK_IN_NAME, TRACE_PREFIX, _regular_files, is_watch_name, watch_ranks
from compiler.stages.files import shown_path
from compiler.readers.trace import _GLOG, _MD5, TraceError, TraceProblem, shown_value
from compiler.readers.watch_log import (MAX_PROBLEMS, MAX_SECONDS, Alert, LineReader, RankWatch, bounded_number,
                                        cut)

POLL_S = 0.25
GRACE_S = 2.0  # a rank whose records are this much later than another's event has passed it (trace logs)
TRACE_WAIT_S = 10.0  # … or this long after it: a rank in step with the others would have logged the same by then
MAX_ALERTS = 100_000  # alerts a follower keeps in all (each rank keeps at most MAX_KEPT of its own)
PAYLOAD_HEAD = 64 << 10  # bytes of a payload kept (the follower reads only its first lines); the rest is hashed


class TraceTail:
    """The records appended to a TORCH_TRACE log since the last read, as (metadata, payload, time) — a record
    with a payload is given when its payload is whole (its md5, computed once as its lines come, matches);
    a record whose payload is not whole when the next record begins (cut, or another writer's lines
    interleaved) is given without its payload (None) and listed in ``problems`` (line, kind, message), as are
    lines that are no record. A payload's first ``PAYLOAD_HEAD`` bytes are kept; the rest is only hashed."""

    def __init__(self, path):
        self.lines = LineReader(path, inside=Path(path).parent)
        self.pending: list | None = None  # [metadata, head pieces, md5, time, hash, line, size]
        self.problems: list[tuple[int | None, str, str]] = []

    def records(self) -> list[tuple[dict, str | None, float]]:
        out = []
        lines = self.lines.numbered()
        if self.lines.restarted:
            self.pending = None
        skipped = [line for line, _ in self.lines.problems if line]  # over-long lines, left out by the reader
        for line_no, raw in lines:
            while skipped and skipped[0] < line_no:  # a payload that lost a line can no longer match its md5
                skipped.pop(0)
                if self.pending is not None:
                    self.pending[6] = -1
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            if raw.startswith(b"\t"):
                if self.pending is not None:
                    self._add(raw[1:])
                    self._finish_if_whole(out)
                elif raw.strip():
                    self.problems.append((line_no, "stray_line", "a payload line with no record before it; skipped"))
                continue
            if self.pending is not None:
                self._cut(out, line_no)
            line = raw.decode("utf-8", "replace")
            match = _GLOG.match(line)
            brace = line.find("{", match.end() if match else 0)
            if not match or brace < 0:
                if line.strip():
                    self.problems.append((line_no, "stray_line", "not a TORCH_TRACE record line; skipped"))
                continue
            try:
                metadata = json.loads(line[brace:])
            except (ValueError, RecursionError):
                metadata = None
            if not isinstance(metadata, dict):
                self.problems.append((line_no, "corrupted_json", "a record whose JSON does not read (cut, or "
                                                                  "another writer's line joined to it); skipped"))
                continue
            md5 = metadata.get("has_payload")
            self.pending = [metadata, [], md5, time.time(), hashlib.md5(usedforsecurity=False), line_no, 0]
            if not isinstance(md5, str) or not _MD5.match(md5):
                if md5 is not None:
                    self.problems.append((line_no, "bad_field", f"has_payload = {shown_value(md5)}: not an md5; "
                                                                 "its payload is not read"))
                self.pending[2] = None
                self._finish(out)
        if skipped and self.pending is not None:
            self.pending[6] = -1
        for line_no, message in self.lines.problems:
            self.problems.append((line_no, "long_line" if line_no else "unreadable_file", message))
        self.lines.problems.clear()
        return out

    def _add(self, piece: bytes) -> None:
        pending = self.pending
        if pending[6]:
            pending[4].update(b"\n")
        pending[4].update(piece)
        if 0 <= pending[6] < PAYLOAD_HEAD:
            pending[1].append(piece[:PAYLOAD_HEAD - pending[6]])
        pending[6] = pending[6] + len(piece) + 1 if pending[6] >= 0 else -1

    def _finish_if_whole(self, out) -> None:
        if self.pending[6] >= 0 and self.pending[4].hexdigest() == self.pending[2]:
            self._finish(out)

    def _cut(self, out, line_no: int) -> None:
        metadata, _, _, when, _, began, _ = self.pending
        self.pending = None
        self.problems.append((began, "payload_mismatch", "its payload does not match its md5 when the next record "
                                                         f"begins (line {line_no}): cut, or another writer's lines "
                                                         "interleaved; the payload is left out"))
        out.append((metadata, None, when))

    def _finish(self, out) -> None:
        metadata, pieces, md5, when = self.pending[:4]
        self.pending = None
        payload = b"\n".join(pieces).decode("utf-8", "replace") if md5 is not None else None
        out.append((metadata, payload, when))


@dataclass
class RankState:
    """One rank as followed so far: its watch file's content (``watch``), or what its TORCH_TRACE log
    said (``from_trace``: compiles and alerts without steps)."""

    rank: int
    watch: RankWatch
    source: str  # "watch" or "torch_trace"
    file: str
    last_time: float = 0.0  # when its latest line was read
    reasons: dict = field(default_factory=dict)  # compile id → recompile reason (trace logs)
    taken: int = 0  # its watch's problems already given as events

    @property
    def steps(self) -> int | None:
        return self.watch.steps if self.source == "watch" else None

    @property
    def stopped(self) -> bool:
        return self.watch.stop is not None


class Follower:
    """Follows a job directory (see the module docstring). ``poll()`` reads what is new and returns the new
    events — ``("rank", rank)``, ``("alert", Alert)``, ``("divergence", Divergence)``, ``("stop", rank)``,
    ``("restart", (rank, why))`` (its file was truncated or replaced: followed from its new start),
    ``("problem", TraceProblem)`` (a line, field or entry left out, also kept in ``problems``);
    ``start()`` polls in a background thread (for a notebook) until ``stop()``. ``ranks``, ``alerts``,
    ``divergences``, ``table()``, ``snapshot()`` (what the live panel draws)."""

    def __init__(self, path, *, interval: float = POLL_S, show: bool | None = None):
        self.path = Path(path)
        if not self.path.is_dir():
            raise TraceError(f"{shown_path(self.path)}: not a directory (compiler.watch follows a job directory "
                             "its ranks write into: compiler.watch(job_dir=...) or TORCH_TRACE)")
        try:
            os.listdir(self.path)
        except OSError as exc:
            raise TraceError(f"{shown_path(self.path)}: cannot list the directory ({exc.strerror or exc})") from None
        self.interval, self.show = interval, show
        self.ranks: dict[int, RankState] = {}
        self.alerts: list[Alert] = []
        self.divergences: list[Divergence] = []
        self._divergences = Divergences()
        self._readers: dict[str, object] = {}
        self._named: set = set()
        self._thread: threading.Thread | None = None
        self._halt = threading.Event()
        self._lock = threading.Lock()
        self.listeners: list = []  # called with each new event (from the polling thread)
        self.errors: list[str] = []
        self.problems: list[TraceProblem] = []  # what was left out (lines, fields, entries), as the loader lists it
        self.problems_left_out = 0
        self.alerts_left_out = 0  # alerts beyond MAX_ALERTS (given as events, not kept)
        self.panel = None
        self._seen: set[str] = set()  # entries classified (followed or refused)
        self._guessed: set[int] = set()  # ranks given to logs without one of their own (or a second of one rank)
        self._listing_error: str | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # --- reading ------------------------------------------------------------------------------------

    def poll(self, deadline: float | None = None) -> list[tuple]:
        """Read what is new (at most ``READ_BYTES`` a file; no further file once ``time.monotonic()`` passes
        ``deadline``: the rest the next poll) and return the new events."""
        with self._lock:
            events = []
            self._discover(events)
            for name, reader in list(self._readers.items()):
                if deadline is not None and time.monotonic() > deadline:
                    break
                state = self._state_of(name)
                if state is None:
                    continue
                if isinstance(reader, TraceTail):
                    self._read_trace(state, reader, events)
                else:
                    self._read_watch(state, reader, events)
            self._diverge(events)
        for event in events:
            for listener in list(self.listeners):
                try:
                    listener(event)
                except Exception as exc:  # noqa: BLE001 — a listener's bug must not stop the following
                    self.errors.append(f"listener: {type(exc).__name__}: {exc}")
        return events

    def _read_watch(self, state: RankState, reader: LineReader, events) -> None:
        lines = reader.numbered()
        if reader.restarted:
            self._restarted(state, reader.restarted, events)
        for line, raw in lines:
            state.last_time = time.time()
            kind = state.watch.add(raw, line)
            if kind == "alert":
                self._alert(state.watch.alerts[-1], events)
            elif kind == "stop":
                events.append(("stop", state.rank))
        state.watch.reader_problems(reader)
        self._take_problems(state, events)

    def _alert(self, alert: Alert, events) -> None:
        """A new alert: kept (up to ``MAX_ALERTS`` in all, however often ranks restart) and given as an event."""
        if len(self.alerts) < MAX_ALERTS:
            self.alerts.append(alert)
        else:
            self.alerts_left_out += 1
        events.append(("alert", alert))

    def _restarted(self, state: RankState, why: str, events) -> None:
        """The rank's file started again (a new run of the rank): its steps, compiles and alerts start again;
        the alerts already given stay in ``alerts``."""
        state.watch = RankWatch(state.rank, state.watch.file)
        state.reasons.clear()
        state.taken = 0
        self._problem(TraceProblem(shown_path(self.path / state.file), None, "restarted", f"{why}: rank {state.rank} "
                                   "restarted; followed from the file's new start"), events)
        events.append(("restart", (state.rank, why)))

    def _take_problems(self, state: RankState, events) -> None:
        for found in state.watch.problems[state.taken:]:
            self._problem(found, events)
        state.taken = len(state.watch.problems)

    def _problem(self, found: TraceProblem, events) -> None:
        if len(self.problems) >= MAX_PROBLEMS * 5:
            self.problems_left_out += 1
            return
        self.problems.append(found)
        events.append(("problem", found))

    def _discover(self, events) -> None:
        try:
            entries = sorted(self.path.iterdir())
        except OSError as exc:
            why = f"cannot list the directory ({exc.strerror or exc})"
            if why != self._listing_error:
                self._problem(TraceProblem(shown_path(self.path), None, "unreadable_file", why), events)
            self._listing_error = why
            return
        self._listing_error = None
        new = [entry for entry in entries if entry.name not in self._seen]
        if not new:
            return
        files, refused = _regular_files(self.path, new)
        for found in refused:  # what the loader refuses (a symlink out of the directory, a FIFO, …), said once
            self._problem(found, events)
        self._seen.update(entry.name for entry in new if entry not in files)
        watches = [f for f in files if is_watch_name(f.name)]
        known = {r: st.file for r, st in self.ranks.items() if st.source == "watch"}
        by_rank, problems = watch_ranks(watches, known)
        for found in problems:
            self._problem(found, events)
        self._seen.update(f.name for f in watches)
        for rank, path in sorted(by_rank.items()):
            name = path.name
            self._readers[name] = LineReader(path, inside=self.path)
            previous = self.ranks.get(rank)
            if previous is not None and rank in self._guessed:  # a log shown as this rank gives it to its owner
                self._move_guessed(rank, events)
                previous = None
            if previous is not None:  # its trace's alerts (no steps) give way to the watch's
                self.alerts = [a for a in self.alerts if a not in previous.watch.alerts]
            self.ranks[rank] = RankState(rank, RankWatch(rank, shown_path(path)), "watch", name)
            if previous is None:
                events.append(("rank", rank))
        for path in files:
            name = path.name
            if is_watch_name(name) or name in self._seen:
                continue
            self._seen.add(name)
            if not (name.startswith(TRACE_PREFIX) and name.endswith(".log")):
                continue
            named = _RANK_IN_NAME.search(name)
            rank = int(named[1]) if named else None
            if rank is not None and rank in self._guessed:
                self._move_guessed(rank, events)
            owner = self.ranks.get(rank) if rank is not None else None
            if owner is not None and owner.source == "watch":
                continue  # a watch file wins over the rank's trace (it has steps)
            if rank is None or owner is not None:
                why = f"a second log of rank {rank} (also {owner.file})" if owner is not None else "no rank in its name"
                rank = self._guess()
                self._problem(TraceProblem(shown_path(path), None, "rank_guessed", f"{why}; shown as rank {rank}"),
                              events)
            self._readers[name] = TraceTail(path)
            self.ranks[rank] = RankState(rank, RankWatch(rank, shown_path(path)), "torch_trace", name)
            events.append(("rank", rank))

    def _guess(self, taken: int = -1) -> int:
        """A rank for a log that names none (or names a rank another log has): after every rank seen (and
        ``taken``), like the loader's guess; it moves on if a file of that rank appears later."""
        rank = max([*self.ranks, taken], default=-1) + 1
        self._guessed.add(rank)
        return rank

    def _move_guessed(self, rank: int, events) -> None:
        """A file of ``rank`` appeared while a log without a rank was shown as it: that log moves to a new rank."""
        state = self.ranks.pop(rank)
        self._guessed.discard(rank)
        new = self._guess(rank)
        state.rank = state.watch.rank = new
        for alert in state.watch.alerts:
            alert.rank = new
        self.ranks[new] = state
        self._problem(TraceProblem(shown_path(self.path / state.file), None, "rank_guessed", f"shown as rank {new}, "
                                   f"not {rank}: a file of rank {rank} appeared"), events)
        events.append(("rank", new))

    def _state_of(self, name: str) -> RankState | None:
        return next((s for s in self.ranks.values() if s.file == name), None)

    def _read_trace(self, state: RankState, tail: TraceTail, events) -> None:
        records = tail.records()
        if tail.lines.restarted:
            self._restarted(state, tail.lines.restarted, events)
        for line, kind, message in tail.problems:
            self._problem(TraceProblem(shown_path(self.path / state.file), line, kind, message), events)
        tail.problems.clear()
        for metadata, payload, when in records:
            state.last_time = when
            cid = (f"{metadata['frame_id']}/{metadata['frame_compile_id']}"
                   if isinstance(metadata.get("frame_id"), int) and isinstance(metadata.get("frame_compile_id"), int)
                   else None)
            artifact = metadata.get("artifact") if isinstance(metadata.get("artifact"), dict) else {}
            new = []
            if artifact.get("name") == "recompile_reasons" and cid:
                if len(state.reasons) < 10_000:
                    state.reasons[cid] = _first_reason(payload)
            elif artifact.get("name") == "dynamo_graph_break_reason" and payload:
                head = cut(payload.strip().splitlines()[0], 300) if payload.strip() else "graph break"
                if (state.rank, head) not in self._named and state.watch.has_room("alert", None):  # each rank's own
                    self._named.add((state.rank, head))  # new breaks (compared between ranks); bounded: MAX_KEPT a rank
                    new.append(Alert("graph_break", None, state.rank, when, head, compile_id=cid,
                                     compile_ids=[cid] if cid else []))
            elif isinstance(metadata.get("compilation_metrics"), dict):
                new += self._compiled(state, cid, metadata["compilation_metrics"], when, events)
            for alert in new:
                if state.watch.has_room("alert", None):
                    state.watch.alerts.append(alert)
                    self._alert(alert, events)

    def _compiled(self, state: RankState, cid, metrics: dict, when: float, events) -> list[Alert]:
        name = cut(metrics["co_name"], 200) if isinstance(metrics.get("co_name"), str) else "?"
        value = metrics.get("entire_frame_compile_time_s")
        seconds = bounded_number(value, MAX_SECONDS) if value is not None else None
        if value is not None and seconds is None:
            self._problem(TraceProblem(shown_path(self.path / state.file), None, "bad_field",
                                       "compilation_metrics.entire_frame_compile_time_s"
                                       f" = {shown_value(value)}: not a number from 0 to {MAX_SECONDS:g} s; left out",
                                       "compilation_metrics.entire_frame_compile_time_s"), events)
        reason = state.reasons.pop(cid, None) or (cut(metrics["recompile_reason"])
                                                   if isinstance(metrics.get("recompile_reason"), str) else None)
        fail = cut(metrics["fail_reason"]) if isinstance(metrics.get("fail_reason"), str) else None
        what = ("recompile limit" if fail and "recompile limit" in fail.lower() else "failed" if fail
                else "recompile" if reason else "first")
        if state.watch.has_room("compile", None):
            state.watch.compiles.append({"step": None, "compile_id": cid, "frame": name, "seconds": seconds,
                                         "what": what, "time": when})
        took = f" ({seconds:.3g} s)" if seconds else ""
        if what == "recompile":
            return [Alert("recompile", None, state.rank, when, f"frame {name} recompiled as {cid}{took}: "
                          f"{plain_reason(reason)}", compile_id=cid, compile_ids=[cid] if cid else [], frame=name,
                          guard=reason.split(". ")[0], seconds=seconds, fix=size_change_fix(reason))]
        if what == "recompile limit":
            return [Alert("recompile_limit", None, state.rank, when, f"frame {name} reached the recompile limit: "
                          f"{fail.splitlines()[0][:200]}", compile_id=cid, compile_ids=[cid] if cid else [], frame=name)]
        if what == "failed":
            return [Alert("compile_failed", None, state.rank, when, f"compiling frame {name} ({cid}) failed or was "
                          f"skipped to eager: {fail.splitlines()[0][:200]}", compile_id=cid,
                          compile_ids=[cid] if cid else [], frame=name)]
        return []

    # --- divergences --------------------------------------------------------------------------------

    def _diverge(self, events) -> None:
        """Name each event one rank's compiles differ from the others' in, once every rank is past it
        (``compiler.readers.divergences``: the loaded job's own account)."""
        stepless = [rank for rank, state in self.ranks.items() if state.source != "watch"]
        for divergence in self._divergences.update({r: s.watch for r, s in self.ranks.items()}, stepless,
                                                   past=lambda rank, alert: _past(self.ranks[rank], alert)):
            self.divergences.append(divergence)
            events.append(("divergence", divergence))

    # --- background, results ------------------------------------------------------------------------

    def start(self) -> "Follower":
        """Poll in a background thread every ``interval`` seconds until ``stop()`` (and show the live panel in
        a notebook)."""
        if self.running:
            return self
        self._halt.clear()
        self._thread = threading.Thread(target=self._run, name="tcompile-follow", daemon=True)
        self._thread.start()
        if self.show or (self.show is None and in_jupyter_kernel()):
            show = renderer("watch_panel")
            if show is not None:
                try:
                    self.panel = show(self)
                except Exception as exc:  # noqa: BLE001 — no panel: the following goes on, the error is kept
                    self.errors.append(f"panel: {type(exc).__name__}: {exc}")
        return self

    def _run(self) -> None:
        """Poll at once (``start`` returns before the first poll), then every ``interval``; a poll is bounded
        (``READ_BYTES`` a file, and its deadline), so ``stop()`` is heard within a poll."""
        while True:
            self._safe_poll(time.monotonic() + max(self.interval, 1.0))
            if self._halt.wait(self.interval):
                return

    def _safe_poll(self, deadline: float | None = None) -> None:
        try:
            self.poll(deadline)
        except Exception as exc:  # noqa: BLE001 — keep following; the error is shown, never raised
            if len(self.errors) < 100:
                self.errors.append(f"poll: {type(exc).__name__}: {exc}")

    def stop(self) -> "Follower":
        """Stop polling (a last poll reads what is new) and the panel; never raises."""
        self._halt.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        self._safe_poll(time.monotonic() + 5.0)
        if self.panel is not None:
            try:
                self.panel.finish()
            except Exception as exc:  # noqa: BLE001 — the panel's failure is shown, never raised
                self.errors.append(f"panel: {type(exc).__name__}: {exc}")
        return self

    @property
    def done(self) -> bool:
        """Every rank seen has written its stop line (watch files; a TORCH_TRACE log has none)."""
        return bool(self.ranks) and all(s.stopped for s in self.ranks.values())

    def table(self):
        import pandas as pd

        rows = [{"step": a.step, "rank": a.rank, "kind": a.kind, "severity": a.severity, "compile_id": a.compile_id,
                 "frame": a.frame, "sentence": a.sentence, "fix": a.fix.get("title") if a.fix else None,
                 "seconds": a.seconds} for a in sorted(self.alerts, key=_order)]
        return pd.DataFrame(rows, columns=["step", "rank", "kind", "severity", "compile_id", "frame", "sentence",
                                           "fix", "seconds"])

    def table_text(self) -> str:
        """The alerts as a plain-text table (no pandas), then the divergences."""
        rows = [["step", "rank", "kind", "compile", "seconds", "what", "fix"]]
        for a in sorted(self.alerts, key=_order):
            rows.append([str(a.step) if a.step is not None else "?", str(a.rank), a.kind, a.compile_id or "",
                         f"{a.seconds:.3g}" if a.seconds is not None else "", a.sentence[:110],
                         (a.fix or {}).get("kind") or ""])
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
        steps = ", ".join(f"rank {r}: {s.watch.steps if s.source == 'watch' else '?'} steps"
                          + ("" if s.stopped else " (running)") for r, s in sorted(self.ranks.items()))
        lines.insert(0, f"{shown_path(self.path)}: {len(self.ranks)} ranks ({steps}), {len(self.alerts)} alerts, "
                        f"{len(self.divergences)} divergences"
                        + (f", {len(self.problems) + self.problems_left_out} lines or files left out (problems)"
                           if self.problems else ""))
        lines += ["", *(d.as_text() for d in self.divergences)] if self.divergences else []
        return "\n".join(lines)

    def snapshot(self) -> dict:
        with self._lock:
            ranks = {}
            for rank, state in sorted(self.ranks.items()):
                ranks[rank] = {"steps": state.steps, "series": state.watch.times.series(),
                               "compiles": [[c.get("step"), c.get("seconds"), c.get("compile_id"), c.get("what")]
                                            for c in state.watch.compiles[-500:]]}
            return {"title": f"following {shown_path(self.path)}", "state": "following" if self.running else
                    ("done" if self.done else "stopped"), "steps": max((s.watch.steps for s in self.ranks.values()),
                                                                         default=0),
                    "ranks": ranks, "alerts": sorted(self.alerts, key=lambda a: a.time, reverse=True)[:200],
                    "alerts_total": len(self.alerts), "divergences": list(self.divergences),
                    "errors": list(self.errors[:3]), "problems": [str(p) for p in self.problems[-3:]],
                    "problems_total": len(self.problems) + self.problems_left_out}

    def as_text(self) -> str:
        return self.table_text()

    def _repr_html_(self) -> str:
        return draw("watch", self, self.as_text)

    def __repr__(self) -> str:
        return (f"<Follower {shown_path(self.path)}: {len(self.ranks)} ranks, {len(self.alerts)} alerts, "
                f"{len(self.divergences)} divergences>")


def _order(alert: Alert):
    return (alert.step if alert.step is not None else -1, alert.rank, alert.time)


def _first_reason(payload: str | None) -> str:
    """The first guard failure of a ``recompile_reasons`` payload ("0/0: tensor 'x' size mismatch …")."""
    text = payload or ""
    try:
        value = json.loads(text)
        text = str(value[0]) if isinstance(value, list) and value else str(value)
    except (ValueError, RecursionError):
        pass
    first = text.strip().splitlines()[0] if text.strip() else "a guard failed"
    return re.sub(r"^\d+/\d+: ", "", first)


def _past(other: RankState, alert: Alert) -> bool:
    """Has ``other`` got past the point where ``alert`` happened (so not having done the same is a difference)?"""
    if other.stopped:
        return True
    if alert.step is not None and other.source == "watch":
        return other.watch.steps > alert.step
    return other.last_time >= alert.time + GRACE_S or time.time() >= alert.time + TRACE_WAIT_S
