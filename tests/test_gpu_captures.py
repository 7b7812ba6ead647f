"""The GPU captures shipped in assets/gpu (recorded on an H100 with `python -m
scripts.record_gpu_captures`) load on a CPU-only machine with their Triton and CUDA-graph stages."""
from pathlib import Path

import pytest

import compiler
from scripts.gpu_models import MODELS

pytestmark = pytest.mark.any_torch  # compiles nothing, reads only saved files (make test-torch leaves it out)

GPU_CAPTURES = Path(__file__).resolve().parent.parent / "assets" / "gpu"


def load(name):
    return compiler.load(GPU_CAPTURES / f"{name}.json")


@pytest.mark.parametrize("path", sorted(GPU_CAPTURES.glob("*.json")), ids=lambda p: p.stem)
def test_every_shipped_capture_states_where_it_came_from(path):
    cap = compiler.load(path)
    env = cap.environment
    assert env["device"] == "cuda" and "H100" in env["device_name"]
    assert env["torch"] and env["triton"] and env["cuda"]
    assert cap.options["case"] == path.stem
    assert cap.compiles and not cap.is_live


def test_triton_kernels_with_metadata_and_profiled_time():
    kernel = next(k for k in load("pointwise_chain").compiles[0].kernels.kernels if k.language == "Triton")
    assert kernel.kind == "pointwise" and "@triton.jit" in kernel.source
    assert kernel.triton["heuristic"] == "pointwise" and kernel.gpu_time_us_per_call > 0
    assert kernel.kernel_info["compile_time_us"] > 0


def test_max_autotune_choices_shipped():
    (tuning,) = load("matmul_epilogue_max_autotune").compiles[0].autotune
    assert tuning.op == "mm" and len(tuning.choices) > 10
    assert sum(c.chosen for c in tuning.choices) == 1


def test_cuda_graph_life_cycle_skip_and_rerecord():
    used = load("reduce_overhead_small_model")
    assert used.cudagraphs.used and used.cudagraphs.recorded == 1 and used.cudagraphs.replays >= 1
    assert used.cudagraph_comparison.speedup > 0
    skipped = load("cudagraphs_skipped_input_mutation").cudagraphs
    assert skipped.skipped and skipped.skip_locations[0].code == "buf.add_(1)"
    dynamic = load("dynamic_shapes_rerecord").cudagraphs
    assert dynamic.re_recordings == len(dynamic.trees) - 1 >= 2
    overwritten = load("cudagraph_output_overwritten")
    assert "cudagraph_mark_step_begin" in overwritten.error.stage


def test_triton_and_cuda_graph_views_render_the_shipped_captures():
    from explorer.views import render_view

    pointwise = load("pointwise_chain")
    html = render_view("code", pointwise, pointwise.compiles[0])
    kernel = next(k for k in pointwise.compiles[0].kernels.kernels if k.language == "Triton")
    assert kernel.name in html and "GPU time per kernel" in html and "@triton" in html
    assert "pointwise" in html and "launch overhead" in html

    tuned = load("matmul_epilogue_max_autotune")
    html = render_view("code", tuned, tuned.compiles[0])
    chosen = next(c for c in tuned.compiles[0].autotune[0].choices if c.chosen)
    assert "max-autotune choices" in html and chosen.name in html and "num_warps" in html

    used = load("reduce_overhead_small_model")
    html = render_view("cudagraphs", used, used.compiles[0])
    assert "CUDA graphs used" in html and "With and without CUDA graphs" in html and "triton.cudagraphs=False" in html

    skipped = load("cudagraphs_skipped_input_mutation")
    html = render_view("cudagraphs", skipped, skipped.compiles[0])
    assert "CUDA graphs skipped" in html and "buf.add_(1)" in html and "mutated in place" in html

    rerecorded = load("dynamic_shapes_rerecord")
    assert "Re-recorded 3 times" in render_view("cudagraphs", rerecorded, rerecorded.compiles[0])

    overwritten = load("cudagraph_output_overwritten")
    assert "cudagraph_mark_step_begin" in render_view("cudagraphs", overwritten, overwritten.compiles[0])


