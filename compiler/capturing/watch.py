"""``compiler.watch()``: watch a long loop and say, as it happens, what torch.compile did in which step.

    with compiler.watch() as w:          # or: w = compiler.watch(); …; w.stop()
        for batch in loader:
            loss = model(batch).sum(); loss.backward(); opt.step(); opt.zero_grad()
    w.alerts, w.table(), w.capture

Steps are counted by torch's global optimizer step hook (the first optimizer that steps; others are
ignored) or by ``w.step()`` for a loop without an optimizer (calling it turns the hook's counting off).
Each step's wall time is kept (bounded: ``StepTimes``). torch's records reach the watch through the same
handlers as ``compiler.capture()`` (``compiler.capturing.records``; ``session.Recorder`` installs and
removes them), into a collector that keeps them by compile (``_WatchCollector``). At the end of a step in
which compiles ended, their records are assembled into a small capture — the same assembly and fixes
engine as a capture's — and turned into alerts (``compiler.readers.watch_log.Alert``): a recompile with its
failing guard, a graph break at a new place, the recompile limit reached, a frame skipped to eager, a new
compile after the first steps, a CUDA-graph re-record or skip, a step much slower than the median (naming
the compile inside it; the median of the last 64 steps that compiled nothing, kept from the first such
step, so a stall at step 3 is caught). ``w.capture`` is what was compiled while watching (the first
``max_compiles``).

A step that compiles nothing costs one hook call, a clock read, two appends, the running median's two
bisections and two comparisons. Nothing the user's code computes changes; everything installed is removed
on ``stop`` (also on an error or a KeyboardInterrupt in the block). ``job_dir``: each rank also appends its steps and alerts to
``tcompile_watch_rank_N.jsonl`` there (``compiler.readers.watch_log``), which ``compiler.watch(job_dir)`` and
``python -m compiler watch`` follow live (``compiler.readers.follow``).
"""
from __future__ import annotations

import threading
import time
import warnings
from bisect import bisect_left, insort
from collections import deque

from compiler.capturing.records import RecordCollector, _Unparsed
from compiler.drawing import in_jupyter_kernel
from compiler.stages.records import Record
from compiler.readers.job import plain_reason
from compiler.readers.watch_log import ALERT_KINDS, CHART_POINTS, Alert, StepTimes, WatchLog  # noqa: F401

CUDAGRAPH_LOGS = ("cudagraphs_trees", "cudagraphs_utils")  # CUDA-graph recordings and skips, logged at run time
MAX_EVENTS = 10_000  # CUDA-graph log lines waiting for the next step's read
MAX_LOOSE = 1_000  # records with no compile id waiting (read, then dropped)
MAX_GUARDS = 16  # guard failures a recompile alert keeps (torch's reasons against each earlier compile)
RECENT = 64  # the steps the median is taken over (the last ones that compiled nothing, from the first)


