"""Comparison summary: one row per configuration — what it cost to compile, how fast it runs, and
what torch.compile made of it — plus where the comparison's time went."""
from __future__ import annotations

import json

from ..html import Html, badge, code, details, join, key_values, note, para, plural, seconds, shorten, table, tag
from .diff import compare_style_tag, render_diff

HEADERS = ["configuration", "compile", "runtime (median)", "speedup vs eager", "graphs", "graph breaks",
           "recompiles", "guards", "kernels", "CUDA graphs"]


def _count(value, bad: bool = False) -> Html:
    if value is None:
        return Html("–")
    return tag("span", value, cls="tc-cmp-bad") if bad and value else Html(str(value))


def _speedup(row: dict, best: float | None) -> Html:
    speedup = row.speedup
    if speedup is None:
        return tag("span", "–", cls="tc-muted", title=row.runtime_note)
    kind = "ok" if speedup >= 1 else "warn"
    text = f"{speedup:.2f}×"
    return join([badge(text, kind), tag("span", " fastest", cls="tc-muted") if speedup == best else None])


def _error_cell(row: dict) -> Html:
    missing = row.missing_package
    if row.not_run:
        return join([badge("not run (interrupted)", "muted"), " ", "the interrupt came before this configuration"])
    if row.interrupted:
        return join([badge("interrupted", "warn", title=row.error_stage), " ",
                     "partial: the stages captured before the interrupt"])
    return join([badge("failed", "error", title=row.error_stage), " ", shorten(row.error, 140),
                 join([" — install ", code(missing)]) if missing else None])


def summary_table(comparison) -> Html:
    rows = comparison.rows()
    speedups = [r.speedup for r in rows if r.speedup]
    best = max(speedups) if len(speedups) > 1 else None
    fastest_compile = min((r.compile_s for r in rows if r.ok and r.compile_s), default=None)
    cells, marks = [], []
    for row in rows:
        label = join([tag("span", row.label, cls="tc-cmp-label"),
                      *(tag("div", n, cls="tc-muted tc-cmp-note") for n in row.notes)])
        if not row.ok and row.compile_s is None:
            cells.append([label, _error_cell(row), "", "", "", "", "", "", "", ""])
            marks.append("tc-cmp-notrun" if row.not_run else "tc-cmp-failed")
            continue
        compile_cell = seconds(row.compile_s)
        if fastest_compile and row.compile_s and row.ok:
            factor = row.compile_s / fastest_compile
            compile_cell = join([compile_cell, tag("span", f" ({factor:.1f}×)", cls="tc-muted") if factor >= 1.05 else None])
        cells.append([join([label, tag("br"), _error_cell(row)]) if not row.ok else label,
                      compile_cell, seconds(row.runtime_s), _speedup(row, best),
                      _count(row.graphs), _count(row.graph_breaks, bad=True),
                      _count(row.recompiles, bad=True), _count(row.guards), _count(row.kernels),
                      row.cudagraphs or "–"])
        marks.append(None if row.ok else "tc-cmp-failed")
    return table(HEADERS, cells, marks, cls="tc-cmp-table")


def _eager_line(comparison) -> Html | None:
    eager = comparison.eager
    if eager is None:
        return para("Not timed (timing=False).", cls="tc-muted")
    if not eager.available:
        return note(f"Eager was not timed: {eager.reason}", kind="warn")
    spread = eager.spread
    spread_text = f" (from {seconds(spread[0])} to {seconds(spread[1])})" if spread and spread[0] != spread[1] else ""
    return para(f"Eager median {seconds(eager.median_s)}{spread_text}: eager is timed with each configuration, "
                "its samples alternating with the compiled ones, so both see the same machine load; the speedup "
                "is that configuration's ratio. Compile is torch's entire_frame_compile_time_s plus the backward's "
                "compile, summed over a configuration's compiles.", cls="tc-muted")


def accounting_line(comparison) -> Html | None:
    acc = comparison.accounting
    if acc is None:
        return None
    timing = acc.timing_s + acc.eager_check_s
    warmup = f"Inductor warm-up {seconds(acc.warmup_s)} (one-time process start-up, kept out of every " \
        "configuration), " if acc.warmup_s else ""
    return para(f"Wall time {seconds(acc.wall_s)}: {warmup}compiles {seconds(acc.compile_s)}, the rest of "
                f"each explore {seconds(acc.explore_overhead_s)} (first call, capture, imports on first use), "
                f"timing {seconds(timing)}, other {seconds(acc.other_s)}.", cls="tc-muted")


