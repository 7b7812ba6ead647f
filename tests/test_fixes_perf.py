"""Fixes for CUDA-graph skips, guard overhead and slow code (compiler.analyses.fixes), measured by the
experiments (compiler.analyses.fix_experiments), with real compiles on CPU.

CUDA-graph skips need a GPU to try: their proposals are checked on the recorded GPU captures of
assets/gpu/. Guard filters are tried on CPU and checked against the guards torch itself keeps for a
manual run with the same filter (the frame's cache entry). Freezing is tried with Inductor on CPU
(slow). Every experiment leaves torch's state as it found it (tests/torch_state.py).
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch._dynamo.eval_frame import _debug_get_cache_entry_list

import compiler
import torch_state
from compiler.stages.fix_schema import GUARDS, MEASURED, NOT_TRIED, RUNTIME, Fix, FixMeasure, FixResult, RuntimeRatio
from compiler.stages.guards import parse_tree

torch_state.load_torch_modules()
GPU = Path(__file__).resolve().parent.parent / "assets" / "gpu"

torch.manual_seed(0)
MODEL = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))


def f_model(x):
    return MODEL(x)


def tried(fix, **kwargs):
    before = torch_state.snapshot()
    result = fix.try_(**kwargs)
    torch_state.assert_restored(before)
    return result


def by_kind(cap) -> dict:
    return {f.kind: f for f in cap.fixes()}


def test_a_cudagraph_skip_for_a_mutated_input_proposes_marking_it_static():
    cap = compiler.load(GPU / "cudagraphs_skipped_input_mutation.json")
    assert cap.cudagraphs.skip_reasons == ["mutated inputs (1 instances)"]
    fix = cap.fixes()[0]  # the skip ranks first: the captured graph lost CUDA graphs
    assert fix.kind == "cudagraph_static_input" and fix.goal == RUNTIME and fix.applicable
    assert [(m.argument, m.static) for m in fix.marks] == [("buf", True)]
    assert fix.snippet.startswith("torch._dynamo.mark_static_address(buf)")
    assert "buf.add_(1)" in fix.findings[0] and fix.cost_text == "1 CUDA-graph skip"
    assert fix.status == NOT_TRIED
    with pytest.raises(RuntimeError, match="needs the live function: this capture was loaded from a file"):
        fix.try_()


def test_skip_reasons_map_to_their_fixes():
    """Each skip reason torch logs gets its change (the CPU-tensor and dynamic-shape skips, in torch's words)."""
    cap = compiler.load(GPU / "cudagraphs_skipped_input_mutation.json")
    cap.proposed_fixes = None
    cap.cudagraphs.skip_reasons = ["cpu device (arg0_1)", "dynamic shape inputs"]
    kinds = by_kind(cap)
    assert kinds["graph_partition"].inductor_config == {"graph_partition": True}
    assert kinds["cudagraph_static_shapes"].compile_kwargs == {"dynamic": False}


def test_slow_code_fixes_are_proposed_for_inductor_kernels_and_never_recommended_unmeasured():
    cap = compiler.load(GPU / "mlp_forward_backward.json")  # a training step on an H100, float32
    kinds = by_kind(cap)
    assert kinds["max_autotune"].compile_kwargs == {"mode": "max-autotune"}
    assert kinds["coordinate_descent_tuning"].inductor_config == {"coordinate_descent_tuning": True}
    assert kinds["float32_matmul_precision"].matmul_precision == "high"  # fp32 matmuls on capability 9.0
    assert kinds["float32_matmul_precision"].tolerance == {"relative_norm": 1e-2}  # TF32 rounds by design
    assert "freezing" not in kinds  # a training graph: freezing is for inference
    for kind in ("max_autotune", "coordinate_descent_tuning", "float32_matmul_precision"):
        assert kinds[kind].goal == RUNTIME and kinds[kind].status == NOT_TRIED
    fast = FixMeasure(runtime_s=1.0)
    # runtime: judged on after ÷ before timed interleaved in the experiment, never on two numbers taken apart;
    # "faster" needs the whole interval below 0.95
    assert not FixResult(status=MEASURED, outputs_equal=True, goal=RUNTIME, before=fast,
                         after=FixMeasure(runtime_s=0.5)).recommended
    assert not FixResult(status=MEASURED, outputs_equal=True, goal=RUNTIME, before=fast, after=FixMeasure(),
                         timing=RuntimeRatio(ratio=0.9, low=0.85, high=0.97)).recommended
    assert FixResult(status=MEASURED, outputs_equal=True, goal=RUNTIME, before=fast, after=FixMeasure(),
                     timing=RuntimeRatio(ratio=0.9, low=0.85, high=0.93)).recommended
    # a guard filter (unsafe): fewer guards are not enough — its guard check measured faster beyond the noise floor,
    # the call not slower beyond it
    few, many = dict(guards=6), dict(guards=60)
    quicker = RuntimeRatio(ratio=0.5, low=0.45, high=0.55)
    assert not FixResult(status=MEASURED, outputs_equal=True, goal=GUARDS, before=FixMeasure(**many),
                         after=FixMeasure(**few), timing=RuntimeRatio(ratio=1.1, low=0.9, high=1.3)).recommended
    assert FixResult(status=MEASURED, outputs_equal=True, goal=GUARDS, before=FixMeasure(**many),
                     after=FixMeasure(**few), timing=RuntimeRatio(ratio=1.1, low=0.9, high=1.3),
                     guard_timing=quicker).recommended
    assert not FixResult(status=MEASURED, outputs_equal=True, goal=GUARDS, before=FixMeasure(**many),
                         after=FixMeasure(**few), guard_timing=quicker, guard_noise_floor=0.6).recommended
    slower = FixResult(status=MEASURED, outputs_equal=True, goal=GUARDS, before=FixMeasure(**many),
                       after=FixMeasure(**few), timing=RuntimeRatio(ratio=2.0, low=1.8, high=2.2, before_s=1, after_s=2),
                       guard_timing=quicker)
    assert not slower.recommended and slower.verdict == "Worse" and slower.sentence("f").startswith("Worse: f — ")


def test_each_guard_filter_is_proposed_with_what_it_gives_up():
    cap = compiler.explore(f_model, torch.randn(2, 8), backend="eager", timing=False, errors="return")
    kinds = by_kind(cap)
    for name in ("skip_guard_on_inbuilt_nn_modules_unsafe", "skip_guard_on_all_nn_modules_unsafe",
                 "skip_guard_on_globals_unsafe", "keep_tensor_guards_unsafe"):
        fix = kinds[name]
        assert fix.goal == GUARDS and fix.gives_up and f"torch.compiler.{name}" in fix.snippet
        assert fix.compile_kwargs == {"options": {"guard_filter_fn": f"torch.compiler.{name}"}}
    assert "skip_all_guards_unsafe" not in kinds  # drops every safety check: never proposed


@pytest.mark.parametrize("name", ["skip_guard_on_all_nn_modules_unsafe", "skip_guard_on_globals_unsafe",
                                  "keep_tensor_guards_unsafe"])
def test_a_guard_filter_experiment_keeps_the_guards_torch_keeps_by_hand(name):
    x = torch.randn(2, 8)
    cap = compiler.explore(f_model, x, backend="eager", timing=False, errors="return")
    fix = by_kind(cap)[name]
    result = tried(fix)
    assert result.status == MEASURED and result.outputs_equal, result.as_text()
    assert result.after.runtime_s is not None and result.before.runtime_s is not None  # timed: guards cost per call

    def guards_kept(filter_fn) -> int:  # the user's own run, the filter applied from the snippet
        torch._dynamo.reset()
        compiled = torch.compile(f_model, backend="eager",
                                 options={"guard_filter_fn": filter_fn} if filter_fn else None)
        torch.testing.assert_close(compiled(x.clone()), f_model(x))
        [entry] = _debug_get_cache_entry_list(f_model.__code__)
        count = len(parse_tree(str(entry.guard_manager)))
        torch._dynamo.reset()
        return count

    assert result.before.guards == guards_kept(None)
    assert result.after.guards == guards_kept(getattr(torch.compiler, name)) < result.before.guards


def test_matmul_precision_is_put_back_after_the_experiment():
    cap = compiler.explore(f_model, torch.randn(2, 8), backend="eager", timing=False, errors="return")
    fixes = cap.fixes()
    fix = Fix(id="tf32", kind="float32_matmul_precision", title="TF32", matmul_precision="medium", goal=RUNTIME)
    fix.__dict__["_capture"] = cap
    fixes.items.append(fix)
    assert torch.get_float32_matmul_precision() == "highest"
    result = tried(fix)
    assert result.status == MEASURED and torch.get_float32_matmul_precision() == "highest"


def test_a_rounding_fix_compares_outputs_by_its_stated_relative_norm():
    from compiler.analyses.fix_experiments import outputs_match

    eager = torch.randn(64, 64, dtype=torch.float64).float()
    rounded = eager * (1 + 1e-3 * torch.randn(64, 64))  # TF32-sized rounding: assert_close's defaults refuse it
    assert not outputs_match(rounded, eager)[0]
    ok, note = outputs_match((rounded, 3), (eager, 3), {"relative_norm": 1e-2})
    assert ok and note.startswith("largest relative error") and "within the fix's stated tolerance 0.01" in note
    ok, note = outputs_match(eager * 1.1, eager, {"relative_norm": 1e-2})
    assert not ok and "beyond" in note
    assert not outputs_match(eager[:2], eager, {"relative_norm": 1e-2})[0]  # shapes differ
    assert not outputs_match((eager, 3), (eager, 4), {"relative_norm": 1e-2})[0]
    fix = Fix.from_data({"id": "f", "kind": "k", "title": "t", "tolerance": {"relative_norm": 0.01}})
    assert Fix.from_data(fix.to_data()).tolerance == {"relative_norm": 0.01}
    data = {"format": "tcompile-capture", "version": [2, 0],
            "fixes": {"available": True, "items": [{"id": "f", "kind": "k", "title": "t", "tolerance": {"rtol": 1}}]}}
    with pytest.raises(compiler.CaptureFormatError,
                       match=r"fixes.items\[0\].tolerance: expected 'relative_norm', got 'rtol'"):
        compiler.Capture.from_data(data)


class Inference(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(16, 16)
        self.b = torch.nn.Linear(16, 16)

    def forward(self, x):
        return self.b(torch.relu(self.a(x))) * 2


@pytest.mark.slow
def test_freezing_for_an_inference_capture_is_measured_with_inductor():
    torch.manual_seed(0)
    model, x = Inference().eval(), torch.randn(4, 16)
    with torch.no_grad():
        cap = compiler.explore(model, x, timing=False, errors="return")  # Inductor, on CPU
    fix = by_kind(cap)["freezing"]
    assert fix.inductor_config == {"freezing": True} and fix.goal == RUNTIME
    result = tried(fix)
    assert result.status == MEASURED and result.outputs_equal, result.as_text()
    assert result.after.runtime_s is not None and result.before.runtime_s is not None
    # by hand: the same model, under no_grad (as captured), with freezing on: torch's counters as the experiment's
    from torch._dynamo.utils import counters

    from compiler.analyses.fix_experiments import counter_summary

    torch._dynamo.reset()
    counters.clear()
    with torch._inductor.config.patch(freezing=True), torch.no_grad():
        torch.testing.assert_close(torch.compile(model)(x), model(x))
    assert result.after.counters == counter_summary({g: dict(v) for g, v in counters.items()})
    torch._dynamo.reset()
    counters.clear()


def test_a_fix_s_goal_is_checked_on_load():
    data = {"format": "tcompile-capture", "version": [2, 0],
            "fixes": {"available": True, "items": [{"id": "f", "kind": "k", "title": "t", "goal": "speed"}]}}
    with pytest.raises(compiler.CaptureFormatError,
                       match=r"fixes.items\[0\].goal: expected 'findings' or 'runtime' or 'guards' or 'compile time', got 'speed'"):
        compiler.Capture.from_data(data)


def test_the_cuda_graphs_tab_links_a_skip_to_its_fix():
    from explorer.views import render_view

    cap = compiler.load(GPU / "cudagraphs_skipped_input_mutation.json")
    page = render_view("cudagraphs", cap, None)
    assert "fix: <strong>fix1</strong> Mark buf&#x27;s memory address static" in page and "not tried" in page
