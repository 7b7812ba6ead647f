"""Follow a running job from another process: ``compiler.watch(job_dir)`` in a notebook, ``python -m compiler
watch DIR`` in a terminal.

Reads what the ranks append to the directory, as it is written: each rank's watch file
(``tcompile_watch_rank_N.jsonl``, written by ``compiler.watch(job_dir=DIR)``: steps, compiles and alerts
with their step and fix) and TORCH_TRACE logs (``dedicated_log_torch_trace_rank_N_*.log``: compiles,
recompiles and graph breaks, without steps) for a rank that writes no watch file. Only whole lines are
read; a record whose payload is still being written waits for the rest (its md5 says when it is whole).
Ranks appear as their first line does; divergences between ranks (``compiler.readers.divergences``, the
loaded job's own account) are named as soon as every rank is past the step where some ranks did something
the others did not (a record written later, for logs without steps).
Imports no torch.
"""
from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from compiler.drawing import draw, in_jupyter_kernel, renderer
from compiler.readers.divergences import Divergence, Divergences, plain_reason, size_change_fix
from compiler.readers.job import _RANK_IN_NAME, TRACE_PREFIX
from compiler.stages.files import shown_path
from compiler.readers.trace import _GLOG, TraceError
from compiler.readers.watch_log import WATCH_PREFIX, WATCH_SUFFIX, Alert, LineReader, RankWatch

POLL_S = 0.25
GRACE_S = 2.0  # a rank whose records are this much later than another's event has passed it (trace logs)
TRACE_WAIT_S = 10.0  # … or this long after it: a rank in step with the others would have logged the same by then


class TraceTail:
    """The records appended to a TORCH_TRACE log since the last read, as (metadata, payload, time) — a record
    with a payload is given when its payload is whole (its md5 matches) or the next record begins."""

    def __init__(self, path):
        self.lines = LineReader(path)
        self.pending: list | None = None  # [metadata, payload lines, md5, time]

    def records(self) -> list[tuple[dict, str | None, float]]:
        out = []
        for raw in self.lines.lines():
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            if raw.startswith(b"\t"):
                if self.pending is not None:
                    self.pending[1].append(raw[1:])
                    self._finish_if_whole(out)
                continue
            if self.pending is not None:
                self._finish(out)
            line = raw.decode("utf-8", "replace")
            match = _GLOG.match(line)
            brace = line.find("{", match.end() if match else 0)
            if not match or brace < 0:
                continue
            try:
                metadata = json.loads(line[brace:])
            except (ValueError, RecursionError):
                continue
            if not isinstance(metadata, dict):
                continue
            self.pending = [metadata, [], metadata.get("has_payload"), time.time()]
            if not isinstance(self.pending[2], str):
                self._finish(out)
        return out

    def _finish_if_whole(self, out) -> None:
        metadata, lines, md5, when = self.pending
        if hashlib.md5(b"\n".join(lines), usedforsecurity=False).hexdigest() == md5:
            self._finish(out)

    def _finish(self, out) -> None:
        metadata, lines, md5, when = self.pending
        self.pending = None
        payload = b"\n".join(lines).decode("utf-8", "replace") if isinstance(md5, str) else None
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

    @property
    def steps(self) -> int | None:
        return self.watch.steps if self.source == "watch" else None

    @property
    def stopped(self) -> bool:
        return self.watch.stop is not None


