"""Generated code: Inductor's kernels, each with the ops it came from, and the wrapper module."""
from __future__ import annotations

from ..html import (badge, code, code_block, details, heading, join, key_values, note, para, plural, seconds, table,
                    tag, unavailable)

LEXERS = {"C++": "cpp", "CUDA C++": "cpp", "Triton": "triton"}


def _list(values) -> str:
    return ", ".join(values or [])


def _came_from(kernel: dict) -> str:
    """The most precise origin torch recorded: source nodes, else ATen ops, else the IR or the name."""
    return _list(kernel.get("source_nodes") or kernel.get("aten_ops") or kernel.get("ir_ops")
                 or kernel.get("ops_from_name"))


def _gpu_time(kernel: dict) -> str:
    value = kernel.get("gpu_time_us_per_call")
    return seconds(value * 1e-6) if value is not None else ""


def kernels_table(kernels: list[dict]):
    rows = [[code(k["name"]), k.get("language"), k.get("kind") if k.get("language") == "Triton" else "",
             k.get("role") or "", _gpu_time(k),
             _list(k.get("source_nodes") or k.get("aten_ops")), _list(k.get("ops_from_name")),
             f"{k['ir_node']} ({_list(k.get('ir_members'))})" if k.get("ir_node") else "", _list(k.get("ir_ops"))]
            for k in kernels]
    return table(["kernel", "language", "kind", "graph", "GPU time / call", "source nodes / ATen ops",
                  "ops in its name", "IR node (members)", "IR ops"], rows, cls="tc-wrap-first", drop_empty=True)


def triton_launch(kernel: dict):
    """What Inductor wrote about a Triton kernel and what torch logged when compiling it."""
    meta = dict(kernel.get("triton") or {})
    launch = meta.pop("launch", {})
    info = kernel.get("kernel_info") or {}
    pairs = [(k.replace("_", " "), str(v)) for k, v in {**meta, **launch}.items() if k != "backend_hash"]
    if info.get("compile_time_us") is not None:
        pairs.append(("Triton compile time", seconds(info["compile_time_us"] * 1e-6)))
    if info.get("only_config"):
        pairs.append(("config", ", ".join(f"{k}={v}" for k, v in info["only_config"])))
    if info.get("autotune_cache_state"):
        pairs.append(("autotune cache", info["autotune_cache_state"]))
    return key_values(pairs) if pairs else None


def gpu_profile_section(capture):
    """Per-kernel GPU time from torch.profiler, and GPU time vs wall time (the launch overhead)."""
    profile = capture.data.get("gpu_profile")
    if not profile:
        return None
    rows = [[code(r["name"]), seconds(r["gpu_time_us_per_call"] * 1e-6), str(r["calls"])]
            for r in profile.get("kernels", [])]
    gpu, wall = profile["gpu_time_us_per_call"], profile["wall_time_us_per_call"]
    return join([
        heading("GPU time per kernel (torch.profiler)", 4),
        para(f"Per call: {seconds(gpu * 1e-6)} of GPU kernels in {seconds(wall * 1e-6)} of wall time — "
             f"{(profile.get('launch_overhead_share') or 0):.0%} is launch overhead and Python "
             f"(over {profile['iters']} profiled calls, after warm-up)."),
        table(["kernel (as the profiler saw it)", "GPU time / call", "launches"], rows),
    ])


def autotune_section(compile):
    """max-autotune: every choice benchmarked for an op, fastest first, the chosen one highlighted."""
    results = compile.data.get("autotune") or []
    if not results:
        return None
    parts = [heading("max-autotune choices", 4)]
    for result in results:
        sizes = " × ".join("[" + ", ".join(s) + "]" for s in result.get("input_sizes") or [] if s)
        choices = result.get("choices") or []
        rows = [[code(c["name"]), f"{c['time_ms']:.4f} ms", c.get("description") or ""] for c in choices]
        parts += [para(code(result["op"]), f" on {sizes}: {plural(len(choices), 'choice')} benchmarked"),
                  table(["choice", "time", "configuration"], rows,
                        ["tc-hit" if c.get("chosen") else None for c in choices])]
    return join(parts)


def kernel_section(kernel: dict, open: bool):
    language = kernel.get("language")
    summary = join([code(kernel["name"]), " ", badge(language, "info"),
                    f" {kernel.get('role')}" if kernel.get("role") else "", f" — {_came_from(kernel)}"])
    return details(summary,
                   para("Called with ", tag("code", _list(kernel.get("call_args"))), cls="tc-muted")
                   if kernel.get("call_args") else None,
                   details("Inductor's comments (source nodes, ATen ops, graph fragment)",
                           code_block(kernel.get("comments"), "python")) if kernel.get("comments") else None,
                   triton_launch(kernel) if language == "Triton" else None,
                   code_block(kernel.get("source"), LEXERS.get(language, "python")),
                   open=open)


def render_code(capture, compile) -> str:
    stage = compile.kernels
    if not stage.available:
        return unavailable("Generated code", stage.reason)
    kernels = stage.get("kernels") or []
    generated = [k for k in kernels if k.get("language") != "extern" and k.get("source")]
    extern = [k for k in kernels if k.get("language") == "extern"]
    return join([
        para(f"{plural(len(generated), 'generated kernel')} ({', '.join(stage.get('languages') or []) or 'none'})"
             f" and {plural(len(extern), 'call')} to library kernels (extern)."),
        kernels_table(kernels),
        gpu_profile_section(capture),
        autotune_section(compile),
        heading("Kernels", 4),
        *(kernel_section(k, open=i == 0) for i, k in enumerate(generated)),
        details("Whole output module (Python wrapper)", code_block(stage.get("module"), "python")),
    ])
