"""Advice an expert would sign (issue 43), with real compiles on CPU: the run measures its own noise (an A/A
experiment, the baseline against itself in a second worker) and judges timed effects against it; an unsafe guard
filter needs a measured gain; one experiment per change; no "disable your entry function" for a break inside
DDP's forward; a deadline that stops workers mid-compile leaves no process and no directory, and raises nothing;
the compile's drift from eager is one finding, said once."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path

import psutil
import pytest
import torch

import compiler
from compiler.analyses.fix_experiments import capture_calls, experiments_of
from compiler.stages.fix_schema import GUARDS, MEASURED, STOPPED, Fix

REPO = Path(__file__).resolve().parent.parent
torch.manual_seed(0)
MODEL = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))


def f_model(x):
    return MODEL(x)


def f_two_ints(x, n, m):
    return x * n + m


def _descendants() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True) if p.status() != psutil.STATUS_ZOMBIE}


@pytest.mark.slow
def test_the_a_a_experiment_reads_no_effect_and_an_unmeasured_guard_filter_is_not_recommended():
    """~40 s on 2 cores: a baseline, its A/A twin and two guard filters, each a worker process, timed interleaved."""
    cap = compiler.explore(f_model, torch.randn(2, 8), backend="eager", timing=False, errors="return")
    filters = [f for f in cap.fixes() if f.goal == GUARDS and f.kind in ("skip_guard_on_all_nn_modules_unsafe",
                                                                            "skip_guard_on_globals_unsafe")]
    assert len(filters) == 2
    fixes = cap.try_fixes(timing=True, only=[f.id for f in filters], concurrency=2)
    noise = fixes.noise
    assert noise is not None and noise.baseline_only and noise.status == MEASURED, fixes.as_text()
    assert noise.verdict == "No effect" and noise.timing is not None and noise.timing.rounds == 20
    assert noise.before.guards == noise.after.guards and noise.before.graphs == noise.after.graphs
    floor, guard_floor = noise.floors()
    lines = fixes.context_lines()
    assert lines[0].startswith("Baseline: the compile without any fix — ") and "compiled call" in lines[0]
    assert lines[1].startswith(f"Noise floor: differences under ±{floor:.0%} in the compiled call")
    assert lines[2].startswith("No effect: the baseline against itself (A/A)")
    lines += fixes.verdicts()
    assert sum("are noise on this machine now" in line for line in lines) == 1  # said once
    assert str(fixes).count("are noise on this machine now") == 1
    for fix in filters:
        result = fix.result
        assert result.noise_floor == noise.noise_floor and result.guard_noise_floor == noise.guard_noise_floor
        gained = result.guard_timing is not None and result.guard_timing.high < 1 - max(guard_floor, 0.05)
        assert result.recommended == (gained and result.status == MEASURED and result.outputs_equal
                                      and not result.outranked and not (result.timing.low > 1 + floor)), \
            result.as_text()
        if result.recommended:  # an unsafe change says what it gives up
            assert f"gives up: {fix.gives_up}" in next(line for line in lines if fix.kind in line)
    assert sum(f.result.recommended for f in filters) <= 1  # torch takes one guard filter
    # the same rule on a filter whose guard check did not measurably gain: never recommended, whatever it dropped
    unmeasured = filters[0].result
    unmeasured.guard_timing.low, unmeasured.guard_timing.ratio, unmeasured.guard_timing.high = 0.9, 1.0, 1.1
    assert not unmeasured.recommended and unmeasured.verdict in ("No gain", "Worse")
    saved = compiler.Capture.from_data(cap.to_data())  # the floor and the A/A travel with the capture
    assert saved.fixes().noise.verdict == "No effect" and saved.fixes().noise_text() == fixes.noise_text()


def test_two_fixes_that_apply_the_same_change_are_one_experiment():
    x = torch.randn(4)
    cap = capture_calls(f_two_ints, [(x, 1, 1), (x, 2, 1), (x, 2, 2)], backend="eager")
    dynamic = [f for f in cap.fixes() if f.compile_kwargs == {"dynamic": True}]
    assert len(dynamic) == 1, [f.as_text() for f in cap.fixes()]  # proposed once, for both ints
    fix = dynamic[0]
    assert len(fix.recompiles) == 2 and sum("recompile" in finding for finding in fix.findings) == 2
    # two fixes of one change (as a capture saved before proposals were merged holds them): tried once
    twin = Fix(id="fix9", kind="dynamic_true", title="Compile with dynamic=True", compile_kwargs={"dynamic": True})
    twin.__dict__["_capture"] = cap
    cap.fixes().items.append(twin)
    assert [[f.id for f in group] for group in experiments_of([fix, twin])] == [[fix.id, "fix9"]]
    tried = []
    fixes = cap.try_fixes(on_result=lambda group, result: tried.append([f.id for f in group]))
    assert tried == [[fix.id, "fix9"]]
    assert fix.result is twin.result and fix.result.fixes == [fix.id, "fix9"] and fix.result.status == MEASURED
    lines = [line for line in fixes.verdicts() if "dynamic" in line]
    assert len(lines) == 1 and f"also for fix9 dynamic_true" in lines[0], fixes.verdicts()


def test_no_dynamo_internal_name_in_a_fix():
    from compiler.analyses.fixes import _scalar_subject

    subject, instead = _scalar_subject("___stack0", "int", "torch_dynamo_resume_in_forward_at_253")
    assert "___stack" not in subject and "forward(), after the graph break at line 253" in subject
    assert "remove the graph break" in instead
    assert _scalar_subject("n", "int", "f") == ("The Python int n", None)


DDP_JOB = textwrap.dedent("""
    import os, sys, torch, torch.distributed as dist
    from torch import nn
    import compiler

    def main():
        dist.init_process_group("gloo")
        torch.manual_seed(0)
        ddp = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2)))

        def rank_main(x):  # the user's whole training step, compiled: DDP's forward and the backward
            loss = ddp(x).square().mean()
            loss.backward()
            return loss

        compiled = torch.compile(rank_main, backend="eager")
        with compiler.capture(job_dir=sys.argv[1]):
            for _ in range(2):
                compiled(torch.randn(4, 8))
        dist.barrier()
        dist.destroy_process_group()

    main()
