"""Diff of two captures, one stage at a time: a side-by-side pane (Compiler Explorer style) per
compile, kernel or graph, changed lines highlighted, long unchanged runs folded."""
from __future__ import annotations

from functools import lru_cache
from importlib.resources import files

from compiler.analyses.diff import DIFF_STAGES, inline_changes, side_by_side, stage_title

from ..html import (Html, badge, code, details, esc, join, note, para, plural, seconds, shorten, table, tag,
                    unavailable)

COMPARE_CSS = files("explorer") / "static" / "compare.css"  # package data (importlib.resources)
STATUS_KIND = {"same": "ok", "changed": "warn", "added": "info", "removed": "error", "unavailable": "muted"}
FOLD_CONTEXT = 3  # unchanged lines shown around a change; longer runs fold into one row


@lru_cache(maxsize=1)
def compare_stylesheet() -> str:
    return COMPARE_CSS.read_text(encoding="utf-8") if COMPARE_CSS.is_file() else ""


def compare_style_tag() -> Html:
    """The compare/diff CSS (explorer/static/compare.css); use with ``explorer.html.style_tag()``."""
    return Html(f"<style>{compare_stylesheet()}</style>")


def _marked(text: str | None, spans) -> Html:
    """A line with the character spans that changed wrapped in ``tc-diff-chg``."""
    if text is None:
        return Html("")
    out, last = [], 0
    for start, end in spans:
        out += [esc(text[last:start]), tag("span", text[start:end], cls="tc-diff-chg")]
        last = end
    out.append(esc(text[last:]))
    return Html("".join(out))


def _fold(rows: list[dict]) -> list[dict | int]:
    """Equal runs longer than twice the context become one ``int`` (how many lines were folded)."""
    out: list[dict | int] = []
    run: list[dict] = []

    def flush(at_start: bool, at_end: bool):
        keep_head = 0 if at_start else FOLD_CONTEXT
        keep_tail = 0 if at_end else FOLD_CONTEXT
        if len(run) > keep_head + keep_tail + 1:
            out.extend(run[:keep_head])
            out.append(len(run) - keep_head - keep_tail)
            out.extend(run[len(run) - keep_tail:] if keep_tail else [])
        else:
            out.extend(run)

    for row in rows:
        if row["tag"] == "equal":
            run.append(row)
            continue
        flush(at_start=not out, at_end=False)
        run = []
        out.append(row)
    flush(at_start=not out, at_end=True)
    return out


def side_by_side_table(item: dict, labels) -> Html:
    """Two columns, A left and B right: deleted lines red on the left, inserted green on the right,
    replaced lines amber with the changed characters marked."""
    rows = side_by_side(item)
    if not any(r["tag"] != "equal" for r in rows):
        rows_html = [_row(r) for r in rows]
    else:
        rows_html = [_folded(n) if isinstance(n, int) else _row(n) for n in _fold(rows)]
    head = tag("thead", tag("tr", tag("th", "", cls="tc-diff-no"), tag("th", labels[0]),
                            tag("th", "", cls="tc-diff-no"), tag("th", labels[1])))
    return tag("div", tag("table", head, tag("tbody", *rows_html), cls="tc-diff"), cls="tc-diff-wrap")


def _row(row: dict) -> Html:
    a_spans, b_spans = ([], [])
    if row["tag"] == "replace" and row["a"] is not None and row["b"] is not None:
        a_spans, b_spans = inline_changes(row["a"], row["b"])
    a_cls = {"equal": "", "replace": "tc-diff-old" if row["a"] is not None else "tc-diff-empty",
             "delete": "tc-diff-del", "insert": "tc-diff-empty"}[row["tag"]]
    b_cls = {"equal": "", "replace": "tc-diff-new" if row["b"] is not None else "tc-diff-empty",
             "delete": "tc-diff-empty", "insert": "tc-diff-ins"}[row["tag"]]
    return tag("tr",
               tag("td", row["a_no"] or "", cls="tc-diff-no"), tag("td", _marked(row["a"], a_spans), cls=f"tc-diff-line {a_cls}"),
               tag("td", row["b_no"] or "", cls="tc-diff-no"), tag("td", _marked(row["b"], b_spans), cls=f"tc-diff-line {b_cls}"),
               cls=f"tc-diff-{row['tag']}")


def _folded(count: int) -> Html:
    return tag("tr", tag("td", f"⋯ {plural(count, 'unchanged line')}", colspan="4", cls="tc-diff-fold"))


def _status(item: dict) -> Html:
    counts = f" +{item.added} −{item.removed}" if item.status == "changed" else ""
    return badge(f"{item.status}{counts}", STATUS_KIND.get(item.status, "info"))


def item_section(item: dict, labels, open: bool) -> Html:
    summary = join([_status(item), " ", code(item.key)])
    if item.status == "unavailable":
        return details(summary, note(f"{labels[0]}: {item.reason_a}", tag("br"),
                                     f"{labels[1]}: {item.reason_b}", kind="muted"), open=open,
                       cls="tc-diff-item")
    missing = [f"{labels[i]}: {reason}" for i, reason in enumerate((item.reason_a, item.reason_b)) if reason]
    return details(summary, para(join(missing, "; "), cls="tc-muted") if missing else None,
                   side_by_side_table(item, labels), open=open, cls="tc-diff-item")