class _WatchCollector(RecordCollector):
    """torch's records for a watch, kept by compile until the watch reads them at a step's end
    (``take``); a compile whose ``compilation_metrics`` arrived has ended. CUDA-graph log lines (they
    come at run time, not in a compile) wait in ``events``. Bounded: what waits is read every step."""

    def __init__(self):
        super().__init__(with_artifact_logs=CUDAGRAPH_LOGS)
        self.lock = threading.Lock()
        self.by_id: dict[str | None, list] = {}
        self.ended: list[str | None] = []
        self.events: list[Record] = []
        self.dropped = 0
        self.new = False  # something arrived since the last take: the step's one cheap check
        self.kept: list[Record] = []  # what ``records`` gives (the watch's first compiles)

    @property
    def records(self) -> list[Record]:
        return self.kept

    def _add(self, entry, compile_id) -> None:
        with self.lock:
            if isinstance(entry, Record):
                if len(self.events) < MAX_EVENTS:
                    self.events.append(entry)
                else:
                    self.dropped += 1
            else:
                waiting = self.by_id.setdefault(compile_id, [])
                if compile_id is None and len(waiting) >= MAX_LOOSE:
                    self.dropped += 1
                    return
                if compile_id:
                    self.compile_ids.add(compile_id)
                waiting.append(entry)
                if "compilation_metrics" in entry[0]:
                    self.ended.append(compile_id)
            self.new = True
        if isinstance(entry, _Unparsed):
            for listener in self.listeners:
                listener()

    def take(self, everything: bool = False) -> tuple[dict[str, list[Record]], list[Record], dict[str, list[Record]]]:
        """(the records of each compile that ended, the CUDA-graph log lines, the records of compiles still
        going on or already read — ``everything``: all that waits)."""
        with self.lock:
            ended, self.ended = self.ended, []
            events, self.events = self.events, []
            self.new = False
            done = {cid: self.by_id.pop(cid) for cid in dict.fromkeys(ended) if cid in self.by_id}
            self.by_id.pop(None, None)  # records outside any compile: nothing to alert on
            rest = {}
            if everything:
                rest, self.by_id = self.by_id, {}
        parse = lambda entries: [e.parse() if isinstance(e, _Unparsed) else e for e in entries]  # noqa: E731
        return ({cid: parse(v) for cid, v in done.items() if cid is not None}, events,
                {cid: parse(v) for cid, v in rest.items() if cid is not None})

    def late(self, compile_ids) -> dict[str, list[Record]]:
        """Records that arrived for compiles already read (a backward compiled at its first call)."""
        with self.lock:
            found = {cid: self.by_id.pop(cid) for cid in list(self.by_id) if cid in compile_ids}
        return {cid: [e.parse() if isinstance(e, _Unparsed) else e for e in v] for cid, v in found.items()}


