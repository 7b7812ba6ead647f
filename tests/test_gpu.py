"""GPU stages on real CUDA hardware (run on the H100 machine; skipped where CUDA is absent).

Each test compiles one of scripts/gpu_cases.py and checks the Triton and CUDA-graph stages against
what torch itself reports (profiler kernel names, counters, outputs)."""
import pytest
import torch

import compiler
from scripts.gpu_cases import CASES

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def explore_case(name, **extra):
    fn, args, compile_kwargs, _ = CASES[name]()
    compile_kwargs = {k: v for k, v in compile_kwargs.items() if not k.startswith("_")}
    return fn, args, compiler.explore(fn, *args, fresh=True, **compile_kwargs, **extra)


def test_pointwise_chain_one_fused_triton_kernel_profiled():
    fn, args, cap = explore_case("pointwise_chain")
    kernels = [k for k in cap.compiles[0].kernels.kernels if k.language == "Triton"]
    assert len(kernels) == 1 and kernels[0].kind == "pointwise"
    kernel = kernels[0]
    assert "@triton.jit" in kernel.source and kernel.triton["heuristic"] == "pointwise"
    assert {"sin", "cos", "relu"} <= set(kernel.ops_from_name)
    assert kernel.gpu_time_us_per_call > 0  # matched to the profiler's kernel of the same name
    profile = cap.gpu_profile
    assert profile.gpu_time_us_per_call <= profile.wall_time_us_per_call
    assert torch.allclose(cap.live.compiled_fn(*args), fn(*args), atol=1e-5)


def test_softmax_layernorm_reduction_kernels():
    _, _, cap = explore_case("softmax_layernorm")
    kinds = {k.kind for k in cap.compiles[0].kernels.kernels if k.language == "Triton"}
    assert kinds & {"reduction", "persistent reduction"}


def test_max_autotune_matmul_records_choices_and_the_winner():
    _, _, cap = explore_case("matmul_epilogue_max_autotune")
    (tuning,) = [a for a in cap.compiles[0].autotune if a.op.startswith("mm") or "addmm" in a.op][:1]
    chosen = [c for c in tuning.choices if c.chosen]
    assert len(tuning.choices) > 2 and len(chosen) == 1
    assert chosen[0].time_ms == min(c.time_ms for c in tuning.choices)
    # the template kernel that ran: its launcher's resources (found through the garbage collector when
    # max-autotune's nested compiles dropped its module from Inductor's list) and its IR
    (template,) = [k for k in _triton(cap) if k.kind == "template"]
    gpu = template.gpu
    assert gpu.registers > 0 and gpu.spills is not None and gpu.shared_bytes > 0, gpu.notes
    launch = template.triton["launch"]
    assert (gpu.num_warps, gpu.num_stages) == (launch["num_warps"], launch["num_stages"])
    assert f".entry {template.name}" in gpu.ir["ptx"], gpu.ir_source


def test_mlp_forward_backward_triton_kernels_in_both_directions():
    _, _, cap = explore_case("mlp_forward_backward")
    roles = {k.role for c in cap.compiles for k in c.kernels.kernels}
    assert {"forward", "backward"} <= roles


def test_reduce_overhead_uses_cuda_graphs_and_measures_the_gain():
    _, _, cap = explore_case("reduce_overhead_small_model")
    graphs = cap.cudagraphs
    assert graphs.used and graphs.recorded >= 1 and graphs.warmups >= 1
    assert graphs.replays >= 1
    comparison = cap.cudagraph_comparison
    assert comparison.with_cudagraphs.median_s > 0 and comparison.without_cudagraphs.median_s > 0


def test_input_mutation_skips_cuda_graphs_with_the_reason():
    _, _, cap = explore_case("cudagraphs_skipped_input_mutation")
    graphs = cap.cudagraphs
    assert graphs.skipped and not graphs.used
    assert "mutated inputs" in graphs.skip_reasons[0]
    assert "mutated in place" in graphs.skip_reasons_user[0]
    assert graphs.skip_locations[0].code == "buf.add_(1)"


