"""Guards: the checks torch runs before reusing this compile — as a table and as torch's tree."""
from __future__ import annotations

from ..html import code, details, join, para, plural, preformatted, shorten, table, tag, unavailable


def _origin(row: dict):
    if row.get("user_code"):
        return join([code(shorten(row["user_code"], 80)), tag("span", f" {row.get('origin')}", cls="tc-muted")])
    return tag("span", row.get("origin") or "added by torch", cls="tc-muted")


def guards_table(rows: list[dict]):
    cells = [[code(row.get("source") or "(global)"), row.get("kind"),
              tag("code", shorten(row.get("condition"), 220), title=row.get("condition")), _origin(row)]
             for row in rows]
    marks = ["tc-hit" if row.get("user_line") else None for row in rows]
    return table(["guarded value", "kind", "condition", "because of"], cells, marks, cls="tc-wrap-first tc-guards")


def facts(stage) -> str:
    parts = [plural(stage.get("count", 0), "guard")]
    if stage.get("guard_count_torch") is not None:
        parts.append(f"torch's guard_count metric says {stage['guard_count_torch']}")
    if stage.get("latency_us") is not None:
        parts.append(f"checking them takes {stage['latency_us']:g} µs per call")
    user = sum(bool(r.get("user_line")) for r in stage.get("table") or [])
    parts.append(f"{user} from lines of your code (highlighted)")
    return "; ".join(parts)


def render_guards(capture, compile) -> str:
    stage = compile.guards
    if not stage.available:
        return unavailable("Guards", stage.reason)
    return join([
        para(facts(stage), cls="tc-muted"),
        para("Before each call torch checks these guards; when one fails on new inputs, "
             "this compile is not reused and the frame recompiles (see Recompiles)."),
        guards_table(stage.get("table") or []),
        details("Guard tree (as torch prints it)", preformatted(stage.get("tree"))),
    ])
