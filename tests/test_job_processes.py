"""A many-rank job read in worker processes is the job read in-process (issue 35, item 3).

``load_job(path, processes=2)`` against ``processes=0`` on tlparse's multi-rank logs and on 17 ranks made of
the shipped log (one of them broken): the same ranks, files, problems, divergences and, rank by rank, the
same capture (its saved JSON data), trace info, string table and records. Strict mode raises the same
one-line error either way; the workers import no torch (their audit hook refuses it); the automatic choice
reads in-process below 4 CPUs, 16 logs or 32 MB.
"""
from __future__ import annotations

import dataclasses
import importlib
import json
import multiprocessing
import shutil
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

import compiler
from compiler.readers import job_processes
from compiler.readers.trace import TraceError
from tlparse_fixtures import INPUTS, needs_inputs

pytestmark = pytest.mark.any_torch  # compiles nothing, reads only saved files (make test-torch leaves it out)

LOG = Path(__file__).resolve().parent / "assets" / "traces" / "torch_2_14_1_break_recompile.log"


def job_data(job) -> dict:
    """Everything a Job holds, as plain data: each rank's capture as it saves (``to_data``), its trace info."""
    return {"path": job.path, "ranks": job.ranks, "files": job.files, "source": job.source,
            "problems": [dataclasses.asdict(p) for p in job.problems],
            "divergences": [d.to_json() for d in job.divergences], "watches": job.watches,
            "captures": {rank: cap.to_data() for rank, cap in job.captures.items()},
            "trace": {rank: job_processes._trace_data(cap.trace) for rank, cap in job.captures.items()},
            "strings": {rank: cap.trace_strings for rank, cap in job.captures.items()},
            "records": {rank: (cap.trace_records.path, len(cap.trace_records), cap.trace_records.stamp)
                        for rank, cap in job.captures.items()}}


def both_ways(folder, **kwargs):
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        alone = compiler.load_job(folder, processes=0, **kwargs)
        side_by_side = compiler.load_job(folder, processes=2, **kwargs)
    assert not [w for w in warned if "worker process" in str(w.message)], [str(w.message) for w in warned]
    return alone, side_by_side


def many_ranks(folder: Path, ranks: int = 16) -> Path:
    """``ranks`` copies of the shipped log, and one more rank that is not a log."""
    folder.mkdir()
    for rank in range(ranks):
        shutil.copy(LOG, folder / f"dedicated_log_torch_trace_rank_{rank}.log")
    (folder / f"dedicated_log_torch_trace_rank_{ranks}.log").write_text("not a trace\n")
    return folder


@needs_inputs
@pytest.mark.parametrize("name", ["multi_rank_logs", "multi_rank_runtime"])
def test_tlparse_multi_rank_logs_in_processes_are_the_same_job(name):
    alone, side_by_side = both_ways(INPUTS / name)
    assert len(alone.captures) > 1 and alone.divergences
    assert job_data(side_by_side) == job_data(alone)


def test_sixteen_ranks_and_a_broken_one_in_processes(tmp_path):
    folder = many_ranks(tmp_path / "job")
    alone, side_by_side = both_ways(folder)
    assert alone.ranks == list(range(16))
    broken = [p for p in alone.problems if p.kind == "unreadable_file"]
    assert [Path(p.file).name for p in broken] == ["dedicated_log_torch_trace_rank_16.log"]
    assert alone.divergences[0].kind == "unread_ranks"
    assert job_data(side_by_side) == job_data(alone)


def test_strict_raises_the_same_one_line_error(tmp_path):
    folder = many_ranks(tmp_path / "job", ranks=2)
    errors = []
    for processes in (0, 2):
        with pytest.raises(TraceError) as raised:
            compiler.load_job(folder, strict=True, processes=processes)
        errors.append(str(raised.value))
    assert errors[0] == errors[1] and "rank_2.log" in errors[0] and "\n" not in errors[0]


def test_workers_import_no_torch():
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                             initializer=job_processes._start_worker) as pool:
        text = pool.submit(job_processes.read_rank_text, str(LOG), False, "trace").result()
        refused = pool.submit(importlib.import_module, "torch").exception()
    header = json.loads(text.partition("\n")[0])
    assert header["torch"] == {"refused": [], "loaded": False}
    assert "trace" in header and json.loads(text.partition("\n")[2])["compiles"]
    assert isinstance(refused, ImportError) and "imports no torch" in str(refused)


def test_the_automatic_choice(tmp_path, monkeypatch):
    logs = [LOG] * 16
    if job_processes.cpu_count() < 4:  # this 2-CPU machine (and CI's): in-process
        assert job_processes.worker_count(None, logs * 10) == 0
    monkeypatch.setattr(job_processes, "cpu_count", lambda: 6)
    monkeypatch.setattr(job_processes, "_reruns_main_script", lambda: False)
    big = []
    for rank in range(16):  # 16 sparse files of 2 MB: 32 MB of logs, on no disk
        big.append(tmp_path / f"dedicated_log_torch_trace_rank_{rank}.log")
        with open(big[-1], "wb") as f:
            f.truncate(2 * 2 ** 20)
    assert job_processes.worker_count(None, big) == 6
    assert job_processes.worker_count(None, big[:15]) == 0  # 15 logs
    assert job_processes.worker_count(None, logs) == 0  # 16 logs of 4 MB in all
    monkeypatch.setattr(job_processes, "cpu_count", lambda: 3)
    assert job_processes.worker_count(None, big) == 0
    assert job_processes.worker_count(3, big[:2]) == 2 and job_processes.worker_count(0, big) == 0
    with pytest.raises(ValueError):
        job_processes.worker_count(-1, big)