def _options_json(value) -> str:
    return json.dumps(value, default=str) if value else "{}"


def config_details(comparison) -> Html:
    """What each configuration passed to torch.compile, and the Inductor options its mode turns on."""
    rows = [[tag("span", e.label, cls="tc-cmp-label"), code(_options_json(e.config)),
             code(_options_json(e.mode_options)) if e.mode_options is not None else "–"]
            for e in comparison.entries]
    return details("Configurations: arguments and mode options",
                   table(["configuration", "torch.compile arguments", "Inductor options set by the mode"], rows))


def interrupted_note(comparison) -> Html | None:
    info = comparison.interrupted
    if not info:
        return None
    partial = [e.label for e in comparison.entries if e.interrupted]
    return note(tag("strong", f"Interrupted during {info.during}."), " ",
                f"Kept: {plural(len(info.finished), 'finished configuration')}"
                + (f" and the partial capture of {partial[0]}" if partial else "") + ". ",
                f"Not run: {'; '.join(info.not_run)}." if info.not_run else None, kind="warn")


def errors_section(comparison) -> Html | None:
    failed = [e for e in comparison.entries if e.error and not e.interrupted]
    if not failed:
        return None
    items = []
    for entry in failed:
        error = entry.error
        missing = error.missing
        items.append(note(tag("strong", f"{entry.label}: {error.type} in {error.stage}"),
                          tag("pre", str(error.message or "")[:1500], cls="tc-pre tc-message"),
                          key_values([("cause", error.cause),
                                      ("missing package", f"{missing['package']} (import {missing['module']})"
                                       if missing else None)]),
                          kind="error"))
    others = "the others ran" if not comparison.interrupted else "the finished ones shown"
    return details(f"{plural(len(failed), 'configuration')} failed — kept, {others}", *items, open=True)


def jit_section(comparison) -> Html | None:
    info = comparison.jit_trace
    if info is None:
        return None
    ts = info.torchscript_runtime or {}
    return details("torch.jit.trace: what Dynamo did with the traced " + str(info.kind or "object"),
                   tag("ul", *(tag("li", f) for f in info.findings), cls="tc-cmp-findings"),
                   key_values([("traced as", info.kind),
                               ("torch.jit.trace arguments", _options_json(info.parameters)),
                               ("tracing took", seconds(info.seconds)),
                               ("TorchScript (uncompiled) median", f"{seconds(ts['compiled']['median_s'])} "
                                f"({ts['speedup']:.2f}× eager Python)" if ts.get("available") else None)]),
                   details("TorchScript graph", tag("pre", info.graph, cls="tc-pre")) if info.graph else None,
                   open=True)


def render_compare(comparison, diff=None, stage: str | None = None) -> Html:
    """The comparison's summary (and, given a CaptureDiff, its diff pane) as one HTML fragment."""
    env = comparison.doc.environment
    not_run = len(comparison.interrupted.not_run) if comparison.interrupted else 0
    title = (f"Comparing {plural(len(comparison.entries) + not_run, 'configuration')} of "
             f"{comparison.doc.function}" + (f" ({not_run} not run: interrupted)" if not_run else ""))
    fresh = "each in a clean compile (Dynamo reset, Inductor caches off)" if comparison.doc.fresh else \
        "each after a Dynamo reset (Inductor caches on)"
    return join([
        tag("h3", title, cls="tc-heading"),
        para(f"{fresh} · torch {env.get('torch', '?')} · {env.get('device', '?')}", cls="tc-muted"),
        interrupted_note(comparison),
        summary_table(comparison),
        _eager_line(comparison),
        accounting_line(comparison),
        errors_section(comparison),
        jit_section(comparison),
        config_details(comparison),
        render_diff(diff, stage) if diff is not None else None,
    ])


def render_compare_static(comparison, a=0, b=1) -> str:
    """Self-contained HTML (both stylesheets inlined): the summary and the diff of two configurations."""
    from ..html import style_tag

    diff = None
    with_capture = [i for i, c in enumerate(comparison.captures) if c is not None]
    if len(with_capture) >= 2:
        a, b = (a, b) if comparison.captures[a] is not None and comparison.captures[b] is not None else with_capture[:2]
        diff = comparison.diff(a, b)
    return join([style_tag(), compare_style_tag(), tag("div", render_compare(comparison, diff), cls="tcompile tc-static")])
