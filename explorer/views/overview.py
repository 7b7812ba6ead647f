"""Overview: did it compile cleanly, and did it help? Findings first, then the numbers."""
from __future__ import annotations

from ..html import (Html, cards, code, details, heading, join, note, para, plural, seconds, shorten, table,
                    tag)
from compiler.stages.breaks import KINDS
from compiler.stages.findings import findings as capture_findings, other_failures

from .breaks import sentence
from .common import is_resume
from .tables import data_table, rows_shown


def findings(capture) -> list[tuple[str, Html]]:
    """(kind, sentence) pairs, worst first: what a user should look at (``compiler.stages.findings``, the
    source ``Capture.as_text`` starts with too)."""
    return [(kind, sentence(parts)) for kind, parts in capture_findings(capture)]


def _speedup_card(capture) -> tuple[str, str, str]:
    runtime = capture.runtime
    if not runtime.available or not runtime.speedup:
        return "speedup", "–", "muted"
    speedup = runtime.speedup
    return "speedup vs eager", f"{speedup:.2f}×", "ok" if speedup >= 1 else "warn"


# What each Overview count counts (the cards' tooltips and the list under them)
COUNTS = {
    "frames": "Python frames (code objects) Dynamo was asked to compile, resume functions included",
    "compiles": "compile attempts: one per frame and variant (frame/compile ids), failed ones included",
    "graphs": "FX graphs Dynamo produced (a failed or skipped compile has none)",
    "graph breaks": "every graph break Dynamo logged (the Graph breaks tab lists them): those it resumed from "
                    "after the instruction (a new frame continues) — torch's counters['graph_break'] counts only "
                    "these —, those it could not resume from (compiled up to the last resumable point, the rest of "
                    "the function eager) and data-dependent branches (resumed in both branches), which torch counts "
                    "in counters['unimplemented']; frames it skipped are counted apart",
    "skipped frames": "frames Dynamo gave up on: no graph, the whole frame runs eagerly on every call",
    "recompiles": "compiles of a frame that had compiled before, because its guards rejected new inputs "
                  "(a compile refused at the recompile limit included)",
    "failed compiles": "compiles that ended in an error other than a skipped frame or a recompile refused at the "
                       "limit (those are counted apart; torch's counters['frames'] counts all three as not ok)",
    "guards": "guards of every compile, summed",
    "kernels": "generated kernels (Triton or C++), summed over compiles; extern calls not counted",
}


def explain_note(capture) -> Html | None:
    """Why ``torch._dynamo.explain()`` on the same input reports other numbers."""
    s = capture.summary
    if not s.graphs:
        return None
    parts = [code("torch._dynamo.explain()"), " on the same input counts otherwise: its ",
             code("graph_break_count"), " is always its own graph_count − 1, a count of graphs, not of the "
             f"{plural(s.graph_breaks, 'break')} Dynamo made here; and it compiles again, with its own graph-collecting "
             "backend (no AOTAutograd), under which a Python float Dynamo specialises here may stay a dynamic input, "
             "and for one call on the objects as they are then (code that runs on a first call only — a module "
             "caching what it computed — is not traced again), so its graphs can differ from these "
             f"{plural(s.graphs, 'graph')} (no count is predicted here: ", code("python -m compiler check"),
             " lists the differences item by item where explain()'s result is recorded with the capture)."]
    if capture.skipped_frames:
        parts.append(" It has no count for skipped frames (they make no graph).")
    kinds = capture.breaks.kinds()
    apart = {kind: n for kind, n in kinds.items() if kind != "resumed"}
    if apart:
        parts.append(f" Of the {plural(s.graph_breaks, 'graph break')} here, torch's counters['graph_break'] "
                     f"counts the {kinds.get('resumed', 0)} it resumed from after an instruction; "
                     "it leaves out " + ", ".join(f"{n} {KINDS[kind]}" for kind, n in apart.items()) + ".")
    return para(join(parts), cls="tc-muted tc-explain-note")




def counts_legend() -> Html:
    return details("What each count counts",
                   tag("ul", *(tag("li", tag("strong", name), ": ", text) for name, text in COUNTS.items())),
                   cls="tc-counts-legend")


def summary_cards(capture) -> Html:
    s = capture.summary

    def counted(label, value, bad_kind="warn"):
        return label, str(value), bad_kind if value else "ok"

    return cards([
        ("frames", str(s.frames), "info"),
        ("compiles", str(s.compiles), "info"),
        ("graphs", str(s.graphs), "info"),
        counted("graph breaks", s.graph_breaks),
        *([counted("skipped frames", s.skipped_frames, "error")] if s.skipped_frames else []),
        counted("recompiles", s.recompiles),
        counted("failed compiles", other_failures(capture), "error"),
        ("guards", str(s.guards), "info"),
        ("kernels", str(s.kernels), "info"),
        # "–", not 0, where torch logged no time for any compile
        ("compile time", seconds(s.compile_time_s) if any(c.compile_seconds is not None for c in capture.compiles)
         else "–", "info"),
        _speedup_card(capture),
    ], titles=COUNTS)


