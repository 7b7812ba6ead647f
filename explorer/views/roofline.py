"""The roofline of a compile's GPU kernels: a log-log plot (arithmetic intensity → achieved FLOP/s, one dot
per kernel sized by its GPU time, under the device's DRAM and compute roofs) and a table of each kernel's
FLOPs, bytes, intensity and verdict, with the methods that gave them (``compiler.stages.kernel_costs``)."""
from __future__ import annotations

import math

from ..html import code, heading, join, para, seconds, shorten, tag
from .breaks import file_place
from .tables import data_table

WIDTH, HEIGHT, LEFT, BOTTOM, TOP, RIGHT = 660, 340, 74, 40, 14, 120


def _si(value: float | None, unit: str = "") -> str:
    if value is None:
        return "–"
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}".strip()


def _decades(low: float, high: float) -> tuple[int, int]:
    return math.floor(math.log10(low)), math.ceil(math.log10(high))


def roofline_svg(kernels: list):
    """One dot per kernel with a GPU time, FLOPs and bytes; ``None`` when no kernel has all three."""
    drawn = [k for k in kernels if k.cost and k.cost.time_s and k.cost.intensity and k.cost.achieved_flops_per_s]
    roofs = {}  # dtype → (peak FLOP/s, peak bytes/s)
    for k in kernels:
        c = k.cost
        if c and c.peak_flops_per_s and c.peak_bytes_per_s:
            roofs.setdefault(c.dtype or "fp32", (c.peak_flops_per_s, c.peak_bytes_per_s))
    points = [(c.intensity, c.achieved_flops_per_s, c.time_s, "l2" if c.served_from == "L2" else (c.bound or "memory"),
               f"{k.name} ({k.role or 'graph'}): {seconds(c.time_s)} per call, {_si(c.flops, 'FLOP')}, "
               f"{_si(c.bytes, 'B')} — {c.verdict}", k.name) for k in drawn for c in (k.cost,)]
    return _plot(points, roofs, "Roofline: one dot per kernel")


def _plot(points: list[tuple], roofs: dict, label: str):
    """The log-log plot: ``points`` are (intensity, achieved FLOP/s, seconds, kind, hover text, name), ``roofs``
    dtype → (peak FLOP/s, peak bytes/s); ``None`` with nothing to draw."""
    if not points or not roofs:
        return None
    top_flops = max(p for p, _ in roofs.values())
    x0, x1 = _decades(min(min(p[0] for p in points), min(p / b for p, b in roofs.values())) / 2,
                      max(max(p[0] for p in points), max(p / b for p, b in roofs.values())) * 4)
    y0, y1 = _decades(min(p[1] for p in points) / 2, top_flops * 1.5)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x):
        return LEFT + plot_w * (math.log10(x) - x0) / (x1 - x0)

    def py(y):
        return TOP + plot_h * (1 - (math.log10(y) - y0) / (y1 - y0))

    parts = [tag("rect", x=str(LEFT), y=str(TOP), width=str(plot_w), height=str(plot_h), cls="tc-roof-frame")]
    for d in range(x0, x1 + 1):
        parts += [tag("line", x1=f"{px(10 ** d):.1f}", x2=f"{px(10 ** d):.1f}", y1=str(TOP), y2=str(TOP + plot_h),
                      cls="tc-roof-grid"),
                  tag("text", _si(10 ** d), x=f"{px(10 ** d):.1f}", y=str(HEIGHT - BOTTOM + 16),
                      text_anchor="middle", cls="tc-chart-text")]
    for d in range(y0, y1 + 1):
        parts += [tag("line", x1=str(LEFT), x2=str(LEFT + plot_w), y1=f"{py(10 ** d):.1f}", y2=f"{py(10 ** d):.1f}",
                      cls="tc-roof-grid"),
                  tag("text", _si(10 ** d), x=str(LEFT - 6), y=f"{py(10 ** d) + 4:.1f}", text_anchor="end",
                      cls="tc-chart-text")]
    parts += [tag("text", "arithmetic intensity (FLOP / byte)", x=f"{LEFT + plot_w / 2:.0f}", y=str(HEIGHT - 6),
                  text_anchor="middle", cls="tc-chart-text"),
              tag("text", "achieved FLOP/s", x="12", y=f"{TOP + plot_h / 2:.0f}", text_anchor="middle",
                  transform=f"rotate(-90 12 {TOP + plot_h / 2:.0f})", cls="tc-chart-text")]
    for i, (kind, text) in enumerate((("memory", "memory-bound (DRAM)"), ("l2", "served from L2"),
                                      ("compute", "compute-bound"))):
        y = TOP + 14 + 16 * i
        parts += [tag("circle", cx=str(LEFT + 12), cy=str(y - 4), r="5", cls=f"tc-roof-dot tc-roof-{kind}"),
                  tag("text", text, x=str(LEFT + 22), y=str(y), cls="tc-chart-text")]
    for dtype, (peak, bandwidth) in sorted(roofs.items(), key=lambda r: r[1][0]):
        ridge = peak / bandwidth
        start = 10 ** x0
        corners = [(start, bandwidth * start), (ridge, peak), (10 ** x1, peak)]
        if bandwidth * start < 10 ** y0:  # enter the plot at its floor
            corners[0] = (10 ** y0 / bandwidth, 10 ** y0)
        path = " ".join(f"{'M' if i == 0 else 'L'}{px(x):.1f},{py(y):.1f}" for i, (x, y) in enumerate(corners))
        parts += [tag("path", d=path, cls="tc-roof-line"),
                  tag("text", f"{dtype} {_si(peak, 'FLOP/s')}", x=f"{px(10 ** x1) + 4:.1f}", y=f"{py(peak) + 4:.1f}",
                      cls="tc-chart-text")]
    total = sum(p[2] for p in points)
    for intensity, achieved, time_s, kind, title, name in sorted(points, key=lambda p: -p[2]):
        radius = 3 + 11 * math.sqrt(time_s / total)  # big dots first, small ones stay visible on top
        parts.append(tag("circle", tag("title", title), cx=f"{px(intensity):.1f}", cy=f"{py(achieved):.1f}",
                         r=f"{radius:.1f}", cls=f"tc-roof-dot tc-roof-{kind}", data_kernel=name))
    return tag("svg", *parts, width=str(WIDTH), height=str(HEIGHT), viewBox=f"0 0 {WIDTH} {HEIGHT}",
               xmlns="http://www.w3.org/2000/svg", role="img", cls="tc-chart tc-roofline", aria_label=label)


