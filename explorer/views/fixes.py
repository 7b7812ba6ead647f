"""Fixes: for each finding, the change to try, its snippet, and — once tried — what it measurably did
(``compiler.analyses.fixes``, ``compiler.analyses.fix_experiments``). Ranked by what the findings cost."""
from __future__ import annotations

from compiler.analyses.fix_experiments import ORDER_TEXT
from compiler.stages.findings import fix_headline, fixes_of  # noqa: F401 — the Overview's headline too
from compiler.stages.fix_schema import CHANGES_RESULTS, FAILED, INTERRUPTED, MEASURED, NOT_TRIED, STOPPED

from ..html import (Html, badge, code, code_block, heading, join, key_values, note, para, plural, seconds, table,
                    tag)

_GOALS = {"findings": "fewer graph breaks, recompiles or skipped frames",
          "runtime": "a faster compiled run (after ÷ before timed interleaved; the whole interval below 0.95)",
          "guards": "fewer guards checked on every call (the run no slower)"}
_STATUS_KIND = {MEASURED: "ok", CHANGES_RESULTS: "error", FAILED: "error", INTERRUPTED: "warn", STOPPED: "warn",
                NOT_TRIED: "muted"}


# a stop (a budget, the deadline) or an interrupt is no verdict on the fix: warn, never the failure's red
_VERDICT_KIND = {"Recommended": "ok", "No gain": "muted", "Not together": "warn", "Not tried": "muted",
                 "Stopped": "warn", "Interrupted": "warn", "Worse": "error", "Not chosen": "muted",
                 "No effect": "muted", "Not reproducible": "warn", "Noise floor": "info", "Baseline": "info"}


def verdict_lines(capture) -> Html | None:
    """What to do, one sentence per tried change (``Fixes.verdicts()``), each with its badge: the first lines of
    Overview and of the Fixes tab once fixes were tried."""
    fixes = fixes_of(capture)
    lines = fixes.verdicts() if fixes else []
    if not lines:
        return None
    lines = lines + fixes.context_lines()  # then what they were measured against, once: baseline, noise floor
    items = []
    for line in lines:
        word, _, rest = line.partition(": ")
        kind = _VERDICT_KIND.get(word, "error")
        items.append(tag("li", badge(word, kind), " ", rest, cls=f"tc-verdict tc-{kind}"))
    return tag("ul", *items, cls="tc-verdicts")


def fix_for_break(capture, index: int):
    """The fix proposed for graph break ``index`` of ``capture.breaks.items`` (None: none)."""
    fixes = fixes_of(capture)
    return next((f for f in fixes or () if index in f.breaks), None)


def fix_for_cudagraph_skip(capture, reason: str):
    """The fix proposed for the CUDA-graph skip torch gave as ``reason`` (None: none)."""
    fixes = fixes_of(capture)
    return next((f for f in fixes or () if any(finding.startswith(f"CUDA graphs skipped: {reason}")
                                               for finding in f.findings)), None)


def fix_label(fix) -> Html:
    """A short "fix: …" line for a finding's row elsewhere (Graph breaks, Recompiles)."""
    status = fix.status if fix.applicable else "suggestion"
    return join(["fix: ", tag("strong", fix.id), " ", fix.title, " ", badge(status, _STATUS_KIND.get(status, "info"))])


def _measure_rows(result) -> list:
    b, a = result.before, result.after
    rows = []
    for label, name in (("graphs", "graphs"), ("graph breaks", "graph_breaks"), ("recompiles", "recompiles"),
                        ("frames skipped to eager", "frames_skipped"), ("compiles", "compiles"), ("guards", "guards")):
        before, after = getattr(b, name), getattr(a, name)
        rows.append([label, str(before), str(after), _delta(before, after)])
    rows.append(["compile time", seconds(b.compile_s), seconds(a.compile_s), ""])
    if a.guard_latency_us is not None or b.guard_latency_us is not None:
        rows.append(["guard check (torch, one cold evaluation)", _us(b.guard_latency_us), _us(a.guard_latency_us), ""])
    if a.cudagraph_skips is not None or b.cudagraph_skips is not None:
        rows.append(["CUDA-graph skips", str(b.cudagraph_skips), str(a.cudagraph_skips),
                     _delta(b.cudagraph_skips or 0, a.cudagraph_skips or 0)])
    if a.runtime_s is not None or b.runtime_s is not None:
        rows.append(["run time (median, compiled)", seconds(b.runtime_s), seconds(a.runtime_s),
                     "busy machine: less reliable" if a.busy or b.busy else ""])
    return rows


def _us(value) -> str:
    return "–" if value is None else f"{value:.3g} µs"


