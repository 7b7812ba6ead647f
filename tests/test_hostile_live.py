"""Hostile inputs on the live paths (issue 48): watch files (``tcompile_watch_rank_N.jsonl``), TORCH_TRACE logs
followed while written (``compiler.watch(DIR)``, ``python -m compiler watch``), ``load_job(processes=N)``'s
workers, and ``python -m compiler check`` — held to the saved-trace standard (``test_hostile_traces.py``).

Cases by kind (the issue's list): numbers out of range, what the follower and the loader refuse, lost lines and
restarts, bounds, terminal escapes, orphans, ``check``. Every case writes its files by hand or edits the shipped
real trace (``tests/assets/traces/…log``, a real torch 2.14 compile: a graph break and a recompile); none
compiles. Each asserts one outcome: the bad line, field or entry is left out and listed (file, line, cause),
what is good still read, never a traceback, never a hang.
"""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest

from compiler.__main__ import main as cli
from compiler.readers.follow import Follower, TraceTail
from compiler.readers.job import load_trace
from compiler.readers.trace import TraceError, TraceWarning
from compiler.readers import watch_log
from compiler.readers.watch_log import LineReader

MAX_LINE_BYTES = getattr(watch_log, "MAX_LINE_BYTES", 1 << 20)  # (getattr: the file also runs on older trees)
MAX_TEXT = getattr(watch_log, "MAX_TEXT", 2_000)
STEPS_KEPT = getattr(watch_log, "STEPS_KEPT", 4_096)

REPO = Path(__file__).resolve().parent.parent
LOG = REPO / "tests" / "assets" / "traces" / "torch_2_14_1_break_recompile.log"
RANK_LOG = "dedicated_log_torch_trace_rank_{}_x.log"
WATCH = "tcompile_watch_rank_{}.jsonl"
BIG = "1" + "0" * 400
BAD_NUMBERS = {"400 digits": BIG, "Infinity": "Infinity", "-Infinity": "-Infinity", "NaN": "NaN", "negative": "-1"}


# --- writing a job by hand -------------------------------------------------------------------------

def start(rank: int) -> str:
    return json.dumps({"kind": "start", "format": "tcompile-watch", "version": [1, 0], "rank": rank, "world_size": 2,
                       "pid": 1000 + rank, "torch": "2.14.1", "time": 1.7e9})


def steps(first: int, count: int, seconds: float = 0.01) -> str:
    return json.dumps({"kind": "steps", "first": first, "seconds": [seconds] * count, "time": 1.7e9})


def alert(step: int, sentence: str = "frame f recompiled", **fields) -> str:
    return json.dumps({"kind": "alert", "alert": {"kind": "recompile", "step": step, "rank": 0, "time": 1.7e9,
                                                  "sentence": sentence, **fields}})


STOP = '{"kind":"stop","time":1.7e9}'


def watch_file(folder: Path, rank: int, lines: list[str], name: str | None = None) -> Path:
    path = folder / (name or WATCH.format(rank))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def good_rank(folder: Path, rank: int) -> Path:
    """8 steps, a compile and an alert at step 2, stopped."""
    return watch_file(folder, rank, [start(rank), steps(0, 4),
                                     json.dumps({"kind": "compile", "step": 2, "compile_id": "0/1", "frame": "f",
                                                 "seconds": 0.5, "what": "recompile"}),
                                     alert(2), steps(4, 4), STOP])


def with_logs(folder: Path, ranks=(0, 1)) -> Path:
    for rank in ranks:
        (folder / RANK_LOG.format(rank)).write_bytes(LOG.read_bytes())
    return folder


def followed(folder: Path, polls: int = 3) -> Follower:
    follower = Follower(folder)
    for _ in range(polls):
        follower.poll()
    return follower


def quiet_load(path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceWarning)
        return load_trace(path, **kwargs)


def run_cli(capsys, *args) -> tuple[int, str, str]:
    code = cli([str(a) for a in args])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, (out + err)[-3000:]
    return code, out, err


def problems_at(problems, name: str, line: int | None = None) -> list:
    return [p for p in problems if p.file.endswith(name) and (line is None or p.line == line)]


# --- 1. numbers out of range: problems, never exceptions -------------------------------------------

