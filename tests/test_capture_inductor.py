"""Inductor stages from real CPU compiles: IR before/after fusion, the fusion mapping, the C++
kernels, compile-stage timings, and what a cache hit leaves out. These pay for real Inductor
compiles, so each test compiles once and checks everything it can."""
import torch

import compiler


def softmax_chain(x):
    a = x.sin() + x.cos()
    return a.softmax(-1) * 2


def test_fresh_inductor_compile_has_every_stage():
    x = torch.randn(32, 64)
    cap = compiler.explore(softmax_chain, x, fresh=True, repeat=5)
    c = cap.compiles[0]
    # fresh=True took effect: nothing was served from Inductor's caches (warm across this suite), so
    # lowering ran and logged its IR, which a cache hit never has
    assert not any(e.cache_state == "hit" for e in c.timings.cache) and c.inductor.runs[0].ir.available
    for stage in ("source", "bytecode", "graph", "guards", "aot", "inductor", "kernels", "timings"):
        assert c.stage(stage).available, (stage, c.stage(stage).reason)
    run = c.inductor.runs[0]
    assert run.role == "inference"
    assert run.pre_grad.available and run.post_grad.available
    post_grad_targets = {n.target for n in run.post_grad.nodes}
    assert {"torch.ops.aten.sin.default", "torch.ops.aten.amax.default"} <= post_grad_targets
    ir = run.ir
    assert ir.nodes_before > ir.nodes_after >= 1
    fused = [f for f in ir.fusion if f.is_fusion]
    assert fused and set(fused[0].members) <= {n.name for n in run.ir_before.nodes}
    assert run.ir_after.as_text().startswith("AFTER FUSION")
    kernels = [k for k in c.kernels.kernels if k.language == "C++"]
    assert kernels and all(k.name in c.kernels.module for k in kernels)
    kernel = kernels[0]
    assert 'extern "C"' in kernel.source
    assert {"sin", "cos"} <= set(kernel.ops_from_name)
    assert kernel.ir_node == fused[0].fused and "exp" in kernel.ir_ops
    labels = [p.label for p in c.timings.phases]
    for label in ("Dynamo tracing", "AOTAutograd", "Inductor", "Lowering to IR", "Scheduling & fusion",
                  "Code generation"):
        assert label in labels
    # torch logs the C++ compile (compile_file) only where this process compiles the kernel itself: 2.13
    # does, 2.11 does not, and neither does a process whose compile workers already took the job
    if any(e.name == "compile_file" for e in c.timings.events):
        assert "C++ compile" in labels
    whole = next(p for p in c.timings.phases if p.name == "entire_frame_compile").seconds
    assert abs(whole - c.metrics["entire_frame_compile_time_s"]) < 0.25 * whole + 0.05
    runtime = cap.runtime
    assert runtime.available and runtime.compiled.median_s > 0 and runtime.speedup > 0
    out = cap.live.compiled_fn(x)
    assert torch.allclose(out, softmax_chain(x), atol=1e-6)


def test_cache_hit_says_why_ir_is_missing():
    def double_tanh(x):
        return torch.tanh(x) * 2 + 1

    x = torch.randn(8)
    compiler.explore(double_tanh, x, timing=False)  # fills Inductor's caches
    cap = compiler.explore(double_tanh, x, timing=False)  # reset() then the same compile: cache hit
    c = cap.compiles[0]
    assert any(e.cache_state == "hit" for e in c.timings.cache)
    # the generated code is still logged (loaded from the cache), but no IR: lowering never ran
    assert "cache hit" in c.inductor.cache
    ir = c.inductor.runs[0].ir
    assert not ir.available and "cache hit" in ir.reason and "fresh=True" in ir.reason
    assert c.kernels.available
