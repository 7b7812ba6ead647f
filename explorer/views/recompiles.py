"""Recompiles, in order: which compile was rejected, on which guard, and with what values."""
from __future__ import annotations

from compiler.schema import RecompileReason

from ..html import code, join, note, para, plural
from .tables import data_table


def _became_dynamic(capture, compile_id: str) -> str:
    """The shape symbols a recompile introduced (automatic dynamic): ``s77 = L['x'].size()[0]``."""
    try:
        shapes = capture.compile(compile_id).shapes
    except KeyError:
        return ""
    symbols = [f"{s.symbol} = {s.source}" for s in shapes.symbols if (s.origin or "").startswith("automatic dynamic")]
    return ", ".join(dict.fromkeys(symbols))  # a frame restarted at a graph break creates them again


def render_recompiles(capture, compile) -> str:
    recompiles = capture.recompiles
    if not recompiles:
        return note("No recompiles: every later call was accepted by an existing compile's guards.", kind="ok")
    rows, marks = [], []
    for recompile in recompiles:
        for number, reason in enumerate(recompile.reasons or [RecompileReason()]):
            first = number == 0
            dynamic = _became_dynamic(capture, recompile.compile_id) if first else ""
            rows.append([code(recompile.compile_id) if first else "", recompile.name if first else "",
                         code(reason.against or "?"), reason.guard, reason.detail or "",
                         code(dynamic) if dynamic else ""])
            marks.append("tc-selected" if compile is not None and recompile.compile_id == compile.compile_id
                         else None)
    return join([
        para(f"{plural(len(recompiles), 'recompile')}, in order. Before compiling again torch checked the "
             "cached compiles (newest first) and each one failed the guard shown."),
        data_table("Recompiles", ["new compile", "function", "rejected compile", "failing guard", "values",
                                  "became dynamic (new symbols)"], rows, marks, drop_empty=True),
        para("Tip: a size that changes between calls recompiles once, then torch marks it dynamic; "
             "mark_dynamic or dynamic=True avoid the first recompile.", cls="tc-muted"),
    ])
