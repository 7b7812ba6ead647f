"""What to look at first in a capture: the fixes' headline and the findings, worst first — what the Overview
opens with (``explorer/views/overview.py`` draws them) and what ``Capture.as_text`` starts with, in plain text:
one source, so both always say the same.

A finding is ``(kind, parts)``: ``kind`` is error, warn, info or ok; ``parts`` a sentence of plain strings,
``Code`` (a name, a guard, a value: a code span when drawn) and ``Place`` (a file and line: ``model.py:13``
when drawn, or the notebook cell). ``text(parts)`` is the sentence as plain text.
"""
from __future__ import annotations

from typing import NamedTuple

FINDINGS_EACH = 10  # skipped frames, recompile-limit hits… named one by one; more are counted
SHOWN_VALUES = 6  # values a recompile-limit guard was specialised to, named in its sentence


class Code(str):
    """Code in a finding's sentence (a function name, a guard, a value)."""


class Place(NamedTuple):
    """A line of a file in a finding's sentence."""

    file: str | None
    line: int | None


def text(parts) -> str:
    """A finding's sentence as plain text."""
    out = []
    for part in parts:
        if isinstance(part, Place):
            out.append(f"{part.file}:{part.line}" if part.file else "unknown location")
        elif part is not None:
            out.append(str(part))
    return "".join(out)


def plural(count: int, word: str, words: str | None = None) -> str:
    return f"{count} {word if count == 1 else (words or word + 's')}"


def seconds(value: float | None) -> str:
    """``0.000347`` → ``347 µs``; ``1.49`` → ``1.49 s``."""
    if value is None:
        return "–"
    for scale, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value * 1e9:.3g} ns"


def _ids(ids: list[str], shown: int = 20) -> str:
    return ", ".join(ids[:shown]) + (f" and {len(ids) - shown:,} more" if len(ids) > shown else "")


# --- the sentences -------------------------------------------------------------------------------

def share_text(share: float | None) -> str | None:
    if share is None:
        return None
    return "under 1 %" if share < 0.005 else f"{share:.0%}".replace("%", " %")


def skipped_parts(item) -> list:
    """One skipped frame in a sentence: which function, torch's reason, the cost where measured."""
    share = share_text(item.share)
    return ["Dynamo skipped the whole frame ", Code(item.function or "?"), " (", Place(item.file, item.line),
            f"): {item.reason}. It runs eagerly, uncompiled, on every call",
            f" — {share} of the compiled call's time" if share else "", "."]


def limit_parts(hit) -> list:
    """A frame at the recompile limit, in a sentence: which frame, how many compiles, which limit."""
    ids = hit.compile_ids
    span = f"{ids[0]}–{ids[-1]}" if len(ids) > 1 else (ids[0] if ids else "")
    return ["Recompile limit reached: ", Code(hit.function or "?"), " (", Place(hit.file, hit.line),
            f") compiled {plural(len(ids), 'time')} ({span}), torch._dynamo.config.{hit.limit_type} = "
            f"{hit.limit if hit.limit is not None else '?'}. Every new variant of it now runs eagerly "
            "(torch only logs a warning)."]


def guard_parts(hit) -> list:
    """The guard that keeps failing, with the values it was specialised to (nothing where none was logged):
    ``spatial_scale == 0.125 / 0.0625 / 0.25``."""
    from compiler.stages.budgets import value_kind

    if not hit.guard:
        return []
    kind = value_kind(hit.values)
    what = {"float": "a Python float specialised", "int": "a Python int specialised"}.get(kind, "specialised")
    shown = " / ".join(hit.values[:SHOWN_VALUES]) + (f" / … ({len(hit.values)} in all)"
                                                     if len(hit.values) > SHOWN_VALUES else "")
    return ["The guard that keeps failing: ", Code(f"{hit.guard} {shown}" if shown else hit.guard),
            f" — {what} to each value it saw." if shown else "."]


def budget_parts(budget) -> list:
    """A frame that used its recompile budget (or is within two of it) but was not yet refused, in a sentence."""
    ids = budget.compile_ids
    span = f"{ids[0]}–{ids[-1]}" if len(ids) > 1 else (ids[0] if ids else "")
    state = ("the next new variant will run eagerly (torch only logs a warning)" if budget.left == 0 else
             f"room for {plural(budget.left, 'more variant')}, then new variants run eagerly")
    head = "Recompile budget used up: " if budget.left == 0 else "Near the recompile limit: "
    return [head, Code(budget.function or "?"), " (", Place(budget.file, budget.line),
            f") compiled {plural(len(ids), 'time')} ({span}), {budget.used} of "
            f"torch._dynamo.config.{budget.limit_type} = {budget.limit}: {state}."]


