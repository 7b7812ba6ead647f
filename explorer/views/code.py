"""Generated code: Inductor's kernels, each with the ops it came from, and the wrapper module."""
from __future__ import annotations

from compiler.stages.kernel_costs import gpu_time_accounted

from ..html import (badge, code, code_block, details, heading, join, key_values, para, plural, seconds, table, tag,
                    unavailable)
from .repro import reproducer_section
from .roofline import roofline_section
from .source import kernel_picker, share_cell
from .tables import data_table, later

LEXERS = {"C++": "cpp", "CUDA C++": "cpp", "Triton": "triton"}


def _list(values) -> str:
    return ", ".join(values or [])


def _us(value: float | None) -> str:
    """Microseconds as ``seconds`` shows them (``–`` when not measured)."""
    return seconds(value * 1e-6) if value is not None else "–"


def _came_from(kernel) -> str:
    """The most precise origin torch recorded: source nodes, else ATen ops, else the IR or the name."""
    return _list(kernel.source_nodes or kernel.aten_ops or kernel.ir_ops or kernel.ops_from_name)


def _gpu_time(kernel) -> str:
    return _us(kernel.gpu_time_us_per_call) if kernel.gpu_time_us_per_call is not None else ""


def kernels_table(kernels: list):
    """One row per kernel (``compiler.stages.schema.Kernel``)."""
    rows = [[code(k.name), k.language, k.kind if k.language == "Triton" else "", k.role or "", _gpu_time(k),
             _list(k.source_nodes or k.aten_ops), _list(k.ops_from_name),
             f"{k.ir_node} ({_list(k.ir_members)})" if k.ir_node else "", _list(k.ir_ops)]
            for k in kernels]
    return data_table("Kernels", ["kernel", "language", "kind", "graph", "GPU time / call", "source nodes / ATen ops",
                                  "ops in its name", "IR node (members)", "IR ops"], rows, cls="tc-wrap-first",
                      drop_empty=True)


def triton_launch(kernel):
    """What Inductor wrote about a Triton kernel and what torch logged when compiling it."""
    meta = dict(kernel.triton or {})
    launch = meta.pop("launch", None)
    info = kernel.kernel_info or {}
    pairs = [(k.replace("_", " "), str(v)) for k, v in {**meta, **(launch if isinstance(launch, dict) else {})}.items()
             if k != "backend_hash"]
    if isinstance(info.get("compile_time_us"), (int, float)):
        pairs.append(("Triton compile time", _us(info["compile_time_us"])))
    if isinstance(info.get("only_config"), list):
        pairs.append(("config", ", ".join(f"{pair[0]}={pair[1]}" if isinstance(pair, list) and len(pair) == 2
                                          else str(pair) for pair in info["only_config"])))
    if info.get("autotune_cache_state"):
        pairs.append(("autotune cache", str(info["autotune_cache_state"])))
    return key_values(pairs) if pairs else None


def gpu_profile_section(capture):
    """Per-kernel GPU time from torch.profiler, and GPU time vs wall time (the launch overhead)."""
    profile = capture.gpu_profile
    if profile is None or not profile.available:
        return None
    rows = [[code(r.name), _us(r.gpu_time_us_per_call), str(r.calls)] for r in profile.kernels]
    gpu, wall = profile.gpu_time_us_per_call, profile.wall_time_us_per_call
    return join([
        heading("GPU time per kernel (torch.profiler)", 4),
        para(f"Per call: {_us(gpu)} of GPU kernels in {_us(wall)} of wall time — "
             f"{(profile.launch_overhead_share or 0):.0%} is launch overhead and Python "
             f"(over {profile.iters} profiled calls, after warm-up)."),
        _adds_up(capture, gpu),
        table(["kernel (as the profiler saw it)", "GPU time / call", "launches"], rows),
    ])


