"""Timings: where compile time went (per stage, inline SVG bars) and eager vs compiled runtime."""
from __future__ import annotations

from ..html import columns, heading, join, key_values, note, para, seconds, shorten, table, tag, unavailable
from .breaks import file_place
from .roofline import line_roofline_section
from .caches import cache_runs_section, caches_section
from .source import line_time_table

LABEL_WIDTH, BAR_WIDTH, VALUE_WIDTH, ROW = 250, 330, 200, 22


def _svg(height: int, *children):
    width = LABEL_WIDTH + BAR_WIDTH + VALUE_WIDTH
    return tag("svg", *children, width=str(width), height=str(height), viewBox=f"0 0 {width} {height}",
               xmlns="http://www.w3.org/2000/svg", role="img", cls="tc-chart")


def _text(x: float, y: float, text: str, anchor: str = "start", cls: str = "tc-chart-text"):
    return tag("text", text, x=f"{x:.1f}", y=f"{y:.1f}", text_anchor=anchor, cls=cls)


def bar_chart(rows: list[tuple[str, float, int]]):
    """Horizontal bars: rows of (label, seconds, indent level), scaled to the largest value."""
    top = max((value for _, value, _ in rows), default=0) or 1
    parts = []
    for i, (label, value, indent) in enumerate(rows):
        y = i * ROW
        width = max(1.0, BAR_WIDTH * value / top)
        parts += [_text(4 + 10 * min(indent, 5), y + 15, label),
                  tag("rect", x=str(LABEL_WIDTH), y=str(y + 4), width=f"{width:.1f}", height=str(ROW - 8),
                      rx="2", cls=f"tc-bar tc-bar-{min(indent, 3)}"),
                  _text(LABEL_WIDTH + width + 6, y + 15, seconds(value))]
    return _svg(len(rows) * ROW + 4, *parts)


def nesting(names: list[str], events: list) -> dict[str, int]:
    """How many of the shown stages enclose each one in time (its first occurrence of the
    ``TimingEvent``s): an outline of the stages shown, skipping the unnamed stages torch nests between them."""
    spans = {}
    for event in events:
        if event.name in names and event.name not in spans:
            spans[event.name] = (event.start, event.start + event.seconds)
    return {name: sum(1 for other, (start, end) in spans.items()
                      if other != name and start <= spans[name][0] and spans[name][1] <= end)
            for name in spans}


def compile_time_section(compile):
    stage = compile.timings
    if not stage.available:
        return unavailable("Compile timings", stage.reason)
    phases = stage.phases
    depth = nesting([p.name for p in phases], stage.events)
    rows = [(p.label + (f" ×{p.count}" if p.count > 1 else ""), p.seconds, depth.get(p.name, 0)) for p in phases]
    title = (f"Compile time of this AOTInductor compile (compile_fx_aot, {seconds(compile.compile_seconds)})"
             if compile.origin == "aot_inductor" else "Compile time of this frame")
    return join([
        heading(title, 4),
        bar_chart(rows) if rows else para("torch logged no compile-stage events for this compile.", cls="tc-muted"),
        para("Indented stages run inside the stage above them."
             + (" Inductor ×2 means forward and backward; a backward compile happens on the first .backward(), "
                "outside the frame compile." if any(p.name == "inductor_compile" and p.count > 1 for p in phases)
                else ""), cls="tc-muted") if any(p.count > 1 for p in phases) else None,
        key_values([(k.replace("_", " "), f"{v:g}" if isinstance(v, (int, float)) else str(v))
                    for k, v in stage.metrics.items()]),
    ])


def compile_time_by_line(compile, capture=None, limit: int = 15):
    """Where this compile's time went, by line of the user's code and phase (sampled), largest first."""
    stage = compile.timings
    if not stage.available or not stage.by_line:
        off = capture is not None and capture.options.get("compile_sampling_off")
        return para(str(off), cls="tc-muted") if stage.available and off else None
    rows = stage.by_line[:limit]
    # lines from several files: each is file:line (the path in its tooltip); numbers first, so they fit
    body = [[file_place(r.file, r.line) if r.file and r.line is not None else "–",
             tag("span", f"{seconds(r.seconds)} ± {seconds(r.error_s)}", style="white-space: nowrap"),
             f"{r.share:.0%}", r.phase, r.module or "",
             tag("code", shorten(r.code or "", 48), style="white-space: pre")] for r in rows]
    more = len(stage.by_line) - len(rows)
    return join([heading("Compile time by line", 4),
                 tag("div", table(["where", "seconds", "share", "phase", "module", "code"], body),
                     style="overflow-x: auto; max-width: 100%"),
                 para((f"{more} smaller rows in cap.compile_time_table(). " if more > 0 else "")
                      + (stage.by_line_method or ""), cls="tc-muted")])


# bytes of trace JSON a page carries inline (a static copy keeps to 1 MB); larger: cap.save_perfetto(path)
PERFETTO_LINK_LIMIT = 400_000