@pytest.mark.parametrize("path", sorted(GPU_CAPTURES.glob("*.json")), ids=lambda p: p.stem)
def test_every_shipped_capture_renders_the_gpu_stage_views(path):
    from explorer.views import render_view

    cap = compiler.load(path)
    for key in ("aot", "inductor", "code", "cudagraphs"):
        for c in cap.compiles:
            html = render_view(key, cap, c)
            assert "view failed" not in html, (key, c.compile_id, html[html.find("view failed"):][:500])


def _triton(cap):
    return [k for c in cap.compiles for k in c.kernels.kernels if k.language == "Triton"]


def test_gpu_depth_shipped_per_triton_kernel():
    """Registers, launch config, bytes per launch and achieved bandwidth against the H100's peak
    (asked from the device: memory clock × bus width × 2 ≈ the data sheet's 3.35 TB/s)."""
    cap = load("pointwise_chain")
    profile = cap.gpu_profile
    assert profile.peak_bytes_per_s == pytest.approx(3.35e12, rel=0.01) and "device query" in profile.peak_source
    (kernel,) = _triton(cap)
    gpu = kernel.gpu
    assert gpu.registers > 0 and gpu.spills is not None and gpu.num_warps >= 1 and gpu.num_stages >= 1
    assert gpu.config.get("XBLOCK") and gpu.shared_bytes == 0
    assert gpu.bytes_read == gpu.bytes_written == 4096 * 1024 * 4  # x in, the result out, fp32
    assert gpu.achieved_bytes_per_s == pytest.approx(gpu.bytes_per_call / (gpu.time_us_per_launch * 1e-6))
    assert gpu.bandwidth_share == pytest.approx(gpu.achieved_bytes_per_s / profile.peak_bytes_per_s)
    assert 0.5 < gpu.bandwidth_share < 1.05  # a 32 MB streaming kernel: near the hardware limit
    mlp = _triton(load("mlp_forward_backward"))
    assert {k.role for k in mlp} == {"forward", "backward"} and all(k.gpu.bytes_per_call for k in mlp)
    assert all(k.gpu.registers for k in mlp)


@pytest.mark.parametrize("path", sorted(GPU_CAPTURES.glob("*.json")), ids=lambda p: p.stem)
def test_every_shipped_triton_kernel_has_its_ir_levels_or_a_reason(path):
    """Each launched Triton kernel keeps Triton's IR levels (read from the launched binary's folder in
    Triton's cache, by its hash: the kernels came back from Inductor's compile workers as statically
    launched cubins, without their IR); the TTGIR's warps and the PTX's entry point agree with the
    launcher. Each level is capped, and so is the capture's whole IR. A capture that was not profiled
    (a case that demonstrates an error) says why it has no GPU depth."""
    import re

    from compiler.capturing.gpu import IR_BUDGET, IR_LEVELS, IR_LIMIT

    cap = compiler.load(path)
    kernels = _triton(cap)
    assert kernels
    if cap.gpu_profile is None:
        assert not cap.runtime.available and cap.runtime.reason == "this case demonstrates an error"
        assert all(not k.gpu.ir and k.gpu.registers is None for k in kernels)
        return
    kept = [k for k in kernels if not k.gpu.ir_source.startswith("not kept: the capture's IR budget")]
    assert kept and max(kernels, key=lambda k: k.gpu_time_us_per_call or 0) in kept  # the costliest first
    for kernel in kept:
        gpu = kernel.gpu
        assert set(gpu.ir) == set(IR_LEVELS), (kernel.name, gpu.ir_source)
        # the real-model captures (scripts/gpu_models.py) compiled in process: Triton kept the IR in memory
        assert gpu.ir_source.startswith(("Triton's cache folder of the launched binary",
                                         "the compiled kernel in memory")), gpu.ir_source
        assert f"tt.func public @{kernel.name}(" in gpu.ir["ttir"] and f".entry {kernel.name}(" in gpu.ir["ptx"]
        assert int(re.search(r'"ttg.num-warps" = (\d+)', gpu.ir["ttgir"]).group(1)) == gpu.num_warps
        assert all(len(text) <= IR_LIMIT + 100 for text in gpu.ir.values())
        assert ".debug_info" not in gpu.ir["ptx"]  # the DWARF sections are left out, and said so
    assert sum(len(t) for k in kernels for t in k.gpu.ir.values()) <= IR_BUDGET + 4 * (IR_LIMIT + 100)
    assert path.stat().st_size < (5_000_000 if path.stem in MODELS else 1_000_000)  # a real model: ≤ 5 MB


