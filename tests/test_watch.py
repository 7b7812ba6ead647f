"""compiler.watch(): live alerts in a loop (step, guard, fix), everything put back, bounded step times,
jobs followed live from another process (watch files and TORCH_TRACE logs still being written), saved jobs
whose divergences name their step and fix. Checked against torch's own answers: the recompiles a capture of
the same loop records, torch's guard text, the loop's own step index."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest
import torch

import compiler
from compiler.capturing.records import ARTIFACT_LOGGERS
from compiler.capturing.watch import StepTimes, Watch
from compiler.readers.follow import Follower, TraceTail
from compiler.readers.watch_log import RankWatch, read_watch_file, watch_file

REPO = Path(__file__).resolve().parents[1]


def _hooks_state():
    from torch._logging._internal import trace_log
    from torch.optim.optimizer import _global_optimizer_post_hooks

    loggers = [logging.getLogger(name) for name in ARTIFACT_LOGGERS.values()]
    return (list(_global_optimizer_post_hooks), list(trace_log.handlers),
            [(lg.level, lg.propagate, list(lg.handlers)) for lg in loggers])


def _train(watch_steps: int, change_at: int, fn_name: str = "train_step"):
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def train_step(x):
        return model(x).square().mean()

    train_step.__name__ = train_step.__qualname__ = fn_name
    step_fn = torch.compile(train_step, backend="eager")
    with compiler.capture() as cap, compiler.watch(show=False) as w:
        for step in range(watch_steps):
            x = torch.randn(4 if step < change_at else 6, 8)
            step_fn(x).backward()
            opt.step()
            opt.zero_grad()
    return w, cap


def test_batch_change_gives_one_recompile_alert_at_its_step_with_guard_and_fix():
    w, cap = _train(watch_steps=10, change_at=6)
    recompiles = [a for a in w.alerts if a.kind == "recompile"]
    assert len(recompiles) == 1, w.as_text()
    alert = recompiles[0]
    assert alert.step == 6 and alert.rank == 0 and alert.frame == "train_step"
    # torch's own record of the same loop: one recompile, that compile id, that guard
    assert [r.compile_id for r in cap.recompiles] == [alert.compile_id] == alert.compile_ids
    assert alert.guard == cap.recompiles[0].failed_guard == "tensor 'x' size mismatch at index 0"
    assert "`x.size()[0]` changed 4 → 6" in alert.sentence
    assert alert.fix["kind"] == "mark_dynamic" and "torch._dynamo.mark_dynamic(x, 0)" in alert.fix["snippet"]
    assert w.steps == 10 and len(w.step_times) == 10
    assert [c["step"] for c in w.compiles] == [0, 6] and [c["what"] for c in w.compiles] == ["first", "recompile"]
    assert [c.compile_id for c in w.capture.compiles] == [c.compile_id for c in cap.compiles]
    table = w.table()
    assert list(table[table.kind == "recompile"].step) == [6]
    assert not w.errors


def test_manual_steps_new_compile_graph_break_callback_and_slow_step():
    torch._dynamo.reset()

    @torch.compile(backend="eager")
    def first(x):
        return x.sin() + 1

    @torch.compile(backend="eager")
    def later(x):
        y = x.cos()
        torch._dynamo.graph_break()
        return y * 2

    seen = []

    def failing(alert):
        raise RuntimeError("callback bug")

    with compiler.watch(show=False, warmup_steps=2) as w:
        w.on_alert(seen.append)
        w.on_alert(failing)
        for step in range(30):
            first(torch.ones(3))
            if step == 20:
                later(torch.ones(3))
                time.sleep(0.6)
            if step == 25:
                time.sleep(0.6)
            w.step()
    kinds = [(a.kind, a.step) for a in w.alerts]
    assert ("new_compile", 20) in kinds and ("graph_break", 20) in kinds, kinds
    assert seen == w.alerts and any("callback bug" in e for e in w.errors)
    brk = next(a for a in w.alerts if a.kind == "graph_break")
    assert "graph_break()" in brk.sentence or "graph_break" in brk.sentence
    slow = {a.step: a for a in w.alerts if a.kind == "slow_step"}
    assert 25 in slow and "no compile in it" in slow[25].sentence
    assert 20 in slow and slow[20].compile_ids and slow[20].compile_ids[0] in [c["compile_id"] for c in w.compiles]
    assert not [a for a in w.alerts if a.kind == "recompile"]


def test_everything_restored_on_error_interrupt_and_overlap():
    before = _hooks_state()
    opt = torch.optim.SGD([torch.nn.Parameter(torch.ones(2))], lr=0.1)
    with pytest.raises(ValueError):
        with compiler.watch(show=False):
            opt.step()
            raise ValueError("user bug")
    assert _hooks_state() == before
    with pytest.raises(KeyboardInterrupt):
        with compiler.watch(show=False) as w:
            opt.step()
            raise KeyboardInterrupt
    assert _hooks_state() == before and not w.running and w.steps == 1
    # a watch and a capture overlapping, ended out of order; two watches ended out of order
    w1 = compiler.watch(show=False)
    with compiler.capture():
        w2 = compiler.watch(show=False)
        opt.step()
        w1.stop()
    assert w2.steps == 1 and w1.steps == 1
    w2.stop()
    w2.stop()  # twice is fine
    assert _hooks_state() == before


def test_step_times_bounded_and_cheap_memory():
    times = StepTimes(limit=1000)
    for i in range(100_000):
        times.append(5.0 if i == 54_321 else 0.001)
    assert times.count == 100_000 and len(times.values) < 1000
    assert max(s for _, s in times.series()) == 5.0
    w = Watch(show=False).start()
    try:
        tracemalloc.start()
        start = tracemalloc.get_traced_memory()[0]
        for _ in range(100_000):
            w.step()
        grown = tracemalloc.get_traced_memory()[0] - start
        tracemalloc.stop()
    finally:
        w.stop()
    assert w.steps == 100_000 and grown <= 20e6, grown


def test_cached_step_runs_what_plain_torch_runs_plus_the_hook():
    """A step that compiles nothing (aot_eager: a Dynamo graph, AOTAutograd's forward and backward) calls the
    same functions with a watch as without — no logging record, structured-trace payload, metrics or guard hook
    — plus the watch's step hook, a dozen calls. Counted with sys.setprofile, not timed."""
    from bench.watch_overhead import call_diff

    torch._dynamo.reset()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 8))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    compiled = torch.compile(model, backend="aot_eager")
    x = torch.randn(4, 8)

    def step():
        compiled(x).square().mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=False)

    for _ in range(3):
        step()
    calls = call_diff(step, steps=8)
    assert not calls["unstable"] and calls["other"] == {}, calls
    assert any(k.endswith("watch.py:_optimizer_step") for k in calls["hook"]), calls
    assert 0 < sum(calls["hook"].values()) <= 15, calls


