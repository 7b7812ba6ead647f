"""Guards: the checks torch runs before reusing this compile — as a table and as torch's tree."""
from __future__ import annotations

from ..html import code, details, join, para, plural, preformatted, shorten, table, tag, unavailable


def _origin(row):
    if row.user_code:
        return join([code(shorten(row.user_code, 80)), tag("span", f" {row.origin}", cls="tc-muted")])
    return tag("span", row.origin or "added by torch", cls="tc-muted")


def guards_table(rows: list):
    """``GuardRow``s as a table; guards from the user's lines are highlighted."""
    cells = [[code(row.source or "(global)"), row.kind,
              tag("code", shorten(row.condition, 220), title=row.condition), _origin(row)]
             for row in rows]
    marks = ["tc-hit" if row.user_line else None for row in rows]
    return table(["guarded value", "kind", "condition", "because of"], cells, marks, cls="tc-wrap-first tc-guards")


def facts(stage) -> str:
    parts = [plural(stage.count, "guard")]
    if stage.guard_count_torch is not None:
        parts.append(f"torch's guard_count metric says {stage.guard_count_torch}")
    if stage.latency_us is not None:
        parts.append(f"checking them takes {stage.latency_us:g} µs per call")
    user = sum(row.user_line for row in stage.rows)
    parts.append(f"{user} from lines of your code (highlighted)")
    return "; ".join(parts)


def filter_rows(rows: list, text: str = "", kind: str | None = None) -> list:
    """Guards whose kind is ``kind`` (all when None) and whose value, kind, condition or origin
    contains ``text`` (case-insensitive)."""
    needle = text.strip().lower()
    return [row for row in rows if (kind is None or row.kind == kind)
            and (not needle or any(needle in (getattr(row, k) or "").lower()
                                   for k in ("source", "kind", "condition", "user_code", "origin")))]


def render_guards(capture, compile, text: str = "", kind: str | None = None) -> str:
    stage = compile.guards
    if not stage.available:
        return unavailable("Guards", stage.reason)
    rows = stage.rows
    shown = filter_rows(rows, text, kind)
    return join([
        para(facts(stage), cls="tc-muted"),
        para("Before each call torch checks these guards; when one fails on new inputs, "
             "this compile is not reused and the frame recompiles (see Recompiles)."),
        para(f"Filtered: {len(shown)} of {plural(len(rows), 'guard')} shown.", cls="tc-muted")
        if len(shown) != len(rows) else None,
        guards_table(shown),
        details("Guard tree (as torch prints it)", preformatted(stage.tree)),
    ])