def _triton(cap):
    return [k for c in cap.compiles for k in c.kernels.kernels if k.language == "Triton"]


def test_gpu_depth_per_triton_kernel_agrees_with_tritons_own_ir():
    """Registers, spills, shared memory and the launch config come from the launcher Inductor runs; the
    IR levels of every launched kernel are kept (from the compiled kernel in memory, else the launched
    binary's folder in Triton's cache, found by its hash — kernels compiled in Inductor's worker processes
    come back without their IR), and they say the same warps and shared memory (``ttg.num-warps``,
    ``ttg.shared``); the PTX is the kernel's entry point."""
    import re

    _, _, cap = explore_case("softmax_layernorm")
    kernels = _triton(cap)
    assert kernels
    for kernel in kernels:
        gpu = kernel.gpu
        assert gpu.registers > 0 and gpu.spills is not None and gpu.shared_bytes is not None
        assert gpu.num_warps >= 1 and gpu.num_stages >= 1
        assert set(gpu.ir) == {"ttir", "ttgir", "llir", "ptx"}, (kernel.name, gpu.ir_source)
        assert gpu.ir_source.startswith(("the compiled kernel in memory", "Triton's cache folder")), gpu.ir_source
        assert f".entry {kernel.name}" in gpu.ir["ptx"] and f"tt.func public @{kernel.name}" in gpu.ir["ttir"]
        assert int(re.search(r'"ttg.num-warps" = (\d+)', gpu.ir["ttgir"]).group(1)) == gpu.num_warps
        shared = re.search(r'"?ttg.shared"? = (\d+)', gpu.ir["ttgir"])
        if shared:
            assert int(shared.group(1)) == gpu.shared_bytes


def test_bytes_per_launch_match_inductors_own_estimate():
    """Inductor's figure kept beside the estimate (``bytes_args_per_call``: the wrapper's buffer sizes) equals what Inductor itself
    estimates with benchmark_kernel=True (``kernel_num_gb``), compiled separately: capturing never turns
    that option on."""
    for case in ("pointwise_chain", "mlp_forward_backward", "softmax_layernorm"):
        _, _, cap = explore_case(case)
        _, _, reference = explore_case(case, options={"benchmark_kernel": True})
        assert not any("kernel_num_gb" in (k.triton or {}) for k in _triton(cap))
        theirs = {(k.role, k.name): float(k.triton["kernel_num_gb"]) for k in _triton(reference)}
        ours = {(k.role, k.name): k.gpu.bytes_args_per_call for k in _triton(cap)}
        assert ours.keys() == theirs.keys() and ours
        for key, gb in theirs.items():
            assert ours[key] == pytest.approx(gb * 1e9, rel=0.01), (case, key)


def test_achieved_bandwidth_against_the_gpus_peak():
    _, _, cap = explore_case("pointwise_chain")
    profile = cap.gpu_profile
    from compiler.capturing.gpu import PEAK_BANDWIDTH

    table = next(v for k, v in PEAK_BANDWIDTH if k in torch.cuda.get_device_name())
    assert profile.peak_bytes_per_s == pytest.approx(table, rel=0.1), profile.peak_source
    (kernel,) = _triton(cap)
    gpu = kernel.gpu
    assert gpu.bytes_per_call == 2 * 4096 * 1024 * 4  # one fp32 read, one fp32 write
    assert gpu.time_us_per_launch == pytest.approx(kernel.gpu_time_us_per_call, rel=1e-6)  # one launch per call
    # a 32 MB streaming kernel runs near the hardware limit: from DRAM, or (its input just written) from L2
    assert (0.2 < gpu.bandwidth_share <= 1) if gpu.served_from == "DRAM" else gpu.served_from == "L2"


