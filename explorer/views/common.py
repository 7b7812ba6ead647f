"""Small read-only helpers on capture data that several views share."""
from __future__ import annotations

import re
from collections import Counter

import compiler.stages.base
from compiler.stages.fx_graph import NOT_OPS

from ..html import Html, code, join, para, plural, shorten

# FX prints Python operators as expressions: ``sin * 1``, ``-x``, ``a[0]``
_OPERATOR = re.compile(r"^[\w.]*\s*(?P<op>[-+*/@%<>=!&|^~]+|\[)\s*")


def capture_title(capture) -> str:
    names = list(dict.fromkeys(c.name for c in capture.compiles if c.name and not is_resume(c)))
    return ", ".join(names) or "no compiled function"


def is_resume(compile) -> bool:
    return resume_origin(compile) is not None


def resume_origin(compile) -> tuple[str, int] | None:
    """``torch_dynamo_resume_in_f_at_4`` → ``("f", 4)``: the function and line it continues."""
    return compiler.stages.base.resume_origin(compile.name)


def compile_label(compile) -> str:
    """``0/1 f — recompile`` as the compile selector and the static sections name it."""
    status = "" if compile.status == "compiled" else f", {_status(compile)}"
    if compile.origin != "dynamo":  # AOTInductor: the name says what it is; no frame, so no role
        return f"{compile.compile_id} {compile.name or '?'}{status}"
    role = ("resume after graph break" if is_resume(compile)
            else "recompile" if compile.frame_compile_id else "first compile")
    return f"{compile.compile_id} {compile.name or '?'} — {role}{status}"


def _status(compile) -> str:
    """A failed compile as what it is: a frame torch skipped to eager, a compile refused at the recompile limit
    (each its own finding, never also a failure), else failed."""
    from compiler.stages.skipped import is_recompile_limit, is_skipped

    capture = compile.__dict__.get("_capture")
    options = capture.options if capture is not None and isinstance(capture.options, dict) else {}
    if compile.status == "failed" and is_skipped(compile, options):
        return "skipped to eager"
    if compile.status == "failed" and is_recompile_limit(compile):
        return "refused: recompile limit"
    return compile.status


def break_title(item) -> str:
    """A graph break's name (a ``GraphBreak``): its type in torch's registry, else torch's own headline."""
    return (item.registry and item.registry.type) or item.headline or "graph break"


def short_target(target: str | None) -> str:
    """``torch._C._nn.linear`` → ``linear``; ``torch.ops.aten.mm.default`` → ``mm``; ``sin * 1`` → ``*``."""
    operator = _OPERATOR.match(target or "")
    if operator and operator.end() < len(target):
        return "getitem" if operator["op"] == "[" else operator["op"]
    parts = (target or "?").split(".")
    if parts[:2] == ["torch", "ops"] and len(parts) >= 4:  # torch.ops.<namespace>.<op>.<overload>
        return parts[3]
    return parts[-1] or target or "?"


def op_label(target: str | None) -> str:
    """What a graph box calls an operation: the short name, or the expression for an operator."""
    short = short_target(target)
    return shorten(target, 28) if _OPERATOR.match(target or "") and short != target else short


def op_counts(nodes) -> Counter:
    """How often each operation (short name) occurs among a graph's nodes (``GraphNode``s)."""
    return Counter(short_target(n.target) for n in nodes if n.op not in NOT_OPS)  # as Graph.op_count counts


def op_summary(nodes, most: int = 12) -> Html:
    """``ops: linear ×2, relu, softmax`` — what a graph computes, at a glance."""
    counts = op_counts(nodes)
    if not counts:
        return para("no operations", cls="tc-muted")
    shown = [join([code(name), f" ×{n}" if n > 1 else ""]) for name, n in counts.most_common(most)]
    more = f" … and {plural(len(counts) - most, 'other')}" if len(counts) > most else ""
    return para(f"{plural(sum(counts.values()), 'op')}: ", join(shown, ", "), more, cls="tc-ops")