WATCH_NUMBERS = {  # field → the line that holds the value (written as JSON text, so Infinity/NaN/400 digits stay)
    "alert.time": '{"kind":"alert","alert":{"kind":"recompile","step":3,"time":%s,"sentence":"late"}}',
    "alert.seconds": '{"kind":"alert","alert":{"kind":"slow_step","step":3,"time":1.7e9,"seconds":%s,"sentence":"s"}}',
    "alert.step": '{"kind":"alert","alert":{"kind":"recompile","step":%s,"time":1.7e9,"sentence":"s"}}',
    "steps.seconds": '{"kind":"steps","first":4,"seconds":[%s,0.01,0.01,0.01]}',
    "steps.first": '{"kind":"steps","first":%s,"seconds":[0.01]}',
    "compile.seconds": '{"kind":"compile","step":3,"compile_id":"0/2","frame":"f","seconds":%s,"what":"recompile"}',
    "compile.step": '{"kind":"compile","step":%s,"compile_id":"0/2","frame":"f","seconds":0.5,"what":"recompile"}',
}


def numbers_job(folder: Path, field: str, value: str) -> Path:
    good_rank(folder, 0)
    watch_file(folder, 1, [start(1), steps(0, 4), alert(2), WATCH_NUMBERS[field] % value, steps(4, 4), alert(6), STOP])
    return folder


@pytest.mark.parametrize("field,value", [pytest.param(f, v, id=f"{f}-{n}") for f in WATCH_NUMBERS
                                         for n, v in BAD_NUMBERS.items() if (f, n) != ("steps.first", "-Infinity")])
def test_a_watch_number_out_of_range_is_a_problem_live_and_in_the_cli(tmp_path, capsys, field, value):
    folder = numbers_job(tmp_path, field, value)
    follower = followed(folder)
    found = problems_at(follower.problems, WATCH.format(1), 4)
    assert found and field.split(".")[0] in found[0].message, follower.problems
    rank = follower.ranks[1]
    assert rank.stopped and rank.steps == 8  # what is good still read
    assert [a.step for a in rank.watch.alerts if a.sentence == "frame f recompiled"] == [2, 6]
    assert follower.ranks[0].steps == 8
    from explorer.watch_panel import render_watch

    assert "<svg" in str(render_watch(follower.snapshot()))
    follower.table_text()
    code, out, err = run_cli(capsys, "watch", folder, "--ranks", "2", "--timeout", "20")
    assert code == 0 and "rank 1 stopped after" in out and f"{WATCH.format(1)}:4:" in err


@pytest.mark.parametrize("value", [BIG, "Infinity"], ids=["400 digits", "Infinity"])
@pytest.mark.parametrize("field", ["alert.time", "steps.seconds", "compile.seconds"])
def test_a_watch_number_out_of_range_is_a_problem_loaded(tmp_path, field, value):
    job = quiet_load(with_logs(numbers_job(tmp_path, field, value)))
    assert sorted(job.captures) == [0, 1] and job.watches[1].steps == 8 and job.watches[0].steps == 8
    assert problems_at(job.problems, WATCH.format(1), 4)


def edited_log(path: Path, edit_metrics=None, edit_event=None) -> Path:
    """The shipped log with its first compilation_metrics envelope (and/or first chromium event payload) edited;
    the payload's md5 made to match again."""
    lines = LOG.read_text(encoding="utf-8").split("\n")
    if edit_metrics:
        i = next(i for i, line in enumerate(lines) if '{"compilation_metrics"' in line)
        brace = lines[i].index("{")
        data = json.loads(lines[i][brace:])
        edit_metrics(data["compilation_metrics"])
        lines[i] = lines[i][:brace] + json.dumps(data)
    if edit_event:
        i = next(i for i, line in enumerate(lines) if '{"chromium_event"' in line)
        end = next(j for j in range(i + 1, len(lines)) if not lines[j].startswith("\t"))
        event = json.loads("\n".join(line[1:] for line in lines[i + 1:end]))
        edit_event(event)
        payload = json.dumps(event)
        brace = lines[i].index("{")
        data = json.loads(lines[i][brace:])
        data["has_payload"] = hashlib.md5(payload.encode()).hexdigest()
        lines[i:end] = [lines[i][:brace] + json.dumps(data), "\t" + payload]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


LOG_NUMBERS = {"400 digits": 10 ** 400, "Infinity": float("inf"), "NaN": float("nan")}
LOG_FIELDS = {
    "compilation_metrics.entire_frame_compile_time_s": ("metrics", "entire_frame_compile_time_s"),
    "compilation_metrics.guard_count": ("metrics", "guard_count"),
    "compilation_metrics.start_time": ("metrics", "start_time"),
    "chromium_event.ts": ("event", "ts"),
}