def test_embedding_gather_counts_the_rows_it_reads_not_the_table():
    """GPT-2's token embedding: the fused gather + layer-norm kernel reads 2,048 rows of the 50,257 × 768
    table; its bytes say so, and its bandwidth is a share of DRAM peak ≤ 1 or is served from L2."""
    table = torch.nn.Embedding(50257, 768).cuda()
    norm = torch.nn.LayerNorm(768).cuda()

    def f(ids):
        with torch.no_grad():
            return norm(table(ids))

    ids = torch.randint(0, 50257, (8, 256), device="cuda")
    cap = compiler.explore(f, ids, fresh=True)
    (kernel,) = [k for k in _triton(cap) if "embedding" in k.name]
    gpu = kernel.gpu
    rows = 8 * 256 * 768 * 4
    assert gpu.bytes_args_per_call > 50257 * 768 * 4  # Inductor's figure counts the whole table
    assert rows <= gpu.bytes_read <= rows + 8 * 256 * 8 + 2 * 768 * 4  # rows, ids, weight and bias
    assert "gather" in gpu.bytes_method
    assert (gpu.bandwidth_share <= 1) if gpu.served_from == "DRAM" else gpu.served_from == "L2"
    assert kernel.cost.flops > 0 and kernel.cost.bound == "memory"


def test_ir_from_the_compiled_kernel_in_memory_when_compiled_in_process_without_the_static_launcher():
    """Compiled in this process (``compile_threads=1``) without Inductor's static CUDA launcher, the kernel
    is Triton's own ``CompiledKernel``, which keeps its IR (``.asm``): it is read from memory. With the
    static launcher — torch's default, in workers or in process (checked on the H100, torch 2.11) — or from
    a worker, the launcher holds a bare cubin and the IR comes from Triton's cache folder (the test above).
    A kernel no other test compiles: equal binaries compiled earlier in the process stay alive."""
    import torch._inductor.config as inductor_config

    def only_here(x):
        return (x * 3.0).softmax(-1) + 0.25

    with inductor_config.patch(compile_threads=1, use_static_cuda_launcher=False):
        cap = compiler.explore(only_here, torch.randn(96, 640, device="cuda"), fresh=True)
    kernels = _triton(cap)
    assert kernels
    for kernel in kernels:
        gpu = kernel.gpu
        assert gpu.ir_source.startswith("the compiled kernel in memory"), (kernel.name, gpu.ir_source)
        assert set(gpu.ir) == {"ttir", "ttgir", "llir", "ptx"}
        assert f".entry {kernel.name}" in gpu.ir["ptx"] and gpu.registers > 0


def test_kernels_named_alike_in_two_compiles_each_get_their_own_launches():
    """Both graphs have a ``triton_poi_fused_mul_sin_0``; the profiler sums the two in one row. Split by the
    compiled graph that launched them (``compiler.stages.gpu_profile.compile_profile``), each compile's kernel gets
    its own launches, the kernels' times sum to the time launched inside the graphs, and the rest (the eager
    matmul between them) is named."""
    from compiler.stages.kernel_costs import gpu_time_accounted

    _, _, cap = explore_case("graph_break_repeated_kernel_names")
    compiles = [c for c in cap.compiles if c.kernels.available and c.kernels.kernels]
    assert len(compiles) == 2
    names = [{k.name for k in c.kernels.kernels if k.language == "Triton"} for c in compiles]
    (shared,) = names[0] & names[1]
    row = next(r for r in cap.gpu_profile.kernels if r.name == shared)
    assert len(row.graphs) == 2 and row.calls == sum(s.calls for s in row.graphs.values())
    times = [next(k.gpu_time_us_per_call for k in c.kernels.kernels if k.name == shared) for c in compiles]
    assert sum(times) == pytest.approx(row.gpu_time_us_per_call, rel=1e-6)  # was 2 × the row, each taking all
    found = gpu_time_accounted(cap)
    assert found.by_graph and not found.repeated
    assert found.kernels_us == pytest.approx(found.in_graphs_us, rel=0.05)
    assert any("gemm" in r.name or "sgemm" in r.name or "xmma" in r.name for r in found.rest)
    assert found.in_graphs_us + sum(r.gpu_time_us_per_call for r in found.rest) == pytest.approx(
        cap.gpu_profile.gpu_time_us_per_call, rel=1e-6)
