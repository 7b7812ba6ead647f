"""Fixes judged like for like (compiler.analyses.fix_verdicts): outputs against the compile without the fix as well
as eager, run time timed interleaved in the same experiment, the ranking by cost and then by what was measured,
and the one-sentence verdicts — with real compiles on CPU."""
from __future__ import annotations

import time

import pytest
import torch

import compiler
from compiler.analyses import fix_verdicts
from compiler.stages.fix_schema import CHANGES_RESULTS, FAILED, MEASURED, RUNTIME, STOPPED, Fix


def explored(fn, *args, backend="eager"):
    return compiler.explore(fn, *args, backend=backend, timing=False, errors="return")


def the_fix(cap, kind):
    return next(f for f in cap.fixes() if f.kind == kind)


# --- the rule on outputs, on tensors -------------------------------------------------------------------

def test_three_comparisons_and_the_margin():
    eager = [torch.ones(100)]
    before = [torch.ones(100) * 1.01]  # the compile already differs by 1 % (beyond float32's tolerance)
    ok, text, comparisons = fix_verdicts.three_way(before, [torch.ones(100) * 0.99], eager)
    assert ok and text == "outputs no further from eager than the compile without it (its drift: see Drift from eager)"
    assert [c.label for c in comparisons] == list(fix_verdicts.LABELS)
    assert comparisons[0].outputs[0].rel_l2 == pytest.approx(0.01) and comparisons[0].outputs[0].max_abs == \
        pytest.approx(0.01)
    ok, text, _ = fix_verdicts.three_way(before, [torch.ones(100) * 1.05], eager)  # 5 % > 2 × 1 % + rtol
    assert not ok and "further from eager" in text
    ok, text, comparisons = fix_verdicts.three_way(eager, [torch.ones(3)], eager)  # a shape eager did not give
    assert not ok and "shape [3]" in text and comparisons[1].outputs[0].reference_shape == [100]
    ok, _, _ = fix_verdicts.three_way([torch.ones(3)], [torch.ones(4)], eager)  # shapes differed already
    assert ok
    # a fix that rounds by design keeps its stated tolerance
    ok, text, _ = fix_verdicts.three_way(eager, [torch.ones(100) * 1.005], eager, {"relative_norm": 1e-2})
    assert ok and "stated tolerance" in text


# --- real compiles ---------------------------------------------------------------------------------------

def f_bf16(x):
    y = (x * 300.0).sin()  # eager rounds x * 300 to bfloat16 before the sin; Inductor keeps float32 between ops
    print("a value", 3)
    return y * 2


@pytest.mark.slow
def test_a_compile_that_moves_outputs_itself_does_not_make_a_break_fix_change_results():
    x = torch.rand(4096, dtype=torch.bfloat16)
    cap = explored(f_bf16, x, backend="inductor")
    fix = the_fix(cap, "reorderable_logging_functions")
    result = fix.try_()
    without, with_fix, _ = result.comparisons
    assert not without.equal, "the compile itself should differ from eager beyond bfloat16's tolerance"
    rel = without.outputs[0].rel_l2
    assert rel > 1.6e-2 and with_fix.outputs[0].rel_l2 <= 2 * rel + 1.6e-2
    assert result.status == MEASURED and result.outputs_equal and result.recommended, result.as_text()
    assert "no further from eager than the compile without it" in result.output_note
    assert not any(rel and "rel. L2" in line for line in cap.fixes().verdicts())  # the drift is said once, apart
    assert cap.fixes().verdicts()[0].startswith("Recommended: reorderable_logging_functions — 1 fewer graph, "
                                                "1 fewer break")


def _plus_one_backend(state):
    def backend(gm, example_inputs):  # computes something else once the fix is applied
        state["n"] += 1
        if torch._dynamo.config.capture_scalar_outputs:
            return lambda *args: [o + 1 if isinstance(o, torch.Tensor) else o for o in gm(*args)]
        return gm
    return backend


def f_item(x):
    n = x.sum().item()
    return x * n