@pytest.mark.parametrize("value", list(LOG_NUMBERS.values()), ids=list(LOG_NUMBERS))
@pytest.mark.parametrize("field", list(LOG_FIELDS))
def test_a_log_number_out_of_range_is_a_problem_loaded_and_followed(tmp_path, field, value):
    where, key = LOG_FIELDS[field]
    change = lambda d: d.__setitem__(key, value)  # noqa: E731
    folder = tmp_path / "job"
    folder.mkdir()
    log = edited_log(folder / RANK_LOG.format(0), **({"edit_metrics": change} if where == "metrics"
                                                      else {"edit_event": change}))
    (folder / RANK_LOG.format(1)).write_bytes(LOG.read_bytes())
    cap = quiet_load(log)
    assert cap.compiles and cap.as_text()
    job = quiet_load(folder)  # the other rank's capture is never lost to this one's number
    assert sorted(job.captures) == [0, 1] and len(job.captures[1].compiles) == len(job.captures[0].compiles)
    follower = followed(folder)
    assert sorted(follower.ranks) == [0, 1]
    if field == "compilation_metrics.entire_frame_compile_time_s":
        assert problems_at(follower.problems, RANK_LOG.format(0)), follower.problems
    follower.table_text()


@pytest.fixture(scope="module")
def capture_json(tmp_path_factory) -> Path:
    """A tcompile capture saved from the shipped real trace."""
    return quiet_load(LOG).save(tmp_path_factory.mktemp("capture") / "capture.json")


@pytest.mark.parametrize("key", ["compile_time_s", "seconds"])
def test_a_capture_with_an_int_no_float_holds_is_a_capture_format_error(capture_json, tmp_path, key):
    import re

    import compiler

    text = capture_json.read_text()
    pattern = re.compile(f'"{key}": ?-?[0-9.]+(?:e-?[0-9]+)?')
    if not pattern.search(text):
        pytest.skip(f"no {key} in this capture")
    bad = tmp_path / "bad.json"
    bad.write_text(pattern.sub(f'"{key}": {BIG}', text, count=1))
    with pytest.raises(compiler.CaptureFormatError) as caught:
        compiler.load(bad).as_text()
    assert "\n" not in str(caught.value) and key in str(caught.value)


def test_a_bad_capture_never_costs_a_job_its_good_ones(capture_json, tmp_path):
    import re

    text = capture_json.read_text()
    for rank in (0, 1, 2):
        data = json.loads(text)
        data.setdefault("environment", {})["rank"] = rank
        (tmp_path / f"tcompile_capture_rank_{rank}.json").write_text(json.dumps(data))
    bad = tmp_path / "tcompile_capture_rank_1.json"
    bad.write_text(re.sub(r'"compile_time_s": ?[0-9.]+', f'"compile_time_s": {BIG}', bad.read_text(), count=1))
    job = quiet_load(tmp_path)
    assert sorted(job.captures) == [0, 2]
    assert problems_at(job.problems, "tcompile_capture_rank_1.json")
    assert any(d.kind == "unread_ranks" for d in job.divergences)


def test_the_live_panel_draws_inf_and_a_failed_redraw_never_freezes_it():
    pytest.importorskip("ipywidgets")
    from compiler.readers.watch_log import Alert
    from explorer.watch_panel import WatchPanel, render_watch

    snapshot = {"title": "t", "state": "following", "steps": 10 ** 400, "alerts": [], "alerts_total": 0,
                "ranks": {0: {"steps": 12, "series": [[0, 0.01], [1, float("inf")], [2, float("nan")], [3, 10 ** 400],
                                                      [4, -1.0], [5, 0.02]],
                              "compiles": [[1, float("inf"), "0/0", "first"], [10 ** 400, 1.0, "0/1", "recompile"]]}}}
    html = str(render_watch(snapshot))
    assert "<polyline" in html

    class Flaky:
        calls = 0

        def snapshot(self):
            Flaky.calls += 1
            if Flaky.calls == 2:
                raise OverflowError("cannot convert float infinity to integer")
            return {**snapshot, "alerts": [Alert("recompile", 3, 0, 0.0, f"alert {Flaky.calls}")],
                    "alerts_total": Flaky.calls}

    panel = WatchPanel(Flaky(), interval=3600)
    try:
        assert "alert 1" in panel.body.value
        panel.redraw()  # fails: said in the panel, never raised
        assert "could not draw" in panel.body.value and panel.failures == 1
        panel.redraw()  # the next one draws again: later alerts are shown
        assert "alert 3" in panel.body.value
    finally:
        panel.finish()


