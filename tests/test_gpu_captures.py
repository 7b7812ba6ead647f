"""The GPU captures shipped in assets/gpu (recorded on an H100 with `python -m
scripts.record_gpu_captures`) load on a CPU-only machine with their Triton and CUDA-graph stages."""
from pathlib import Path

import pytest

import compiler

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
