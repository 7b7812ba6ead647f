"""How a tried fix is judged: its outputs like for like, its run time side by side, and the verdict in one sentence.

**Outputs.** Every experiment keeps three comparisons (``OutputComparison``): the compile *without* the fix
against eager, the compile *with* it against eager, and with against without. Each says, per output tensor
(the leaves of every replayed call's return value, in order), its shape, the largest absolute error and the
relative L2 error ‖x − ref‖₂/‖ref‖₂ (float64), whether ``torch.testing.assert_close`` (the dtype's default
tolerance, NaN equal to NaN) finds it close, and when the shapes differ, both shapes.

A fix **changes results** only where it moves an output further from eager than compiling without it did
(``CHANGES_RULE``): for some output, the compile with the fix is close neither to eager nor to the compile
without it, and either its shape differs from eager's where the compile without the fix had eager's shape, or
its relative L2 error to eager is above ``MARGIN`` × the error without the fix + the dtype's ``rtol``. A fix that
rounds by design (TF32: ``tolerance={"relative_norm": r}``) is also accepted within its stated r. A user's own
comparison (``try_fixes(check=fn)``, ``fn(actual, expected) → bool``, or raising AssertionError for False; called
per replayed call) replaces the default: the fix changes results where ``fn(with, eager)`` fails while
``fn(without, eager)`` passed, or ``fn(with, without)`` fails too.

**Run time.** ``ratio_of``: the compiled call with the fix ÷ without it, from samples taken interleaved in the
same experiment after the same warm-up (``compiler.analyses.fix_workers``): the ratio of the medians, and a
95 % percentile-bootstrap interval over the interleaved rounds (the rounds resampled with replacement, each
round keeping its before, after and eager sample together; fixed seed). "Faster" needs the whole interval
below ``FASTER`` and below 1 − the run's noise floor (``noise_floor``: an A/A experiment, the baseline against itself
in a second worker, timed the same way; ``FixResult.floors``).
"""
from __future__ import annotations

import math
import random
import statistics

from compiler.stages.fix_schema import FASTER, OutputComparison, OutputError, RuntimeRatio

MARGIN = 2.0  # "further from eager": above MARGIN × the error without the fix (+ the dtype's rtol)
BOOTSTRAP = 2000  # bootstrap resamples of the interleaved rounds
CONFIDENCE = 0.95
CHANGES_RULE = (f"a fix changes results only where an output with it is close (torch.testing.assert_close "
                f"defaults) neither to eager nor to the compile without it, and its relative L2 error to eager "
                f"is above {MARGIN:g}× the compile-without-the-fix's error + the dtype's rtol (or its shape "
                f"differs from eager's where the compile without the fix kept it)")
LABELS = ("without the fix vs eager", "with the fix vs eager", "with vs without the fix")


# --- outputs ----------------------------------------------------------------------------------------

def _leaves(outputs) -> list:
    import torch.utils._pytree as pytree

    return pytree.tree_leaves(outputs)


def _rtol(dtype) -> float:
    """``torch.testing.assert_close``'s default rtol for ``dtype`` (1.3e-6 for float32, 1.6e-2 for bfloat16, …)."""
    from torch.testing._comparison import default_tolerances

    try:
        return default_tolerances(dtype)[0]
    except Exception:  # noqa: BLE001 — a dtype without defaults (integers: exact)
        return 0.0


def _error(actual, reference, index: int) -> OutputError:
    import torch

    if not isinstance(reference, torch.Tensor) or not isinstance(actual, torch.Tensor):
        try:
            same = bool(actual == reference)
        except Exception:  # noqa: BLE001 — values == cannot compare
            same = False
        return OutputError(index=index, close=same, kind=type(reference).__name__)
    shape, reference_shape = list(actual.shape), list(reference.shape)
    out = OutputError(index=index, shape=shape, kind=str(reference.dtype).replace("torch.", ""))
    if shape != reference_shape:
        out.reference_shape, out.close = reference_shape, False
        return out
    try:
        torch.testing.assert_close(actual, reference, equal_nan=True, check_dtype=False, check_device=False)
        out.close = True
    except AssertionError:
        out.close = False
    a = actual.detach().to("cpu", torch.float64)
    b = reference.detach().to("cpu", torch.float64)
    both_nan = torch.isnan(a) & torch.isnan(b)
    diff = torch.where(both_nan, torch.zeros_like(a), a - b)
    if diff.numel():
        worst = diff.abs().max().item()
        out.max_abs = worst if math.isfinite(worst) else None
        scale = torch.where(both_nan, torch.zeros_like(b), b).norm().item()
        error = diff.norm().item()
        out.rel_l2 = error / scale if scale else (0.0 if error == 0 else None)
    else:
        out.max_abs = out.rel_l2 = 0.0
    return out


