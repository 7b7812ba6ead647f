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
from compiler.readers.watch_log import RankWatch, watch_file

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


# --- a real distributed job, followed live ---------------------------------------------------------

@pytest.fixture(scope="module")
def watched_job(tmp_path_factory):
    """torchrun --nproc_per_node 2 tests/watch_job.py (gloo, DDP + torch.compile aot_eager, rank 1 gets 48 rows
    at step 2), followed from this process while it runs; the job waits at step 4 until the follower has seen
    rank 1's recompile (``--hold``), so what the follower saw, it saw before the job ended."""
    root = tmp_path_factory.mktemp("watch_job")
    out, hold = root / "job", root / "seen"
    out.mkdir()
    env = {**os.environ, "TORCH_TRACE": str(root / "trace"), "OMP_NUM_THREADS": "1",
           "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    torchrun = Path(sys.executable).parent / "torchrun"
    job = subprocess.Popen([str(torchrun), "--nproc_per_node", "2", "--master_port", str(29100 + os.getpid() % 400),
                            str(REPO / "tests" / "watch_job.py"), str(out), "--hold", str(hold)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=REPO)
    follower, events, seen_at = Follower(out), [], None
    try:
        deadline = time.monotonic() + 280
        while job.poll() is None and time.monotonic() < deadline:
            for event in follower.poll():
                events.append((event, job.poll()))
                kind, value = event
                if kind == "alert" and value.kind == "recompile" and value.rank == 1 and seen_at is None:
                    seen_at = value.step
                    hold.write_text("seen")
            time.sleep(0.2)
        output = job.communicate(timeout=60)[0]
    finally:
        if job.poll() is None:
            job.kill()
    follower.poll()
    assert job.returncode == 0, output[-3000:]
    return {"root": root, "out": out, "events": events, "seen_at": seen_at, "output": output, "follower": follower}


def test_torchrun_job_rank1_recompile_seen_live(watched_job):
    assert watched_job["seen_at"] == 2
    assert "rank 0: held=True" in watched_job["output"] and "rank 1: held=True" in watched_job["output"]
    events = watched_job["events"]
    ranks = [value for (kind, value), _ in events if kind == "rank"]
    assert sorted(ranks) == [0, 1]
    live = [(value, running) for (kind, value), running in events if kind == "divergence" and value.kind == "recompiles"]
    assert live and live[0][1] is None, "the divergence was named while the job ran"
    divergence = live[0][0]
    assert divergence.groups == [[1], [0]] and divergence.step == 2 and divergence.fix["kind"] == "mark_dynamic"
    follower = watched_job["follower"]
    assert follower.done and [r.steps for r in follower.ranks.values()] == [6, 6]
    recompiles = [a for a in follower.alerts if a.kind == "recompile"]
    assert [(a.rank, a.step) for a in recompiles] == [(1, 2)] and "changed 32 → 48" in recompiles[0].sentence


def test_torchrun_trace_logs_followed(watched_job):
    follower = Follower(watched_job["root"] / "trace")
    follower.poll()
    assert sorted(follower.ranks) == [0, 1] and {s.source for s in follower.ranks.values()} == {"torch_trace"}
    recompiles = [a for a in follower.alerts if a.kind == "recompile"]
    assert [a.rank for a in recompiles] == [1] and recompiles[0].fix["kind"] == "mark_dynamic"
    assert "changed 32 → 48" in recompiles[0].sentence


def test_saved_job_divergence_names_step_and_fix(watched_job, tmp_path, capsys):
    job = compiler.load_trace(watched_job["out"])
    assert sorted(job.watches) == [0, 1] and not job.problems
    recompiles = next(d for d in job.divergences if d.kind == "recompiles")
    assert recompiles.step == 2 and recompiles.fix["kind"] == "mark_dynamic"
    assert "pad" in recompiles.fix["title"] and "from step 2" in recompiles.as_text()
    report = tmp_path / "r.html"
    from compiler.__main__ import main

    assert main(["report", str(watched_job["out"]), "-o", str(report)]) == 0, capsys.readouterr().err
    page = report.read_text()
    assert "from step 2" in page and "mark_dynamic" in page


def test_cli_watch_prints_table(watched_job, capsys):
    from compiler.__main__ import main

    assert main(["watch", str(watched_job["out"]), "--ranks", "2", "--timeout", "60"]) == 0
    out = capsys.readouterr().out
    assert "rank 1 started" in out and "DIVERGENCE [recompiles] from step 2" in out
    assert "2 ranks (rank 0: 6 steps, rank 1: 6 steps)" in out


def test_panel_html_escaped_and_drawn():
    from compiler.readers.job import Divergence
    from compiler.readers.watch_log import Alert
    from explorer.watch_panel import render_watch

    alert = Alert("recompile", 7, 1, 0.0, "frame <script>x</script> recompiled", compile_id="0/1",
                  fix={"kind": "mark_dynamic", "title": "Mark <b>", "snippet": "torch._dynamo.mark_dynamic(x, 0) # <i>"})
    divergence = Divergence("recompiles", [[1], [0]], ["<img src=x>", "did not"], "Rank 1 <recompiled>", "error",
                            step=7, fix=alert.fix)
    html = str(render_watch({"title": "t<", "state": "watching", "steps": 12, "alerts": [alert], "alerts_total": 1,
                             "divergences": [divergence],
                             "ranks": {0: {"steps": 12, "series": [[i, 0.01 * (1 + i % 3)] for i in range(12)],
                                           "compiles": [[0, 1.5, "0/0", "first"], [7, 0.4, "0/1", "recompile"]]}}}))
    assert "<script>" not in html and "&lt;script&gt;" in html and "<img" not in html and "<b>" not in html
    assert "<polyline" in html and "rank 1 · step 7 · 0/1" in html and "from step 7" in html
    assert "compile 0/1 (recompile, 0.4 s)" in html
