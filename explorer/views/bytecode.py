"""Bytecode: the function's original bytecode next to the one Dynamo substituted for it."""
from __future__ import annotations

from ..html import code, columns, heading, join, note, para, plural, preformatted, tag, unavailable
from .common import is_resume, resume_origin

# Names Dynamo gives what the transformed code calls, and what they are.
_CALLEES = (("__compiled_fn", "the compiled graph"), ("__resume_at", "a resume function (after a graph break)"),
            ("__import_", "a module Dynamo imports"))


def _called(instructions) -> list[tuple[str, str]]:
    found = {}
    for ins in instructions:
        name = ins.argrepr.replace("NULL + ", "")
        for prefix, meaning in _CALLEES:
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") and name.startswith(prefix):
                found.setdefault(name, meaning)
    return list(found.items())


def _pane(title: str, listing):
    if listing is None:
        return join([heading(title, 4), para("not recorded", cls="tc-muted")])
    count = len(listing.instructions)
    return join([heading(title, 4), para(plural(count, "instruction"), cls="tc-muted") if count else None,
                 preformatted(listing.text, cls="tc-pre tc-bytecode")])


def _resume_functions(capture) -> dict[str, list[str]]:
    """Resume function name → the compile ids that compiled it."""
    found: dict[str, list[str]] = {}
    for c in capture.compiles:
        if is_resume(c):
            found.setdefault(c.name, []).append(c.compile_id)
    return found


def render_bytecode(capture, compile) -> str:
    stage = compile.bytecode
    if not stage.available:
        return unavailable("Bytecode", stage.reason)
    original, transformed = stage.original, stage.transformed
    called = _called(transformed.instructions if transformed else [])
    origin = resume_origin(compile)
    resumes = _resume_functions(capture)
    return join([
        note(f"{compile.name} is a resume function: Dynamo generated it to continue {origin[0]} after the "
             f"graph break at line {origin[1]}.", kind="info") if origin else None,
        para("The transformed code calls ", join([join([code(n), f" ({m})"]) for n, m in called], ", "), ".")
        if called else None,
        columns(_pane(f"Original: {(original and original.name) or compile.name}", original),
                _pane("Transformed by Dynamo", transformed)),
        heading("Resume functions in this capture", 4)
        + tag("ul", *(tag("li", code(name), f" — compiles {', '.join(ids)}") for name, ids in resumes.items()))
        if resumes else None,
        para(f"Source: {stage.source}", cls="tc-muted"),
    ])