def compare(actual, reference, label: str, check=None) -> OutputComparison:
    """``actual`` against ``reference`` (each: the list of every replayed call's outputs) → one ``OutputComparison``."""
    got, want = _leaves(actual), _leaves(reference)
    comparison = OutputComparison(label=label)
    if len(got) != len(want):
        comparison.equal = False
        comparison.note = f"{len(got)} output values, the reference has {len(want)}"
        return comparison
    comparison.outputs = [_error(a, b, i) for i, (a, b) in enumerate(zip(got, want))]
    comparison.equal = all(o.close for o in comparison.outputs)
    if check is not None:
        comparison.check_passed, comparison.check_note = _user_check(check, actual, reference)
    return comparison


def _user_check(check, actual, reference) -> tuple[bool, str | None]:
    calls = list(zip(actual, reference)) if isinstance(actual, list) and isinstance(reference, list) \
        and len(actual) == len(reference) else [(actual, reference)]
    for number, (a, b) in enumerate(calls):
        try:
            passed = check(a, b)
        except AssertionError as exc:
            return False, f"call {number}: {str(exc).strip().splitlines()[0][:200] if str(exc).strip() else 'AssertionError'}"
        except Exception as exc:  # noqa: BLE001 — a check that breaks says so, and fails
            return False, f"call {number}: the check raised {type(exc).__name__}: {exc}"[:300]
        if passed is False:  # None: a check that asserts and returns nothing passed
            return False, f"call {number}: the check returned False"
    return True, None


def three_way(before, after, eager, tolerance: dict | None = None, check=None) -> tuple[bool, str, list]:
    """The three comparisons of an experiment and the verdict: → (no further from eager than without the fix,
    the verdict in words, [without vs eager, with vs eager, with vs without])."""
    comparisons = [compare(before, eager, LABELS[0], check), compare(after, eager, LABELS[1], check),
                   compare(after, before, LABELS[2], check)]
    be, ae, ab = comparisons
    if check is not None:
        ok = ae.check_passed or (not be.check_passed and ab.check_passed)
        why = ("passes your check against eager" if ae.check_passed else
               "fails your check against eager, as the compile without it does, and passes it against that compile"
               if ok else ("fails your check against eager where the compile without it passed"
                           if be.check_passed else "fails your check against eager and against the compile without it"))
        return ok, f"your check: with the fix the outputs {why}" + (f" ({ae.check_note})" if not ok and ae.check_note
                                                                    else ""), comparisons
    if ae.note or be.note or ab.note:
        return False, ae.note or be.note or ab.note, comparisons
    limit = (tolerance or {}).get("relative_norm")
    further = []
    for b, a, w in zip(be.outputs, ae.outputs, ab.outputs):
        if a.close or w.close:
            continue
        if limit is not None and a.rel_l2 is not None and a.rel_l2 <= limit:
            continue
        if a.reference_shape is not None:
            if b.reference_shape is None:
                further.append(f"output {a.index}: shape {a.shape} where eager's is {a.reference_shape} (without "
                               "the fix it was eager's)")
            continue
        if b.reference_shape is not None:  # without the fix the shape already differed: nothing to compare it with
            continue
        allowed = MARGIN * (b.rel_l2 or 0.0) + _rtol(_dtype(a.kind))
        if a.rel_l2 is None or a.rel_l2 > allowed:
            further.append(f"output {a.index}: relative L2 error to eager {_num(a.rel_l2)} with the fix, "
                           f"{_num(b.rel_l2)} without (allowed {_num(allowed)})")
    if further:
        return False, "the fix moves outputs further from eager — " + "; ".join(further[:3]) + (
            f"; … ({len(further)} outputs)" if len(further) > 3 else ""), comparisons
    return True, sentence_of_outputs(comparisons, limit), comparisons


