"""Guards: the checks torch runs before reusing this compile — as a table and as torch's tree."""
from __future__ import annotations

from ..html import Html, code, details, join, para, plural, preformatted, shorten, tag, unavailable
from .tables import data_table


def _origin(row):
    if row.user_code:
        return join([code(shorten(row.user_code, 80)), tag("span", f" {row.origin}", cls="tc-muted")])
    return tag("span", row.origin or "added by torch", cls="tc-muted")


def guards_table(rows: list) -> Html:
    """``GuardRow``s as a paged, searchable table; guards from the user's lines are highlighted."""
    cells = [[code(row.source or "(global)"), row.kind, tag("code", row.condition, cls="tc-wrap"), _origin(row)]
             for row in rows]
    marks = ["tc-hit" if row.user_line else None for row in rows]
    return data_table(f"Guards ({len(rows)})", ["guarded value", "kind", "condition", "because of"], cells, marks,
                      cls="tc-wrap-first tc-guards")


def facts(stage) -> str:
    parts = [plural(stage.count, "guard")]
    if stage.guard_count_torch is not None:
        parts.append(f"torch's guard_count metric says {stage.guard_count_torch}")
    if stage.latency_us is not None:
        parts.append(f"checking them takes {stage.latency_us:g} µs per call")
    user = sum(row.user_line for row in stage.rows)
    parts.append(f"{user} from lines of your code (highlighted)")
    return "; ".join(parts)


def render_guards(capture, compile) -> str:
    stage = compile.guards
    if not stage.available:
        return unavailable("Guards", stage.reason)
    return join([
        para(facts(stage), cls="tc-muted"),
        para("Before each call torch checks these guards; when one fails on new inputs, "
             "this compile is not reused and the frame recompiles (see Recompiles). Search and sort the table "
             "by any column."),
        details("Guard tree (as torch prints it)", preformatted(stage.tree)),
        guards_table(stage.rows),
    ])