def _adds_up(capture, gpu_us: float | None):
    """How much of the profiled GPU time the compiles' kernels account for, and what the rest is
    (``compiler.stages.kernel_costs.gpu_time_accounted``)."""
    found = gpu_time_accounted(capture)
    if not gpu_us or found is None:
        return None
    repeated = (para(f"{plural(len(found.repeated), 'kernel name')} ({', '.join(found.repeated[:3])}"
                     f"{' …' if len(found.repeated) > 3 else ''}) appear in several compiles whose launches the "
                     "profile cannot tell apart: such a kernel's time in the tables below is that of every compile's "
                     "kernel of the name.", cls="tc-muted") if found.repeated else None)
    if not found.by_graph:
        return join([para(f"The compiled code's kernels (generated and extern) account for {_us(found.kernels_us)} of "
                          f"the {_us(gpu_us)} ({found.kernels_us / gpu_us:.0%})"
                          + (f"; the rest is kernels not matched to them (eager work outside the graph, memsets, "
                             f"library helpers): {_rows(found.rest)}" if found.rest else "") + ".", cls="tc-muted"),
                     repeated])
    unclaimed = sum(r.gpu_time_us_per_call for r in found.unclaimed_in_graphs)
    outside = sum(r.gpu_time_us_per_call for r in found.rest)
    late = sum(found.uncaptured_graphs.values())
    rows = [["the compiles' kernels (the tables of each compile)", _us(found.kernels_us), f"{found.kernels_us / gpu_us:.0%}", ""],
            ["inside the compiled graphs, launched by ops with no kernel row", _us(unclaimed), f"{unclaimed / gpu_us:.0%}",
             _rows(found.unclaimed_in_graphs)]]
    if late:
        rows.append(["… of which in graphs compiled after the capture (during the profiler's warm-up calls)", _us(late),
                     f"{late / gpu_us:.0%}", ", ".join(sorted(found.uncaptured_graphs))])
    rows += [["outside the compiled graphs (eager work between them)", _us(outside), f"{outside / gpu_us:.0%}",
              _rows(found.rest)],
             ["profiled GPU time per call", _us(gpu_us), "100%", ""]]
    overlap = (para(f"The compiles' kernel rows add up to {_us(found.rows_us)}: a launch is in the row of every "
                    "compile whose kernel has its name; above, each launch is counted once, so the shares add up to "
                    "100 %.", cls="tc-muted")
               if found.rows_us is not None and found.rows_us > found.kernels_us * 1.005 + 0.01 else None)
    return join([
        para("Where the profiled GPU time went — each launch put in the compile whose graph made it (the profiler's "
             "ranges around each compiled frame and graph call), so kernels Inductor names alike in several compiles "
             "are counted once; the rows without “of which” add up to the whole:", cls="tc-muted"),
        table(["", "GPU time / call", "share", "largest"], rows),
        overlap, repeated])


def _rows(rows: list) -> str:
    return ", ".join(f"{r.name[:60]} ({_us(r.gpu_time_us_per_call)})" for r in rows[:5]) + (" …" if len(rows) > 5 else "")


def _time_ms(value: float | None) -> str:
    return f"{value:.4f} ms" if value is not None else "–"


def autotune_section(compile):
    """max-autotune: every choice benchmarked for an op, fastest first, the chosen one highlighted."""
    if not compile.autotune:
        return None
    parts = [heading("max-autotune choices", 4)]
    for result in compile.autotune:
        sizes = " × ".join("[" + ", ".join(map(str, s)) + "]" if isinstance(s, list) else str(s)
                           for s in result.input_sizes if s)
        choices = result.choices
        rows = [[code(c.name), _time_ms(c.time_ms), c.description or ""] for c in choices]
        parts += [para(code(result.op or "?"), f" on {sizes}: {plural(len(choices), 'choice')} benchmarked"),
                  table(["choice", "time", "configuration"], rows, ["tc-hit" if c.chosen else None for c in choices])]
    return join(parts)


def _bytes(value) -> str:
    if value is None:
        return "–"
    for scale, unit in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value} B"


def gpu_depth_section(capture, kernels: list):
    """Per Triton kernel: registers, spills, shared memory, launch config, bytes moved per launch and the
    achieved bandwidth as a share of the GPU's peak — which kernels are near the hardware limit."""
    triton = [k for k in kernels if k.gpu is not None]
    if not triton:
        return None
    triton.sort(key=lambda k: -(k.gpu_time_us_per_call or 0))
    rows = []
    for k in triton:
        g = k.gpu
        config = ", ".join(f"{name}={value}" for name, value in g.config.items())
        rows.append([code(k.name), k.role or "", _us(g.time_us_per_launch),
                     str(g.registers) if g.registers is not None else "–",
                     str(g.spills) if g.spills is not None else "–", _bytes(g.shared_bytes),
                     f"{g.num_warps} / {g.num_stages}" if g.num_warps else "–", config,
                     _bytes(g.bytes_per_call) if g.bytes_per_call is not None else (g.bytes_reason or "–"),
                     "kernel's loads and stores" if g.accesses else "whole arguments (Inductor's estimate)",
                     f"{g.achieved_bytes_per_s / 1e9:,.0f} GB/s" if g.achieved_bytes_per_s else "–",
                     _of_peak(g)])
    profile = capture.gpu_profile
    peak = (f"Peak: {profile.peak_bytes_per_s / 1e12:.2f} TB/s ({profile.peak_source})."
            if profile is not None and profile.peak_bytes_per_s else "Peak bandwidth unknown.")
    return join([
        heading("GPU depth per Triton kernel", 4),
        table(["kernel", "graph", "time / launch", "registers / thread", "spills", "shared memory",
               "warps / stages", "config", "bytes read + written / launch", "bytes from", "achieved",
               "of DRAM peak"], rows, cls="tc-wrap-first"),
        para(peak, " Bytes: the distinct elements the kernel's own tl.load/tl.store index expressions reach "
                   "(a gather counts the rows it was given, a broadcast read once, each buffer at most once); "
                   "kernels that cannot be followed (templates, symbolic sizes) keep Inductor's estimate, every "
                   "pointer argument's whole buffer. Above the DRAM peak with a working set that fits the L2, "
                   "the data came from L2: the figure is an effective bandwidth, not a share of DRAM peak. "
                   "A kernel far below the peak is bound by something else (launch latency, compute, too little "
                   "work). Spills: Triton's count of local-memory words per thread.", cls="tc-muted"),
    ])