def test_stop_never_raises(tmp_path, monkeypatch):
    good_rank(tmp_path, 0)
    follower = Follower(tmp_path, interval=3600)

    class Broken:
        def finish(self):
            raise RuntimeError("the panel broke")

    follower.panel = Broken()
    monkeypatch.setattr(Follower, "poll", lambda self, deadline=None: (_ for _ in ()).throw(OverflowError("x")))
    assert follower.stop() is follower
    assert any("panel" in e for e in follower.errors) and any("OverflowError" in e for e in follower.errors)


# --- 2. the follower refuses what the loader refuses -----------------------------------------------

def test_a_symlink_out_of_the_directory_is_refused_live_and_loaded(tmp_path, capsys):
    folder = tmp_path / "job"
    folder.mkdir()
    good_rank(folder, 0)
    secret = watch_file(tmp_path, 1, [start(1), alert(1, "SECRET-OUTSIDE"), STOP], name="outside.jsonl")
    os.symlink(secret, folder / WATCH.format(1))
    follower = followed(folder)
    assert 1 not in follower.ranks and problems_at(follower.problems, WATCH.format(1))
    assert "SECRET" not in follower.table_text()
    code, out, err = run_cli(capsys, "watch", folder, "--timeout", "5")
    assert code == 0 and "SECRET" not in out + err and "outside the directory" in err
    job = quiet_load(with_logs(folder))
    assert 1 not in job.watches and problems_at(job.problems, WATCH.format(1))


def test_a_fifo_is_refused_live_and_loaded_and_never_hangs(tmp_path, capsys):
    good_rank(tmp_path, 0)
    os.mkfifo(tmp_path / WATCH.format(1))
    follower = followed(tmp_path)
    assert 1 not in follower.ranks and problems_at(follower.problems, WATCH.format(1))
    job = quiet_load(with_logs(tmp_path))
    assert 1 not in job.watches and problems_at(job.problems, WATCH.format(1))


def test_a_rank_that_is_no_number_is_said_live_and_loaded(tmp_path, capsys):
    good_rank(tmp_path, 0)
    watch_file(tmp_path, -1, [start(-1), alert(1, "FROM-MINUS-ONE"), STOP], name=WATCH.format(-1))
    follower = followed(tmp_path)
    assert list(follower.ranks) == [0] and problems_at(follower.problems, WATCH.format(-1))
    code, out, err = run_cli(capsys, "watch", tmp_path, "--timeout", "5")
    assert WATCH.format(-1) in err and "not a rank number" in err
    job = quiet_load(with_logs(tmp_path))
    assert sorted(job.watches) == [0] and problems_at(job.problems, WATCH.format(-1))


def test_two_files_of_one_rank_are_said_and_kept_apart_live_and_loaded(tmp_path, capsys):
    good_rank(tmp_path, 0)
    good_rank(tmp_path, 1)
    watch_file(tmp_path, 1, [start(1), steps(0, 3), alert(1, "FROM-RANK-01"), STOP], name=WATCH.format("01"))
    follower = followed(tmp_path)
    assert follower.ranks[1].steps == 8 and follower.ranks[1].file == WATCH.format(1)
    assert not any("FROM-RANK-01" in a.sentence for a in follower.alerts)
    found = problems_at(follower.problems, WATCH.format("01"))
    assert found and found[0].kind == "duplicate_rank" and WATCH.format(1) in found[0].message
    job = quiet_load(with_logs(tmp_path))
    assert job.watches[1].steps == 8 and not any("FROM-RANK-01" in a.sentence for a in job.watches[1].alerts)
    assert [p.kind for p in problems_at(job.problems, WATCH.format("01"))] == ["duplicate_rank"]


def test_an_unreadable_directory_is_said(tmp_path, monkeypatch, capsys):
    good_rank(tmp_path, 0)
    real_listdir = os.listdir
    monkeypatch.setattr(os, "listdir", lambda p=".": (_ for _ in ()).throw(PermissionError(13, "Permission denied"))
                        if Path(p) == tmp_path else real_listdir(p))
    with pytest.raises(TraceError) as caught:
        Follower(tmp_path)
    assert "cannot list the directory" in str(caught.value) and "\n" not in str(caught.value)
    assert run_cli(capsys, "watch", tmp_path, "--timeout", "2")[0] == 2
    monkeypatch.setattr(os, "listdir", real_listdir)
    follower = Follower(tmp_path)
    monkeypatch.setattr(Path, "iterdir", lambda self: (_ for _ in ()).throw(PermissionError(13, "Permission denied")))
    events = follower.poll()
    assert [e for e in events if e[0] == "problem" and "cannot list" in e[1].message]