def _methods(cost):
    """A short name of each method; the whole text on hover."""
    def short(text, names):
        return next((name for key, name in names if key in text), text.split(" (")[0].split(",")[0]) if text else None

    parts = [short(cost.flops_method, (("Triton kernel body", "FLOPs: kernel body"), ("template", "FLOPs: 2·M·N·K"),
                                       ("2·M·N·K", "FLOPs: 2·M·N·K"), ("output elements", "FLOPs: conv shapes"),
                                       ("4·B·H", "FLOPs: 4·B·H·Lq·Lk·D"))),
             short(cost.bytes_method, (("gathers through", "bytes: loads/stores, gathers by rows"),
                                       ("tl.load", "bytes: loads/stores"), ("whole buffer", "bytes: whole arguments"),
                                       ("operand", "bytes: operands once"))),
             short(cost.time_method, (("torch.profiler", "time: profiler"), ("named like", "time: profiler, by family")))]
    full = "\n".join(m for m in (cost.flops_method, cost.bytes_method, cost.time_method, cost.measured_method) if m)
    return tag("span", "; ".join(p for p in parts if p) + ("; ncu measured" if cost.measured_dram_bytes else ""),
               title=full)


def roofline_section(kernels: list):
    """Heading, plot and table; ``None`` when no kernel has a cost (CPU captures, old GPU captures)."""
    costed = [k for k in kernels if k.cost is not None]
    if not costed:
        return None
    costed.sort(key=lambda k: -(k.cost.time_s or 0))
    measured = any(k.cost.measured_dram_bytes for k in costed)
    rows = [[code(k.name), k.language, k.role or "", seconds(k.cost.time_s) if k.cost.time_s else "–",
             _si(k.cost.flops, "FLOP"), _si(k.cost.bytes, "B"),
             *([_measured(k)] if measured else []),
             f"{k.cost.intensity:.3g}" if k.cost.intensity is not None else "–",
             k.cost.verdict or k.cost.reason or "–", _methods(k.cost)]
            for k in costed]
    no_flops = [k for k in costed if k.cost.time_s and not k.cost.flops and k.cost.flops is not None]
    ridge = next((k.cost for k in costed if k.cost.ridge), None)
    svg = roofline_svg(costed)
    return join([
        heading("Roofline", 4),
        svg if svg is not None else para("No kernel has a GPU time, FLOPs and bytes to plot.", cls="tc-muted"),
        para("One dot per kernel, its area ∝ its GPU time per call; hover for the verdict. "
             + (f"Ridge point: {ridge.ridge:.3g} FLOP/byte for {ridge.dtype} ({_si(ridge.peak_flops_per_s, 'FLOP/s')} "
                f"÷ {_si(ridge.peak_bytes_per_s, 'B/s')}; {ridge.peak_source}). " if ridge else "")
             + "Left of its roof's corner a kernel is memory-bound, right of it compute-bound. Kernels served "
               "from L2 reach above the DRAM roof: their bytes ÷ time is an effective bandwidth, not a share of "
               "DRAM peak."
             + (f" {len(no_flops)} kernels do no arithmetic (copies, layout changes) and are not drawn."
                if no_flops else ""), cls="tc-muted"),
        data_table("Kernel costs", ["kernel", "language", "graph", "GPU time / call", "FLOPs / call", "bytes / call",
                                    *(["ncu DRAM bytes / call"] if measured else []),
                                    "FLOP / byte", "verdict", "methods"], rows, cls="tc-wrap-first"),
        para("ncu DRAM bytes: what Nsight Compute measured (python -m compiler gpu-profile), beside the estimate, "
             "with the estimate's reads ÷ ncu's reads; ncu does not count writes that stay in L2 when the kernel ends. "
             "Hover for the method.", cls="tc-muted") if measured else None,
    ])


