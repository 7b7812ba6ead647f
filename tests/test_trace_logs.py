"""TORCH_TRACE logs recorded with a torch other than the one running here (tests/assets/traces/, made by
``python -m scripts.record_test_traces``) load as the live capture of the same run saw it: the same compile
ids, statuses, graphs, guards, graph breaks and recompiles (the ``.json`` next to each log). Skipped
cleanly when the logs are missing."""
from __future__ import annotations

import json
import subprocess
import warnings
from pathlib import Path

import pytest

from compiler import load_trace
from compiler.readers.trace import TraceWarning, save_trace
from scripts.record_test_traces import digest
from tlparse_fixtures import TLPARSE, needs_tlparse

pytestmark = pytest.mark.any_torch  # compiles nothing, reads only saved files (make test-torch leaves it out)

TRACES = Path(__file__).resolve().parent / "assets" / "traces"
LOGS = sorted(p for p in TRACES.glob("*.log") if p.with_suffix(".json").exists()) if TRACES.is_dir() else []


@pytest.mark.skipif(not LOGS, reason=f"no recorded TORCH_TRACE logs in {TRACES} (python -m scripts.record_test_traces)")
@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem)
def test_a_recorded_log_loads_as_its_live_capture(log):
    recorded = json.loads(log.with_suffix(".json").read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("error", TraceWarning)  # a torch tcompile knows: nothing to warn about
        cap = load_trace(log)
    assert cap.environment["torch"] == recorded["torch"]
    assert digest(cap) == recorded["digest"]
    assert not cap.trace.problems and cap.trace.corrupted_lines == 0


@needs_tlparse
@pytest.mark.skipif(not LOGS, reason=f"no recorded TORCH_TRACE logs in {TRACES} (python -m scripts.record_test_traces)")
@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem)
def test_a_recorded_log_written_back_parses_strictly(log, tmp_path):
    path = save_trace(load_trace(log), tmp_path / "again.log")
    result = subprocess.run([TLPARSE, str(path), "-o", str(tmp_path / "out"), "--overwrite", "--no-browser", "--strict"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert digest(load_trace(path)) == json.loads(log.with_suffix(".json").read_text())["digest"]