def perfetto_link(capture):
    """A download link for the capture's compile events (and measured kernel times) as Chrome trace-event
    JSON, for ui.perfetto.dev or chrome://tracing; it works in the notebook and in a saved HTML report.
    Made once per capture (every compile's Timings shows it: made per compile, a page of n compiles
    cost n² events)."""
    cached = capture.__dict__.get("_perfetto_link")
    if cached is not None and cached[0] is capture.compiles and cached[1] == len(capture.compiles):
        return cached[2]
    link = _perfetto_link(capture)
    capture.__dict__["_perfetto_link"] = (capture.compiles, len(capture.compiles), link)
    return link


def _perfetto_link(capture):
    import base64
    import json

    from compiler.readers.perfetto import perfetto_trace

    if not any(c.timings.available and c.timings.events for c in capture.compiles):
        return None
    text = json.dumps(perfetto_trace({"torch.compile": capture}), separators=(",", ":"), allow_nan=False)
    if len(text) > PERFETTO_LINK_LIMIT:
        return para(f"Perfetto trace: {len(text) / 1e6:.1f} MB, too large to carry in this page — write it with "
                    "cap.save_perfetto(path) or python -m compiler report PATH --perfetto OUT.json.", cls="tc-muted")
    href = "data:application/json;base64," + base64.b64encode(text.encode()).decode()
    return para(tag("a", "⤓ Download the compile events for Perfetto", href=href, download="tcompile_perfetto.json",
                    cls="tc-perfetto"),
                " — every compile on its own track (open it in ui.perfetto.dev or chrome://tracing; "
                "cap.save_perfetto(path) writes the same file)", cls="tc-muted")


def runtime_chart(runtime):
    """Eager and compiled: a bar to the median, a whisker across the q1–q3 spread."""
    rows = [("eager", runtime.eager), ("compiled", runtime.compiled)]
    top = max(t.q3_s for _, t in rows) or 1
    parts = []
    for i, (label, t) in enumerate(rows):
        y, scale = i * ROW * 1.5, BAR_WIDTH / top
        mid = y + ROW / 2 + 2
        parts += [_text(4, mid + 4, label),
                  tag("rect", x=str(LABEL_WIDTH), y=f"{y + 6:.1f}", width=f"{max(1.0, t.median_s * scale):.1f}",
                      height=str(ROW - 8), rx="2", cls=f"tc-bar tc-bar-{label}"),
                  tag("line", x1=f"{LABEL_WIDTH + t.q1_s * scale:.1f}", x2=f"{LABEL_WIDTH + t.q3_s * scale:.1f}",
                      y1=f"{mid:.1f}", y2=f"{mid:.1f}", cls="tc-whisker"),
                  _text(LABEL_WIDTH + t.q3_s * scale + 6, mid + 4,
                        f"{seconds(t.median_s)} ({seconds(t.q1_s)}–{seconds(t.q3_s)})")]
    return _svg(int(ROW * 3), *parts)


def break_even_calls(runtime) -> float | None:
    """How many calls the compiled function needs to win back its first-call (compile) cost."""
    if not (runtime.first_call_s and runtime.eager and runtime.compiled):
        return None
    eager, compiled, first = runtime.eager.median_s, runtime.compiled.median_s, runtime.first_call_s
    if eager <= compiled:
        return None
    return max(0.0, first - compiled) / (eager - compiled)


def runtime_section(capture):
    runtime = capture.runtime
    if not runtime.available:
        return unavailable("Runtime (eager vs compiled)", runtime.reason)
    speedup = runtime.speedup
    calls = break_even_calls(runtime)
    kind = "ok" if speedup and speedup >= 1 else "warn"
    return join([
        heading("Runtime: eager vs compiled", 4),
        note(f"speedup {speedup:.2f}× (median)" if speedup else "speedup unknown",
             f"; the first call took {seconds(runtime.first_call_s)} (compile included)"
             if runtime.first_call_s else "",
             f", repaid after ≈{calls:,.0f} calls" if calls is not None else "", kind=kind),
        note(f"The machine was busy while timing (load average {runtime.load_average or 0:.1f} on "
             f"{runtime.cpu_count} cores): other processes share the CPU, so these times are noisy — "
             "compare the fastest samples, or time again when it is idle.", kind="warn")
        if runtime.busy else None,
        join([runtime_chart(runtime),
              para(f"{runtime.method}, on {runtime.device}"
                   + (f" with {runtime.threads} threads" if runtime.threads else "")
                   + f". Fastest sample: eager {seconds(runtime.eager.min_s)}, compiled "
                     f"{seconds(runtime.compiled.min_s)}. Bars: median; whiskers: q1–q3.", cls="tc-muted")])
        if runtime.eager and runtime.compiled else None,
    ])


def render_timings(capture, compile, perfetto: bool = True) -> str:
    """``perfetto=False``: without the Perfetto download link (the widget makes it when asked)."""
    by_line = line_time_table(capture, compile)
    runtime = runtime_section(capture)
    return join([compile_time_section(compile), perfetto_link(capture) if perfetto else None,
                 compile_time_by_line(compile, capture),
                 caches_section(compile), cache_runs_section(capture),
                 columns(runtime, by_line) if by_line else runtime, line_roofline_section(capture, compile)])