def _why(capture, compile, index: dict | None = None) -> str:
    """Why ``compile`` happened; ``index`` (``_why_index``) makes it one look-up per compile."""
    if compile.origin == "aot_inductor":
        return "AOTInductor compiled an exported program (no Dynamo frame)"
    if is_resume(compile):
        return "resumes the function after a graph break"
    index = index or _why_index(capture)
    recompile = index["recompiles"].get(compile.compile_id)
    if compile.compile_id in index["skipped"]:
        return "skipped: Dynamo gave up on this frame, it runs eagerly (see Graph breaks)"
    if compile.compile_id in index["limits"]:
        return "refused: the frame reached the recompile limit (see Recompiles)"
    if recompile and recompile.reasons:
        return f"recompile: {recompile.reasons[0].text}"
    return "first compile of this frame"


def _why_index(capture) -> dict:
    recompiles = {}
    for r in capture.recompiles:
        recompiles.setdefault(r.compile_id, r)
    return {"recompiles": recompiles, "skipped": {s.compile_id for s in capture.skipped_frames},
            "limits": {h.compile_id for h in capture.recompile_limits}}


def compiles_table(capture, selected) -> Html:
    rows, marks = [], []
    index = _why_index(capture)
    for c in capture.compiles[:rows_shown()]:  # the rows the table shows (a static page's 500), no more
        graph, guards, kernels = c.graph, c.guards, c.kernels
        if c.origin == "aot_inductor" and c.inductor.available and c.inductor.runs:
            graph = c.inductor.runs[0].pre_grad  # the exported program, as Inductor received it
        status = ("skipped to eager" if c.compile_id in index["skipped"] else "refused: limit"
                  if c.compile_id in index["limits"] else c.status)
        rows.append([code(c.compile_id), c.name or "?", _status_badge(status),
                     graph.op_count if graph.available else "–",
                     guards.count if guards.available else "–",
                     len([k for k in kernels.kernels if k.language != "extern"])
                     if kernels.available else "–",
                     seconds(c.compile_seconds), tag("span", shorten(_why(capture, c, index), 110), cls="tc-prose")])
        marks.append("tc-selected" if selected is not None and c.compile_id == selected.compile_id else None)
    return data_table("Compiles", ["compile", "function", "status", "ops", "guards", "kernels", "compile time", "why"],
                      rows, marks, selectable=True, total=len(capture.compiles))


def _status_badge(status) -> Html:
    kind = {"compiled": "ok", "failed": "error", "skipped": "warn", "skipped to eager": "warn",
            "refused: limit": "warn"}.get(status, "muted")
    return tag("span", status or "?", cls=f"tc-badge tc-{kind}")


def environment_line(capture) -> Html:
    env, options = capture.environment, capture.options
    compile_options = [f"{k}={options[k]}" for k in ("backend", "mode", "dynamic", "fullgraph") if options.get(k)]
    parts = [f"torch {env.get('torch') or '?'}", f"Python {env.get('python') or '?'}",
             f"{env.get('device', '?')} ({env.get('device_name', '')})".replace(" ()", ""),
             ", ".join(compile_options) or None,
             "fresh compile (caches off)" if options.get("fresh") else None]
    return para(join(parts, " · "), cls="tc-muted")


def render_overview(capture, compile) -> str:
    from compiler.stages.findings import fix_headline

    from .fixes import verdict_lines
    from .repro import bisection_section

    unknown = capture.unknown_records
    verdicts = verdict_lines(capture)  # what to do, once fixes were tried: one sentence per verdict
    fixes_line = fix_headline(capture) if verdicts is None else None
    return join([
        join([verdicts, para("(see Fixes)", cls="tc-muted")]) if verdicts is not None else None,
        para(tag("strong", "Fixes: "), fixes_line, " (see Fixes)", cls="tc-fix-headline") if fixes_line else None,
        tag("ul", *(tag("li", text, cls=f"tc-finding tc-{kind}") for kind, text in findings(capture)),
            cls="tc-findings"),
        bisection_section(capture),
        summary_cards(capture),
        explain_note(capture),
        counts_legend(),
        environment_line(capture),
        heading("Compiles") + compiles_table(capture, compile) if capture.compiles else None,
        note(f"{sum(unknown.values())} trace records of kinds tcompile does not know were kept: "
             + ", ".join(f"{k} ×{v}" for k, v in unknown.items()), kind="muted") if unknown else None,
    ])