def test_a_fix_that_really_changes_results_is_caught_and_a_user_check_replaces_the_default():
    x = torch.randn(8)
    cap = explored(f_item, x)
    fix = the_fix(cap, "capture_scalar_outputs")
    result = fix.try_(compile_kwargs={"backend": _plus_one_backend({"n": 0})})
    assert result.status == CHANGES_RESULTS and not result.recommended
    assert "further from eager" in result.output_note and result.comparisons[0].equal
    assert cap.fixes().verdicts()[0].startswith("Changes results: capture_scalar_outputs — the fix moves outputs")
    # the user's own comparison, e.g. "within 2": the same +1 passes it
    result = fix.try_(compile_kwargs={"backend": _plus_one_backend({"n": 0})},
                      check=lambda a, b: bool((a - b).abs().max() < 2))
    assert result.status == MEASURED and result.recommended and result.output_note.startswith("your check")
    assert result.comparisons[1].check_passed and "your check" in result.output_rule
    # … and a stricter one, raising as assert-style checks do, catches it
    def strict(a, b):
        torch.testing.assert_close(a, b)

    result = fix.try_(compile_kwargs={"backend": _plus_one_backend({"n": 0})}, check=strict)
    assert result.status == CHANGES_RESULTS and result.comparisons[0].check_passed is True
    assert result.comparisons[1].check_passed is False and "not close" in result.comparisons[1].check_note


def f_two(x):
    n = x.sum().item()
    m = x.max().item()
    print("p")
    return x * n * m


def test_ranked_by_cost_then_by_what_was_measured_and_a_failing_combination_is_reported():
    x = torch.randn(8)
    cap = explored(f_two, x)
    ids = [f.kind for f in cap.fixes()]
    assert ids == ["capture_scalar_outputs", "reorderable_logging_functions"]  # 2 breaks before 1

    def failing_when_scalar(gm, example_inputs):
        if torch._dynamo.config.capture_scalar_outputs:
            raise RuntimeError("backend broke")
        return gm

    fixes = cap.try_fixes(compile_kwargs={"backend": failing_when_scalar})
    assert [f.kind for f in fixes] == ["reorderable_logging_functions", "capture_scalar_outputs"]  # recommended first
    assert fixes[1].result.status == FAILED
    assert fixes.verdicts()[:2] == [fixes[0].result.sentence("reorderable_logging_functions"),
                                    fixes[1].result.sentence("capture_scalar_outputs")]
    assert fixes.verdicts()[1].startswith("Failed: capture_scalar_outputs — ") and "backend broke" in fixes.verdicts()[1]
    assert str(fixes).startswith("Recommended: reorderable_logging_functions — ")

    def failing_together(gm, example_inputs):  # each alone works; both together fail
        if torch._dynamo.config.capture_scalar_outputs and print in torch._dynamo.config.reorderable_logging_functions:
            raise RuntimeError("both at once")
        return gm

    cap = explored(f_two, x)
    fixes = cap.try_fixes(compile_kwargs={"backend": failing_together})
    assert all(f.result.recommended for f in fixes)
    assert fixes.combined.status == FAILED and not fixes.combined.recommended
    assert fixes.verdicts()[-1].startswith("Failed: together (capture_scalar_outputs + reorderable_logging_functions)")


def f_loop(x):
    for _ in range(2):
        x = x + x.nonzero().sum()  # a graph break in a loop: torch skips the whole frame
    return x


def test_a_skipped_frame_is_credited_to_the_fix_for_its_break():
    cap = explored(f_loop, torch.randn(8))
    assert cap.summary.skipped_frames == 1
    fix = cap.fixes()[0]
    assert fix.kind == "capture_dynamic_output_shape_ops" and fix.cost >= 1000
    assert fix.cost_text.startswith("1 frame skipped to eager") and any("skipped to eager" in f for f in fix.findings)


# --- run time, interleaved --------------------------------------------------------------------------------

SLOW_CALLS = 25
_calls = {"n": 0}


@torch.compiler.disable
def _slow_at_first():
    """Every call of this process is slow at first, fast later: drift, the same for any variant."""
    _calls["n"] += 1
    if _calls["n"] <= SLOW_CALLS:
        time.sleep(0.004)


def f_drift(x):
    y = x.sin()
    _slow_at_first()
    return y.cos()