# --- lost lines and restarts ------------------------------------------------------------------------

@pytest.mark.parametrize("case", ["wrong types", "a line missing", "first as text", "a line twice"])
def test_one_bad_steps_line_never_refuses_the_later_ones(tmp_path, capsys, case):
    bad = {"wrong types": '{"kind":"steps","first":4,"seconds":"fast"}', "a line missing": None,
           "first as text": '{"kind":"steps","first":"4","seconds":[0.01,0.01,0.01,0.01]}',
           "a line twice": steps(0, 4)}[case]
    lines = [start(1), steps(0, 4)] + ([bad] if bad else []) + [steps(8, 4), alert(9), STOP]
    good_rank(tmp_path, 0)
    watch_file(tmp_path, 1, lines)
    follower = followed(tmp_path)
    rank = follower.ranks[1]
    assert rank.steps == 12 and [a.step for a in rank.watch.alerts] == [9]
    assert problems_at(follower.problems, WATCH.format(1))
    job = quiet_load(with_logs(tmp_path))
    assert job.watches[1].steps == rank.steps and problems_at(job.problems, WATCH.format(1))
    code, out, err = run_cli(capsys, "watch", tmp_path, "--ranks", "2", "--timeout", "10")
    assert f"rank 1: {rank.steps} steps" in out


@pytest.mark.parametrize("how", ["truncated", "rewritten longer", "replaced by rename"])
def test_a_rank_that_restarts_is_followed_from_its_new_start_and_says_so(tmp_path, how):
    path = watch_file(tmp_path, 0, [start(0), steps(0, 4), alert(2, "OLD RUN")])
    follower = Follower(tmp_path)
    follower.poll()
    assert follower.ranks[0].steps == 4
    new = [start(0), steps(0, 2), alert(1, "NEW RUN")]
    if how == "rewritten longer":
        new += [steps(2, 40), alert(30, "x" * 2000)]
    if how == "replaced by rename":
        watch_file(tmp_path, 0, new, name="next.tmp")
        os.replace(tmp_path / "next.tmp", path)
    else:
        watch_file(tmp_path, 0, new)  # open("w"): the writer's own restart (WatchLog)
    events = follower.poll()
    assert [e for e in events if e[0] == "restart" and e[1][0] == 0], events
    rank = follower.ranks[0]
    assert rank.steps == (42 if how == "rewritten longer" else 2)
    assert [a.sentence for a in rank.watch.alerts][:1] == ["NEW RUN"]
    assert problems_at(follower.problems, WATCH.format(0))[0].kind == "restarted"


def test_a_log_without_a_rank_never_takes_rank_0s_place(tmp_path):
    (tmp_path / "dedicated_log_torch_trace_abc.log").write_bytes(LOG.read_bytes())
    follower = Follower(tmp_path)
    follower.poll()
    with_logs(tmp_path)
    follower.poll()
    follower.poll()
    assert follower.ranks[0].file == RANK_LOG.format(0) and follower.ranks[1].file == RANK_LOG.format(1)
    unnamed = [s for s in follower.ranks.values() if s.file == "dedicated_log_torch_trace_abc.log"]
    assert unnamed and unnamed[0].rank not in (0, 1)
    assert [p.kind for p in problems_at(follower.problems, "dedicated_log_torch_trace_abc.log")][-1] == "rank_guessed"
    assert all(a.rank == unnamed[0].rank for a in unnamed[0].watch.alerts)
    assert {a.rank for a in follower.alerts if a.kind == "recompile"} == {0, 1, unnamed[0].rank}


def test_two_writers_cut_payloads_are_checked(tmp_path):
    """One writer's recompile-reasons payload cut by another writer's record: the payload is left out and said;
    the recompile is still named from its (whole) metrics."""
    lines = LOG.read_text(encoding="utf-8").split("\n")
    i = next(i for i, line in enumerate(lines) if '"recompile_reasons"' in line)
    lines[i + 1] = lines[i + 1][:25]  # "\t0/0: tensor 'x' size mis"
    (tmp_path / RANK_LOG.format(0)).write_text("\n".join(lines), encoding="utf-8")
    follower = followed(tmp_path)
    found = problems_at(follower.problems, RANK_LOG.format(0), i + 1)
    assert found and found[0].kind == "payload_mismatch", follower.problems
    recompiles = [a for a in follower.alerts if a.kind == "recompile"]
    assert recompiles and all(a.sentence.endswith(("4 → 8", "expected 4")) or "mis" not in a.sentence.split(":")[-1]
                              for a in recompiles), [a.sentence for a in recompiles]