def _of_peak(g):
    if g.bandwidth_share is not None:
        return share_cell(g.bandwidth_share)
    if g.served_from == "L2":
        return tag("span", "served from L2", title=f"working set {_bytes(g.working_set_bytes or g.bytes_per_call)} "
                                                   f"≤ {_bytes(g.l2_bytes)} L2: an effective bandwidth above the "
                                                   "DRAM peak")
    if g.achieved_bytes_per_s and g.peak_bytes_per_s and g.achieved_bytes_per_s > g.peak_bytes_per_s:
        return tag("span", "above DRAM peak: estimate too high", cls="tc-warn")
    return "–"


def _ir_levels(kernel):
    """Triton's kept IR, one click each (TTIR → TTGIR → LLVM IR → PTX)."""
    g = kernel.gpu
    if g is None:
        return None
    if not g.ir:
        return para(f"Triton IR: {g.ir_source or 'not kept'}", cls="tc-muted") if g.ir_source else None
    names = {"ttir": "TTIR (Triton IR)", "ttgir": "TTGIR (Triton GPU IR)", "llir": "LLVM IR", "ptx": "PTX"}
    return join([para(f"Triton IR levels (from {g.ir_source}):", cls="tc-muted"),
                 *(details(names.get(level, level), code_block(text, "text")) for level, text in g.ir.items())])


def kernel_section(kernel, open: bool):
    language = kernel.language
    summary = join([code(kernel.name), " ", badge(language, "info"),
                    f" {kernel.role}" if kernel.role else "", f" — {_came_from(kernel)}"])
    return details(summary,
                   para("Called with ", tag("code", _list(kernel.call_args)), cls="tc-muted")
                   if kernel.call_args else None,
                   details("Inductor's comments (source nodes, ATen ops, graph fragment)",
                           code_block(kernel.comments, "python")) if kernel.comments else None,
                   triton_launch(kernel) if language == "Triton" else None,
                   code_block(kernel.source, LEXERS.get(language, "python")),
                   _ir_levels(kernel),
                   open=open)


def render_code(capture, compile) -> str:
    stage = compile.kernels
    if not stage.available:
        return unavailable("Generated code", stage.reason)
    kernels = stage.kernels
    generated = [k for k in kernels if k.language != "extern" and k.source]
    extern = [k for k in kernels if k.language == "extern"]
    return join([
        para(f"{plural(len(generated), 'generated kernel')} ({', '.join(stage.languages) or 'none'})"
             f" and {plural(len(extern), 'call')} to library kernels (extern)."),
        kernels_table(kernels),
        later(lambda: kernel_picker(compile) or "", "drawing each kernel's source lines and nodes…"),
        gpu_profile_section(capture),
        gpu_depth_section(capture, kernels),
        roofline_section(kernels),
        autotune_section(compile),
        heading("Kernels", 4),
        reproducer_section(compile) if compile.origin == "dynamo" else None,
        # each kernel's code and the whole module drawn once the tab is on screen (highlighting them took most of
        # a big compile's first visit)
        later(lambda: join([
            *(kernel_section(k, open=i == 0) for i, k in enumerate(generated)),
            details("Whole output module (Python wrapper)", code_block(stage.module, "python"))
            if compile.origin == "dynamo" else details("Whole AOTInductor wrapper (C++)", code_block(stage.module, "cpp"))]),
            f"drawing the code of {plural(len(generated), 'kernel')} and the whole module…"),
    ])
