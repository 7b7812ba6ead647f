"""The fixes that need a GPU to try (compiler.analyses.fixes: CUDA-graph skips, TF32, coordinate-descent
tuning, max-autotune), tried on real CUDA hardware and checked against the same change applied by hand
from the fix's snippet: torch's own counters (``counters["inductor"]["cudagraph_skips"]``, Dynamo's
frames and graphs), outputs, and torch's state put back. Skipped where CUDA is absent (the CPU side of
these fixes — proposals, schema, ranking — is tests/test_fixes_perf.py)."""
from __future__ import annotations

import contextlib
import io

import pytest
import torch
from torch._dynamo.utils import counters

import compiler
import torch_state
from compiler.analyses.fix_experiments import counter_summary
from compiler.stages.fix_schema import MEASURED, RUNTIME

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]
torch_state.load_torch_modules()


def by_kind(cap) -> dict:
    return {f.kind: f for f in cap.fixes()}


def tried(fix, **kwargs):
    before = torch_state.snapshot()
    result = fix.try_(**kwargs)
    torch_state.assert_restored(before)
    return result


def by_hand(fn, args, *, compile_kwargs=None, inductor_config=None, precision=None, static=(), calls=3):
    """The user's own run, the fix applied from its snippet → (dynamo counters, cudagraph skips, outputs)."""
    torch._dynamo.reset()
    counters.clear()
    args = tuple(a.clone() for a in args)
    for index in static:
        torch._dynamo.mark_static_address(args[index])
    previous = torch.get_float32_matmul_precision()
    try:
        if precision:
            torch.set_float32_matmul_precision(precision)
        with torch._inductor.config.patch(inductor_config or {}), contextlib.redirect_stdout(io.StringIO()):
            compiled = torch.compile(fn, **(compile_kwargs or {}))
            outs = [compiled(*args) for _ in range(calls)]  # CUDA graphs: warm-up, record, replay
            torch.cuda.synchronize()
    finally:
        torch.set_float32_matmul_precision(previous)
    summary = counter_summary({g: dict(v) for g, v in counters.items()})
    skips = counters["inductor"]["cudagraph_skips"]
    torch._dynamo.reset()
    counters.clear()
    return summary, skips, outs


def f_mutates(buf, x):
    buf.add_(1)
    return x * 2 + buf


def test_a_mutated_input_marked_static_is_cuda_graphed_as_by_hand():
    args = (torch.zeros(4096, device="cuda"), torch.randn(4096, device="cuda"))
    cap = compiler.explore(f_mutates, *[a.clone() for a in args], mode="reduce-overhead", fresh=True, errors="return")
    assert cap.cudagraphs.skip_reasons, "torch no longer skips CUDA graphs for a mutated input"
    fix = by_kind(cap)["cudagraph_static_input"]
    assert [(m.argument, m.static) for m in fix.marks] == [("buf", True)]
    result = tried(fix)
    assert result.status == MEASURED and result.outputs_equal, result.as_text()
    reasons = {when: m.__dict__["_capture"].cudagraphs.skip_reasons for when, m in
               (("before", result.before), ("after", result.after))}
    print("CUDA-graph skip reasons", reasons)
    _, skips_before, _ = by_hand(f_mutates, args, compile_kwargs={"mode": "reduce-overhead"}, calls=result.calls)
    after_counts, skips_after, outs = by_hand(f_mutates, args, compile_kwargs={"mode": "reduce-overhead"}, static=[0],
                                              calls=result.calls)
    print("by hand: skips", skips_before, "→", skips_after)
    assert result.before.cudagraph_skips == skips_before >= 1
    assert result.after.cudagraph_skips == skips_after == 0
    assert result.after.counters == after_counts
    assert result.before.runtime_s is not None and result.after.runtime_s is not None  # a runtime fix is timed
    print(result.as_text())


def f_cpu_scale(x, scale):
    return (x.sin() * 2) + scale.to(x.device)