def test_load_trace_reads_a_watch_file_past_64_mb(tmp_path):
    """64 MB of long lines, then the steps and the stop: all read (by 4 MB reads), nothing dropped in silence."""
    good_rank(tmp_path, 0)
    filler = json.dumps({"kind": "compile", "step": 0, "compile_id": "0/0", "frame": "f" * 1_000_000, "seconds": 0.1,
                         "what": "first"})
    with open(tmp_path / WATCH.format(1), "w") as f:
        f.write(start(1) + "\n")
        for _ in range(68):
            f.write(filler + "\n")
        f.write(steps(0, 5) + "\n" + alert(3, "PAST 64 MB") + "\n" + STOP + "\n")
    assert (tmp_path / WATCH.format(1)).stat().st_size > 64 << 20
    job = quiet_load(with_logs(tmp_path))
    assert job.watches[1].steps == 5 and job.watches[1].stop is not None
    assert [a.sentence for a in job.watches[1].alerts] == ["PAST 64 MB"]


# --- 3. bounded by design ---------------------------------------------------------------------------

def test_follower_memory_does_not_grow_with_a_ranks_steps(tmp_path):
    lines = [start(0)] + [steps(i * 5_000, 5_000, 0.001 * (1 + i % 7)) for i in range(40)] + [STOP]
    watch_file(tmp_path, 0, lines)
    follower = Follower(tmp_path)
    while follower.poll() or follower.ranks[0].steps < 200_000:
        pass
    times = follower.ranks[0].watch.times
    assert follower.ranks[0].steps == 200_000 and len(times.values) <= STEPS_KEPT and times.nbytes() < 64 << 10
    assert len(follower.snapshot()["ranks"][0]["series"]) <= 600


def test_a_line_longer_than_the_limit_is_skipped_and_said(tmp_path, capsys):
    watch_file(tmp_path, 0, [start(0), steps(0, 4), alert(1, "y" * (3 * MAX_LINE_BYTES)), alert(2, "after"), STOP])
    follower = followed(tmp_path)
    assert [a.sentence for a in follower.alerts] == ["after"]
    found = problems_at(follower.problems, WATCH.format(0), 3)
    assert found and "longer than" in found[0].message
    code, out, err = run_cli(capsys, "watch", tmp_path, "--timeout", "5")
    assert len(out) + len(err) < 20_000


def test_a_long_sentence_is_cut(tmp_path):
    watch_file(tmp_path, 0, [start(0), alert(1, "z" * 500_000), STOP])
    sentence = followed(tmp_path).alerts[0].sentence
    assert len(sentence) < MAX_TEXT + 100 and "cut" in sentence


def test_a_partial_line_has_a_ceiling(tmp_path):
    path = tmp_path / WATCH.format(0)
    path.write_bytes(b'{"kind":"alert","alert":{"sentence":"' + b"w" * (3 * MAX_LINE_BYTES))
    reader = LineReader(path)
    while reader.numbered() or reader.more:
        assert len(reader.partial) <= MAX_LINE_BYTES
    with open(path, "a") as f:
        f.write('"}}\n' + STOP + "\n")
    assert [raw for _, raw in reader.numbered()] == [STOP.encode()]
    assert reader.problems and reader.problems[0][0] == 1 and "longer than" in reader.problems[0][1]


def test_a_payload_is_hashed_once(tmp_path, monkeypatch):
    """A record whose payload has 5,000 lines, read a few lines at a time: each byte is hashed once, not once
    per line after it."""
    import compiler.readers.follow as follow

    lines = [f"line {i:05d} of a long payload" for i in range(5_000)]
    payload = "\n".join(lines)
    envelope = ('V1124 11:00:15.522000 16246 torch/_dynamo/symbolic_convert.py:5342] {"artifact": {"name": '
                '"dynamo_graph_break_reason", "encoding": "string"}, "frame_id": 0, "frame_compile_id": 0, '
                f'"attempt": 0, "has_payload": "{hashlib.md5(payload.encode()).hexdigest()}"}}')
    text = envelope + "\n" + "".join(f"\t{line}\n" for line in lines)
    hashed = [0]
    real = hashlib.md5

    class Counting:
        def __init__(self, data=b"", **kwargs):
            self.inner = real(data, **kwargs)
            hashed[0] += len(data)

        def update(self, data):
            hashed[0] += len(data)
            self.inner.update(data)

        def hexdigest(self):
            return self.inner.hexdigest()

        def copy(self):
            other = Counting.__new__(Counting)
            other.inner = self.inner.copy()
            return other

    monkeypatch.setattr(follow.hashlib, "md5", Counting)
    path = tmp_path / RANK_LOG.format(0)
    tail, got = TraceTail(path), []
    data = text.encode()
    for cut in range(0, len(data), 4_096):
        with open(path, "ab") as f:
            f.write(data[cut:cut + 4_096])
        got += tail.records()
    kept = [p for _, p, _ in got]
    head = min(getattr(follow, "PAYLOAD_HEAD", len(payload)), len(payload))
    assert len(kept) == 1 and kept[0] == payload[:len(kept[0])] and len(kept[0]) >= head - 100
    assert hashed[0] <= 2 * len(payload)