class Watch:
    """A running watch (see the module docstring). ``alerts``: every alert so far (bounded by
    ``max_alerts``); ``steps``: steps counted; ``step_times``: their wall times (``StepTimes``);
    ``table()``: the alerts as a pandas DataFrame; ``on_alert(callback)``; ``capture``: a Capture of the
    first ``max_compiles`` compiles; ``stop()``.

    ``warmup_steps``: compiles in the steps before this one are expected (no ``new_compile`` alert);
    ``slow_ratio`` / ``slow_min_s``: a step is slow when it takes ``slow_ratio`` × the median of the last
    steps that compiled nothing (up to 64, from the first one on; with an even count the upper one) and
    ``slow_min_s`` more than it; ``show``: draw the live panel in a notebook
    (None: when running in a Jupyter kernel with tcompile's explorer installed)."""

    def __init__(self, job_dir=None, *, warmup_steps: int = 2, slow_ratio: float = 4.0, slow_min_s: float = 0.05,
                 max_steps: int = 250_000, max_alerts: int = 1_000, max_compiles: int = 64,
                 max_capture_bytes: int = 64 << 20, show: bool | None = None):
        if slow_ratio <= 1:
            raise ValueError(f"compiler.watch: slow_ratio={slow_ratio!r} must be above 1 (a step slower than the median)")
        self.job_dir = job_dir
        self.warmup_steps, self.slow_ratio, self.slow_min_s = int(warmup_steps), float(slow_ratio), float(slow_min_s)
        self.max_alerts, self.max_compiles, self.max_capture_bytes = int(max_alerts), int(max_compiles), max_capture_bytes
        self.show = show
        self.steps = 0
        self.step_times = StepTimes(max_steps)
        self.alerts: list[Alert] = []
        self.alerts_dropped = 0
        self.compiles: list[dict] = []  # each compile that ended: step, compile id, frame, seconds, what (bounded)
        self.compiles_dropped = 0
        self.errors: list[str] = []  # tcompile's own failures while watching (never raised into the loop)
        self.rank, self.world_size = 0, None
        self.started_at: float | None = None
        self.running = False
        self.log: WatchLog | None = None
        self._callbacks: list = []
        self._collector = _WatchCollector()
        self._recorder = None
        self._recorder_closed = False
        self._hook = None
        self._optimizer: int | None = None
        self._manual = False
        self._last = 0.0
        self._recent: deque = deque(maxlen=RECENT)
        self._ordered: list[float] = []  # ``_recent`` sorted
        self._median: float | None = None
        self._threshold = float("inf")
        self._slow_before = False  # the last step without a compile was slow
        self._kept: dict[str, list[Record]] = {}
        self._kept_bytes = 0
        self._read: set[str] = set()  # compile ids read (their late records go with them)
        self._breaks_seen: set = set()
        self._recorded: set = set()  # CUDA-graph functions recorded once
        self._capture = None
        self._capture_size = -1
        self._environment: dict = {}
        self._options: dict = {}
        self._lock = threading.RLock()  # one step's processing at a time (a step() from two threads)
        self.panel = None

    # --- start and stop -----------------------------------------------------------------------------

    def start(self) -> "Watch":
        if self.running:
            return self
        import torch
        from torch.optim.optimizer import register_optimizer_step_post_hook

        from compiler.stages.environment import distributed, environment, recompile_limits
        from compiler.capturing.session import Recorder

        # one call (is_compiling() calls torch.jit.is_scripting() too); True while Dynamo traces the hook
        self._is_compiling = torch.compiler.is_dynamo_compiling
        where = distributed()
        self.rank, self.world_size = int(where.get("rank", 0)), where.get("world_size")
        try:
            self._environment = {**environment(), "recompile_limits": recompile_limits()}
        except Exception:  # noqa: BLE001 — a tcompile bug must never break the user's code
            self._environment = {}
        recorder = Recorder(artifact_logs=CUDAGRAPH_LOGS, sample_compile=False, collector=self._collector,
                            options={"watch": True})
        self._options = dict(recorder.options)
        recorder.__enter__()
        self._recorder = recorder
        try:
            self._hook = register_optimizer_step_post_hook(self._optimizer_step)
            if self.job_dir is not None:
                self.log = WatchLog(self.job_dir, self.rank, self.world_size, torch.__version__)
                if self.log.error:
                    self._error(f"the watch file could not be written: {self.log.error}")
        except BaseException:
            self._uninstall(None)
            raise
        self.started_at = time.time()
        self.running = True
        self._last = time.perf_counter()
        if self.show or (self.show is None and in_jupyter_kernel()):
            self._show_panel()
        return self

    def stop(self) -> "Watch":
        """Remove every hook, read what is left, close the job file. Safe to call twice."""
        self._stop(None)
        return self

    def _stop(self, exc) -> None:
        if not self.running:
            return
        self.running = False
        try:
            self._uninstall(exc)
        finally:
            with self._lock:
                self._guarded(self._read_compiles, self.steps, everything=True)
            if self.job_dir is not None:  # the job directory loads as a Job (compiler.load_trace), steps included
                from compiler.readers.job import save_rank

                self._guarded(save_rank, self.capture, self.job_dir)
            if self.log is not None:
                self.log.close({"kind": "stop", "steps": self.steps, "time": time.time(),
                                "error": f"{type(exc).__name__}: {exc}"[:500] if exc is not None else None})
            if self.panel is not None:
                self._guarded(self.panel.finish)

    def _uninstall(self, exc) -> None:
        try:
            if self._hook is not None:
                self._hook.remove()
                self._hook = None
        finally:
            if self._recorder is not None and not self._recorder_closed:
                self._recorder_closed = True
                self._recorder.__exit__(type(exc) if exc is not None else None, exc, None)

    def __enter__(self) -> "Watch":
        return self.start()

    def __exit__(self, exc_type, exc, tb) -> bool:
        self._stop(exc)
        return False

    # --- steps --------------------------------------------------------------------------------------

    def _optimizer_step(self, optimizer, args, kwargs) -> None:
        if self._manual or self._is_compiling():  # traced inside a compiled optimizer step: nothing to do
            return
        if self._optimizer != id(optimizer):
            if self._optimizer is not None:  # a second optimizer in the same step: not another step
                return
            self._optimizer = id(optimizer)
        self._end_step()

    def step(self) -> None:
        """End a step (for a loop without an optimizer; from then on optimizer steps are not counted)."""
        self._manual = True
        if self.running:
            self._end_step()

    def _end_step(self) -> None:
        now = time.perf_counter()
        seconds = now - self._last
        self._last = now
        step = self.steps
        self.steps = step + 1
        self.step_times.append(seconds)
        if self._collector.new:
            with self._lock:
                self._guarded(self._read_compiles, step, seconds)
        else:
            if seconds > self._threshold:
                if not self._slow_before:  # one alert for a stretch of slow steps: the median catches up
                    self._guarded(self._slow, step, seconds, [])
                self._slow_before = True
            else:
                self._slow_before = False
            # the running median of the last RECENT steps, from the first: the oldest out, this one in, both kept
            # sorted (two bisections); the upper median, so two steps give the slower (no alert on one fast step)
            recent, ordered = self._recent, self._ordered
            if len(recent) == RECENT:
                del ordered[bisect_left(ordered, recent[0])]
            recent.append(seconds)
            insort(ordered, seconds)
            median = self._median = ordered[len(ordered) >> 1]
            self._threshold = max(median * self.slow_ratio, median + self.slow_min_s)
        if self.log is not None:
            self.log.step(seconds, now)

    # --- reading what torch recorded ----------------------------------------------------------------

    def _read_compiles(self, step: int, seconds: float | None = None, everything: bool = False) -> None:
        done, events, rest = self._collector.take(everything)
        late = self._collector.late(self._read)
        for cid, records in late.items():
            if cid in self._kept:
                self._kept[cid].extend(records)
                self._collector.kept.extend(records)
        done.update(rest)  # at stop: compiles that never logged their end (interrupted) are read as they are
        if not done and not events:
            if seconds is not None and seconds > self._threshold:
                self._slow(step, seconds, [])
            return
        mini = self._assemble(done, events)
        if mini is None:
            return
        compiled = self._alerts_of(mini, step, set(done))
        self._keep(done)
        if seconds is not None and seconds > self._threshold:
            self._slow(step, seconds, compiled)

    def _assemble(self, done: dict, events: list):
        from compiler.capturing.session import new_capture
        from compiler.stages.assemble import assemble

        records = sorted([r for rs in done.values() for r in rs] + events, key=lambda r: r.time)
        try:
            saved = assemble(records, self._collector.strings, {}, self._options, self._environment, None, {})
        except Exception as exc:  # noqa: BLE001 — a tcompile bug must never break the user's code
            self._error(f"assembling compiles {', '.join(done)}: {type(exc).__name__}: {exc}")
            return None
        return new_capture(saved, None)

    def _keep(self, done: dict) -> None:
        """The first ``max_compiles`` compiles' records stay for ``capture`` (and at most ``max_capture_bytes``
        of payloads); the others' go, counted."""
        self._read.update(done)
        bytecode = self._recorder.bytecode.pairs if self._recorder is not None else {}
        for cid, records in done.items():
            size = sum(len(r.payload) for r in records if isinstance(r.payload, str))
            if len(self._kept) < self.max_compiles and self._kept_bytes + size <= self.max_capture_bytes:
                self._kept[cid] = records
                self._kept_bytes += size
                self._collector.kept.extend(records)
            else:
                self.compiles_dropped += 1
                bytecode.pop(cid, None)

    def _alerts_of(self, mini, step: int, ids: set) -> list[dict]:
        """The alerts for the compiles of ``mini`` (a capture of the compiles that ended in ``step``), and
        those compiles (``compiles`` entries)."""
        from compiler.stages.skipped import is_recompile_limit, is_skipped

        fixes = mini.fixes().items
        now = time.time()

        def fix_for(test):
            fix = next((f for f in fixes if test(f)), None)
            return {"kind": fix.kind, "title": fix.title, "snippet": fix.snippet} if fix else None

        compiled, recompiles = [], []
        recompile_of = {r.compile_id: r for r in mini.recompiles}
        for c in mini.compiles:
            if c.compile_id not in ids:
                continue
            name = c.name or "?"
            what = ("recompile limit" if is_recompile_limit(c) else "skipped" if is_skipped(c, self._options)
                    else "failed" if c.status == "failed" else "recompile" if c.compile_id in recompile_of
                    else "first")
            entry = {"step": step, "compile_id": c.compile_id, "frame": name, "seconds": c.compile_seconds,
                     "what": what}
            compiled.append(entry)
            if len(self.compiles) < self.max_alerts * 10:
                self.compiles.append(entry)
            if self.log is not None:
                self.log.write({"kind": "compile", **entry})
            took = f" ({c.compile_seconds:.3g} s)" if c.compile_seconds else ""
            if what == "recompile limit":
                hit = next((h for h in mini.recompile_limits if h.compile_id == c.compile_id), None)
                limit = hit.limit if hit else None
                guard = hit.guard if hit else None
                self._alert("recompile_limit", step, now, c.compile_id, name,
                            f"frame {name} reached the recompile limit{f' ({limit})' if limit else ''}: torch runs "
                            "its new variants eagerly from now on" + (f"; the guard {guard} kept failing" if guard else ""),
                            guard=guard, fix=fix_for(lambda f: f.kind == "recompile_limit"))
            elif what == "skipped":
                frame = next((s for s in mini.skipped_frames if s.compile_id == c.compile_id), None)
                why = frame.reason if frame and frame.reason else (c.error.message or "").splitlines()[0][:200] \
                    if c.error else "unsupported"
                self._alert("frame_skipped", step, now, c.compile_id, name,
                            f"torch gave up on frame {name} ({c.compile_id}): {why}; it runs eagerly on every call",
                            fix=fix_for(lambda f: c.compile_id in f.compiles))
            elif what == "failed":
                message = (c.error.message or c.error.type or "") if c.error else ""
                self._alert("compile_failed", step, now, c.compile_id, name,
                            f"compiling frame {name} ({c.compile_id}) failed: {message.splitlines()[0][:300] if message else '?'}",
                            fix=fix_for(lambda f: c.compile_id in f.compiles))
            elif what == "recompile":
                recompiles.append((c, recompile_of[c.compile_id]))
            elif step >= self.warmup_steps:
                self._alert("new_compile", step, now, c.compile_id, name,
                            f"frame {name} compiled for the first time{took}, after the first {self.warmup_steps} "
                            "steps: new code ran (another branch, a new function, an eval loop)",
                            seconds=c.compile_seconds)
        if recompiles:
            self._recompile_alert(recompiles, step, now, fixes)
        for index, item in enumerate(mini.breaks.items):
            key = (item.file, item.line, item.headline)
            if key in self._breaks_seen:
                continue
            self._breaks_seen.add(key)
            where = f"{(item.file or '?').rsplit('/', 1)[-1]}:{item.line}" if item.file else "an unknown line"
            code = f": {item.code.strip()}" if item.code else ""
            ids_ = item.compile_ids or ([item.compile_id] if item.compile_id else [])
            self._alert("graph_break", step, now, ids_[0] if ids_ else None, None,
                        f"graph break {item.gb_code or ''} {item.headline} at {where}{code}".replace("  ", " "),
                        fix=fix_for(lambda f: index in f.breaks))
        self._cudagraph_alerts(mini, step, now, fix_for)
        return compiled

    def _recompile_alert(self, recompiles: list, step: int, now: float, fixes) -> None:
        """One alert for the recompiles of a step (the frames after a graph break recompile for the same
        changed input): the first frame's failing guard, every frame's reason, and the fix for them — a
        ``mark_dynamic`` where the fixes engine has one."""
        ids = [c.compile_id for c, _ in recompiles]
        mine = [f for f in fixes if set(f.recompiles) & set(ids)]
        fix = next((f for f in mine if f.kind == "mark_dynamic"), mine[0] if mine else None)
        said = []
        for c, recompile in recompiles:
            reason = recompile.reasons[0] if recompile.reasons else None
            text = plain_reason(reason.text) if reason else "a guard failed"
            if text not in said:
                said.append(text)
        first, recompile = recompiles[0]
        reason = recompile.reasons[0] if recompile.reasons else None
        seconds = sum(c.compile_seconds or 0 for c, _ in recompiles)
        took = f" ({seconds:.3g} s)" if seconds else ""
        if len(recompiles) == 1:
            sentence = f"frame {first.name or '?'} recompiled as {first.compile_id}{took}: {said[0]}"
        else:
            sentence = (f"{len(recompiles)} frames recompiled{took} — {', '.join(f'{c.name or chr(63)} as {c.compile_id}' for c, _ in recompiles[:6])}"
                        f"{' …' if len(recompiles) > 6 else ''}: {'; '.join(said[:3])}")
        guards = list(dict.fromkeys(r.text for _, recompile in recompiles for r in recompile.reasons if r.text))
        self._alert("recompile", step, now, first.compile_id, first.name or "?", sentence,
                    guard=reason.guard if reason else None, guards=guards[:MAX_GUARDS], seconds=seconds or None,
                    compile_ids=ids,
                    fix={"kind": fix.kind, "title": fix.title, "snippet": fix.snippet} if fix else None)

    def _cudagraph_alerts(self, mini, step: int, now: float, fix_for) -> None:
        cg = mini.cudagraphs
        if not cg.available:
            return
        for event in cg.events:
            kind = event.get("kind")
            message = event.get("message") or ""
            if kind == "record":
                function = event.get("function")
                if function in self._recorded:
                    self._alert("cudagraph_rerecord", step, now, event.get("compile_id"), function,
                                f"CUDA graph of {function} recorded again (graph {event.get('graph_id')}): an input's "
                                "address, shape or a static input changed, so the graph could not replay")
                self._recorded.add(function)
            elif "Re-recording function" in message:
                self._alert("cudagraph_rerecord", step, now, event.get("compile_id"), None,
                            message.splitlines()[0][:300])
            elif kind == "skip":
                self._alert("cudagraph_skip", step, now, event.get("compile_id"), None,
                            f"CUDA graphs skipped: {event.get('user_reason') or event.get('reason')}",
                            fix=fix_for(lambda f: f.kind.startswith("cudagraph") or f.kind == "graph_partition"))

    def _slow(self, step: int, seconds: float, compiled: list[dict]) -> None:
        median = self._median
        if median is None:
            return
        inside = [c for c in compiled if c.get("seconds")]
        named = ""
        if inside:
            total = sum(c["seconds"] for c in inside)
            named = (f": {total:.3g} s of it compiling " + ", ".join(
                f"{c['compile_id']} ({c['frame']}, {c['what']}, {c['seconds']:.3g} s)" for c in inside[:4])
                + (f" and {len(inside) - 4} more" if len(inside) > 4 else ""))
        elif compiled:
            named = ": it compiled " + ", ".join(c["compile_id"] for c in compiled[:4])
        else:
            named = ": no compile in it (data loading, a synchronisation, garbage collection or another process?)"
        self._alert("slow_step", step, time.time(), inside[0]["compile_id"] if inside else None,
                    inside[0]["frame"] if inside else None,
                    f"step {step} took {_seconds(seconds)}, {seconds / median:.0f}× the median step ({_seconds(median)})"
                    + named, seconds=seconds, compile_ids=[c["compile_id"] for c in compiled])

    # --- alerts -------------------------------------------------------------------------------------

    def _alert(self, kind, step, when, compile_id, frame, sentence, guard=None, fix=None, seconds=None,
               compile_ids=None, emit=True, guards=None) -> Alert:
        assert kind in ALERT_KINDS, kind
        alert = Alert(kind=kind, step=step, rank=self.rank, time=when, sentence=sentence, compile_id=compile_id,
                      compile_ids=list(compile_ids) if compile_ids else ([compile_id] if compile_id else []),
                      frame=frame, guard=guard, guards=list(guards or []), seconds=seconds, fix=fix)
        if emit:
            self._emit(alert)
        return alert

    def _emit(self, alert: Alert) -> None:
        if len(self.alerts) >= self.max_alerts:
            self.alerts_dropped += 1
            return
        self.alerts.append(alert)
        if self.log is not None:
            self.log.flush_steps()
            self.log.write({"kind": "alert", "alert": alert.to_json()})
        for callback in list(self._callbacks):
            try:
                callback(alert)
            except Exception as exc:  # noqa: BLE001 — a failing callback must not stop the loop
                self._error(f"the on_alert callback {getattr(callback, '__name__', callback)!s} raised "
                            f"{type(exc).__name__}: {exc}")

    def on_alert(self, callback) -> None:
        """Call ``callback(alert)`` for each alert as it is raised (in the loop's thread, at the end of the
        step it happened in). An exception it raises is kept in ``errors``, never raised into the loop."""
        self._callbacks.append(callback)

    def _guarded(self, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 — a tcompile bug must never break the user's code
            self._error(f"{getattr(fn, '__name__', fn)}: {type(exc).__name__}: {exc}")

    def _error(self, message: str) -> None:
        if len(self.errors) < 100:
            self.errors.append(message)
        if len(self.errors) == 1:
            warnings.warn(f"compiler.watch: {message} (the loop goes on; watch.errors keeps the rest)", stacklevel=3)

    # --- results ------------------------------------------------------------------------------------

    @property
    def capture(self):
        """A Capture of what was compiled while watching: the first ``max_compiles`` compiles (the others
        are counted in ``compiles_dropped``), built on first use after new compiles."""
        if self._recorder is None:
            return None
        if self._capture is None or self._capture_size != len(self._collector.kept):
            records = sorted(self._collector.kept, key=lambda r: r.time)
            self._capture = self._recorder.build(records=records)
            self._capture_size = len(records)
        return self._capture

    def table(self):
        """The alerts as a pandas DataFrame: step, rank, kind, severity, compile id, frame, sentence, guard,
        fix, seconds, time."""
        import pandas as pd

        rows = [{"step": a.step, "rank": a.rank, "kind": a.kind, "severity": a.severity, "compile_id": a.compile_id,
                 "frame": a.frame, "sentence": a.sentence, "guard": a.guard,
                 "fix": a.fix.get("title") if a.fix else None, "seconds": a.seconds,
                 "time": pd.Timestamp(a.time, unit="s")} for a in self.alerts]
        return pd.DataFrame(rows, columns=["step", "rank", "kind", "severity", "compile_id", "frame", "sentence",
                                           "guard", "fix", "seconds", "time"])

    def snapshot(self) -> dict:
        """What the live panel draws (plain data): this rank's step times and compiles, the alerts newest
        first, the state."""
        state = "watching" if self.running else "stopped"
        return {"title": f"compiler.watch — rank {self.rank}", "state": state, "steps": self.steps,
                "ranks": {self.rank: {"steps": self.steps, "series": self.step_times.series(),
                                      "compiles": [[c["step"], c.get("seconds"), c["compile_id"], c["what"]]
                                                   for c in self.compiles[-500:]]}},
                "alerts": list(reversed(self.alerts[-200:])), "alerts_total": len(self.alerts) + self.alerts_dropped,
                "divergences": [], "errors": list(self.errors[:3])}

    def as_text(self) -> str:
        lines = [f"watch: {self.steps} steps, {len(self.alerts) + self.alerts_dropped} alerts"
                 + (f", rank {self.rank}" if self.world_size else "") + ("" if not self.running else " (running)")]
        lines += [alert.as_text() for alert in self.alerts[:50]]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        from compiler.drawing import draw

        return draw("watch", self, self.as_text)

    def __repr__(self) -> str:
        return f"<Watch {'running' if self.running else 'stopped'}: {self.steps} steps, {len(self.alerts)} alerts>"

    def _show_panel(self) -> None:
        from compiler.drawing import renderer

        show = renderer("watch_panel")
        if show is None:
            return
        self.panel = self._guarded(show, self)


def _seconds(value: float) -> str:
    return f"{value * 1e3:.3g} ms" if value < 1 else f"{value:.3g} s"


def watch(path=None, *, job_dir=None, **options):
    """``watch()`` / ``watch(job_dir=d)``: watch a loop in this process, started now (a ``Watch``: a context
    manager, or ``w = watch(); …; w.stop()``); ``job_dir``: also append this rank's steps and alerts there.
    ``watch(d)``: follow the job that is writing into the directory ``d`` (its ranks' watch files and
    TORCH_TRACE logs), from another process (a ``compiler.readers.follow.Follower``, polled in the background;
    ``stop()`` ends it)."""
    if path is not None:
        if job_dir is not None:
            raise ValueError("compiler.watch: give a path to follow, or job_dir= to write into, not both")
        from compiler.readers.follow import Follower

        return Follower(path, **options).start()
    return Watch(job_dir, **options).start()