def test_a_cpu_tensor_skip_gets_graph_partitions_as_by_hand():
    args = (torch.randn(4096, device="cuda"), torch.tensor(3.0))
    cap = compiler.explore(f_cpu_scale, *[a.clone() for a in args], mode="reduce-overhead", fresh=True,
                           errors="return")
    if not cap.cudagraphs.skip_reasons:
        pytest.skip(f"torch {torch.__version__} CUDA-graphs this function (no skip to fix)")
    fix = by_kind(cap)["graph_partition"]
    result = tried(fix)
    assert result.status == MEASURED and result.outputs_equal, result.as_text()
    _, skips_before, _ = by_hand(f_cpu_scale, args, compile_kwargs={"mode": "reduce-overhead"})
    after_counts, skips_after, _ = by_hand(f_cpu_scale, args, compile_kwargs={"mode": "reduce-overhead"},
                                           inductor_config={"graph_partition": True})
    assert result.before.cudagraph_skips == skips_before >= 1
    assert result.after.cudagraph_skips == skips_after
    assert result.after.counters == after_counts
    print(result.as_text())


def f_matmul(a, b):
    return torch.relu(a @ b)


def test_tf32_is_measured_faster_and_within_its_stated_tolerance():
    torch.manual_seed(0)
    args = (torch.randn(4096, 4096, device="cuda"), torch.randn(4096, 4096, device="cuda"))
    assert torch.get_float32_matmul_precision() == "highest"
    cap = compiler.explore(f_matmul, *args, fresh=True, errors="return")
    fix = by_kind(cap)["float32_matmul_precision"]
    assert fix.matmul_precision == "high" and fix.goal == RUNTIME and fix.tolerance == {"relative_norm": 1e-2}
    result = tried(fix)
    assert result.status == MEASURED and result.outputs_equal, result.as_text()
    assert "relative error" in result.output_note
    _, _, outs = by_hand(f_matmul, args, precision="high")
    with torch.no_grad():
        expected = f_matmul(*args)
        by_hand_error = ((outs[0].double() - expected.double()).norm() / expected.double().norm()).item()
    assert by_hand_error <= 1e-2 and by_hand_error > 0  # TF32 rounds: the change does change the numbers
    # a 4096³ float32 matmul on tensor cores (TF32) is several times faster than on CUDA cores
    assert result.after.runtime_s < 0.5 * result.before.runtime_s, result.as_text()
    assert result.recommended == (not (result.after.busy or result.before.busy))
    assert torch.get_float32_matmul_precision() == "highest"
    print(result.as_text())


def f_softmax(x):
    return torch.softmax(x * 2, dim=-1) + 1


def test_coordinate_descent_tuning_is_measured_and_put_back():
    args = (torch.randn(8192, 2048, device="cuda"),)
    cap = compiler.explore(f_softmax, *args, fresh=True, errors="return")
    fix = by_kind(cap)["coordinate_descent_tuning"]
    assert not torch._inductor.config.coordinate_descent_tuning
    result = tried(fix, timing=True)
    assert result.status == MEASURED and result.outputs_equal, result.as_text()
    after_counts, _, _ = by_hand(f_softmax, args, inductor_config={"coordinate_descent_tuning": True})
    assert result.after.counters == after_counts
    assert result.after.runtime_s is not None and result.before.runtime_s is not None
    assert not torch._inductor.config.coordinate_descent_tuning
    print(result.as_text())


def f_matmul_half(a, b):
    return torch.relu(a @ b) * 0.5


def test_max_autotune_is_measured_and_put_back():
    args = (torch.randn(2048, 2048, device="cuda", dtype=torch.float16),
            torch.randn(2048, 2048, device="cuda", dtype=torch.float16))
    cap = compiler.explore(f_matmul_half, *args, fresh=True, errors="return")
    fix = by_kind(cap)["max_autotune"]
    result = tried(fix, timing=True)
    assert result.status == MEASURED and result.outputs_equal, result.as_text()
    after_counts, _, _ = by_hand(f_matmul_half, args, compile_kwargs={"mode": "max-autotune"})
    assert result.after.counters == after_counts
    assert result.after.compile_s > 0 and result.before.compile_s > 0
    assert not torch._inductor.config.max_autotune
    print(result.as_text())