def _dtype(name: str | None):
    import torch

    value = getattr(torch, name or "", None)
    return value if isinstance(value, torch.dtype) else torch.float32


def _num(value) -> str:
    return "–" if value is None else f"{value:.2g}"


def sentence_of_outputs(comparisons, limit=None) -> str:
    """"outputs as close to eager as before", or "no further from eager than the compile without it"."""
    be, ae, _ = comparisons
    if be.equal and ae.equal:
        return "outputs as close to eager as before (assert_close defaults)"
    if limit is not None and ae.outputs and all(o.rel_l2 is not None and o.rel_l2 <= limit for o in ae.outputs):
        return f"outputs within the fix's stated tolerance (rel. L2 ≤ {limit:g}): {ae.as_text()}"
    # the compile's own drift from eager is its own finding (Fixes.drift), said once: here only "no further"
    return "outputs no further from eager than the compile without it (its drift: see Drift from eager)"


# --- run time ---------------------------------------------------------------------------------------

def ratio_of(before: list[float], after: list[float], eager: list[float] | None = None,
             method: str = "") -> RuntimeRatio:
    """after ÷ before from interleaved samples (rounds aligned), with a bootstrap interval (see the module)."""
    rounds = min(len(before), len(after))
    before, after = before[:rounds], after[:rounds]
    point = statistics.median(after) / statistics.median(before)
    rng = random.Random(0)
    ratios = []
    for _ in range(BOOTSTRAP):
        picks = [rng.randrange(rounds) for _ in range(rounds)]
        b = statistics.median(before[i] for i in picks)
        ratios.append(statistics.median(after[i] for i in picks) / b if b else math.inf)
    ratios.sort()
    tail = (1 - CONFIDENCE) / 2
    low, high = ratios[int(tail * BOOTSTRAP)], ratios[min(BOOTSTRAP - 1, int((1 - tail) * BOOTSTRAP))]
    return RuntimeRatio(ratio=point, low=low, high=high, rounds=rounds, before_s=statistics.median(before),
                        after_s=statistics.median(after), eager_s=statistics.median(eager) if eager else None,
                        method=method or f"median after ÷ median before over {rounds} interleaved rounds; "
                                         f"{CONFIDENCE:.0%} percentile-bootstrap interval, {BOOTSTRAP} resamples "
                                         "of the rounds")


def noise_floor(ratio: RuntimeRatio | None) -> float | None:
    """The A/A experiment's ratio (the baseline against itself, two worker processes) → the effect two identical
    compiles show on this machine now: the farthest of its point and its interval from 1 (a fraction)."""
    if ratio is None:
        return None
    return max(abs(ratio.ratio - 1), abs(1 - ratio.low), abs(ratio.high - 1))


def faster(ratio: RuntimeRatio | None) -> bool:
    return ratio is not None and ratio.high < FASTER


def slower(ratio: RuntimeRatio | None) -> bool:
    return ratio is not None and ratio.low > 1 / FASTER


# --- verdicts in one sentence ------------------------------------------------------------------------

def gain_score(result) -> float:
    """How much a recommended result gained, to order the recommended fixes: findings removed (weighted as in
    the ranking), then run time saved (1 − ratio, ×100)."""
    from compiler.analyses.fixes import WEIGHTS

    b, a = result.before, result.after
    score = 0.0
    if b and a:
        score += WEIGHTS["frames_skipped"] * (b.frames_skipped - a.frames_skipped)
        score += WEIGHTS["graph_breaks"] * (b.graph_breaks - a.graph_breaks)
        score += WEIGHTS["recompiles"] * (b.recompiles - a.recompiles)
    if result.timing is not None:
        score += 100 * (1 - result.timing.ratio)
    return score
