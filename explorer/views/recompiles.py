"""Recompiles, in order: which compile was rejected, on which guard, and with what values."""
from __future__ import annotations

from pathlib import Path

from compiler.stages.findings import budget_parts, guard_parts, limit_parts
from compiler.stages.breaks import cell_number, traceback_frames
from compiler.stages.schema import RecompileReason

from ..html import LIST_PAGE, Html, badge, code, details, join, note, page_note, para, plural, shorten, tag
from .breaks import place, sentence
from .tables import data_table


SHOWN_FRAMES = 3  # a longer stack shows its innermost frames, the outer ones folded


def _frame(frame: dict) -> Html:
    where = place(Path(frame["file"]).name, frame["line"], cell_number(frame["file"]))  # the path in the tooltip
    return tag("li", tag("code", where, title=frame["file"]), f" in {frame['function']}",
               tag("div", code(shorten(frame["code"], 100))) if frame["code"] else None)


def _user_stack(reason: RecompileReason) -> Html | str:
    """Where the failing guard was made: the user's code Dynamo was tracing, outermost call first, so the
    line that made the guard comes last."""
    frames = traceback_frames(reason.user_stack)
    if not frames:
        return ""
    outer = frames[:1 - SHOWN_FRAMES] if len(frames) > SHOWN_FRAMES else []
    shown = frames[len(outer):]
    return join([details(f"{plural(len(outer), 'outer call')}", tag("ol", *map(_frame, outer)), cls="tc-user-stack")
                 if outer else None,
                 tag("ol", *map(_frame, shown), cls="tc-user-stack", start=len(outer) + 1 if outer else None)])


def _became_dynamic(capture, compile_id: str) -> str:
    """The shape symbols a recompile introduced (automatic dynamic): ``s77 = L['x'].size()[0]``."""
    try:
        shapes = capture.compile(compile_id).shapes
    except KeyError:
        return ""
    symbols = [f"{s.symbol} = {s.source}" for s in shapes.symbols if (s.origin or "").startswith("automatic dynamic")]
    return ", ".join(dict.fromkeys(symbols))  # a frame restarted at a graph break creates them again


def limit_sentence(hit) -> Html:
    """A frame at the recompile limit, in a sentence: which frame, how many compiles, which limit."""
    return sentence(limit_parts(hit))


def guard_sentence(hit) -> Html | None:
    """The guard that kept failing, with the values it was specialised to."""
    return sentence(guard_parts(hit)) if hit.guard else None


# why a Python float is still guarded on its value in torch ≥ 2.6, where floats are otherwise made dynamic after
# one recompile (torch/_dynamo/variables/builder.py, wrap_symfloat)
FLOAT_SPECIALISED = ("torch makes a float dynamic after one recompile unless something specialises it: "
                     "torch._dynamo.config.specialize_float, CUDA graphs (mode=\"reduce-overhead\"), or an op that "
                     "takes a Python float (a custom op's float argument, e.g. torchvision's roi_align) — Dynamo then "
                     "specialises it again on every value")


def budget_sentence(budget) -> Html:
    """A frame that used its recompile budget (or is within two of it) but was not yet refused, in a sentence."""
    return sentence(budget_parts(budget))


def limit_note(hit) -> Html:
    fix = ("Pass the value as a tensor (a tensor's value is not guarded on), or raise "
           f"torch._dynamo.config.{hit.limit_type} if the variants are few and expected.")
    return note(para(limit_sentence(hit)), para(guard_sentence(hit)) if hit.guard else None,
                para(f"Compile {hit.compile_id} was refused. The limit was read from {hit.limit_source or '?'}. ",
                     f"torch's note on the guard: {hit.note}. " if hit.note else "", fix, cls="tc-muted"),
                kind="error")


def budget_note(budget) -> Html:
    why = f" ({FLOAT_SPECIALISED})" if budget.value_kind == "float" else ""
    return note(para(budget_sentence(budget)), para(guard_sentence(budget), why) if budget.guard else None,
                para(f"Counted as torch counts: {budget.used} cache entries of this frame after its last compile "
                     f"(torch's cache_size + 1); the limit was read from {budget.limit_source or '?'}. "
                     "See Fixes for the change that stops the guard failing.", cls="tc-muted"),
                kind="error" if budget.left == 0 else "warn")


def render_recompiles(capture, compile) -> str:
    recompiles = capture.recompiles
    hits = capture.recompile_limits
    near = [b for b in capture.recompile_budgets if not b.hit]
    limits = join([*(limit_note(hit) for hit in hits[:LIST_PAGE]),
                   page_note(len(hits), 0, "frames at the recompile limit"),
                   *(budget_note(b) for b in near[:LIST_PAGE]),
                   page_note(len(near), 0, "frames near the recompile limit")])
    if not recompiles:
        return join([limits, note("No recompiles: every later call was accepted by an existing compile's guards.",
                                  kind="ok")])
    from .fixes import fixes_of

    fix_of = {compile_id: fix for fix in fixes_of(capture) or () for compile_id in fix.recompiles}
    rows, marks = [], []
    refused_ids = {hit.compile_id for hit in capture.recompile_limits}
    for recompile in recompiles:
        fix = fix_of.get(recompile.compile_id)
        for number, reason in enumerate(recompile.reasons or [RecompileReason()]):
            first = number == 0
            dynamic = _became_dynamic(capture, recompile.compile_id) if first else ""
            refused = first and recompile.compile_id in refused_ids
            # every row names its recompile (muted after the first), so searching one keeps all its rows
            rows.append([join([code(recompile.compile_id), badge("refused: limit", "error") if refused else None])
                         if first else tag("span", code(recompile.compile_id), cls="tc-repeat"),
                         recompile.name if first else tag("span", recompile.name or "", cls="tc-repeat"),
                         code(reason.against or "?"), reason.guard, reason.detail or "", _user_stack(reason),
                         code(dynamic) if dynamic else "",
                         f"fix: {fix.id} ({fix.kind}, {fix.status})" if fix is not None and first else ""])
            marks.append("tc-selected" if compile is not None and recompile.compile_id == compile.compile_id
                         else None)
    return join([
        limits,
        para(f"{plural(len(recompiles), 'recompile')}, in order, in {plural(len(rows), 'row')}: one row per cached "
             "compile each recompile was checked against. Before compiling again torch checked the cached compiles "
             "(most recently used first: a hit moves its entry to the front) and each one failed the guard shown."),
        data_table("Recompiles", ["new compile", "function", "rejected compile", "failing guard", "values",
                                  "guard made at (your code)", "became dynamic (new symbols)", "fix (see Fixes)"], rows, marks,
                   drop_empty=True),
        para("Tip: a size that changes between calls recompiles once, then torch marks it dynamic; "
             "mark_dynamic or dynamic=True avoid the first recompile.", cls="tc-muted"),
    ])