def test_template_kernel_of_max_autotune_has_its_launcher_resources():
    """max-autotune's nested compiles drop the final module from Inductor's module list; its template
    kernel is found alive through the garbage collector, with the launched config's resources."""
    (template,) = [k for k in _triton(load("matmul_epilogue_max_autotune")) if k.kind == "template"]
    gpu = template.gpu
    # which choice wins is autotuning's call: the epilogue is fused into the template, or left to its own kernel
    assert template.name in ("triton_tem_fused_mm_0", "triton_tem_fused_add_mm_mul_relu_0")
    assert gpu.registers > 0 and gpu.spills == 0 and gpu.shared_bytes > 0  # a pipelined tile in shared memory
    launch = template.triton["launch"]
    assert (gpu.num_warps, gpu.num_stages) == (launch["num_warps"], launch["num_stages"])
    assert gpu.time_us_per_launch > 0 and 0 < gpu.bandwidth_share < 1.05
    assert f".entry {template.name}(" in gpu.ir["ptx"]


def test_bytes_per_launch_from_the_wrapper_code():
    """Static estimate (compiler.stages.kernels.triton_bytes): in-out arguments count twice, reinterpreted views
    by their view's size, symbolic sizes are reported instead of guessed."""
    by_name = {k.name: k for k in _triton(load("mlp_forward_backward")) if k.role == "backward"}
    gelu = by_name["triton_poi_fused_gelu_gelu_backward_3"].gpu  # in_out_ptr0 buf5 and in_ptr0 addmm
    assert (gelu.bytes_read, gelu.bytes_written) == (2 * 256 * 1024 * 4, 256 * 1024 * 4)
    (dynamic,) = _triton(load("dynamic_shapes_rerecord"))
    assert dynamic.gpu.bytes_per_call is None and "symbolic" in dynamic.gpu.bytes_reason


def test_kernels_named_alike_in_two_compiles_are_timed_by_the_graph_that_launched_them():
    """Recorded on the H100: two compiles around an eager matmul, each with a ``triton_poi_fused_mul_sin_0``,
    which the profiler sums in one row. Each compile's kernel has its own launches (the row split by the
    compiled graph that launched it), the kernel rows sum to what ran inside the graphs, and the eager matmul
    is what ran outside them; redoing the costs on load gives the same times."""
    from compiler.stages.data import plain_data
    from compiler.stages.kernel_costs import gpu_time_accounted
    from compiler.stages.assemble import recompute
    from compiler.stages.schema import kernel_rows

    cap = load("graph_break_repeated_kernel_names")
    (row,) = [r for r in cap.gpu_profile.kernels if r.name == "triton_poi_fused_mul_sin_0"]
    assert sorted(row.graphs) == ["compile 0/0", "compile 1/0"]
    times = [k.gpu_time_us_per_call for c in cap.compiles for k in c.kernels.kernels if k.name == row.name]
    assert len(times) == 2 and sum(times) == pytest.approx(row.gpu_time_us_per_call)
    assert times == [pytest.approx(row.graphs[f"compile {i}/0"].gpu_time_us_per_call) for i in (0, 1)]
    found = gpu_time_accounted(cap)
    assert found.by_graph and not found.repeated and not found.unclaimed_in_graphs and not found.uncaptured_graphs
    assert found.kernels_us == pytest.approx(found.in_graphs_us)
    assert found.in_graphs_us + sum(r.gpu_time_us_per_call for r in found.rest) == pytest.approx(
        cap.gpu_profile.gpu_time_us_per_call)
    assert any("gemm" in r.name for r in found.rest)  # the eager matmul between the graphs
    from explorer.views.code import _adds_up

    shown = str(_adds_up(cap, cap.gpu_profile.gpu_time_us_per_call))
    assert "outside the compiled graphs" in shown and "gemm" in shown and "cannot tell apart" not in shown
    data = plain_data(cap)
    recompute(data)
    again = [k["gpu_time_us_per_call"] for c in data["compiles"] for k in kernel_rows(c)
             if k["name"] == row.name]
    assert again == pytest.approx(times)
