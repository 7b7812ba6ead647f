"""Bytecode: the function's original bytecode next to the one Dynamo substituted for it, and both as
Python (the transformed code decompiled by depyf at capture time), with the names Dynamo generates
explained in a legend and in tooltips."""
from __future__ import annotations

import re

from ..html import (Html, code, code_block, columns, heading, join, note, para, plural, preformatted, table, tag,
                    unavailable)
from .common import is_resume, resume_origin

# Names Dynamo gives what the transformed code calls, and what they are.
_CALLEES = (("__compiled_fn", "the compiled graph"), ("__resume_at", "a resume function (after a graph break)"),
            ("__import_", "a module Dynamo imports"))

# Every name torch generates in transformed code: (pattern, what it is). The first match wins.
GENERATED = (
    (r"__compiled_fn_\w+", "the compiled FX graph: what the backend returned for this frame's graph, called "
                           "with the graph's inputs"),
    (r"__resume_at_\w+", "a resume function: the rest of the original function after a graph break (its number "
                         "is the bytecode offset it resumes at); Dynamo compiles it when it is first called"),
    (r"__builtins_dict___\d+", "the builtins of the function's globals: __builtins_dict___N['print'] is the "
                               "builtin print, run by Python, not by the graph"),
    (r"__import_\w+", "a module Dynamo put in the globals for the generated code ('_dot_' stands for '.')"),
    (r"___context_manager_\w+", "a context manager Dynamo re-creates around the rest of the code"),
    (r"graph_out_\d+", "the tuple the compiled graph returned"),
    (r"___stack\d+", "a value on Python's stack at the graph break, passed to the resume function"),
    (r"__nested_resume_fns|__nested_frame_values", "resume arguments for a break inside an inlined call"),
    (r"__is_tracing_resume_prologue", "a flag Dynamo sets while it traces the resume function's prologue"),
    (r"record_pregraph_bytecode_(?:enter|exit)", "profiling markers torch puts around the code that prepares "
                                                 "the graph's inputs"),
    (r"__temp_\d+|tmp_\d+", "a temporary of Dynamo's generated code (rebuilding the stack and locals)"),
)
_GENERATED_RE = re.compile(r"(?<![\w-])(" + "|".join(f"(?:{p})" for p, _ in GENERATED) + r")(?![\w-])")


def generated_meaning(name: str) -> str | None:
    """What a torch-generated name in transformed code is (None for the user's own names)."""
    return next((meaning for pattern, meaning in GENERATED if re.fullmatch(pattern, name)), None)


def _legend_key(name: str) -> str:
    """``__compiled_fn_2_<uuid4>`` → ``__compiled_fn_N_<uuid>``, ``__temp_12`` → ``__temp_N``."""
    return re.sub(r"\d+", "N", re.sub(r"_[0-9a-f]{8}(?:_[0-9a-f]{4}){3}_[0-9a-f]{12}", "_<uuid>", name))


def _explained(markup: Html) -> Html:
    """Wrap each generated name in highlighted code in an ``<abbr>`` whose tooltip says what it is."""
    return Html(_GENERATED_RE.sub(lambda m: tag("abbr", m.group(1), cls="tc-generated",
                                                title=generated_meaning(m.group(1))), markup))


def _legend(texts) -> Html | None:
    names: dict[str, dict[str, None]] = {}  # meaning → the name shapes that have it, in order of appearance
    for text in texts:
        for name in _GENERATED_RE.findall(text or ""):
            names.setdefault(generated_meaning(name), {}).setdefault(_legend_key(name))
    if not names:
        return None
    rows = [[join([code(k) for k in keys], ", "), meaning] for meaning, keys in names.items()]
    return join([para("Names torch generated (hover them in the code):", cls="tc-legend"),
                 table(["name", "what it is"], rows, cls="tc-legend")])


def _python_pane(title: str, listing, *, fallback_text: str | None = None, fallback_what: str = "") -> Html:
    if listing is not None and listing.decompiled:
        return join([heading(title, 4), _explained(code_block(listing.decompiled))])
    if fallback_text:
        return join([heading(title, 4), para(fallback_what, cls="tc-muted"), code_block(fallback_text)])
    reason = (listing.decompiled_reason if listing is not None else None) or \
        "not decompiled (this capture holds the bytecode listing only)"
    return join([heading(title, 4), note(reason, " — the bytecode listing below is exact.", kind="muted")])


def _pane(title: str, listing):
    if listing is None:
        return join([heading(title, 4), para("not recorded", cls="tc-muted")])
    count = len(listing.instructions)
    return join([heading(title, 4), para(plural(count, "instruction"), cls="tc-muted") if count else None,
                 preformatted(listing.text, cls="tc-pre tc-bytecode")])


def _called(instructions) -> list[tuple[str, str]]:
    found = {}
    for ins in instructions:
        name = ins.argrepr.replace("NULL + ", "")
        for prefix, meaning in _CALLEES:
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") and name.startswith(prefix):
                found.setdefault(name, meaning)
    return list(found.items())


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
    source = compile.source.text if compile.source.available and not origin else None
    original_name = (original and original.name) or compile.name
    return join([
        note(f"{compile.name} is a resume function: Dynamo generated it to continue {origin[0]} after the "
             f"graph break at line {origin[1]}.", kind="info") if origin else None,
        para("The transformed code calls ", join([join([code(n), f" ({m})"]) for n, m in called], ", "), ".")
        if called else None,
        columns(_python_pane(f"Original as Python: {original_name}"
                             + (" (Dynamo's resume function, decompiled)" if origin else ""),
                             original if origin else None, fallback_text=source,
                             fallback_what="your source (the Source tab)"),
                _python_pane("Transformed as Python (decompiled by depyf)", transformed)),
        _legend([transformed.decompiled if transformed else None, original.decompiled if original else None]),
        columns(_pane(f"Original: {original_name}", original),
                _pane("Transformed by Dynamo", transformed)),
        heading("Resume functions in this capture", 4)
        + tag("ul", *(tag("li", code(name), f" — compiles {', '.join(ids)}") for name, ids in resumes.items()))
        if resumes else None,
        para(f"Source: {stage.source}", cls="tc-muted"),
    ])