def other_failures(capture) -> int:
    """Failed compiles that are neither a skipped frame nor a compile refused at the recompile limit: each of
    those is its own finding, never also a failure."""
    return max(0, capture.summary.failed_compiles - len(capture.skipped_frames) - len(capture.recompile_limits))


# --- the findings ----------------------------------------------------------------------------------

def findings(capture) -> list[tuple[str, list]]:
    """(kind, parts) pairs, worst first: what a user should look at."""
    s = capture.summary
    found = []
    if capture.error:
        found.append(("error", [f"{capture.error.type} in {capture.error.stage} (the error box above says more)"]))
    skipped_list = skipped_frames(capture)
    for item in skipped_list[:FINDINGS_EACH]:  # the costliest outcome: no graph at all
        found.append(("error", [*skipped_parts(item), " See Graph breaks."]))
    if len(skipped_list) > FINDINGS_EACH:
        found.append(("error", [f"… and {len(skipped_list) - FINDINGS_EACH:,} more skipped frames: see Graph breaks"]))
    for hit in capture.recompile_limits[:FINDINGS_EACH]:
        found.append(("error", [*limit_parts(hit), " ", *guard_parts(hit), " See Recompiles."]))
    if len(capture.recompile_limits) > FINDINGS_EACH:
        found.append(("error", [f"… and {len(capture.recompile_limits) - FINDINGS_EACH:,} more frames at the "
                                "recompile limit: see Recompiles"]))
    near = [b for b in capture.recompile_budgets if not b.hit]
    for budget in near[:FINDINGS_EACH]:  # used up (or nearly) but not yet refused: the limit before it bites
        found.append(("error" if budget.left == 0 else "warn",
                      [*budget_parts(budget), " ", *guard_parts(budget), " See Fixes and Recompiles."]))
    drift = getattr(fixes_of(capture), "drift", None) if getattr(capture, "proposed_fixes", None) is not None else None
    if drift is not None and drift.drifts:  # measured by Try all: the compile without any fix against eager
        found.append(("warn", [f"Drift from eager: {drift.headline()} — "
                               + "; ".join(drift.lines()[:4]) + (" …" if len(drift.lines()) > 4 else "")
                               + ". See Fixes."]))
    failures = other_failures(capture)
    if failures > 0:
        found.append(("error", [f"{plural(failures, 'compile')} failed (see the status column below)"]))
    if s.graph_breaks:
        unresumable = capture.breaks.kinds().get("unresumable", 0)
        places = len({(i.file, i.line) for i in capture.breaks.items}) or s.unique_graph_breaks
        found.append(("warn", [f"{plural(s.graph_breaks, 'graph break')} at {plural(places, 'place')}: "
                               "each ends a graph, runs Python eagerly and resumes in a new frame"
                               + (f" ({unresumable} could not be resumed from: the rest of that function runs eagerly)"
                                  if unresumable else "") + "; see Graph breaks"]))
    if s.recompiles:
        found.append(("warn", [f"{plural(s.recompiles, 'recompile')}: guards rejected an earlier compile for new "
                               "inputs: see Recompiles"]))
    skipped = [c.compile_id for c in capture.compiles if c.status == "skipped"]
    if skipped:
        found.append(("warn", [f"Dynamo produced no graph for {_ids(skipped)} (the frame runs eagerly)"]))
    aot = [c.compile_id for c in capture.compiles if c.origin == "aot_inductor"]
    if aot:
        found.append(("info", [f"AOTInductor compiled an exported program outside any Dynamo frame: see "
                               f"{_ids(aot)} (its graphs, kernels and provenance)"]))
    if not found and capture.compiles:
        found.append(("ok", [f"Compiled cleanly into {plural(s.graphs, 'graph')}: no graph breaks, no recompiles"]))
    if not capture.compiles and not capture.error:
        found.append(("warn", ["torch.compile compiled nothing in this run"]))
    overlapping = capture.options.get("overlapping_captures")
    if overlapping:
        found.append(("warn", [f"{plural(overlapping, 'other capture')} ran at the same time (nested or in another "
                               "thread): the compiles shown are this capture's own, but torch's counters "
                               "(cap.counters) are process-wide and count the other's too"]))
    return found + speed_findings(capture.runtime)