def test_watch_timeout_is_a_wall_clock_bound(tmp_path, capsys):
    """A rank that never stops and a log whose payload is long: ``--timeout 1`` ends within a few seconds."""
    watch_file(tmp_path, 0, [start(0), steps(0, 4)])
    payload = "\n".join(f"{i:08d} " + "p" * 90 for i in range(8_000))
    (tmp_path / RANK_LOG.format(1)).write_text(
        'V1124 11:00:15.522000 16246 x.py:1] {"artifact": {"name": "dynamo_graph_break_reason", "encoding": "string"},'
        f' "has_payload": "{hashlib.md5(payload.encode()).hexdigest()}"}}\n'
        + "".join(f"\t{line}\n" for line in payload.split("\n")))
    began = time.monotonic()
    code, out, err = run_cli(capsys, "watch", tmp_path, "--timeout", "1")
    assert code == 0 and time.monotonic() - began < 4 and "stopped following after 1 s" in out
    follower = Follower(tmp_path)
    assert [e for e in follower.poll(deadline=time.monotonic() - 1) if e[0] == "alert"] == []


def test_compiler_watch_of_a_directory_returns_at_once(tmp_path, monkeypatch):
    import compiler

    good_rank(tmp_path, 0)
    real_poll = Follower.poll

    def slow_poll(self, *args, **kwargs):
        time.sleep(1.5)
        return real_poll(self, *args, **kwargs)

    monkeypatch.setattr(Follower, "poll", slow_poll)
    began = time.monotonic()
    follower = compiler.watch(tmp_path, show=False)
    try:
        assert time.monotonic() - began < 0.5 and follower.running
    finally:
        follower.stop()
    assert follower.ranks[0].steps == 8


# --- 4. what reaches a terminal is escaped and encodable --------------------------------------------

SEQUENCES = {"osc52 clipboard": "\x1b]52;c;cm0gLXJmIH4=\x07", "osc8 link": "\x1b]8;;https://x.example\x1b\\here\x1b]8;;\x1b\\",
             "erase line": "\r\x1b[2K", "window title": "\x1b]0;owned\x07", "c1 csi": "\x9b2J", "bidi": "\u202e"}
CONTROLS = ["\x1b", "\x07", "\x9b", "\r", "\u202e"]


@pytest.mark.parametrize("sequence", list(SEQUENCES.values()), ids=list(SEQUENCES))
def test_escape_sequences_from_files_reach_the_terminal_shown_not_executed(tmp_path, capsys, sequence):
    good_rank(tmp_path, 0)
    watch_file(tmp_path, 1, [start(1), steps(0, 2), alert(1, f"before{sequence}after",
                                                         fix={"kind": "k", "title": f"t{sequence}", "snippet": sequence}),
                             STOP])
    (tmp_path / f"dedicated_log_torch_trace_rank_2_{sequence.replace('/', '_')}.log").write_bytes(LOG.read_bytes())
    code, out, err = run_cli(capsys, "watch", tmp_path, "--ranks", "3", "--timeout", "1")
    assert code == 0 and "before" in out and "after" in out
    assert not [c for c in CONTROLS if c in out + err], repr(out + err)[-2000:]


def test_report_warnings_are_escaped(tmp_path, capsys):
    with_logs(tmp_path, (0,))
    (tmp_path / ("notes\x1b]0;owned\x07\x1b[2K.txt")).write_text("x")
    code, out, err = run_cli(capsys, "report", tmp_path, "-o", tmp_path / "r.html")
    assert code == 0 and "warning:" in err and not [c for c in CONTROLS if c in out + err], repr(err)


