"""Every cache, explained (``c.caches``, ``cap.cache_table()``, ``cap.measure_caches()``): the states a
capture reads from torch's artifacts agree with torch's own counters, in fresh processes with a fresh
Inductor cache directory (so a hit is a real on-disk hit, never an in-memory one)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from compiler.stages.data import CaptureFormatError
from compiler.stages.schema import Caches, CacheRuns

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = textwrap.dedent("""
    import json, sys, torch, compiler

    def f(x):
        return (x.sin() @ x.T).relu() + 1

    out = []
    for _ in range(2):
        torch._dynamo.reset()
        with compiler.capture() as cap:
            torch.compile(f)(torch.randn(16, 16))
        cap.save(sys.argv[1] + f"/cap{len(out)}.json")
        out.append({"states": {e.cache: e.state for e in cap.compiles[0].caches.entries},
                    "inductor": dict(cap.counters.get("inductor", {})),
                    "aot_autograd": dict(cap.counters.get("aot_autograd", {}))})
    print(json.dumps(out))
""")


def _run_child(tmp_path, code: str) -> list:
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"), "PYTHONPATH": ROOT}
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], env=env, capture_output=True, text=True,
                          timeout=900, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_cache_states_match_torch_counters_in_a_fresh_process(tmp_path):
    cold, warm = _run_child(tmp_path, CHILD)
    for run in (cold, warm):
        fx_state, aot_state = run["states"]["FX graph"], run["states"]["AOTAutograd"]
        assert run["inductor"].get(f"fxgraph_cache_{fx_state}") == 1, run
        assert run["aot_autograd"].get(f"autograd_cache_{aot_state}") == 1, run
    assert (cold["states"]["FX graph"], cold["states"]["AOTAutograd"]) == ("miss", "miss")
    assert (warm["states"]["FX graph"], warm["states"]["AOTAutograd"]) == ("hit", "hit")
    assert warm["states"]["kernels (C++/Triton)"] in ("hit", "partial")
    assert cold["states"]["kernels (C++/Triton)"] == "miss"  # a fresh cache directory: g++ ran
    assert warm["states"]["Dynamo PGO profile"] == "off"  # no torch.compiler.config.job_id

    import compiler

    loaded = compiler.load(str(tmp_path / "cap1.json"))  # saved and loaded, every field checked
    fx = next(e for e in loaded.compiles[0].caches.entries if e.cache == "FX graph")
    assert fx.state == "hit" and fx.saved_s and fx.saved_s > 0  # torch's time_saved_ns
    assert any(k.name == "example_inputs[0]" and "shape=torch.Size([16, 16])" in k.value for k in fx.key_inputs)
    table = loaded.cache_table()
    assert set(table.columns) >= {"compile_id", "cache", "state", "reason"}
    cold_fx = next(e for e in compiler.load(str(tmp_path / "cap0.json")).compiles[0].caches.entries
                   if e.cache == "FX graph")
    assert cold_fx.would_save_s and cold_fx.would_save_s > 0  # torch's time_taken_ns: what a hit would skip


def test_bypass_reason_and_disabled_states_are_read_from_torch_records():
    from compiler.stages.records import Record
    from compiler.stages.caches import caches_stage

    bypass = Record(kind="artifact:fx_graph_cache_bypass", compile_id="0/0", attempt=0, metadata={},
                    payload=json.dumps({"cache_state": "bypass", "cache_bypass_reason": "Can't cache HigherOrderOperators."}))
    caches = caches_stage([bypass], [], [], {"backend": "inductor"}, "inductor")
    assert type(caches) is Caches and caches.available  # built as its declared type
    fx = next(e for e in caches.entries if e.cache == "FX graph")
    assert (fx.state, fx.reason) == ("bypass", "Can't cache HigherOrderOperators.")
    fresh = caches_stage([Record("dynamo_start", "0/0", 0, {}, None)], [], [], {"fresh": True}, "inductor")
    assert fresh.state("AOTAutograd") == "disabled"
    eager = caches_stage([Record("dynamo_start", "0/0", 0, {}, None)], [], [], {}, "aot_eager")
    assert eager.state("FX graph") == "not used"


def test_bad_cache_data_names_the_field():
    with pytest.raises(CaptureFormatError, match=r"entries\[0\]\.saved_s"):
        Caches.from_data({"available": True, "entries": [{"cache": "FX graph", "state": "hit", "saved_s": "1"}]})
    with pytest.raises(CaptureFormatError, match=r"runs\[0\]\.compile_s"):
        CacheRuns.from_data({"available": True, "runs": [{"name": "cold", "compile_s": [1]}]})


@pytest.mark.slow
def test_measure_caches_in_fresh_processes(tmp_path):
    import torch

    import compiler
    from compiler.analyses.fix_experiments import capture_calls
    from explorer.views.timings import render_timings

    cap = capture_calls(_scale_relu, [(torch.randn(8, 8),)])
    runs = cap.measure_caches()
    cold, warm, mega = (runs.run(n) for n in ("cold", "warm", "mega-cache"))
    assert not (cold.error or warm.error or mega.error), runs.as_text()
    assert cold.counters["inductor"].get("fxgraph_cache_miss") == 1
    assert warm.counters["inductor"].get("fxgraph_cache_hit") == 1
    assert mega.counters["inductor"].get("fxgraph_cache_hit") == 1 and mega.loaded_artifacts
    assert [e.state for e in warm.compiles[0].entries if e.cache == "FX graph"] == ["hit"]
    assert all(r.outputs_equal for r in runs.runs)
    assert warm.saved_s == pytest.approx(cold.compile_s - warm.compile_s, abs=1e-3)
    cap.save(tmp_path / "c.json")
    back = compiler.load(tmp_path / "c.json")
    assert back.cache_runs.run("warm").compile_s == warm.compile_s
    html = render_timings(back, back.compiles[0])
    assert "What a cache hit saves" in html and "Caches of this compile" in html


def _scale_relu(x):
    return (x * 3).relu() - 1