def speed_findings(runtime) -> list[tuple[str, list]]:
    speedup = runtime.speedup if runtime.available else None
    if speedup is None:
        return []
    medians = (f" (median {seconds(runtime.compiled.median_s)} vs {seconds(runtime.eager.median_s)} eager)"
               if runtime.compiled and runtime.eager else "")
    if speedup < 1:
        return [("warn", [f"The compiled function is slower than eager: {speedup:.2f}×{medians}"])]
    return [("ok", [f"{speedup:.2f}× faster than eager{medians}"])]


def skipped_frames(capture) -> list:
    """The skipped frames, costliest first (unmeasured last)."""
    return sorted(capture.skipped_frames, key=lambda s: -(s.share if s.share is not None else -1))


# --- the fixes' headline -----------------------------------------------------------------------------

def fixes_of(capture):
    """The capture's proposed fixes (proposed now for a capture saved without them), or None."""
    try:
        return capture.fixes()
    except Exception:  # noqa: BLE001 — a view never raises for a capture it cannot propose for
        return None


def improves(result, verb: str = "removes") -> str:
    """``removes 2 of 3 graph breaks, 1 of 1 recompile and 40 % of the compile time``."""
    b, a = result.before, result.after
    parts = []
    for count, word in ((b.graph_breaks, "graph break"), (b.recompiles, "recompile"),
                        (b.frames_skipped, "skipped frame")):
        name = "graph_breaks" if word == "graph break" else "recompiles" if word == "recompile" else "frames_skipped"
        if count:
            parts.append(f"{count - getattr(a, name)} of {plural(count, word)}")
    if b.compile_s and a.compile_s is not None and a.compile_s < b.compile_s:
        parts.append(f"{(1 - a.compile_s / b.compile_s) * 100:.0f} % of the compile time")
    if b.guards and a.guards < b.guards and result.goal == "guards":
        parts.append(f"{b.guards - a.guards} of {plural(b.guards, 'guard')}")
    if b.runtime_s and a.runtime_s is not None and a.runtime_s < b.runtime_s and result.goal != "findings":
        parts.append(f"{(1 - a.runtime_s / b.runtime_s) * 100:.0f} % of the compiled run time")
    if not parts:
        return "changes nothing counted"
    return f"{verb} " + (", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0])


def fix_headline(capture) -> str | None:
    """One line for the top of Overview: what the best measured change does, and what is left."""
    from compiler.stages.fix_schema import MEASURED, NOT_TRIED

    fixes = fixes_of(capture)
    if not fixes or not fixes.items:
        return None
    applicable = [f for f in fixes if f.applicable]
    suggestions = len(fixes.items) - len(applicable)
    recommended = [f for f in applicable if f.result and f.result.recommended]
    parts = []
    combined = fixes.combined
    if combined is not None and combined.recommended:
        parts.append(f"{len(combined.fixes)} changes together {improves(combined, 'remove')} — measured")
    elif recommended:
        best = max(recommended, key=lambda f: (f.result.before.graph_breaks - f.result.after.graph_breaks)
                   + (f.result.before.recompiles - f.result.after.recompiles))
        parts.append(f"1 change ({best.id}) {improves(best.result)} — measured")
    counts = {}
    for fix in applicable:
        status = fix.result.status if fix.result else NOT_TRIED
        if status == MEASURED and fix.result.recommended:
            continue
        label = {NOT_TRIED: "not tried"}.get(status, status)
        if status == MEASURED:  # no gain, worse, not chosen (another guard filter measured better)
            label = "measured, " + fix.result.verdict.lower()
        counts[label] = counts.get(label, 0) + 1
    parts += [f"{plural(n, 'change')} {label}" for label, n in counts.items()]
    if suggestions:
        parts.append(f"{plural(suggestions, 'code change')} suggested")
    return "; ".join(parts)


def overview_lines(capture) -> list[str]:
    """What the Overview says first, as plain text lines: the fixes' headline, then each finding."""
    headline = fix_headline(capture)
    lines = [f"Fixes: {headline} (see Fixes; cap.fixes())"] if headline else []
    return lines + [f"{kind}: {text(parts)}" for kind, parts in findings(capture)]