@pytest.mark.parametrize("encoding", ["utf-8", "ascii"])
def test_a_lone_surrogate_prints_in_any_terminal(tmp_path, encoding):
    watch_file(tmp_path, 0, [start(0), '{"kind":"alert","alert":{"kind":"recompile","step":1,"time":1.7e9,'
                                       '"sentence":"half \\ud800 a pair \\u2192"}}', STOP])
    done = subprocess.run([sys.executable, "-m", "compiler", "watch", str(tmp_path), "--timeout", "20"],
                          capture_output=True, cwd=REPO, timeout=120,
                          env={**os.environ, "PYTHONIOENCODING": f"{encoding}:strict", "PYTHONPATH": str(REPO)})
    assert done.returncode == 0 and b"Traceback" not in done.stdout + done.stderr, done.stderr[-2000:]
    assert b"half" in done.stdout


# --- 5. workers die with their parent -------------------------------------------------------------

CHILD = textwrap.dedent('''
    import sys, time
    sys.path.insert(0, {repo!r})
    import compiler.readers.job_processes as job_processes


    def read_forever(log, strict, sources):
        time.sleep(600)


    if __name__ == "__main__":
        job_processes.read_rank_text = read_forever  # a worker busy reading when its parent is killed
        job_processes.read_ranks([{log!r}, {log!r}], False, "trace", 2)
''')


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry))
    return out


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_kill_9_of_the_parent_leaves_no_worker_or_resource_tracker(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(CHILD.format(repo=str(REPO), log=str(LOG)))
    parent = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    children = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(children) < 3:  # the resource tracker and two workers
            time.sleep(0.2)
            children = _children(parent.pid)
        assert len(children) >= 3, children
        time.sleep(1)  # the workers are reading (sleeping in read_forever)
        children = _children(parent.pid)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(_alive(pid) for pid in children):
            time.sleep(0.2)
        left = [pid for pid in children if _alive(pid)]
        assert not left, f"orphans: {left}"
    finally:
        for pid in children:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        if parent.poll() is None:
            parent.kill()


# --- 6. check names what it could not read ------------------------------------------------------------

@pytest.mark.parametrize("bad", ["empty", "binary", "symlink out"])
def test_check_names_a_rank_it_could_not_read_and_fails(tmp_path, capsys, bad):
    folder = tmp_path / "job"
    folder.mkdir()
    with_logs(folder, (0,))
    rank1 = folder / RANK_LOG.format(1)
    if bad == "empty":
        rank1.write_bytes(b"")
    elif bad == "binary":
        rank1.write_bytes(b"\0\1\2" * 100)
    else:
        (tmp_path / "elsewhere.log").write_bytes(LOG.read_bytes())
        os.symlink(tmp_path / "elsewhere.log", rank1)
    code, out, err = run_cli(capsys, "check", folder)
    assert code != 0 and RANK_LOG.format(1) in err and "not checked" in err, (code, out, err)
    assert "rank 0:" in out + err


def test_a_file_swapped_for_a_symlink_out_while_followed_is_not_read(tmp_path):
    folder = tmp_path / "job"
    folder.mkdir()
    path = watch_file(folder, 0, [start(0), steps(0, 4)])
    follower = Follower(folder)
    follower.poll()
    secret = watch_file(tmp_path, 0, [start(0), steps(0, 4), alert(1, "SECRET-OUTSIDE"), STOP], name="outside.jsonl")
    os.symlink(secret, folder / "swap")
    os.replace(folder / "swap", path)
    follower.poll()
    assert not any("SECRET" in a.sentence for a in follower.alerts)
    assert [p for p in problems_at(follower.problems, WATCH.format(0)) if "outside the directory" in p.message]


def test_a_log_line_longer_than_the_limit_is_said_and_the_log_read_on(tmp_path):
    """A graph-break payload with a 3 MB line: that line skipped and said, its payload said cut (never shown),
    every later record still read."""
    lines = LOG.read_text(encoding="utf-8").split("\n")
    i = next(i for i, line in enumerate(lines) if '"dynamo_graph_break_reason"' in line)
    lines.insert(i + 2, "\t" + "q" * (3 * MAX_LINE_BYTES))
    (tmp_path / RANK_LOG.format(0)).write_text("\n".join(lines), encoding="utf-8")
    follower = followed(tmp_path, polls=6)
    kinds = {p.kind for p in problems_at(follower.problems, RANK_LOG.format(0))}
    assert {"long_line", "payload_mismatch"} <= kinds, follower.problems
    assert not any("qqqq" in a.sentence for a in follower.alerts)
    assert len([a for a in follower.alerts if a.kind == "recompile"]) == 2
