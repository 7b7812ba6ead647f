"""The Perfetto / chrome://tracing export (compiler.readers.perfetto): a real CPU compile, the file checked
strictly against the Trace Event Format and against the capture's timings."""
from __future__ import annotations

import json
import math
import os
from collections import defaultdict

import pytest
import torch

import compiler
from compiler.__main__ import main

METADATA_NAMES = {"process_name", "thread_name", "process_sort_index", "thread_sort_index", "process_labels"}


def validate_trace_events(document) -> None:
    """The JSON Object Format of the Trace Event Format, strictly, for the event kinds tcompile writes:
    complete events (X: name, cat, ts, dur ≥ 0, pid, tid, args object) and metadata events (M), plus
    what Perfetto's importer needs — slices on one track nest (none overlaps another partially)."""
    assert isinstance(document, dict) and isinstance(document["traceEvents"], list)
    assert set(document) <= {"traceEvents", "displayTimeUnit", "otherData", "systemTraceEvents", "stackFrames"}
    assert document.get("displayTimeUnit", "ms") in ("ms", "ns")
    tracks = defaultdict(list)
    for event in document["traceEvents"]:
        assert isinstance(event, dict) and event["ph"] in ("X", "M"), event
        assert isinstance(event["name"], str) and event["name"]
        assert type(event["pid"]) is int and type(event["tid"]) is int
        assert isinstance(event.get("args", {}), dict)
        if event["ph"] == "M":
            assert event["name"] in METADATA_NAMES
            key = "sort_index" if event["name"].endswith("sort_index") else "name"
            assert set(event["args"]) == {key}
            continue
        assert set(event) <= {"name", "cat", "ph", "ts", "dur", "pid", "tid", "args", "tts", "tdur"}, event
        assert isinstance(event["cat"], str)
        for key in ("ts", "dur"):
            assert isinstance(event[key], (int, float)) and not isinstance(event[key], bool)
            assert math.isfinite(event[key])
        assert event["dur"] >= 0
        tracks[(event["pid"], event["tid"])].append((event["ts"], event["ts"] + event["dur"]))
    for spans in tracks.values():  # a stack of open slices: each new one starts after, or ends inside, the top
        open_ends: list[float] = []
        for start, end in sorted(spans, key=lambda s: (s[0], -s[1])):
            while open_ends and open_ends[-1] <= start + 1e-3:
                open_ends.pop()
            assert not open_ends or end <= open_ends[-1] + 1e-3, f"slice {start}..{end} overlaps its parent"
            open_ends.append(end)


def _graph_break(x):
    x = x.sin()
    print("break")  # two frames: two compile tracks
    return x.cos() + 1


@pytest.fixture(scope="module")
def cap():
    torch._dynamo.reset()
    return compiler.run(_graph_break, (torch.randn(64),), compile_kwargs={"backend": "inductor"}, repeat=3)


def test_the_file_validates_and_matches_the_captures_timings(cap, tmp_path):
    path = cap.save_perfetto(tmp_path / "trace.json")
    assert [p.name for p in tmp_path.iterdir()] == ["trace.json"]  # no temporary file left
    document = json.loads(path.read_text())
    validate_trace_events(document)
    assert json.loads(json.dumps(document)) == document

    compile_events = [e for e in document["traceEvents"] if e.get("cat") == "compile"]
    timed = [c for c in cap.compiles if c.timings.available and c.timings.events]
    assert len(timed) >= 2
    names = {e["args"]["name"] for e in document["traceEvents"] if e["name"] == "thread_name"}
    for c in timed:  # one track per compile, and exactly its events
        track = [e for e in compile_events if e["args"]["compile_id"] == c.compile_id]
        assert len({e["tid"] for e in track}) == 1
        assert any(name.startswith(f"compile {c.compile_id}") for name in names)
        got = sorted((e["args"]["event"], e["dur"]) for e in track)
        want = sorted((e.name, e.seconds * 1e6) for e in c.timings.events)
        assert [name for name, _ in got] == [name for name, _ in want]
        assert all(abs(a - b) <= 1 for (_, a), (_, b) in zip(got, want)), (got, want)  # µs, rounding apart
    assert len({e["tid"] for e in compile_events}) == len(timed)
    first = min(e.start for c in timed for e in c.timings.events)
    for c in timed:  # at their real times, relative to the first compile event
        track = sorted((e for e in compile_events if e["args"]["compile_id"] == c.compile_id), key=lambda e: e["ts"])
        assert track[0]["ts"] == pytest.approx((c.timings.events[0].start - first) * 1e6, abs=1)

    kernels = [e for e in document["traceEvents"] if e.get("cat") == "runtime"]
    measured = [(c.compile_id, k.name, k.seconds) for c in cap.compiles if c.provenance.available
                for k in c.provenance.kernels if k.seconds]
    assert measured, "kernel times were measured on CPU"
    assert sorted((e["args"]["compile_id"], e["name"], round(e["dur"], 1)) for e in kernels) == sorted(
        (cid, name, round(s * 1e6, 1)) for cid, name, s in measured)
    assert not {e["tid"] for e in kernels} & {e["tid"] for e in compile_events}  # a track of their own
    assert min(e["ts"] for e in kernels) >= max(e["ts"] + e["dur"] for e in compile_events)


