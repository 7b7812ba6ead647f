"""TORCH_TRACE logs in and out, distributed jobs, the report CLI (issue 13).

Conformance tests read tlparse's own fixture logs from ../shared/tlparse_inputs (never copied into
the repository) and check the facts tlparse's tests assert; side-by-side tests run the tlparse CLI
(PyPI ``tlparse`` 0.4.3) on the same logs. A real 2-process gloo job runs under torchrun.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from tlparse_fixtures import INPUTS, TLPARSE, needs_inputs, needs_tlparse

import compiler
from compiler.readers.job import Job, load_trace
from compiler.readers.trace import TraceError, TraceWarning, read_records, save_trace
from compiler.readers.trace_capture import load_trace_file

REPO = Path(__file__).resolve().parent.parent


def fixture_logs() -> list[Path]:
    if not INPUTS.is_dir():
        return []
    return sorted(p for p in INPUTS.rglob("*") if p.is_file() and p.suffix in (".log", ".txt") and p.stat().st_size)


def quiet_load(path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceWarning)
        return load_trace(path, **kwargs)


def run_tlparse(path: Path, out: Path, *flags) -> subprocess.CompletedProcess:
    return subprocess.run([TLPARSE, str(path), "-o", str(out), "--overwrite", "--no-browser", *flags],
                          capture_output=True, text=True, timeout=120)


def tlparse_compile_ids(out: Path) -> set[str]:
    """tlparse's compile ids ("[0/0_1]", "[!0/1/0]") as tcompile's frame/compile ids."""
    ids = set()
    for key in json.loads((out / "compile_directory.json").read_text()):
        match = re.match(r"^\[(?:!\d+/)?(\d+)/(\d+)(?:_\d+)?\]$", key)
        if match:
            ids.add(f"{match[1]}/{match[2]}")
    return ids


# --- conformance with tlparse's fixtures ---------------------------------------------------------

@needs_inputs
@pytest.mark.parametrize("path", fixture_logs(), ids=lambda p: str(p.relative_to(INPUTS)))
def test_every_tlparse_fixture_loads(path):
    cap = quiet_load(path)
    assert cap.trace.records > 0
    assert sum(cap.unknown_records.values()) == sum(n for k, n in cap.trace.kinds.items()
                                                    if k in cap.unknown_records)


@needs_inputs
def test_comp_metrics_compile_ids_and_attempts():
    cap = quiet_load(INPUTS / "comp_metrics.log")
    # tlparse: -_0_0_1/, -_1_0_1/, -_2_0_0/ (graph-break restarts of frames 0 and 1)
    assert {c.compile_id: c.attempts for c in cap.compiles} == {"0/0": 2, "1/0": 2, "2/0": 1}
    assert all(c.graph.available for c in cap.compiles)
    assert cap.trace.strings == 14 and cap.trace.payload_mismatches == 0


@needs_inputs
def test_cache_hit_miss_pattern():
    cap = quiet_load(INPUTS / "cache_hit_miss.log")
    fx = [e.artifact for e in cap.compile("1/0").timings.cache if e.artifact.startswith("fx_graph")]
    assert fx == ["fx_graph_cache_miss", "fx_graph_cache_hit", "fx_graph_cache_miss"]  # tlparse: _9 ❌, _20 ✅, _33 ❌


@needs_inputs
def test_old_artifact_names_are_read():
    cap = quiet_load(INPUTS / "inductor_provenance_aot_log_old.txt")
    assert "inductor_pre_grad_graph" not in cap.unknown_records  # read as before_pre_grad_graph
    simple = quiet_load(INPUTS / "simple.log")  # torch ~2.6: compile times only in *_us keys
    assert simple.compiles[0].metrics["entire_frame_compile_time_s"] > 0
    assert simple.compiles[0].inductor.available and simple.compiles[0].aot.available


@needs_inputs
def test_multi_rank_schedule_groups_ranks_0_2_against_1():
    job = quiet_load(INPUTS / "multi_rank_schedule")
    assert job.ranks == [0, 1, 2]  # from the file names: every envelope says rank 0
    schedule = next(d for d in job.divergences if d.kind == "collective_schedule")
    assert schedule.groups == [[0, 2], [1]]
    assert "6 collective ops" in schedule.behaviours[0] and "4 collective ops" in schedule.behaviours[1]
    assert any(p.kind == "rank_mismatch" for p in job.problems)


@needs_inputs
def test_multi_rank_logs_diverging_compile_ids_and_cache():
    job = quiet_load(INPUTS / "multi_rank_logs")
    kinds = {d.kind: d for d in job.divergences}
    assert kinds["compile_ids"].groups == [[0, 2], [1], [3]]
    assert "cache" in kinds
    assert "`x.size()[0]` changed 2 → 3" in kinds["recompiles"].explanation


@needs_inputs
def test_multi_rank_runtime_tensor_meta_ranks_5_and_6():
    job = quiet_load(INPUTS / "multi_rank_runtime")
    kinds = {d.kind: d for d in job.divergences}
    assert [5, 6] in kinds["tensor_meta"].groups
    assert kinds["runtime_estimates"].severity == "info"
    assert any("no estimate for 0/0" in b for b in kinds["runtime_estimates"].behaviours)  # rank 4 lacks a graph


@needs_inputs
def test_graph_execution_order_differs_but_cache_is_consistent():
    job = quiet_load(INPUTS / "graph_exec_order_tests")
    kinds = {d.kind for d in job.divergences}
    assert "execution_order" in kinds and "cache" not in kinds


@needs_inputs
def test_messy_directory_reports_empty_and_decoy_files():
    with pytest.warns(TraceWarning, match="another.log"):
        job = load_trace(INPUTS / "multi_rank_messy_input")
    assert job.ranks == [0, 1] and job.divergences == []
    skipped = {Path(p.file).name: p.kind for p in job.problems}
    assert skipped == {"another.log": "unreadable_file", "some_other_file.txt": "skipped_file"}


@needs_inputs
@needs_tlparse
@pytest.mark.parametrize("name", ["comp_metrics.log", "cache_hit_miss.log", "simple.log",
                                  "multi_rank_logs/dedicated_log_torch_trace_rank_1.log",
                                  "multi_rank_runtime/dedicated_log_torch_trace_rank_0.log",
                                  "collectives_parity/dedicated_log_torch_trace_rank_0.log",
                                  "autotune_with_compile_id.log", "export.log"])
def test_side_by_side_with_tlparse(name, tmp_path):
    """Same compile ids as tlparse, and the same number of payload md5 mismatches."""
    result = run_tlparse(INPUTS / name, tmp_path / "out")
    assert result.returncode == 0, result.stderr
    cap = quiet_load(INPUTS / name)
    assert {c.compile_id for c in cap.compiles} == tlparse_compile_ids(tmp_path / "out")
    stats = re.search(r"Stats \{([^}]*)\}", result.stdout + result.stderr)
    md5_failures = re.search(r"fail_payload_md5: (\d+)", stats[1]) if stats else None
    assert cap.trace.payload_mismatches == (int(md5_failures[1]) if md5_failures else 0)


# --- bad input -----------------------------------------------------------------------------------

def test_missing_path_and_directory_without_logs(tmp_path):
    with pytest.raises(TraceError, match="no such file"):
        load_trace(tmp_path / "nope.log")
    (tmp_path / "notes.md").write_text("hello")
    with pytest.raises(TraceError, match="no TORCH_TRACE logs"):
        load_trace(tmp_path)


def test_binary_and_non_trace_files(tmp_path):
    binary = tmp_path / "model.log"
    binary.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(TraceError, match=r"model.log: a binary file"):
        load_trace(binary)
    text = tmp_path / "other.log"
    text.write_text("just some\nlog lines\n")
    with pytest.raises(TraceError, match="no TORCH_TRACE records in 2 lines"):
        load_trace(text)


@needs_inputs
def test_truncated_last_line_and_corrupted_payload(tmp_path):
    data = (INPUTS / "comp_metrics.log").read_text()
    cut = tmp_path / "cut.log"
    cut.write_text(data[: data.rindex("{") + 30])  # the job died while writing the last envelope
    with pytest.warns(TraceWarning, match=r"cut.log:\d+: the last line is cut off"):
        cap = load_trace(cut)
    assert cap.trace.truncated and len(cap.compiles) == 3
    with pytest.warns(TraceWarning, match=r"simple_corrupted_json.log:13: payload md5"):
        cap = load_trace(INPUTS / "simple_corrupted_json.log")
    assert cap.trace.payload_mismatches == 1 and cap.compiles[0].graph.available
    with pytest.raises(TraceError, match=r"simple_corrupted_json.log:13: payload md5"):
        load_trace(INPUTS / "simple_corrupted_json.log", strict=True)
    broken = tmp_path / "broken.log"
    lines = data.splitlines()
    index = next(i for i, line in enumerate(lines) if '"dynamo_start"' in line)
    lines[index] = lines[index][:-40]  # a corrupted envelope in the middle: counted, skipped
    broken.write_text("\n".join(lines) + "\n")
    with pytest.warns(TraceWarning, match=rf"broken.log:{index + 1}: corrupted JSON"):
        cap = load_trace(broken)
    assert cap.trace.corrupted_lines == 1 and len(cap.compiles) == 3


def _small_trace(tmp_path, name: str, torch_version: str) -> Path:
    """A real trace made here, with its torch_version artifact rewritten to ``torch_version``."""
    def f(x):
        return torch.sin(x) + 1

    with compiler.capture() as cap:
        torch.compile(f, backend="eager")(torch.randn(4))
    path = save_trace(cap, tmp_path / name)
    version = json.dumps({"pytorch_version": torch_version, "commit": None, "oss": True})
    import hashlib

    digest = hashlib.md5(version.encode()).hexdigest()
    text = path.read_text()
    head = ('V1123 08:00:00.000000 1 torch/_logging/_internal.py:1326] {"artifact": {"name": "torch_version", '
            f'"encoding": "json"}}, "has_payload": "{digest}"}}\n\t{version}\n')
    path.write_text(head + text)
    return path


def test_newer_torch_and_mismatched_versions(tmp_path):
    with pytest.warns(TraceWarning, match=r"newer.log: written by torch 3.1.0, newer than tcompile knows"):
        cap = load_trace(_small_trace(tmp_path, "newer.log", "3.1.0"))
    assert cap.environment["torch"] == "3.1.0" and len(cap.compiles) == 1
    torch._dynamo.reset()
    with pytest.warns(TraceWarning, match=r"older.log: written by torch 2.1.2, older than tcompile reads \(2.3\)"):
        cap = load_trace(_small_trace(tmp_path, "older.log", "2.1.2"))
    assert cap.environment["torch"] == "2.1.2" and len(cap.compiles) == 1
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    torch._dynamo.reset()
    _small_trace(job_dir, "dedicated_log_torch_trace_rank_0_a.log", "2.13.0")
    torch._dynamo.reset()
    _small_trace(job_dir, "dedicated_log_torch_trace_rank_1_b.log", "2.11.0")
    with pytest.warns(TraceWarning, match=r"rank_1_b.log: rank 1 ran torch 2.11.0; the ranks ran different torch"):
        job = load_trace(job_dir)
    assert job.ranks == [0, 1]


# --- out: save_trace, read back, tlparse --strict --------------------------------------------------

def _toy(x, n: int):
    y = torch.relu(x) * 2
    print("graph break here") if n > 100 else None
    torch._dynamo.graph_break()
    return y.sum() + n


def _live_capture():
    f = torch.compile(_toy, backend="aot_eager")
    with compiler.capture() as cap:
        f(torch.randn(8, 4), 1)
        f(torch.randn(12, 4), 1)  # recompiles: the size changed
    return cap


@needs_tlparse
def test_save_trace_roundtrip_and_tlparse_strict(tmp_path):
    cap = _live_capture()
    path = cap.save_trace(tmp_path / "dedicated_log_torch_trace_live.log")
    result = run_tlparse(path, tmp_path / "out", "--strict")
    assert result.returncode == 0, result.stdout + result.stderr
    assert tlparse_compile_ids(tmp_path / "out") == {c.compile_id for c in cap.compiles}
    back = load_trace(path)
    assert [c.compile_id for c in back.compiles] == [c.compile_id for c in cap.compiles]
    for live, loaded in zip(cap.compiles, back.compiles):
        assert loaded.graph.code == live.graph.code
        assert loaded.guards.tree == live.guards.tree
        assert loaded.aot.available == live.aot.available
    assert [r.reasons[0].text for r in back.recompiles] == [r.reasons[0].text for r in cap.recompiles]
    assert back.breaks.total == cap.breaks.total > 0
    assert not back.compiles[0].bytecode.available and "TORCH_TRACE" in back.compiles[0].bytecode.reason
    assert not back.runtime.available and "TORCH_TRACE" in back.runtime.reason
    again = save_trace(back, tmp_path / "again.log")  # a capture read from a trace writes itself back
    assert run_tlparse(again, tmp_path / "out2", "--strict").returncode == 0


def test_saved_json_capture_cannot_write_a_trace(tmp_path):
    cap = _live_capture()
    loaded = compiler.Capture.load(cap.save(tmp_path / "cap.json"))
    with pytest.raises(TraceError, match="holds only the assembled stages"):
        loaded.save_trace(tmp_path / "x.log")


@needs_inputs
@needs_tlparse
def test_fixture_read_and_written_back_parses_strictly(tmp_path):
    cap = quiet_load(INPUTS / "comp_metrics.log")
    path = save_trace(cap, tmp_path / "comp_metrics_again.log")
    result = run_tlparse(path, tmp_path / "out", "--strict")
    assert result.returncode == 0, result.stdout + result.stderr
    assert {p.name for p in (tmp_path / "out").iterdir() if p.is_dir() and p.name.startswith("-_")} >= \
        {"-_0_0_1", "-_1_0_1", "-_2_0_0"}


def test_reader_yields_the_records_the_live_collector_made(tmp_path):
    cap = _live_capture()
    path = save_trace(cap, tmp_path / "t.log")
    live = [r for r in cap.live.records if not r.kind.startswith("log:")]
    read = list(read_records(path))
    assert [(r.kind, r.compile_id, r.attempt, r.payload) for r in read] == \
        [(r.kind, r.compile_id, r.attempt, r.payload) for r in live]


# --- a real distributed job ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def dist_job(tmp_path_factory):
    """torchrun --nproc_per_node 2 tcompile_labs/dist_job.py: gloo, DDP + torch.compile, rank 1 gets 48 rows
    at step 2; TORCH_TRACE writes one log per rank and tcompile saves one capture per rank."""
    root = tmp_path_factory.mktemp("dist_job")
    env = {**os.environ, "TORCH_TRACE": str(root / "trace"), "OMP_NUM_THREADS": "1"}
    torchrun = Path(sys.executable).parent / "torchrun"
    result = subprocess.run([str(torchrun), "--nproc_per_node", "2", "--master_port", str(29500 + os.getpid() % 400),
                             str(REPO / "tcompile_labs" / "dist_job.py"), str(root / "captures")],
                            capture_output=True, text=True, timeout=300, env=env, cwd=REPO)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return root


@pytest.mark.parametrize("source", ["trace", "captures"])
def test_distributed_job_divergence_found(dist_job, source):
    job = load_trace(dist_job / source)
    assert isinstance(job, Job) and job.ranks == [0, 1]
    kinds = {d.kind: d for d in job.divergences}
    recompiles = kinds["recompiles"]
    assert recompiles.groups == [[0], [1]] and recompiles.behaviours[0] == "no recompiles"
    assert "changed 32 → 48" in recompiles.behaviours[1] and "mark_dynamic" in recompiles.explanation
    assert kinds["compile_ids"].groups == [[0], [1]]
    if source == "captures":
        assert job[1].environment["rank"] == 1 and job[1].environment["world_size"] == 2


def test_distributed_trace_and_captures_agree(dist_job):
    traced, captured = load_trace(dist_job / "trace"), load_trace(dist_job / "captures")
    for rank in (0, 1):
        assert [c.compile_id for c in traced[rank].compiles] == [c.compile_id for c in captured[rank].compiles]
        assert [c.graph.code for c in traced[rank].compiles] == [c.graph.code for c in captured[rank].compiles]
    assert [d.to_json() for d in traced.divergences if d.kind != "compile_time"] == \
        [d.to_json() for d in captured.divergences if d.kind != "compile_time"]


# --- the report CLI ------------------------------------------------------------------------------

def _report(path, out) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "compiler", "report", str(path), "-o", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=REPO)


def test_report_cli_for_a_job_a_trace_and_a_capture(dist_job, tmp_path):
    result = _report(dist_job / "trace", tmp_path / "job.html")
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "job.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and 'id="tc-dt-bundle"' in page  # offline: DataTables inlined
    assert page.count('<script type="') == 2  # the bundle (text, imported as a module) and the table setup
    assert "changed 32 → 48" in page and "Every rank" in page and "Rank 1" in page
    log = next((dist_job / "trace").glob("*rank_1*.log"))
    assert _report(log, tmp_path / "one.html").returncode == 0
    assert "args[0]" in (tmp_path / "one.html").read_text()
    saved = dist_job / "captures" / "tcompile_capture_rank_1.json"
    assert _report(saved, tmp_path / "cap.html").returncode == 0
    missing = _report(tmp_path / "nope", tmp_path / "x.html")
    assert missing.returncode == 2 and "nope: no such file or directory" in missing.stderr


@needs_inputs
def test_tcompile_load_magic():
    from IPython.core.error import UsageError
    from IPython.core.interactiveshell import InteractiveShell

    # the one shell of this process (other tests made one already; a second kind is refused)
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "explorer")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceWarning)
        ip.run_line_magic("tcompile", f"--load {INPUTS / 'multi_rank_schedule'} --name job")
        ip.run_line_magic("tcompile", f"--load {INPUTS / 'comp_metrics.log'} --name cap")
    assert isinstance(ip.user_ns["job"], Job) and ip.user_ns["job"].divergences[0].kind == "collective_schedule"
    assert [c.compile_id for c in ip.user_ns["cap"].compiles] == ["0/0", "1/0", "2/0"]
    with pytest.raises(UsageError, match="--load: .*nope: no such file"):
        ip.run_line_magic("tcompile", "--load /nope")


def test_report_for_fixture_job_and_rank_views(tmp_path):
    if not INPUTS.is_dir():
        pytest.skip(f"tlparse's fixture logs are not at {INPUTS}")
    from explorer.job_view import report_page

    job = quiet_load(INPUTS / "multi_rank_runtime")
    page = report_page(job)
    assert page.index("Ranks exhibit divergent inductor tensor meta") < page.index("Every rank")
    assert "Ranks: 5, 6" in page and page.count("<details") > len(job.ranks)
    cap = quiet_load(INPUTS / "simple_corrupted_json.log")
    page = report_page(cap)
    assert "payload md5" in page and "TORCH_TRACE" in page  # the problem, and why IR/bytecode are missing


@needs_tlparse
def test_compiled_autograd_ids_round_trip(tmp_path):
    """A backward compiled by compiled autograd: its records carry ``compiled_autograd_id``; tlparse
    names that compile ``[!0/1/0]``, tcompile ``1/0``; both see the same compiles."""
    model = torch.nn.Linear(4, 4)

    def step(x):
        model(x).sum().backward()

    f = torch.compile(step, backend="aot_eager")
    with compiler.capture() as cap:
        with torch._dynamo.compiled_autograd._enable(torch.compile(backend="aot_eager")):
            f(torch.randn(3, 4))
    path = cap.save_trace(tmp_path / "ca.log")
    back = load_trace(path)
    with_ca = {r.compile_id for r in back.trace_records if r.metadata.get("compiled_autograd_id") is not None}
    assert with_ca - {None}, "no record of the compiled-autograd compile"
    assert [c.compile_id for c in back.compiles] == [c.compile_id for c in cap.compiles]
    assert run_tlparse(path, tmp_path / "out", "--strict").returncode == 0
    keys = json.loads((tmp_path / "out" / "compile_directory.json").read_text())
    assert any(k.startswith("[!") for k in keys)
    assert tlparse_compile_ids(tmp_path / "out") == {c.compile_id for c in back.compiles}


def test_graph_break_divergence_names_the_user_line():
    """Rank 1 takes a branch with a graph break that rank 0 never reaches."""
    from compiler.readers.job import find_divergences

    def step(x, odd):
        y = x.cos()
        if odd:
            torch._dynamo.graph_break()
        return y + 1

    caps = {}
    for rank in (0, 1):
        torch._dynamo.reset()
        with compiler.capture() as caps[rank]:
            torch.compile(step, backend="eager")(torch.randn(4), bool(rank))
    kinds = {d.kind: d for d in find_divergences(caps)}
    breaks = kinds["graph_breaks"]
    assert breaks.groups == [[0], [1]] and breaks.behaviours[0] == "no graph breaks"
    line = caps[1].breaks.items[0].line
    assert f"test_trace.py:{line}" in breaks.behaviours[1]


@needs_inputs
def test_slowest_rank_and_stage():
    job = quiet_load(INPUTS / "multi_rank_logs")
    slow = next(d for d in job.divergences if d.kind == "compile_time")
    assert slow.groups[0] == [1, 3] and "Rank 3 spent the longest compiling" in slow.explanation
    assert "Backend compile" in slow.explanation


# --- the reader's blocks -------------------------------------------------------------------------

SEED_LOG = REPO / "tests" / "assets" / "traces" / "torch_2_14_1_break_recompile.log"


def _seed_variants() -> dict[str, bytes]:
    """The recorded log as torch wrote it, and as copies, editors and crashes leave it."""
    raw = SEED_LOG.read_bytes()
    lines = raw.split(b"\n")
    tab = [i for i, line in enumerate(lines) if line.startswith(b"\t")]

    def changed(i, line):
        return b"\n".join(lines[:i] + [line] + lines[i + 1:])

    return {"as written": raw, "crlf": raw.replace(b"\n", b"\r\n"), "no final newline": raw.rstrip(b"\n"),
            "twice": raw + raw, "stray payload lines first": b"\tstray\n\tstray\n" + raw,
            "blank payload lines without their tab": b"\n".join(b"" if line == b"\t" else line for line in lines),
            "blank lines after each payload": raw.replace(b"\n\tV", b"\n\t\n\nV"),
            "not utf-8": changed(tab[40], lines[tab[40]] + b"\xe9\xff"),
            "utf-8": changed(tab[90], lines[tab[90]] + "é".encode()),
            "one CR": changed(tab[200], lines[tab[200]] + b"\r"),
            "a CR inside a payload line": changed(tab[250], lines[tab[250]][:5] + b"\r" + lines[tab[250]][5:]),
            "md5 mismatch": changed(tab[300], lines[tab[300]] + b"x"),
            "cut in a payload": raw[:20011], "cut in an envelope": raw[:len(raw) // 2 + 77]}


def _read_all(path) -> tuple:
    from compiler.readers.trace import TraceInfo

    info, strings = TraceInfo(file="t"), {}
    records = [(r.kind, r.compile_id, r.metadata, r.payload, r.payload_size, r.line, r.payload_failed, r.time)
               for r in read_records(path, info=info, strings=strings)]
    return records, info.to_json(), dict(info.kinds), strings


@pytest.mark.parametrize("variant", list(_seed_variants()))
def test_any_block_size_reads_the_same_records(tmp_path, monkeypatch, variant):
    """The reader takes a log in blocks and a run of payload lines at once (``_lines_and_runs``): a block
    that ends anywhere — inside a line, a payload, a CRLF — reads the same records, problems and lines as
    one line per block (block size 1)."""
    from compiler.readers import trace as trace_mod

    path = tmp_path / "t.log"
    data = _seed_variants()[variant]
    path.write_bytes(data)
    whole = _read_all(path)
    assert whole[0] and whole[1]["lines"] == data.count(b"\n") + (not data.endswith(b"\n"))  # lines end at \n only
    for size in (1, 13, 4096):
        monkeypatch.setattr(trace_mod, "READ_BYTES", size)
        assert _read_all(path) == whole, size