def _delta(before, after) -> Html | str:
    if before == after:
        return ""
    kind = "ok" if after < before else "warn"
    return badge(f"{after - before:+d}", kind)


def result_section(result) -> Html:
    if result is None or result.status == NOT_TRIED:
        return para("Not tried: nothing is claimed until it is measured.", cls="tc-muted")
    kind = _STATUS_KIND.get(result.status, "info")
    stopped = result.status in (STOPPED, INTERRUPTED)  # a budget, the deadline or the user: no verdict either way
    head = join([badge(result.status, kind), " ", "recommended" if result.recommended else
                 "no verdict" if stopped else ("not recommended" if result.status != MEASURED else "no gain measured")])
    parts = [para(head)]
    if result.error:
        parts.append(note(result.error, kind="warn" if stopped or result.error.startswith("not timed") else "error"))
    if result.before and result.after:
        parts.append(table(["", "before", "after", "change"], _measure_rows(result)))
        parts.append(para(f"before: {result.before_from or 'measured'}; {plural(result.calls, 'call')} replayed; "
                          f"experiment took {seconds(result.seconds)}"
                          + (f"; ran in {result.where}" if result.where else ""), cls="tc-muted"))
    if result.timing is not None:
        t = result.timing
        parts.append(note(join([tag("strong", f"compiled call {t.ratio:.2f}× ({t.low:.2f}–{t.high:.2f}) of before"),
                                f": {seconds(t.before_s)} → {seconds(t.after_s)}, eager {seconds(t.eager_s)} in the "
                                f"same experiment — {t.method}"]),
                          kind="ok" if t.high < 0.95 else "muted"))
    if result.guard_timing is not None:
        g = result.guard_timing
        parts.append(note(f"guard check {g.ratio:.2f}× ({g.low:.2f}–{g.high:.2f}) of before: "
                          f"{g.before_s * 1e6:.3g} → {g.after_s * 1e6:.3g} µs per call — {g.method}", kind="muted"))
    if result.outputs_equal is not None:
        same = result.comparisons[1].equal if len(result.comparisons) > 1 else result.outputs_equal
        head = ("Outputs equal eager: " if same else "Outputs no further from eager than without the fix: ") \
            if result.outputs_equal else "Changes results: "
        parts.append(note(head + (result.output_note or ""), kind="ok" if result.outputs_equal else "error"))
    if result.comparisons:
        rows = []
        for comparison in result.comparisons:
            rel, absolute, shapes = comparison.worst()
            rows.append([comparison.label, _num(rel), _num(absolute),
                         f"{shapes} of {len(comparison.outputs)}" if shapes else f"0 of {len(comparison.outputs)}",
                         badge("close", "ok") if comparison.equal else badge("differs", "warn"),
                         "" if comparison.check_passed is None else
                         badge("check passes", "ok") if comparison.check_passed else badge("check fails", "error")])
        parts.append(table(["compared", "rel. L2 error (max)", "max abs error", "shapes differ", "assert_close",
                            "your check"], rows, drop_empty=True))
        if result.output_rule:
            parts.append(para(f"rule: {result.output_rule}", cls="tc-muted"))
    return join(parts)


def _num(value) -> str:
    return "–" if value is None else f"{value:.2g}"


def fix_card(fix) -> Html:
    status = fix.status if fix.applicable else "suggestion — a code change, never applied"
    return tag("div",
               tag("div", badge(fix.id, "info"), " ", tag("strong", fix.title), " ",
                   badge(status, _STATUS_KIND.get(fix.result.status if fix.result else NOT_TRIED, "muted")
                         if fix.applicable else "muted"), cls="tc-card-title"),
               key_values([("cost", fix.cost_text), ("how ranked", tag("span", fix.cost_method, cls="tc-muted")),
                           ("why", fix.why), ("for", _GOALS.get(fix.goal, fix.goal)),
                           ("gives up", fix.gives_up),
                           ("experiment applies", _applies(fix) if fix.applicable else "nothing (a code change)")]),
               join([heading("Findings it addresses", 5), tag("ul", *(tag("li", f) for f in fix.findings))])
               if fix.findings else None,
               heading("Snippet", 5), code_block(fix.snippet),
               join([heading("Other ways", 5), tag("ul", *(tag("li", a) for a in fix.alternatives))])
               if fix.alternatives else None,
               heading("Measured", 5) if fix.applicable else None,
               result_section(fix.result) if fix.applicable else None,
               cls="tc-fix-card" + (" tc-fix-suggestion" if not fix.applicable else ""), data_fix=fix.id)