def test_the_command_line_writes_it_from_a_saved_capture(cap, tmp_path, capsys):
    saved = cap.save(tmp_path / "cap.json")
    out = tmp_path / "out.json"
    assert main(["report", str(saved), "--perfetto", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    validate_trace_events(json.loads(out.read_text()))
    assert json.loads(out.read_text()) == json.loads(cap.save_perfetto(tmp_path / "again.json").read_text())
    assert not (tmp_path / "report.html").exists() and not os.path.exists("report.html")


def test_a_failed_write_leaves_the_old_file(cap, tmp_path, monkeypatch):
    from compiler.stages import files  # the one atomic write (compiler.stages.files.write_atomic)

    path = tmp_path / "trace.json"
    path.write_text("old")
    monkeypatch.setattr(files.os, "replace", lambda *a: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError):
        cap.save_perfetto(path)
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["trace.json"]


def test_the_validator_rejects_partial_overlaps_and_bad_events():
    good = {"name": "a", "cat": "c", "ph": "X", "ts": 0, "dur": 10, "pid": 1, "tid": 1, "args": {}}
    validate_trace_events({"traceEvents": [good, {**good, "ts": 2, "dur": 3}]})
    for bad in ({**good, "ts": 5, "dur": 10}, {**good, "dur": -1}, {**good, "pid": "1"}, {**good, "ph": "Q"}):
        with pytest.raises(AssertionError):
            validate_trace_events({"traceEvents": [good, bad]})


def test_the_timings_view_links_the_same_trace(cap, tmp_path):
    import base64
    import re

    from explorer.views import render_view

    page = str(render_view("timings", cap, cap.compiles[0]))
    found = re.search(r'href="data:application/json;base64,([^"]+)"[^>]*download="tcompile_perfetto.json"', page)
    assert found
    linked = json.loads(base64.b64decode(found.group(1)))
    validate_trace_events(linked)
    assert linked == json.loads(cap.save_perfetto(tmp_path / "t.json").read_text())


def test_a_torch_trace_log_gives_the_same_compile_tracks(cap, tmp_path):
    log = cap.save_trace(tmp_path / "trace.log")  # the TORCH_TRACE format tlparse reads
    out = tmp_path / "from_log.json"
    assert main(["report", str(log), "--perfetto", str(out)]) == 0
    from_log = json.loads(out.read_text())
    validate_trace_events(from_log)
    live = json.loads(cap.save_perfetto(tmp_path / "live.json").read_text())
    compile_slices = lambda doc: sorted((e["args"]["compile_id"], e["args"]["event"], e["ts"], e["dur"])  # noqa: E731
                                        for e in doc["traceEvents"] if e.get("cat") == "compile")
    assert compile_slices(from_log) == compile_slices(live)
    loaded = compiler.load_trace(log)
    assert loaded.compile_time_table().empty  # sampling is live-only: a log holds no samples
    assert all(c.timings.by_line_method is None for c in loaded.compiles)