""")


def test_a_break_inside_ddp_forward_never_gets_disable_your_entry_function(tmp_path):
    """torchrun, gloo, 2 ranks on CPU (~15 s): Dynamo breaks inside DistributedDataParallel's forward on purpose."""
    script = tmp_path / "ddp_job.py"
    script.write_text(DDP_JOB)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    torchrun = Path(sys.executable).parent / "torchrun"
    done = subprocess.run([str(torchrun), "--nproc_per_node", "2", "--master_port", str(29900 + os.getpid() % 90),
                           str(script), str(tmp_path / "out")], capture_output=True, text=True, timeout=300, env=env,
                          cwd=REPO)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    for rank in (0, 1):
        cap = compiler.load(tmp_path / "out" / f"tcompile_capture_rank_{rank}.json")
        inside = [i for i, b in enumerate(cap.breaks.items) if any(
            (f.file or "").endswith("torch/nn/parallel/distributed.py") for f in b.stack)]
        assert inside, [b.headline for b in cap.breaks.items]
        fixes = cap.fixes()
        for fix in fixes:
            assert "def rank_main" not in fix.snippet and "run rank_main() eagerly" not in fix.snippet, fix.as_text()
        ddp = next(f for f in fixes if f.kind == "ddp_forward")
        assert set(inside) <= set(ddp.breaks) and not ddp.applicable
        assert "nothing to change in your code" in ddp.title and "optimize_ddp" in ddp.snippet
        assert "compiled_autograd" in ddp.snippet


def f_inductor(x):
    y = torch.nn.functional.gelu(x @ x.T).softmax(-1)
    return (y.cumsum(0) * x.sum()).tanh().logsumexp(-1)