@pytest.mark.slow
def test_drift_between_before_and_after_does_not_become_a_recommendation(monkeypatch):
    import compiler.capturing.runtime as runtime

    monkeypatch.setattr(runtime, "machine_load", lambda: {"busy": False})  # drift, not load
    _calls["n"] = 0
    x = torch.randn(64)
    cap = explored(f_drift, x)
    noop = Fix(id="noop", kind="noop", title="a change that changes nothing", goal=RUNTIME)
    noop.__dict__["_capture"] = cap
    cap.fixes().items.append(noop)
    _calls["n"] = 0  # the slow calls are the baseline's: the "before" is timed slow, the "after" fast
    result = noop.try_()
    assert result.timing is not None and result.timing.rounds == 20, result.as_text()
    assert result.timing.eager_s is not None and result.before.eager_runtime_s == result.timing.eager_s
    assert not result.recommended, result.as_text()
    assert result.timing.high >= 0.95
    assert "interleaved" in result.timing.method and "worker processes" in result.where


def test_the_ratio_interval_reads_interleaved_samples():
    before = [1.0, 1.02, 0.98, 1.01, 0.99] * 4
    ratio = fix_verdicts.ratio_of(before, [0.8 * b for b in before], [2.0] * 20)
    assert ratio.ratio == pytest.approx(0.8) and ratio.high < 0.95 and fix_verdicts.faster(ratio)
    drift = fix_verdicts.ratio_of(before, [b * (0.5 if i % 2 else 1.5) for i, b in enumerate(before)])
    assert not fix_verdicts.faster(drift) and drift.low < 1 < drift.high


def sleepy_backend(gm, example_inputs):
    """A backend whose compile takes long once the fix is applied (as dynamic=True did on Mask R-CNN)."""
    if torch._dynamo.config.capture_scalar_outputs:
        time.sleep(600)
    return gm


@pytest.mark.slow
def test_an_experiment_compiling_past_5x_the_baseline_or_its_budget_is_stopped_with_what_it_had():
    from compiler.analyses import fix_workers
    from compiler.analyses.fix_experiments import Change, replay_of

    cap = explored(f_item, torch.randn(8))
    replay = replay_of(cap, overrides={"backend": sleepy_backend})
    told, handed = [], []

    def on_done(key, outcome, base):  # as each finishes, the baseline in: what a caller reports as it goes
        handed.append(key)
        assert base.compiled is not None and (outcome.compiled is None or "outputs_value" in outcome.compiled)

    scalar = Change({"capture_scalar_outputs": True})
    base, outcomes = fix_workers.run_pool(replay, [(0, "capture_scalar_outputs", scalar), (1, "nothing", Change()),
                                                   (2, "capture_scalar_outputs, budget 1 s", scalar)],
                                          progress=lambda done, total, text: told.append(text), min_stop_s=3.0,
                                          concurrency=3, budgets={2: 1.0}, on_done=on_done)
    assert outcomes[0].compiled is None  # its 600 s compile was cut off
    assert outcomes[0].stopped.startswith("stopped: compile over 5× the baseline") and "it had compiled" in \
        outcomes[0].stopped
    assert outcomes[2].compiled is None and outcomes[2].stopped.startswith("stopped: compile over its budget of 1 s")
    assert outcomes[1].stopped is None and len(outcomes[1].samples["after"]) == fix_workers.ROUNDS
    assert base.compiled["measure"]["graph_breaks"] == 1
    assert sorted(handed) == [0, 1, 2]
    assert any("spent" in t and "left" in t for t in told) and any("capture_scalar_outputs" in t for t in told)


@pytest.mark.slow
def test_a_fix_stopped_by_the_time_budget_reads_as_stopped_never_as_a_verdict():
    cap = explored(f_item, torch.randn(8))
    told = []
    fixes = cap.try_fixes(compile_kwargs={"backend": sleepy_backend}, timing=True, deadline_s=15.0,
                          on_result=lambda group, result: told.append(([f.id for f in group], result.status)))
    fix = fixes[0]
    assert fix.kind == "capture_scalar_outputs" and fix.result.status == STOPPED, fix.result.as_text()
    assert "the run's time budget of 15 s" in fix.result.error and not fix.result.recommended
    assert told == [([fix.id], STOPPED)]
    # the experiment's compile cut off, or (on a loaded machine) the baseline's: stopped either way, no verdict
    verdict = fixes.verdicts()[0]
    assert verdict.startswith("Stopped: capture_scalar_outputs — ") and "the run's time budget of 15 s" in verdict
    assert verdict.endswith("; no verdict.")
