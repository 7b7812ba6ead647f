"""Hostile TORCH_TRACE logs, job directories and report outputs (issue 20, items 2, 3 and 5).

Every input is a real trace, made by one real compile (``backend="eager"``, a graph break and a
recompile) and saved with ``save_trace``, then edited line by line. Each case asserts one outcome:

- ``loaded``: the trace loads, nothing reported or lost;
- ``reported``: it loads, and ``cap.trace.problems`` (or ``job.problems``) names the file, the line
  and the field; the capture still renders and its report and JSON are writable UTF-8;
- ``error``: a clear one-line error naming the path and the cause (``strict=True``, the report CLI's
  output paths, ``--load ''``), never a traceback.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import pytest
import torch

from compiler.__main__ import main as cli
from compiler.readers.job import Job, load_trace
from compiler.readers.trace import TraceError, TraceWarning

REPO = Path(__file__).resolve().parent.parent
RANK_LOG = "dedicated_log_torch_trace_rank_{}.log"


def with_break(x):
    y = x.sin() + 1
    torch._dynamo.graph_break()
    return y.cos()


@pytest.fixture(scope="module")
def real_trace(tmp_path_factory) -> Path:
    """One real compile saved as a TORCH_TRACE log: 2 frames, a graph break, a recompile."""
    import compiler

    torch._dynamo.reset()
    with compiler.capture() as cap:
        compiled = torch.compile(with_break, backend="eager")
        compiled(torch.randn(4))
        compiled(torch.randn(4, 5))
    assert cap.summary.graph_breaks and cap.summary.recompiles
    return cap.save_trace(tmp_path_factory.mktemp("real") / "real.log")


@pytest.fixture(scope="module")
def baseline(real_trace):
    cap = quiet_load(real_trace)
    assert cap.trace.problems == []
    return cap


def quiet_load(path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceWarning)
        return load_trace(path, **kwargs)


def one_line(text) -> str:
    text = str(text)
    assert text.strip() and "\n" not in text and "Traceback" not in text, text
    return text


# --- editing a real trace --------------------------------------------------------------------------

def read_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")


def envelope_at(lines: list[str], kind: str, nth: int = 0) -> int:
    """The index of the ``nth`` envelope line of ``kind`` (artifacts by their name)."""
    found = -1
    for i, line in enumerate(lines):
        if line.startswith("\t") or "] {" not in line:
            continue
        metadata = json.loads(line[line.index("] {") + 2:])
        first = next(iter(metadata))
        name = f"artifact:{metadata['artifact']['name']}" if first == "artifact" else first
        if name == kind:
            found += 1
            if found == nth:
                return i
    raise LookupError(f"no envelope {kind} #{nth}")


def set_field(line: str, path: str, value) -> str:
    """``line`` with the envelope field at the dotted ``path`` set to ``value`` (``DELETE`` removes it)."""
    start = line.index("] {") + 2
    metadata = json.loads(line[start:])
    *parents, last = path.split(".")
    node = metadata
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if value is DELETE:
        del node[last]
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return line[:start] + json.dumps(metadata)


DELETE = object()


def edited(real_trace: Path, tmp_path: Path, kind: str, path: str, value, nth: int = 0) -> tuple[Path, int]:
    """The real trace with one field of one envelope changed: (the file, that envelope's line number)."""
    lines = read_lines(real_trace)
    at = envelope_at(lines, kind, nth)
    lines[at] = set_field(lines[at], path, value)
    out = tmp_path / "hostile.log"
    out.write_text("\n".join(lines), encoding="utf-8")
    return out, at + 1


def assert_renders(cap, tmp_path: Path) -> None:
    """The capture renders as a notebook view and a report page, and saves, as UTF-8."""
    from explorer.job_view import report_page, write_report
    from explorer.page import render_static

    render_static(cap).encode("utf-8")
    report_page(cap).encode("utf-8")
    write_report(cap, tmp_path / "report.html")
    cap.save(tmp_path / "cap.json")


def assert_reported(path: Path, line: int | None, field: str | None, tmp_path: Path, kind: str = "bad_field"):
    """The trace loads; a problem of ``kind`` names the file, ``line`` and ``field``; strict refuses it
    in one line; the capture renders."""
    cap = quiet_load(path)
    found = [p for p in cap.trace.problems if p.kind == kind and (field is None or p.field == field)
             and (line is None or p.line == line)]
    assert found, [str(p) for p in cap.trace.problems]
    text = one_line(found[0])
    assert text.startswith(f"{path}:") and (line is None or f":{line}:" in text)
    with pytest.raises(TraceError) as refused:
        quiet_load(path, strict=True)
    one_line(refused.value)
    assert_renders(cap, tmp_path)
    return cap


# --- item 2: one malformed field is a reported problem, never a failed load ------------------------

INF, NAN = math.inf, math.nan
BAD_IDS = ["abc", "../../x", [1], {"a": 1}, INF, -INF, NAN, -1, 1.5, True, "0", 10 ** 30]

CONTEXT_CASES = [(key, value) for key in ("attempt", "frame_id", "frame_compile_id") for value in BAD_IDS] + [
    ("rank", "0"), ("rank", -2), ("rank", [0]), ("compiled_autograd_id", "x")]


@pytest.mark.parametrize("key,value", CONTEXT_CASES, ids=lambda v: repr(v)[:20])
def test_a_bad_context_field_is_reported(real_trace, tmp_path, key, value):
    path, line = edited(real_trace, tmp_path, "dynamo_output_graph", key, value)
    assert_reported(path, line, key, tmp_path)


@pytest.mark.parametrize("key", ["frame_id", "frame_compile_id", "attempt"])
def test_a_null_context_field_loads(real_trace, tmp_path, key, baseline):
    """torch writes ``frame_id: null`` for compiled-autograd records: a record of no compile, not a problem."""
    path, _ = edited(real_trace, tmp_path, "dynamo_output_graph", key, None)
    cap = quiet_load(path)
    assert not [p for p in cap.trace.problems if p.kind == "bad_field"]
    assert len(cap.compiles) == len(baseline.compiles)


BODY_CASES = [("artifact", "x"), ("artifact", [1]), ("artifact", None), ("artifact", 5),
              ("compilation_metrics", []), ("compilation_metrics", "x"), ("compilation_metrics", 7),
              ("dynamo_start", []), ("dynamo_start", "x"), ("dynamo_output_graph", "x"),
              ("dynamo_cpp_guards_str", [1]), ("describe_tensor", 3), ("describe_source", "L['x']"),
              ("chromium_event", [])]


@pytest.mark.parametrize("kind,value", BODY_CASES, ids=lambda v: repr(v)[:20])
def test_a_record_body_that_is_not_an_object_is_reported(real_trace, tmp_path, kind, value):
    name = "artifact:dynamo_graph_break_reason" if kind == "artifact" else kind
    path, line = edited(real_trace, tmp_path, name, kind, value)
    assert_reported(path, line, kind, tmp_path)


METRIC_CASES = [("entire_frame_compile_time_s", "1.5"), ("entire_frame_compile_time_s", [1]),
                ("entire_frame_compile_time_s", INF), ("backend_compile_time_s", "x"), ("start_time_us", {}),
                ("guard_latency_us", True), ("co_name", 5), ("co_name", ["fn"]), ("co_filename", 7),
                ("co_firstlineno", "2"), ("co_firstlineno", -5), ("fail_type", ["Unsupported"]),
                ("fail_reason", {"a": 1}), ("fail_user_frame_filename", 3), ("fail_user_frame_lineno", "9"),
                ("restart_reasons", "because"), ("restart_reasons", [1, 2]), ("has_guarded_code", "yes"),
                ("guard_count", "11"), ("pytorch_version", 2.13), ("recompile_reason", 404)]


@pytest.mark.parametrize("key,value", METRIC_CASES, ids=lambda v: repr(v)[:20])
def test_a_compilation_metric_of_the_wrong_type_is_reported(real_trace, tmp_path, key, value, baseline):
    path, line = edited(real_trace, tmp_path, "compilation_metrics", f"compilation_metrics.{key}", value)
    cap = assert_reported(path, line, f"compilation_metrics.{key}", tmp_path)
    assert len(cap.compiles) == len(baseline.compiles)


def test_a_failed_compile_with_a_dict_fail_reason_is_reported(real_trace, tmp_path):
    lines = read_lines(real_trace)
    at = envelope_at(lines, "compilation_metrics")
    lines[at] = set_field(set_field(lines[at], "compilation_metrics.fail_type", "Unsupported"),
                          "compilation_metrics.fail_reason", {"nested": ["x"]})
    path = tmp_path / "failed.log"
    path.write_text("\n".join(lines))
    cap = assert_reported(path, at + 1, "compilation_metrics.fail_reason", tmp_path)
    assert cap.compiles[0].status == "failed"


STACK_CASES = [("dynamo_start.stack", "x"), ("dynamo_start.stack", [1]), ("dynamo_start.stack.-1.line", "two"),
               ("dynamo_start.stack.-1.name", 5), ("dynamo_start.stack.-1.filename", {"a": 1}),
               ("dynamo_start.stack.-1.line", -1)]


@pytest.mark.parametrize("key,value", STACK_CASES, ids=lambda v: repr(v)[:20])
def test_a_bad_dynamo_start_frame_is_reported(real_trace, tmp_path, key, value):
    path, line = edited(real_trace, tmp_path, "dynamo_start", key, value)
    assert_reported(path, line, key.replace(".stack.-1.", ".stack[-1]."), tmp_path)


@pytest.mark.parametrize("value", [1.5, True, [1], {"a": 1}, -1], ids=repr)
def test_a_shape_symbol_of_the_wrong_type_leaves_out_its_stage_and_is_reported(real_trace, tmp_path, value,
                                                                               baseline):
    """A value no check knows about still cannot end the load: the stage built from it is left out
    (its parser failed, or its result does not match the capture's schema) and named as a problem."""
    path, _ = edited(real_trace, tmp_path, "create_symbol", "create_symbol.symbol", value)
    cap = assert_reported(path, None, None, tmp_path, kind="bad_stage")
    assert not cap.compiles[1].shapes.available and "compile 0/1" in str(cap.trace.problems[0])
    assert len(cap.compiles) == len(baseline.compiles)


def chromium_lines(lines: list[str]) -> list[int]:
    return [i for i, line in enumerate(lines) if '{"chromium_event"' in line]


def with_event(lines: list[str], i: int, change) -> None:
    """Edit the chromium event payload that follows envelope ``i`` (its md5 follows the new payload)."""
    import hashlib

    end = i + 1
    while end < len(lines) and lines[end].startswith("\t"):
        end += 1
    event = change(json.loads("\n".join(line[1:] for line in lines[i + 1:end])))
    text = json.dumps(event)
    lines[i + 1:end] = ["\t" + text]
    lines[i] = set_field(lines[i], "has_payload", hashlib.md5(text.encode()).hexdigest())


EVENT_CASES = {"ts as text": lambda e: {**e, "ts": str(e["ts"])}, "ts a list": lambda e: {**e, "ts": [e["ts"]]},
               "ts true": lambda e: {**e, "ts": True}, "ts infinite": lambda e: {**e, "ts": INF},
               "name a number": lambda e: {**e, "name": 5}, "ph a list": lambda e: {**e, "ph": ["B"]},
               "args text": lambda e: {**e, "args": "x"},
               "compile_id a number": lambda e: {**e, "args": {"compile_id": 0}},
               "not an object": lambda e: [e], "a string": lambda e: "B"}


@pytest.mark.parametrize("case", list(EVENT_CASES))
def test_chromium_events_of_mixed_types_are_reported(real_trace, tmp_path, case, baseline):
    lines = read_lines(real_trace)
    i = chromium_lines(lines)[3]
    with_event(lines, i, EVENT_CASES[case])
    path = tmp_path / "events.log"
    path.write_text("\n".join(lines))
    cap = assert_reported(path, i + 1, None, tmp_path)
    assert len(cap.compiles) == len(baseline.compiles)


def test_a_chromium_payload_that_is_not_json_is_reported(real_trace, tmp_path):
    import hashlib

    lines = read_lines(real_trace)
    i = chromium_lines(lines)[2]
    end = i + 1
    while lines[end].startswith("\t"):
        end += 1
    lines[i + 1:end] = ["\t{not json"]
    lines[i] = set_field(lines[i], "has_payload", hashlib.md5(b"{not json").hexdigest())
    path = tmp_path / "payload.log"
    path.write_text("\n".join(lines))
    assert_reported(path, i + 1, None, tmp_path)


STRING_TABLE_CASES = [["only text"], "x", [1, "a"], ["a", -1], ["a", "b"], ["a", 1.5], None, {"a": 1}]


@pytest.mark.parametrize("value", STRING_TABLE_CASES, ids=repr)
def test_a_bad_string_table_entry_is_reported(real_trace, tmp_path, value):
    lines = read_lines(real_trace)
    at = next(i for i, line in enumerate(lines) if '{"str": ' in line)
    lines[at] = set_field(lines[at], "str", value)
    path = tmp_path / "strings.log"
    path.write_text("\n".join(lines))
    assert_reported(path, at + 1, "str", tmp_path)


@pytest.mark.parametrize("depth", [5_000, 100_000])
def test_a_line_nested_deeper_than_python_reads_is_reported(real_trace, tmp_path, depth, baseline):
    lines = read_lines(real_trace)
    at = envelope_at(lines, "dynamo_start", 1)
    lines.insert(at, lines[at].split("] {")[0] + '] {"dynamo_start": ' + "[" * depth + "]" * depth + "}")
    path = tmp_path / "deep.log"
    path.write_text("\n".join(lines))
    cap = assert_reported(path, at + 1, None, tmp_path, kind="corrupted_json")
    assert len(cap.compiles) == len(baseline.compiles)


def test_a_field_nested_deep_inside_an_envelope_is_reported(real_trace, tmp_path):
    lines = read_lines(real_trace)
    at = envelope_at(lines, "compilation_metrics")
    head, body = lines[at].split("] {", 1)
    lines[at] = head + '] {"compilation_metrics": ' + '{"a": ' * 5000 + "1" + "}" * 5000 + ", " + body
    path = tmp_path / "deep_field.log"
    path.write_text("\n".join(lines))
    assert_reported(path, at + 1, None, tmp_path, kind="corrupted_json")


# --- item 5: the silent cases, each handled or reported ----------------------------------------------

@pytest.mark.parametrize("value", [None, 5, "not-an-md5", [1]], ids=repr)
def test_a_bad_has_payload_keeps_the_payload_and_is_reported(real_trace, tmp_path, value, baseline):
    path, line = edited(real_trace, tmp_path, "dynamo_output_graph", "has_payload", value)
    cap = assert_reported(path, line, "has_payload", tmp_path)
    assert cap.summary.graphs == baseline.summary.graphs  # has_payload: null dropped a graph


@pytest.mark.parametrize("copies", [2, 3])
def test_a_log_concatenated_twice_counts_once_and_is_reported(real_trace, tmp_path, copies, baseline):
    path = tmp_path / "twice.log"
    path.write_text(real_trace.read_text() * copies)
    cap = quiet_load(path)
    repeats = [p for p in cap.trace.problems if p.kind == "duplicate_records"]
    assert len(repeats) == 1 and one_line(repeats[0])
    assert cap.summary.graph_breaks == baseline.summary.graph_breaks
    assert cap.summary.graphs == baseline.summary.graphs
    assert cap.summary.kernels == baseline.summary.kernels
    assert len(cap.compiles) == len(baseline.compiles)
    with pytest.raises(TraceError, match="duplicate|same record"):
        quiet_load(path, strict=True)


def test_records_without_frame_ids_are_reported(real_trace, tmp_path):
    out = []
    for line in read_lines(real_trace):
        if "] {" in line and not line.startswith("\t") and '"str"' not in line:
            start = line.index("] {") + 2
            metadata = {k: v for k, v in json.loads(line[start:]).items() if k not in ("frame_id", "frame_compile_id")}
            line = line[:start] + json.dumps(metadata)
        out.append(line)
    path = tmp_path / "no_ids.log"
    path.write_text("\n".join(out))
    cap = quiet_load(path)
    assert cap.compiles == []
    assert [p.kind for p in cap.trace.problems] == ["no_compiles"] and one_line(cap.trace.problems[0])


def test_save_trace_keeps_a_failed_payload_failed(real_trace, tmp_path):
    lines = read_lines(real_trace)
    at = envelope_at(lines, "dynamo_output_graph")
    lines[at + 1] = lines[at + 1] + " # edited"
    path = tmp_path / "corrupted.log"
    path.write_text("\n".join(lines))
    cap = quiet_load(path)
    assert [p.kind for p in cap.trace.problems] == ["payload_mismatch"]
    again = quiet_load(cap.save_trace(tmp_path / "saved.log"))
    assert [p.kind for p in again.trace.problems] == ["payload_mismatch"]  # not re-hashed into a valid log
    from tlparse_fixtures import TLPARSE

    if Path(TLPARSE).exists():
        result = subprocess.run([TLPARSE, str(tmp_path / "saved.log"), "--strict", "-o", str(tmp_path / "tl"),
                                 "--no-browser", "--overwrite"], capture_output=True, text=True, timeout=120)
        assert result.returncode != 0


SURROGATE_CASES = [("compilation_metrics", "compilation_metrics.co_name"),
                   ("describe_source", "describe_source.source"),
                   ("dynamo_start", "dynamo_start.stack.-1.name")]


@pytest.mark.parametrize("kind,key", SURROGATE_CASES)
def test_a_lone_surrogate_in_an_envelope_string_is_reported_and_renders(real_trace, tmp_path, kind, key):
    path, line = edited(real_trace, tmp_path, kind, key, "bad \ud800 name")
    cap = assert_reported(path, line, None, tmp_path, kind="bad_text")
    assert "\\ud800" not in cap.to_json()


def test_a_lone_surrogate_in_the_string_table_and_an_event_name_renders(real_trace, tmp_path):
    lines = read_lines(real_trace)
    at = next(i for i, line in enumerate(lines) if '{"str": ' in line)
    lines[at] = set_field(lines[at], "str.0", "/tmp/\udcff.py")
    with_event(lines, chromium_lines(lines)[1], lambda e: {**e, "name": "x\ud800"})
    path = tmp_path / "surrogate.log"
    path.write_text("\n".join(lines))
    cap = quiet_load(path)
    assert_renders(cap, tmp_path)


@pytest.mark.parametrize("where", ["envelope", "payload"])
def test_a_line_that_is_not_utf8_is_reported(real_trace, tmp_path, where, baseline):
    lines = real_trace.read_bytes().split(b"\n")
    at = envelope_at(read_lines(real_trace), "dynamo_output_graph") + (where == "payload")
    lines[at] = lines[at].replace(b"}", b", \"x\": \"\xe9\"}", 1) if where == "envelope" else lines[at] + b" \xff\xfe"
    path = tmp_path / "latin1.log"
    path.write_bytes(b"\n".join(lines))
    cap = assert_reported(path, at + 1, None, tmp_path, kind="bad_text")
    assert cap.summary.graphs == baseline.summary.graphs


def test_a_lone_surrogate_in_a_json_payload_renders(real_trace, tmp_path):
    """A payload is JSON-decoded only by the stage that reads it (here a cache lookup the trace adds to
    compile 0/0): the views escape what they show into UTF-8 text."""
    import hashlib

    lines = read_lines(real_trace)
    at = envelope_at(lines, "compilation_metrics")
    payload = json.dumps({"cache_state": "miss \ud800", "key": "f\udfff"})
    envelope = {"artifact": {"name": "fx_graph_cache_miss", "encoding": "json"}, "frame_id": 0,
                "frame_compile_id": 0, "attempt": 0, "has_payload": hashlib.md5(payload.encode()).hexdigest()}
    lines[at:at] = [lines[at].split("] {")[0] + "] " + json.dumps(envelope), "\t" + payload]
    path = tmp_path / "cache.log"
    path.write_text("\n".join(lines))
    cap = quiet_load(path)
    assert cap.compiles[0].timings.cache
    assert_renders(cap, tmp_path)
    from explorer.html import esc

    assert str(esc(cap.compiles[0].timings.cache[0].cache_state)).encode("utf-8")  # what any view shows of it


# --- job directories: a bad rank is skipped and listed, every other rank loads ----------------------

def job_of(real_trace: Path, folder: Path, ranks: int = 2) -> Path:
    folder.mkdir()
    for rank in range(ranks):
        text = real_trace.read_text()
        (folder / RANK_LOG.format(rank)).write_text(text)
    return folder


def bad_rank_binary(folder):
    (folder / RANK_LOG.format(2)).write_bytes(b"\0\1\2" * 100)


def bad_rank_empty(folder):
    (folder / RANK_LOG.format(2)).write_text("")


def bad_rank_not_a_trace(folder):
    (folder / RANK_LOG.format(2)).write_text("hello\nworld\n")


def bad_rank_invalid_utf8(folder):
    (folder / RANK_LOG.format(2)).write_bytes(b"V1124 10:38:19.133973 0 x.py:0] {\"a\xff\": 1}\n")


def bad_rank_deep(folder):
    (folder / RANK_LOG.format(2)).write_text("V1124 10:38:19.133973 0 x.py:0] " + "[" * 10000 + "]" * 10000 + "\n")


def bad_rank_a_directory(folder):
    (folder / RANK_LOG.format(2)).mkdir()


def bad_rank_dangling_symlink(folder):
    (folder / RANK_LOG.format(2)).symlink_to(folder / "nowhere.log")


def bad_rank_symlink_loop(folder):
    (folder / RANK_LOG.format(2)).symlink_to(folder / RANK_LOG.format(2))


def bad_rank_fifo(folder):
    os.mkfifo(folder / RANK_LOG.format(2))


def bad_rank_outside(folder):
    outside = folder.parent / "elsewhere.log"
    outside.write_text((folder / RANK_LOG.format(0)).read_text())
    (folder / RANK_LOG.format(2)).symlink_to(outside)


def bad_rank_capture_next_to_logs(folder):
    (folder / "tcompile_capture_rank_2.json").write_text("{}")


def bad_rank_latin1_name(folder):
    os.rename(folder / RANK_LOG.format(1), os.fsencode(folder) + b"/dedicated_log_torch_trace_rank_1_\xe9.log")


BAD_RANKS = {f.__name__.removeprefix("bad_rank_"): f for f in (
    bad_rank_binary, bad_rank_empty, bad_rank_not_a_trace, bad_rank_deep, bad_rank_a_directory,
    bad_rank_dangling_symlink, bad_rank_symlink_loop, bad_rank_fifo, bad_rank_outside,
    bad_rank_capture_next_to_logs, bad_rank_latin1_name)}


@pytest.mark.parametrize("case", list(BAD_RANKS))
def test_a_bad_rank_is_skipped_and_listed_and_the_others_load(real_trace, tmp_path, case):
    folder = job_of(real_trace, tmp_path / "job")
    BAD_RANKS[case](folder)
    job = quiet_load(folder)
    assert isinstance(job, Job) and job.ranks == [0, 1]
    if case != "latin1_name":
        assert job.problems, case
    for problem in job.problems:
        one_line(problem)
        str(problem).encode("utf-8")
    from explorer.job_view import report_page

    report_page(job).encode("utf-8")


@pytest.mark.parametrize("case", [c for c in BAD_RANKS if c != "latin1_name"])
def test_a_rank_that_did_not_load_is_a_divergence_of_severity_error(real_trace, tmp_path, case):
    """Rank 2's file is there but unread: what it compiled is unknown, so the job cannot be said to have
    compiled alike (the labs' check_ranks_compile_alike reads severity "error")."""
    folder = job_of(real_trace, tmp_path / "job")
    BAD_RANKS[case](folder)
    job = quiet_load(folder)
    unread = job.divergences[0]
    assert (unread.kind, unread.severity, unread.groups) == ("unread_ranks", "error", [[0, 1], [2]]), case
    one_line(unread.explanation)
    assert [d.kind for d in job.divergences[1:]] == [d.kind for d in quiet_load(job_of(
        real_trace, tmp_path / "whole")).divergences]  # the loaded ranks' own findings are unchanged


def _overview_text(job) -> str:
    import html
    import re

    from explorer.job_view import render_job_overview

    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", str(render_job_overview(job)))).split())


def test_the_job_overview_says_an_unread_rank_is_unknown_not_different(real_trace, tmp_path):
    """An unread rank is not a rank that "did not compile the same way": the overview says what is known —
    that rank is unknown, and the ranks that loaded are compared among themselves."""
    from compiler.readers.job import Divergence

    whole = quiet_load(job_of(real_trace, tmp_path / "whole"))
    assert not whole.divergences  # two copies of one log: the loaded ranks agree
    assert "The ranks compiled the same way" in _overview_text(whole)

    folder = job_of(real_trace, tmp_path / "job")
    bad_rank_binary(folder)
    job = quiet_load(folder)
    assert [d.kind for d in job.divergences] == ["unread_ranks"]
    text = _overview_text(job)
    assert "Rank 2 could not be read: whether it compiled like the others is unknown" in text
    assert "The ranks that loaded (ranks 0, 1) compiled the same way" in text
    assert "did not compile the same way" not in text and "The ranks compiled the same way" not in text

    job.divergences.append(Divergence("recompiles", [[0], [1]], ["no recompiles", "recompiled 0/1"],
                                      "rank 1 recompiled", severity="error"))
    text = _overview_text(job)
    assert "1 divergence among the ranks that loaded (ranks 0, 1) — they did not compile the same way" in text
    assert "compiled the same way:" not in text.replace("did not compile the same way:", "")

    single = tmp_path / "single"
    job_of(real_trace, single, ranks=1)
    bad_rank_binary(single)
    text = _overview_text(quiet_load(single))
    assert "Only one rank loaded (rank 0)" in text and "compiled the same way" not in text


def test_a_file_without_a_rank_in_its_name_is_no_unread_rank(real_trace, tmp_path):
    folder = job_of(real_trace, tmp_path / "job")
    (folder / "another.log").write_bytes(b"\0" * 10)
    job = quiet_load(folder)
    assert job.ranks == [0, 1] and job.problems and not any(d.kind == "unread_ranks" for d in job.divergences)


def test_a_rank_of_invalid_utf8_loads_with_its_problems(real_trace, tmp_path):
    folder = job_of(real_trace, tmp_path / "job")
    bad_rank_invalid_utf8(folder)
    job = quiet_load(folder)
    assert job.ranks == [0, 1, 2] and [p.kind for p in job.problems] == ["bad_text", "bad_field", "no_compiles"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a chmod 000 file")
def test_an_unreadable_rank_is_skipped_and_listed(real_trace, tmp_path):
    folder = job_of(real_trace, tmp_path / "job", ranks=3)
    (folder / RANK_LOG.format(2)).chmod(0)
    job = quiet_load(folder)
    assert job.ranks == [0, 1] and any("Permission denied" in str(p) for p in job.problems)


@pytest.mark.parametrize("key,value", [("attempt", "abc"), ("frame_id", "../../x"), ("frame_compile_id", "x")])
def test_a_rank_with_a_bad_field_loads_with_its_problem(real_trace, tmp_path, key, value):
    folder = job_of(real_trace, tmp_path / "job")
    path, line = edited(real_trace, tmp_path, "dynamo_output_graph", key, value)
    os.replace(path, folder / RANK_LOG.format(2))
    job = quiet_load(folder)
    assert job.ranks == [0, 1, 2]
    assert any(p.field == key and p.line == line for p in job.problems)
    with pytest.raises(TraceError):
        quiet_load(folder, strict=True)


RANK_ARTIFACTS = {"runtime as text": '{"ops": [{"name": "mm", "estimated_runtime_ns": "5"}]}',
                  "ops not a list": '{"ops": "mm"}', "a list": "[1, 2]", "nested 5,000 deep": "[" * 5000 + "]" * 5000,
                  "an int of 5,000 digits": "9" * 5000, "not json": "{ops"}


@pytest.mark.parametrize("case", list(RANK_ARTIFACTS))
def test_a_rank_artifact_of_an_unexpected_form_does_not_stop_the_job(real_trace, tmp_path, case):
    """The rank comparison reads some artifacts' JSON itself (Inductor's runtime estimates): one rank's
    odd payload leaves the others' findings and every rank in place."""
    import hashlib

    folder = job_of(real_trace, tmp_path / "job")
    for rank, payload in ((0, RANK_ARTIFACTS[case]), (1, '{"ops": [{"name": "mm", "estimated_runtime_ns": 7}]}')):
        log = folder / RANK_LOG.format(rank)
        envelope = {"artifact": {"name": "inductor_runtime_and_tensor_meta", "encoding": "json"}, "rank": rank,
                    "has_payload": hashlib.md5(payload.encode()).hexdigest()}
        log.write_text(log.read_text() + f"V1124 10:38:20.000000 0 x.py:0] {json.dumps(envelope)}\n\t{payload}\n")
    job = quiet_load(folder)
    assert job.ranks == [0, 1]
    for problem in job.problems:
        one_line(problem)


def test_a_job_of_only_bad_ranks_is_one_line_error(tmp_path):
    folder = tmp_path / "job"
    folder.mkdir()
    (folder / RANK_LOG.format(0)).write_bytes(b"\0")
    (folder / RANK_LOG.format(1)).symlink_to(tmp_path / "nowhere")
    with pytest.raises(TraceError) as refused:
        quiet_load(folder)
    one_line(refused.value)


# --- item 3: the report CLI's outputs and atomic writes ---------------------------------------------

def run_cli(capsys, *args) -> tuple[int, str, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceWarning)
        rc = cli(["report", *map(str, args)])
    out, err = capsys.readouterr()
    return rc, out, err


def bad_output(tmp_path: Path, real_trace: Path, case: str) -> str:
    if case == "the input":
        return str(real_trace)
    if case == "the input by another name":
        return str(real_trace.parent / ".." / real_trace.parent.name / real_trace.name)
    if case == "a missing folder":
        return str(tmp_path / "missing" / "r.html")
    if case == "a parent that is a file":
        (tmp_path / "file").write_text("x")
        return str(tmp_path / "file" / "r.html")
    if case == "a directory":
        return str(tmp_path)
    if case == "/dev/full":
        return "/dev/full"
    if case == "a fifo":
        os.mkfifo(tmp_path / "fifo.html")
        return str(tmp_path / "fifo.html")
    if case == "an empty name":
        return ""
    raise KeyError(case)


OUTPUT_CASES = ["the input", "the input by another name", "a missing folder", "a parent that is a file",
                "a directory", "/dev/full", "a fifo", "an empty name"]


@pytest.mark.parametrize("case", OUTPUT_CASES)
def test_a_bad_report_output_is_a_one_line_error(real_trace, tmp_path, capsys, case):
    before = real_trace.read_bytes()
    rc, out, err = run_cli(capsys, real_trace, "-o", bad_output(tmp_path, real_trace, case))
    assert rc == 2, (out, err)
    assert one_line(err.strip()).startswith("error: ")
    assert real_trace.read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_folder_is_a_one_line_error(real_trace, tmp_path, capsys):
    folder = tmp_path / "ro"
    folder.mkdir(mode=0o500)
    rc, _, err = run_cli(capsys, real_trace, "-o", folder / "r.html")
    assert rc == 2 and one_line(err.strip()).startswith("error: cannot write")


def test_a_report_over_a_file_of_the_input_job_is_refused(real_trace, tmp_path, capsys):
    folder = job_of(real_trace, tmp_path / "job")
    rank_log = folder / RANK_LOG.format(1)
    before = rank_log.read_bytes()
    rc, _, err = run_cli(capsys, folder, "-o", rank_log)
    assert rc == 2 and "is the input itself" in one_line(err.strip())
    assert rank_log.read_bytes() == before


def _has_open(pid: int, path) -> bool:
    """Does process ``pid`` hold ``path`` open (Linux: /proc/PID/fd)?"""
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


def test_ctrl_c_during_the_report_cli_is_one_line_and_not_success(real_trace, tmp_path):
    """SIGINT while a large trace loads: exit code 130 and one 'error:' line, no traceback, no report."""
    import signal
    import time

    big = tmp_path / "big.log"
    big.write_text(real_trace.read_text() * 300)
    process = subprocess.Popen([sys.executable, "-m", "compiler", "report", str(big), "-o", str(tmp_path / "r.html")],
                               cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120  # interrupt once the CLI reads the trace (not while Python imports torch)
    while time.monotonic() < deadline and process.poll() is None and not _has_open(process.pid, big):
        time.sleep(0.02)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 130, (out, err)
    assert one_line(err.strip().splitlines()[-1]).startswith("error: interrupted")
    assert not (tmp_path / "r.html").exists()


def test_report_to_stdout(real_trace, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, out, err = run_cli(capsys, real_trace, "-o", "-")
    assert rc == 0 and out.startswith("<!DOCTYPE html>") and "</html>" in out
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("what", ["an empty path", "a blank path", "a missing path", "a fifo", "/dev/zero"])
def test_a_bad_report_input_is_a_one_line_error(tmp_path, capsys, what):
    path = {"an empty path": "", "a blank path": "  ", "a missing path": str(tmp_path / "nope.log"),
            "a fifo": str(tmp_path / "in.log"), "/dev/zero": "/dev/zero"}[what]
    if what == "a fifo":
        os.mkfifo(path)
    rc, _, err = run_cli(capsys, path, "-o", tmp_path / "r.html")
    assert rc == 2 and one_line(err.strip()).startswith("error: ")


def test_a_hostile_trace_through_the_cli_subprocess(real_trace, tmp_path):
    path, _ = edited(real_trace, tmp_path, "compilation_metrics", "compilation_metrics.co_name", {"x": 1})
    result = subprocess.run([sys.executable, "-m", "compiler", "report", str(path), "-o", str(tmp_path / "r.html")],
                            cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    warned = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert warned and "co_name" in warned[0]
    assert "Traceback" not in result.stderr


def test_a_trace_named_in_latin1_reports_through_the_cli(real_trace, tmp_path, capsys):
    name = os.fsencode(tmp_path) + b"/trace_\xe9t\xe9.log"
    with open(name, "wb") as f:
        f.write(real_trace.read_bytes())
    rc, out, err = run_cli(capsys, os.fsdecode(name), "-o", tmp_path / "r.html")
    assert rc == 0, err
    (tmp_path / "r.html").read_text(encoding="utf-8")
    cap = quiet_load(os.fsdecode(name))
    assert cap.environment["trace_file"].endswith("trace_\ufffdt\ufffd.log") and cap.to_json().encode("utf-8")


def test_a_save_replaces_the_file_whole(baseline, tmp_path):
    """Captures, reports and traces are written through one temporary file and a rename: the old
    inode is replaced, nothing partial is left behind, and a reader racing two writers always sees
    valid JSON."""
    from explorer.job_view import write_report

    target = tmp_path / "cap.json"
    target.write_text("old")
    before = target.stat().st_ino
    baseline.save(target)
    assert target.stat().st_ino != before and json.loads(target.read_text())["format"]
    write_report(baseline, tmp_path / "r.html")
    baseline.save_trace(tmp_path / "t.log")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cap.json", "r.html", "t.log"]

    errors, stop = [], threading.Event()

    def writer():
        while not stop.is_set():
            baseline.save(target)

    def reader():
        for _ in range(200):
            try:
                json.loads(target.read_text())
            except ValueError as exc:
                errors.append(exc)

    writers = [threading.Thread(target=writer) for _ in range(2)]
    for w in writers:
        w.start()
    reader()
    stop.set()
    for w in writers:
        w.join()
    assert errors == []


def test_a_save_that_runs_out_of_space_keeps_the_old_file(baseline, tmp_path):
    """A write that fails mid-way (file size limit: EFBIG, like a full disk) leaves the old capture whole."""
    target = tmp_path / "cap.json"
    baseline.save(target)
    good = target.read_bytes()
    script = ("import resource, signal, sys; from compiler.stages.capture import Capture; "
              "cap = Capture.load(sys.argv[1]); signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
              "resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000)); cap.save(sys.argv[1])")
    result = subprocess.run([sys.executable, "-c", script, str(target)], cwd=REPO, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode != 0 and "cannot write" in result.stderr.strip().splitlines()[-1]
    assert target.read_bytes() == good
    assert [p.name for p in tmp_path.iterdir()] == ["cap.json"]


def test_save_to_dev_full_is_refused(baseline):
    from compiler.stages.files import OutputError

    with pytest.raises(OutputError, match="not a regular file") as refused:
        baseline.save("/dev/full")
    one_line(refused.value)


# --- %tcompile --load -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "explorer")
    return ip


@pytest.mark.parametrize("arg", ["''", '""', "' '"])
def test_load_of_an_empty_path_is_a_one_line_usage_error(shell, arg):
    from IPython.core.error import UsageError

    with pytest.raises(UsageError) as refused:
        shell.run_line_magic("tcompile", f"--load {arg}")
    assert "needs a path" in one_line(refused.value)


def test_load_of_a_hostile_trace_in_the_shell(shell, real_trace, tmp_path):
    path, _ = edited(real_trace, tmp_path, "dynamo_output_graph", "frame_id", "../../x")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceWarning)
        shell.run_line_magic("tcompile", f"--load {path} --name hostile")
    assert shell.user_ns["hostile"].trace.problems
