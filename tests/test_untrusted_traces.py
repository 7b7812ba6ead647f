"""A shared TORCH_TRACE log reads no local file (issue 20, item 1).

The file names and line numbers in a trace are someone else's data. Loading one must not copy the
reader's files into the capture, its JSON or the report (``/proc/self/environ`` holds their tokens),
nor hang on a FIFO or fill memory from ``/dev/zero``. Local sources are read only on request, and
then only regular ``.py`` files, size-capped.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
import torch

from compiler.readers.job import load_trace
from compiler.stages.source_files import MAX_BYTES, NOT_READ, SourceFiles, SourceModeError, read_local_source
from compiler.readers.trace import TraceWarning

REPO = Path(__file__).resolve().parent.parent
SECRET = "TCOMPILE-TEST-SECRET-5c1e"  # only in the victim file's comments and this process's environment

VICTIM = f'''import torch


def victim(x):
    # {SECRET}: a comment is in no graph, so only a read of this file can put it in a capture
    y = x.sin() + 1
    torch._dynamo.graph_break()
    return y.cos()
'''


@pytest.fixture(scope="module")
def victim_trace(tmp_path_factory) -> tuple[Path, Path]:
    """A real compile of a function in its own file, saved as a TORCH_TRACE log: (log, source file)."""
    import compiler

    folder = tmp_path_factory.mktemp("victim")
    source = folder / "victim_model.py"
    source.write_text(VICTIM)
    spec = importlib.util.spec_from_file_location("victim_model", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch._dynamo.reset()
    with compiler.capture() as cap:
        torch.compile(module.victim, backend="eager")(torch.randn(4))
    assert cap.compiles and any(SECRET in (c.source.text or "") for c in cap.compiles)  # live reads the user's file
    return cap.save_trace(folder / "victim.log"), source


def quiet_load(path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceWarning)
        return load_trace(path, **kwargs)


def saved_text(cap, tmp_path) -> str:
    return cap.save(tmp_path / "cap.json").read_text()


def test_a_trace_reads_no_local_file_by_default(victim_trace, tmp_path):
    log, _ = victim_trace
    cap = quiet_load(log)
    assert cap.compiles
    for c in cap.compiles:
        assert not c.source.available
        assert c.source.reason == NOT_READ
    assert SECRET not in saved_text(cap, tmp_path)


def test_local_sources_are_an_explicit_opt_in(victim_trace):
    log, _ = victim_trace
    cap = quiet_load(log, sources="local")
    assert any(SECRET in (c.source.text or "") for c in cap.compiles)
    with pytest.raises(SourceModeError, match="sources='anything'"):
        quiet_load(log, sources="anything")


def hostile(log: Path, victim: Path, target: str, tmp_path: Path) -> Path:
    """The victim's log with every mention of its file replaced by ``target``."""
    out = tmp_path / "hostile.log"
    out.write_text(log.read_text().replace(str(victim), target))
    return out


def special_targets(tmp_path: Path) -> dict[str, str]:
    fifo = tmp_path / "fifo.py"
    os.mkfifo(fifo)
    sparse = tmp_path / "huge.py"
    with open(sparse, "wb") as f:
        f.truncate(1 << 30)  # 1 GB, sparse: took over a minute through linecache
    link = tmp_path / "environ.py"
    link.symlink_to("/proc/self/environ")
    not_python = tmp_path / "secrets.txt"
    not_python.write_text(SECRET)
    return {"environ": "/proc/self/environ", "fifo": str(fifo), "zero": "/dev/zero", "sparse": str(sparse),
            "link to environ": str(link), "not python": str(not_python), "directory": str(tmp_path)}


@pytest.mark.parametrize("sources", ["trace", "local"])
@pytest.mark.parametrize("which", ["environ", "fifo", "zero", "sparse", "link to environ", "not python", "directory"])
def test_a_trace_naming_a_special_file_reads_nothing_and_never_hangs(victim_trace, tmp_path, monkeypatch,
                                                                     sources, which):
    monkeypatch.setenv("TCOMPILE_TEST_TOKEN", SECRET)
    log, victim = victim_trace
    path = hostile(log, victim, special_targets(tmp_path)[which], tmp_path)
    start = time.monotonic()
    cap = quiet_load(path, sources=sources)
    assert time.monotonic() - start < 30
    assert cap.compiles
    assert not any(c.source.available for c in cap.compiles)
    assert all(c.source.reason.startswith("not read") for c in cap.compiles)
    assert SECRET not in saved_text(cap, tmp_path)


def test_the_report_cli_reads_no_local_file(victim_trace, tmp_path, monkeypatch):
    log, victim = victim_trace
    path = hostile(log, victim, "/proc/self/environ", tmp_path)
    env = dict(os.environ, TCOMPILE_TEST_TOKEN=SECRET)
    for flags in ([], ["--sources", "local"]):
        out = tmp_path / "report.html"
        result = subprocess.run([sys.executable, "-m", "compiler", "report", str(path), "-o", str(out), *flags],
                                cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        assert SECRET not in out.read_text()
    result = subprocess.run([sys.executable, "-m", "compiler", "report", str(log), "-o", str(out)],
                            cwd=REPO, capture_output=True, text=True, timeout=300)
    assert SECRET not in out.read_text() and "not read" in out.read_text()


def test_the_safe_reader_reads_a_regular_python_file_and_refuses_the_rest(tmp_path):
    good = tmp_path / "ok.py"
    good.write_text("a = 1\nb = 2\n")
    assert read_local_source(str(good)) == (["a = 1\n", "b = 2\n"], None)
    big = tmp_path / "big.py"
    big.write_text("#" * (MAX_BYTES + 1))
    lines, reason = read_local_source(str(big))
    assert lines == [] and "over the" in reason
    assert SourceFiles("local").line(str(good), 2) == "b = 2"
    assert SourceFiles("trace").line(str(good), 2) is None
    assert SourceFiles("local").line(str(good), "2") is None  # a line number from a trace may be anything