def test_watch_file_half_written_line_waits(tmp_path):
    path = watch_file(tmp_path, 3)
    path.write_text('{"kind":"start","rank":3}\n{"kind":"steps","first":0,"seconds":[0.1,0.2]}\n{"kind":"ale')
    from compiler.readers.watch_log import LineReader

    reader, rank = LineReader(path), RankWatch(3)
    kinds = [rank.add(line) for line in reader.lines()]
    assert kinds == ["start", "steps"] and rank.seconds == [0.1, 0.2]
    with open(path, "a") as f:
        f.write('rt","alert":{"kind":"recompile","step":1,"sentence":"s"}}\nnot json\n')
    kinds = [rank.add(line) for line in reader.lines()]
    assert kinds == ["alert", None] and rank.alerts[0].step == 1 and rank.alerts[0].rank == 3 and rank.bad_lines == 1


def test_trace_log_followed_while_written(tmp_path):
    """A real TORCH_TRACE log written in pieces, cut mid-payload: the tail gives each record once it is whole,
    the same records the whole-file reader gives."""
    from compiler.readers.trace import read_records

    log = next((REPO / "tests" / "assets" / "traces").rglob("*.log"))
    data = log.read_bytes()
    whole = [r.kind for r in read_records(log)]
    out = tmp_path / "dedicated_log_torch_trace_rank_0_x.log"
    tail, got = TraceTail(out), []
    for cut in range(0, len(data), 997):
        with open(out, "ab") as f:
            f.write(data[cut:cut + 997])
        got += tail.records()
    got += tail.records()
    # the last record with no payload waits for the next line only when it has a payload; flush it
    if tail.pending is not None:
        tail._finish(got)
    from compiler.capturing.records import record_from_metadata

    kinds = [record_from_metadata(dict(m), p, t).kind for m, p, t in got if "str" not in m]
    assert kinds == whole