def _measured(kernel):
    """ncu's DRAM bytes per call and, for reads, how far the estimate is from them (ncu does not count writes
    that stay in L2 when the kernel ends, so written bytes can read low)."""
    cost, g = kernel.cost, kernel.gpu
    if not cost.measured_dram_bytes:
        return "–"
    ratio = (f" (reads: estimate ×{g.bytes_read / g.measured_dram_bytes_read:.2f})"
             if g is not None and g.bytes_read and g.measured_dram_bytes_read else "")
    return tag("span", _si(cost.measured_dram_bytes, "B") + ratio, title=cost.measured_method or "")


def line_roofline_section(capture, compile, limit: int = 15):
    """The roofline by line of the user's code: one dot per line (its kernels' FLOPs, bytes and GPU time,
    split by provenance) and a table of the costliest lines; ``None`` without GPU costs."""
    from compiler.stages.kernel_costs import line_roofline

    profile = capture.gpu_profile
    if profile is None or not profile.available or not any(
            k.cost for k in (compile.kernels.kernels if compile.kernels.available else [])):
        return None
    rows = [r for r in line_roofline(compile, (capture.environment or {}).get("device_name"), profile.peak_bytes_per_s)
            if r["seconds"]]
    if not rows:
        return None
    roofs = {r["dtype"]: (r["peak_flops_per_s"], r["peak_bytes_per_s"]) for r in rows
             if r.get("peak_flops_per_s") and r.get("peak_bytes_per_s")}
    points = [(r["intensity"], r["achieved_flops_per_s"], r["seconds"],
               "l2" if r["served_from"] == "L2" else (r["bound"] or "memory"),
               f"{_place_text(r)}: {seconds(r['seconds'])} per call, {_si(r['flops'], 'FLOP')}, {_si(r['bytes'], 'B')}"
               f" — {r['verdict']}", _place_text(r))
              for r in rows if r.get("intensity") and r.get("achieved_flops_per_s")]
    body = [[file_place(r["file"], r["line"]), code(shorten(r["code"], 50)) if r["code"] else "–", seconds(r["seconds"]),
             _si(r["flops"], "FLOP"), _si(r["bytes"], "B"),
             f"{r['intensity']:.3g}" if r.get("intensity") is not None else "–", r["verdict"] or "–",
             f"{r['kernels_costed']} of {len(r['kernels'])}"] for r in rows[:limit]]
    svg = _plot(points, roofs, "Roofline: one dot per source line")
    return join([
        heading("Roofline by source line", 4),
        svg,
        para("One dot per line of your code, its area ∝ the GPU time of the kernels its work went to. Each kernel's "
             "FLOPs, bytes and time are split over its lines by the same shares as its time (provenance), summed per "
             "line and drawn against the roof of the dtype that did most of the line's FLOPs; a line whose FLOPs ran in "
             "several dtypes is compute-bound at the time they take at each dtype's own peak over its time.",
             cls="tc-muted"),
        data_table("Roofline by source line", ["file:line", "code", "GPU time / call", "FLOPs / call",
                                               "bytes / call", "FLOP / byte", "verdict", "kernels costed"], body,
                   cls="tc-wrap-first"),
        para(f"{len(rows) - limit} more lines in cap.line_roofline().", cls="tc-muted") if len(rows) > limit else None,
    ])


def _place_text(row) -> str:
    from pathlib import Path

    return f"{Path(row['file']).name if row['file'] else '?'}:{row['line']}"
