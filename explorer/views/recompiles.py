"""Recompiles, in order: which compile was rejected, on which guard, and with what values."""
from __future__ import annotations

from ..html import code, join, note, para, plural, table


def render_recompiles(capture, compile) -> str:
    recompiles = capture.recompiles
    if not recompiles:
        return note("No recompiles: every later call was accepted by an existing compile's guards.", kind="ok")
    rows, marks = [], []
    for recompile in recompiles:
        for number, reason in enumerate(recompile.get("reasons") or [{}]):
            first = number == 0
            rows.append([code(recompile["compile_id"]) if first else "", recompile.get("name") if first else "",
                         code(reason.get("against") or "?"), reason.get("guard"), reason.get("detail") or ""])
            marks.append("tc-selected" if compile is not None and recompile["compile_id"] == compile.compile_id
                         else None)
    return join([
        para(f"{plural(len(recompiles), 'recompile')}, in order. Before compiling again torch checked the "
             "cached compiles (newest first) and each one failed the guard shown."),
        table(["new compile", "function", "rejected compile", "failing guard", "values"], rows, marks),
        para("Tip: a size that changes between calls recompiles once, then torch marks it dynamic; "
             "mark_dynamic or dynamic=True avoid the first recompile.", cls="tc-muted"),
    ])