def _counts_line(stage) -> Html:
    parts = [badge(f"{n} {status}", STATUS_KIND.get(status, "info")) for status, n in stage.counts.items()]
    return para(*parts) if parts else None


def _text_stage(stage, labels, name: str) -> Html:
    items = stage.items
    changed = [i for i in items if i.status in ("changed", "added", "removed")]
    intro = para(f"{stage_title(name)}: {len(changed)} of {plural(len(items), 'item')} differ." if changed else
                 f"{stage_title(name)}: identical in both configurations"
                 + (" (after normalizing object ids, addresses and cache paths)." if items else "."))
    order = changed + [i for i in items if i not in changed]
    return join([intro, _counts_line(stage),
                 *(item_section(i, labels, open=i in changed[:3] or (not changed and n == 0))
                   for n, i in enumerate(order))])


def _guard_rows(rows: list[dict]) -> Html:
    return table(["compile", "guarded value", "kind", "condition"],
                 [[r.compile, code(r.source or "(global)"), r.kind,
                   tag("code", shorten(r.condition, 200), title=r.condition)] for r in rows])


def _guards_stage(stage: dict, labels) -> Html:
    removed, added = stage.removed, stage.added
    return join([
        para(f"{plural(len(removed), 'guard')} only in {labels[0]}, {plural(len(added), 'guard')} only in "
             f"{labels[1]}, {stage.common} in both (compared as sets of guarded value, kind and "
             "condition; object ids ignored)."),
        details(join([badge(f"only in {labels[0]}", "error"), f" {len(removed)}"]), _guard_rows(removed),
                open=bool(removed), cls="tc-diff-item") if removed else None,
        details(join([badge(f"only in {labels[1]}", "info"), f" {len(added)}"]), _guard_rows(added),
                open=bool(added), cls="tc-diff-item") if added else None,
        _text_stage(stage, labels, "guards"),
    ])


def _ratio(row: dict) -> Html:
    ratio = row.ratio
    if ratio is None:
        return Html("–")
    kind = "ok" if ratio < 0.9 else "warn" if ratio > 1.1 else "muted"
    return tag("span", f"{ratio:.2f}×", cls=f"tc-diff-ratio tc-{kind}")


def _timings_stage(stage: dict, labels) -> Html:
    rows = [[row.group, row.label, _seconds(row.a), _seconds(row.b), _ratio(row)] for row in stage.rows]
    return join([para(stage.note, cls="tc-muted"),
                 table(["compile", "phase", labels[0], labels[1], f"{labels[1]} / {labels[0]}"], rows)])


def _seconds(value) -> str:
    return seconds(value) if isinstance(value, (int, float)) or value is None else _value(value)


def _value(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "–" if value is None else str(value)


def _summary_stage(stage: dict, labels) -> Html:
    def rows_of(rows):
        return ([[r.label, _value(r.a), _value(r.b)] for r in rows],
                ["tc-diff-changed" if r.changed else None for r in rows])

    summary_rows, summary_marks = rows_of(stage.rows)
    option_rows, option_marks = rows_of([r for r in stage.options if r.a is not None or r.b is not None])
    return join([table(["", labels[0], labels[1]], summary_rows, summary_marks),
                 details("Options recorded with each capture", table(["option", labels[0], labels[1]],
                                                                      option_rows, option_marks), open=True)])


def render_stage(capture_diff, stage: str) -> Html:
    """One stage of a CaptureDiff as HTML."""
    labels = capture_diff.labels
    data = capture_diff.stage(stage)
    if not data.available:
        return unavailable(stage_title(stage), data.reason)
    if stage == "summary":
        return _summary_stage(data, labels)
    if stage == "timings":
        return _timings_stage(data, labels)
    if stage == "guards":
        return _guards_stage(data, labels)
    return _text_stage(data, labels, stage)


def stage_overview(capture_diff) -> Html:
    """One badge per stage: changed or identical (or unavailable)."""
    parts = []
    for key in DIFF_STAGES:
        title = stage_title(key)
        stage = capture_diff.stage(key)
        kind = "muted" if not stage.available else "warn" if stage.changed else "ok"
        text = "n/a" if kind == "muted" else "changed" if kind == "warn" else "same"
        if key == "timings" and stage.available:
            kind, text = "info", "compare"  # timings always differ a little: a table, not a verdict
        parts.append(badge(f"{title}: {text}", kind, title=stage.reason))
    return para(*parts, cls="tc-diff-stages")


def render_diff(capture_diff, stage: str | None = None) -> Html:
    """The diff pane: the stage overview, then one stage (or every changed stage when ``stage`` is None)."""
    labels = capture_diff.labels
    header = para("Comparing ", tag("strong", labels[0], cls="tc-diff-a"), " (left) with ",
                  tag("strong", labels[1], cls="tc-diff-b"), " (right).")
    if stage is not None:
        body = [render_stage(capture_diff, stage)]
    else:
        changed = capture_diff.changed_stages or ["summary"]
        body = [details(stage_title(key), render_stage(capture_diff, key), open=True, cls="tc-section")
                for key in changed]
    return tag("div", header, stage_overview(capture_diff), *body, cls="tc-diff-pane")