def _applies(fix) -> Html:
    parts = [code(f"torch._dynamo.config.{k}.add({', '.join(v)})" if k == "reorderable_logging_functions"
                  else f"torch._dynamo.config.{k} = {v!r}") for k, v in fix.config.items()]
    parts += [code(f"torch._inductor.config.{k} = {v!r}") for k, v in fix.inductor_config.items()]
    parts += [code(f"torch.compile(..., {k}={v!r})".replace("'torch.compiler.", "torch.compiler.").replace(
        "_unsafe'", "_unsafe")) for k, v in fix.compile_kwargs.items()]
    parts += [code(f"torch._dynamo.mark_static_address({m.argument})" if m.static else
                   f"torch._dynamo.{'maybe_' if m.maybe else ''}mark_dynamic({m.argument}, {m.dim})")
              for m in fix.marks]
    if fix.matmul_precision:
        parts.append(code(f"torch.set_float32_matmul_precision({fix.matmul_precision!r})"))
    if fix.regions:
        how = (f"torch.compiler.nested_compile_region on {fix.regions[0]}'s class, the whole model compiled"
               if fix.region_method == "nested_compile_region" else f"block.compile() on {len(fix.regions)} blocks, "
               "the model itself not compiled")
        parts.append(code(how))
    if fix.kind == "warm_caches":
        parts.append(code("cap.measure_caches(): cold, warm and mega-cache runs, each a fresh process"))
    return join(parts, ", ")


def render_compile_fixes(capture) -> Html | None:
    """What would save compile time (``cap.compile_fixes()``), each with what trying it measured."""
    try:
        fixes = capture.compile_fixes()
    except Exception:  # noqa: BLE001 — a view never raises for a capture it cannot propose for
        return None
    if not fixes.items:
        return join([heading("What would save compile time", 4), para(fixes.note or "nothing proposed", cls="tc-muted")])
    return join([heading("What would save compile time", 4),
                 para(f"{plural(len(fixes.items), 'change')} that may cut compile time. Try them with "
                      "cap.try_compile_fixes(): each runs in a fresh process with empty caches, against a baseline "
                      "compiled the same way (compile seconds before → after, runtime, outputs equal eager)."),
                 para(fixes.note, cls="tc-muted") if fixes.note else None,
                 *(fix_card(fix) for fix in fixes)])


def drift_section(drift) -> Html | None:
    """Drift from eager (``Fixes.drift``): the compile without any fix against eager, per output, with what it
    likely means — said once; each verdict then says only whether its fix moves outputs further."""
    if drift is None or not drift.drifts:
        return None
    rows = [[o.name or "output", o.kind, "shape " + str(o.shape) + " vs " + str(o.reference_shape)
             if o.reference_shape is not None else _num(o.rel_l2), _num(o.max_abs),
             badge("close", "ok") if o.close else badge("differs", "warn"), o.meaning] for o in drift.outputs]
    return join([heading("Drift from eager", 4), note(drift.headline(), kind="warn"),
                 table(["output", "dtype", "rel. L2 error", "max abs error", "assert_close", "likely meaning"], rows),
                 para(f"measured: {drift.method}", cls="tc-muted")])


def render_fixes(capture, compile) -> str:
    return join([_render_findings_fixes(capture), render_compile_fixes(capture)])


def _render_findings_fixes(capture) -> str:
    fixes = fixes_of(capture)
    if fixes is None:
        return note("No fixes could be proposed for this capture.", kind="muted")
    if not fixes.items:
        return note(fixes.note or "Nothing to fix: no graph breaks, recompiles or skipped frames.", kind="ok")
    headline = fix_headline(capture)
    live = capture.live is not None and (capture.live.compiled_fn is not None or capture.live.calls)
    combined = fixes.combined
    verdicts = verdict_lines(capture)
    return join([
        verdicts,
        drift_section(fixes.drift),
        para(tag("strong", headline)) if headline and verdicts is None else None,
        para(f"{plural(len(fixes.items), 'change')} proposed for this capture's findings, the costliest first "
             f"(once tried: {ORDER_TEXT}). "
             "Trying one re-runs the captured calls with the change, in a fresh Dynamo state put back afterwards, "
             "and measures before → after; a change that fails or changes the outputs is never recommended."),
        note("Try needs the live function: this capture was loaded from a file (or made with compiler.capture()). "
             "Proposals and any results saved with it are shown; to measure, run cap.try_fixes(fn=..., calls=[...]) "
             "in the process that has the function.", kind="muted") if not live else
        note("Try them: cap.try_fixes() (each alone, then the recommended together) or cap.fixes()['fix1'].try_().",
             kind="info") if all(f.result is None for f in fixes if f.applicable) else None,
        join([heading("Together", 4), para("Applied together: " + ", ".join(combined.fixes)),
              result_section(combined)]) if combined is not None else
        (para(fixes.note, cls="tc-muted") if fixes.note else None),
        *(fix_card(fix) for fix in fixes),
    ])