class Follower:
    """Follows a job directory (see the module docstring). ``poll()`` reads what is new and returns the new
    events — ``("rank", rank)``, ``("alert", Alert)``, ``("divergence", Divergence)``, ``("stop", rank)``;
    ``start()`` polls in a background thread (for a notebook) until ``stop()``. ``ranks``, ``alerts``,
    ``divergences``, ``table()``, ``snapshot()`` (what the live panel draws)."""

    def __init__(self, path, *, interval: float = POLL_S, show: bool | None = None):
        self.path = Path(path)
        if not self.path.is_dir():
            raise TraceError(f"{shown_path(self.path)}: not a directory (compiler.watch follows a job directory "
                             "its ranks write into: compiler.watch(job_dir=...) or TORCH_TRACE)")
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
        self.panel = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # --- reading ------------------------------------------------------------------------------------

    def poll(self) -> list[tuple]:
        with self._lock:
            events = []
            self._discover(events)
            for name, reader in list(self._readers.items()):
                state = self._state_of(name)
                if state is None:
                    continue
                if isinstance(reader, TraceTail):
                    self._read_trace(state, reader, events)
                else:
                    for raw in reader.lines():
                        state.last_time = time.time()
                        kind = state.watch.add(raw)
                        if kind == "alert":
                            alert = state.watch.alerts[-1]
                            self.alerts.append(alert)
                            events.append(("alert", alert))
                        elif kind == "stop":
                            events.append(("stop", state.rank))
            self._diverge(events)
        for event in events:
            for listener in list(self.listeners):
                try:
                    listener(event)
                except Exception as exc:  # noqa: BLE001 — a listener's bug must not stop the following
                    self.errors.append(f"listener: {type(exc).__name__}: {exc}")
        return events

    def _discover(self, events) -> None:
        try:
            names = sorted(p.name for p in self.path.iterdir() if p.is_file())
        except OSError as exc:
            self.errors.append(f"{shown_path(self.path)}: {exc.strerror or exc}")
            return
        watched = {int(m[1]) for n in names if n.startswith(WATCH_PREFIX) and (m := _RANK_IN_NAME.search(n))}
        for name in names:
            if name in self._readers:
                continue
            named = _RANK_IN_NAME.search(name)
            if name.startswith(WATCH_PREFIX) and name.endswith(WATCH_SUFFIX) and named:
                rank = int(named[1])
                self._readers[name] = LineReader(self.path / name)
                previous = self.ranks.get(rank)
                if previous is None or previous.source != "watch":  # a watch file wins over the rank's trace
                    if previous is not None:  # its trace's alerts (no steps) give way to the watch's
                        self.alerts = [a for a in self.alerts if a not in previous.watch.alerts]
                    self.ranks[rank] = RankState(rank, RankWatch(rank), "watch", name)
                    if previous is None:
                        events.append(("rank", rank))
            elif name.startswith(TRACE_PREFIX) and name.endswith(".log"):
                rank = int(named[1]) if named else len(self.ranks)
                self._readers[name] = TraceTail(self.path / name)
                if rank not in self.ranks and rank not in watched:
                    self.ranks[rank] = RankState(rank, RankWatch(rank), "torch_trace", name)
                    events.append(("rank", rank))

    def _state_of(self, name: str) -> RankState | None:
        return next((s for s in self.ranks.values() if s.file == name), None)

    def _read_trace(self, state: RankState, tail: TraceTail, events) -> None:
        for metadata, payload, when in tail.records():
            state.last_time = when
            cid = (f"{metadata['frame_id']}/{metadata['frame_compile_id']}"
                   if isinstance(metadata.get("frame_id"), int) and isinstance(metadata.get("frame_compile_id"), int)
                   else None)
            artifact = metadata.get("artifact") if isinstance(metadata.get("artifact"), dict) else {}
            new = []
            if artifact.get("name") == "recompile_reasons" and cid:
                state.reasons[cid] = _first_reason(payload)
            elif artifact.get("name") == "dynamo_graph_break_reason" and payload:
                head = payload.strip().splitlines()[0][:300] if payload.strip() else "graph break"
                if (state.rank, head) not in self._named:  # each rank's own new breaks (compared between ranks)
                    self._named.add((state.rank, head))
                    new.append(Alert("graph_break", None, state.rank, when, head, compile_id=cid,
                                     compile_ids=[cid] if cid else []))
            elif isinstance(metadata.get("compilation_metrics"), dict):
                new += self._compiled(state, cid, metadata["compilation_metrics"], when)
            for alert in new:
                state.watch.alerts.append(alert)
                self.alerts.append(alert)
                events.append(("alert", alert))

    def _compiled(self, state: RankState, cid, metrics: dict, when: float) -> list[Alert]:
        name = metrics.get("co_name") if isinstance(metrics.get("co_name"), str) else "?"
        seconds = metrics.get("entire_frame_compile_time_s")
        seconds = seconds if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) else None
        reason = state.reasons.pop(cid, None) or (metrics.get("recompile_reason")
                                                   if isinstance(metrics.get("recompile_reason"), str) else None)
        fail = metrics.get("fail_reason") if isinstance(metrics.get("fail_reason"), str) else None
        what = ("recompile limit" if fail and "recompile limit" in fail.lower() else "failed" if fail
                else "recompile" if reason else "first")
        state.watch.compiles.append({"step": None, "compile_id": cid, "frame": name, "seconds": seconds, "what": what,
                                     "time": when})
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
        self.poll()
        self._halt.clear()
        self._thread = threading.Thread(target=self._run, name="tcompile-follow", daemon=True)
        self._thread.start()
        if self.show or (self.show is None and in_jupyter_kernel()):
            show = renderer("watch_panel")
            if show is not None:
                self.panel = show(self)
        return self

    def _run(self) -> None:
        while not self._halt.wait(self.interval):
            try:
                self.poll()
            except Exception as exc:  # noqa: BLE001 — keep following
                self.errors.append(f"poll: {type(exc).__name__}: {exc}")

    def stop(self) -> "Follower":
        self._halt.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        self.poll()
        if self.panel is not None:
            self.panel.finish()
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
                        f"{len(self.divergences)} divergences")
        lines += ["", *(d.as_text() for d in self.divergences)] if self.divergences else []
        return "\n".join(lines)

    def snapshot(self) -> dict:
        with self._lock:
            ranks = {}
            for rank, state in sorted(self.ranks.items()):
                seconds = state.watch.seconds
                per = max(1, -(-len(seconds) // 600))
                ranks[rank] = {"steps": state.steps,
                               "series": [[i, max(seconds[i:i + per])] for i in range(0, len(seconds), per)],
                               "compiles": [[c.get("step"), c.get("seconds"), c.get("compile_id"), c.get("what")]
                                            for c in state.watch.compiles[-500:]]}
            return {"title": f"following {shown_path(self.path)}", "state": "following" if self.running else
                    ("done" if self.done else "stopped"), "steps": max((s.watch.steps for s in self.ranks.values()),
                                                                         default=0),
                    "ranks": ranks, "alerts": sorted(self.alerts, key=lambda a: a.time, reverse=True)[:200],
                    "alerts_total": len(self.alerts), "divergences": list(self.divergences),
                    "errors": list(self.errors[:3])}

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