def test_slow_step_alert_from_the_first_steps():
    """No warm-up of 64 steps: a stall at step 3 of a loop (steps 1 and 2 give the median) is a slow step."""
    torch._dynamo.reset()

    @torch.compile(backend="eager")
    def f(x):
        return x.sin() + 1

    with compiler.watch(show=False) as w:
        for step in range(6):
            f(torch.ones(3))
            if step == 3:
                time.sleep(0.3)
            w.step()
    slow = [a for a in w.alerts if a.kind == "slow_step"]
    assert [a.step for a in slow] == [3] and "no compile in it" in slow[0].sentence, w.as_text()


# --- a real distributed job, followed live ---------------------------------------------------------

torchrun_job = pytest.mark.slow  # the job: torchrun, two ranks' imports and compiles (54 s at load 7, 2 cores)


@pytest.fixture(scope="module")
def watched_job(tmp_path_factory):
    """torchrun --nproc_per_node 2 tests/watch_job.py (gloo, DDP + torch.compile aot_eager; every rank recompiles at
    step 1, rank 0 for a batch of 48 at step 3 while rank 1 stalls, rank 1 for a flag and a print at step 5), followed
    from this process while it runs; the job waits before step 7 until the follower has named the divergences of
    steps 3 and 5 (``--hold``), so what the follower named, it named before the job ended."""
    root = tmp_path_factory.mktemp("watch_job")
    out, hold = root / "job", root / "seen"
    out.mkdir()
    env = {**os.environ, "TORCH_TRACE": str(root / "trace"), "OMP_NUM_THREADS": "1",
           "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    torchrun = Path(sys.executable).parent / "torchrun"
    job = subprocess.Popen([str(torchrun), "--nproc_per_node", "2", "--master_port", str(29100 + os.getpid() % 400),
                            str(REPO / "tests" / "watch_job.py"), str(out), "--hold", str(hold)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=REPO)
    follower, events = Follower(out), []
    try:
        deadline = time.monotonic() + 280
        while job.poll() is None and time.monotonic() < deadline:
            for event in follower.poll():
                events.append((event, job.poll()))
            if {3, 5} <= {d.step for d in follower.divergences} and not hold.exists():
                hold.write_text("seen")
            time.sleep(0.2)
        output = job.communicate(timeout=60)[0]
    finally:
        if job.poll() is None:
            job.kill()
    follower.poll()
    assert job.returncode == 0, output[-3000:]
    return {"root": root, "out": out, "events": events, "output": output, "follower": follower}


def _causes(divergences):
    """The divergences of the job's two causes (a compile-time skew of a busy machine's first compile aside)."""
    return [d for d in divergences if d.kind != "compile_time"]


def _assert_two_causes(divergences, alerts):
    """Rank 0's batch at step 3 and rank 1's flag at step 5: two divergences, each with its step, ranks, guard, fix."""
    from tests.watch_job import BATCH_STEP, FLAG_STEP

    batch, flag = _causes(divergences)
    # rank 0's batch of 48: its step, its ranks, the size guard (not the scale guard every rank failed), mark_dynamic
    assert (batch.step, batch.kind, batch.groups) == (BATCH_STEP, "recompiles", [[0], [1]]), batch.as_text()
    assert batch.guard.endswith("size mismatch at index 0") and batch.fix["kind"] == "mark_dynamic"
    assert "32 → 48" in batch.explanation and "pad" in batch.fix["title"]
    # rank 1's flag: its own step, guard and fix — the print's graph break, from rank 1's own alert
    assert (flag.step, flag.kind, flag.groups) == (FLAG_STEP, "recompiles", [[1], [0]]), flag.as_text()
    assert flag.guard == "G['DEBUG'] == False" and "graph break" in flag.behaviours[0]
    alert_fix = next(a.fix for a in alerts if a.kind == "graph_break" and a.step == FLAG_STEP)
    assert flag.fix == alert_fix and flag.fix["kind"] == "reorderable_logging_functions"


RECORDED = REPO / "tests" / "assets" / "watch_job"  # tests/watch_job.py's two watch files (torch 2.13, CPU, gloo)


def _recorded() -> dict:
    return {rank: read_watch_file(watch_file(RECORDED, rank), rank) for rank in (0, 1)}


def test_recorded_job_two_causes_two_divergences():
    from compiler.readers.divergences import job_divergences

    watches = _recorded()
    _assert_two_causes(job_divergences(watches), [a for w in watches.values() for a in w.alerts])


def test_recorded_job_guard_every_rank_failed_is_never_named():
    """Every rank failed ``self.scale == 1.0`` at step 1: rank 0's step-3 recompile failed it too (against its first
    compile), yet the guard named is the size guard — also when the alert names the scale guard first (another
    model's guard order)."""
    from compiler.readers.divergences import job_divergences

    watches, common = _recorded(), "self.scale == 1.0"
    assert all(any(a.guard == common for a in w.alerts if a.step == 1) for w in watches.values())
    alert = next(a for a in watches[0].alerts if a.kind == "recompile" and a.step == 3)
    assert any(g.startswith(common) for g in alert.guards), alert.guards
    assert all(common not in (d.guard or "") + d.explanation for d in job_divergences(watches))
    alert.guard = common
    alert.guards = sorted(alert.guards, key=lambda g: not g.startswith(common))
    batch = next(d for d in job_divergences(watches) if d.step == 3)
    assert batch.guard.endswith("size mismatch at index 0") and batch.fix["kind"] == "mark_dynamic", batch.as_text()


def test_recorded_job_followed_line_by_line_gives_the_loaded_divergences(tmp_path):
    from compiler.readers.divergences import job_divergences

    def loaded(cut):
        return [d.to_json() for d in job_divergences({r: read_watch_file(watch_file(cut, r), r) for r in (0, 1)})]

    growing = _assert_cuts_agree(RECORDED, tmp_path, loaded)
    assert [d.to_json() for d in growing.divergences] == loaded(RECORDED) and len(_causes(growing.divergences)) == 2


@torchrun_job
def test_torchrun_two_causes_two_divergences_live(watched_job):
    assert "rank 0: held=True" in watched_job["output"] and "rank 1: held=True" in watched_job["output"]
    live = [(value, running) for (kind, value), running in watched_job["events"] if kind == "divergence"]
    assert all(running is None for _, running in live), "each divergence was named while the job ran"
    _assert_two_causes([d for d, _ in live], watched_job["follower"].alerts)
    follower = watched_job["follower"]
    assert follower.done and [r.steps for r in follower.ranks.values()] == [8, 8]


@torchrun_job
def test_torchrun_guard_every_rank_failed_is_never_named(watched_job):
    """The live follower, and a job of TORCH_TRACE logs only (no steps), never name ``self.scale == 1.0``, which every
    rank failed at step 1 (the recorded job's test checks the same with the guard first)."""
    common = "self.scale == 1.0"
    follower = watched_job["follower"]
    assert all(any(a.guard == common for a in s.watch.alerts if a.step == 1) for s in follower.ranks.values())
    assert all(common not in (d.guard or "") + d.explanation for d in follower.divergences)
    job = compiler.load_trace(watched_job["root"] / "trace")
    recompiles = next(d for d in job.divergences if d.kind == "recompiles")
    assert recompiles.step is None and recompiles.guard == "G['DEBUG'] == False" and common not in recompiles.explanation
    assert "[step unknown] recompiles" in recompiles.as_text()


@torchrun_job
def test_torchrun_stall_at_step_3_raises_slow_step(watched_job):
    from tests.watch_job import STALL_RANK, STALL_STEP

    slow = [a for a in watched_job["follower"].alerts if a.kind == "slow_step" and a.rank == STALL_RANK]
    assert slow and slow[0].step == STALL_STEP and "no compile in it" in slow[0].sentence, slow


def _lines_in_time_order(out: Path) -> list[tuple[int, bytes]]:
    """Both ranks' watch-file lines as (rank, line), in the order they were written: each line at its own time, a
    compile line at the time of the next line with one."""
    import json

    merged = []
    for rank in (0, 1):
        lines = watch_file(out, rank).read_bytes().splitlines(keepends=True)
        times, later = [], None
        for raw in reversed(lines):
            data = json.loads(raw)
            when = data.get("time", (data.get("alert") or {}).get("time"))
            later = when if when is not None else later
            times.append(later)
        merged += [(t, rank, i, raw) for i, (t, raw) in enumerate(zip(reversed(times), lines))]
    return [(rank, raw) for _, rank, _, raw in sorted(merged)]


def _assert_cuts_agree(source: Path, tmp_path: Path, loaded) -> Follower:
    """The job's watch files written again line by line, in the order they were written: after each step's end (a
    steps or stop line), a follower reading the growing files and ``loaded(the directory)`` agree. The follower."""
    cut = tmp_path / "cut"
    cut.mkdir(exist_ok=True)
    for rank in (0, 1):
        watch_file(cut, rank).write_bytes(b"")
    growing, seen = Follower(cut), []
    for rank, raw in _lines_in_time_order(source):
        with open(watch_file(cut, rank), "ab") as f:
            f.write(raw)
        growing.poll()
        if raw.startswith(b'{"kind":"steps"') or raw.startswith(b'{"kind":"stop"'):  # each step's end
            now = [d.to_json() for d in growing.divergences]
            assert loaded(cut) == now
            seen.append(len(now))
    assert seen[0] == 0 and seen[-1] == len(growing.divergences) >= 2 and sorted(seen) == seen, seen
    return growing


@torchrun_job
def test_torchrun_live_and_loaded_give_the_same_divergences(watched_job, tmp_path):
    """One account: the follower that watched the job and the loaded job give the same divergences; and on the job
    cut after each line (each step's steps, compiles and alerts as they arrived), a follower reading the growing
    files and the job loaded at that point agree at every cut."""
    import shutil

    from compiler.readers.divergences import EVENT_KINDS

    def loaded(path):
        return [d.to_json() for d in compiler.load_trace(path).divergences if d.kind in EVENT_KINDS]

    follower = watched_job["follower"]
    assert loaded(watched_job["out"]) == [d.to_json() for d in follower.divergences]
    assert len(_causes(follower.divergences)) == 2
    (tmp_path / "cut").mkdir()
    for rank in (0, 1):  # load_job reads a job of captures: the follower does not read them
        shutil.copy(watched_job["out"] / f"tcompile_capture_rank_{rank}.json", tmp_path / "cut")
    growing = _assert_cuts_agree(watched_job["out"], tmp_path, loaded)
    assert [d.to_json() for d in growing.divergences] == [d.to_json() for d in follower.divergences]


@torchrun_job
def test_torchrun_trace_logs_followed(watched_job, monkeypatch):
    """TORCH_TRACE logs only: no steps — each rank's own events, the step said to be unknown."""
    import compiler.readers.follow as follow

    monkeypatch.setattr(follow, "TRACE_WAIT_S", 0.0)
    follower = Follower(watched_job["root"] / "trace")
    follower.poll()
    assert sorted(follower.ranks) == [0, 1] and {s.source for s in follower.ranks.values()} == {"torch_trace"}
    recompiles = [a for a in follower.alerts if a.kind == "recompile"]
    assert sorted(a.rank for a in recompiles) == [0, 0, 0, 1, 1]
    assert any(a.fix and a.fix["kind"] == "mark_dynamic" and "changed 32 → 48" in a.sentence for a in recompiles)
    follower.poll()
    assert follower.divergences and all(d.step is None and "step unknown" in d.as_text() for d in follower.divergences)
    assert {(d.kind, d.groups[0][0]) for d in follower.divergences} == {
        ("recompiles", 0), ("recompiles", 1), ("graph_breaks", 1)}
    assert all("self.scale" not in (d.guard or "") for d in follower.divergences)


@torchrun_job
def test_saved_job_report_and_views_step_first(watched_job, tmp_path, capsys):
    from explorer.job_view import render_divergence, render_job_overview
    from explorer.watch_panel import render_watch

    job = compiler.load_trace(watched_job["out"])
    assert sorted(job.watches) == [0, 1] and not job.problems
    batch, flag = _causes(job.divergences)
    assert batch.as_text().startswith("[step 3] recompiles: At step 3 rank 0 recompiled and rank 1 did not")
    assert flag.as_text().startswith("[step 5] recompiles: At step 5 rank 1 recompiled and rank 0 did not")
    report = tmp_path / "r.html"
    from compiler.__main__ import main

    assert main(["report", str(watched_job["out"]), "-o", str(report)]) == 0, capsys.readouterr().err
    page = report.read_text()
    overview = str(render_job_overview(job))
    panel = str(render_watch(watched_job["follower"].snapshot()))
    for divergence in (batch, flag):
        drawn = str(render_divergence(divergence))
        assert drawn in page and drawn in overview and drawn in panel  # one drawing: report, explorer, live panel
        assert drawn.index(f"step {divergence.step}") < drawn.index("recompiles")  # the step first
    assert "mark_dynamic" in page and "reorderable_logging_functions" in page
    assert page.index("step 3") < page.index("step 5")


@torchrun_job
def test_cli_watch_prints_table(watched_job, capsys):
    from compiler.__main__ import main

    assert main(["watch", str(watched_job["out"]), "--ranks", "2", "--timeout", "60"]) == 0
    out = capsys.readouterr().out
    assert "rank 1 started" in out and "2 ranks (rank 0: 8 steps, rank 1: 8 steps)" in out
    assert out.index("DIVERGENCE [step 3] recompiles") < out.index("DIVERGENCE [step 5] recompiles")


def test_panel_html_escaped_and_drawn():
    from compiler.readers.job import Divergence
    from compiler.readers.watch_log import Alert
    from explorer.watch_panel import render_watch

    alert = Alert("recompile", 7, 1, 0.0, "frame <script>x</script> recompiled", compile_id="0/1",
                  fix={"kind": "mark_dynamic", "title": "Mark <b>", "snippet": "torch._dynamo.mark_dynamic(x, 0) # <i>"})
    divergence = Divergence("recompiles", [[1], [0]], ["<img src=x>", "did not"], "Rank 1 <recompiled>", "error",
                            step=7, fix=alert.fix, guard="G['<u>'] == 1")
    html = str(render_watch({"title": "t<", "state": "watching", "steps": 12, "alerts": [alert], "alerts_total": 1,
                             "divergences": [divergence],
                             "ranks": {0: {"steps": 12, "series": [[i, 0.01 * (1 + i % 3)] for i in range(12)],
                                           "compiles": [[0, 1.5, "0/0", "first"], [7, 0.4, "0/1", "recompile"]]}}}))
    assert "<script>" not in html and "&lt;script&gt;" in html and "<img" not in html and "<b>" not in html
    assert "<u>" not in html and "<polyline" in html and "rank 1 · step 7 · 0/1" in html
    assert html.index("step 7</span>") < html.index("recompiles")
    assert "compile 0/1 (recompile, 0.4 s)" in html