@pytest.mark.slow
def test_a_deadline_that_stops_workers_mid_compile_leaves_no_process_no_directory_and_raises_nothing(
        tmp_path, monkeypatch):
    """~30 s: Inductor compiles in worker processes (each with Inductor's own compile workers) cut off by the
    deadline; the OS is asked afterwards which processes and directories are left."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    cap = compiler.explore(f_inductor, torch.randn(16, 16), backend="eager", timing=False, errors="return")
    cap.fixes().items.append(Fix(id="fixA", kind="capture_scalar_outputs", title="t",
                                 config={"capture_scalar_outputs": True}))
    cap.fixes().items[-1].__dict__["_capture"] = cap
    before = _descendants()
    seen: set[int] = set()
    running = threading.Event()

    def watch():  # every process the run starts, its workers' own children included, while they are its children
        while not running.wait(0.1):
            seen.update(_descendants() - before)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        fixes = cap.try_fixes(timing=True, compile_kwargs={"backend": "inductor"}, deadline_s=6.0, concurrency=2)
    finally:
        running.set()
        watcher.join()
    assert all(f.result is None or f.result.status in (STOPPED, MEASURED) for f in fixes if f.applicable)
    assert "time budget of 6 s" in (fixes.note or ""), fixes.note
    assert seen, "no worker process was started"
    left = _descendants() - before
    assert not left, [psutil.Process(pid).cmdline() for pid in left]
    assert not [p for p in seen if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert not list(tmp_path.glob("tcompile-fixes-*")), list(tmp_path.iterdir())


def test_drift_from_eager_is_one_finding_said_once_in_every_view():
    from compiler.analyses.drift import measure
    from explorer.views.fixes import render_fixes
    from explorer.views.overview import render_overview

    x = torch.randn(4)
    cap = capture_calls(f_two_ints, [(x, 1, 1), (x, 2, 1), (x, 2, 2)], backend="eager")
    boxes, scores = torch.rand(5, 4), torch.rand(5)
    eager = [[{"boxes": boxes, "labels": torch.arange(5), "scores": scores}]]
    compiled = [[{"boxes": boxes.flip(0), "labels": torch.arange(5).flip(0), "scores": scores * (1 + 1e-4)}]]
    drift = measure(compiled, eager)
    assert [o.name for o in drift.outputs] == ["[0]['boxes']", "[0]['labels']", "[0]['scores']"]
    boxes_, labels_, scores_ = drift.outputs
    assert boxes_.rel_l2 > 0.1 and "another order" in boxes_.meaning
    assert "integer values differ" in labels_.meaning and "rounding" in scores_.meaning
    fixes = cap.try_fixes()
    fixes.drift = drift
    text, overview, tab = cap.as_text(), render_overview(cap, None), render_fixes(cap, None)
    headline = drift.headline()
    assert text.count(headline) == 1 and "Drift from eager" in text
    from explorer.html import esc
    assert str(esc(headline)) in overview and str(esc(headline)) in tab
    assert not any("already differs" in line for line in fixes.verdicts())
    loaded = compiler.Capture.from_data(cap.to_data())
    assert loaded.fixes().drift.headline() == headline


def test_the_list_is_in_the_order_it_states_and_a_regression_reads_worse():
    from compiler.analyses.fix_experiments import ORDER, _rerank
    from compiler.stages.fix_schema import CHANGES_RESULTS, FAILED, RUNTIME, FixMeasure, FixResult, Fixes, RuntimeRatio

    def result(**kwargs):
        return FixResult(**{"status": MEASURED, "outputs_equal": True, "goal": RUNTIME,
                            "before": FixMeasure(compile_s=54.0), "after": FixMeasure(compile_s=54.0), **kwargs})

    def timed(ratio, low, high):
        return RuntimeRatio(ratio=ratio, low=low, high=high, before_s=0.064, after_s=0.064 * ratio, eager_s=0.2)

    made = {"worse": result(timing=timed(1.28, 1.2, 1.4), after=FixMeasure(compile_s=262.0)),
            "failed": FixResult(status=FAILED, error="boom"), "best": result(timing=timed(0.5, 0.45, 0.55)),
            "changes": FixResult(status=CHANGES_RESULTS, output_note="x"), "none": result(timing=timed(1.0, 0.9, 1.1)),
            "good": result(timing=timed(0.8, 0.75, 0.85)), "noisy": result(timing=timed(0.8, 0.75, 0.85),
                                                                           noise_floor=0.3)}
    fixes = Fixes(available=True, items=[Fix(id=k, kind=k, title=k, result=r) for k, r in made.items()])
    _rerank(fixes)
    assert [f.id for f in fixes] == ["best", "good", "none", "noisy", "worse", "changes", "failed"]
    verdicts = [f.result.verdict for f in fixes]
    assert verdicts == ["Recommended", "Recommended", "No gain", "No gain", "Worse", "Changes results", "Failed"]
    assert [ORDER.index(v) for v in verdicts] == sorted(ORDER.index(v) for v in verdicts)
    worse = fixes["worse"].result.sentence("dynamic_true")
    assert worse.startswith("Worse: dynamic_true — compiled call slower: 1.28×") and "compile 54.0 → 262.0 s" in worse
