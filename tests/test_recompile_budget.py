"""The recompile limit before it bites (issue 33): a frame that used its recompile budget, or is within two of it, is
counted as torch counts it (its cache entries, torch's own list), said in Overview's first lines with the guard that
keeps failing and the values it saw, and credited to the fix that removes that guard (``Fix.limit_frames``), raising
the limit ranked last."""
import pytest
import torch

import compiler
from compiler.analyses.fixes import propose
from compiler.stages.capture import Capture
from explorer.views.overview import findings
from explorer.views.recompiles import render_recompiles

VALUES = (0.125, 0.0625, 0.25, 0.5, 0.75)


def scaled(x, scale):
    return x * scale + 1


def _run(values, limit, **config):
    """One compile per value: the float is specialised (specialize_float, as CUDA graphs or a custom op's float
    argument make torch do), under recompile_limit ``limit``; returns the capture and torch's cache entries."""
    torch._dynamo.reset()
    with torch._dynamo.config.patch(recompile_limit=limit, specialize_float=True, **config), compiler.capture() as cap:
        compiled = torch.compile(scaled, backend="eager")
        for value in values:
            compiled(torch.ones(3), value)
    entries = torch._dynamo.eval_frame._debug_get_cache_entry_list(scaled.__code__)
    return cap, len(entries)


@pytest.fixture(scope="module")
def used_up():
    return _run(VALUES[:4], limit=4)


def test_used_up_counted_as_torch_counts(used_up):
    cap, entries = used_up
    (budget,) = cap.recompile_budgets
    assert budget.used == entries  # torch's own cache entries for the code object
    assert (budget.used, budget.limit, budget.left, budget.hit) == (4, 4, 0, False)
    assert budget.limit_source == "torch._dynamo.config at capture time" and budget.limit_type == "recompile_limit"
    assert budget.guard == "scale ==" and budget.values == ["0.125", "0.0625", "0.25", "0.5"]
    assert budget.value_kind == "float" and not cap.recompile_limits  # used up, not hit: torch said nothing yet
    first = [str(text) for _, text in findings(cap)][:2]
    assert any("Recompile budget used up" in t and "<code>scale == 0.125 / 0.0625 / 0.25 / 0.5</code>" in t
               and "the next new variant will run eagerly" in t for t in first)
    assert "Recompile budget used up" in render_recompiles(cap, None)


def test_within_two_of_the_limit_and_not_before(used_up):
    """The same four compiles under a limit of 6 (2 left: said) and 7 (3 left: not yet)."""
    from compiler.stages.budgets import recompile_budgets
    from explorer.views.recompiles import budget_sentence

    cap, entries = used_up
    (near,) = recompile_budgets(cap.compiles, {}, {"recompile_limit": 6})
    assert (near["used"], near["left"]) == (entries, 2)
    from compiler.stages.schema import RecompileBudget

    assert "Near the recompile limit" in str(budget_sentence(RecompileBudget(**near)))
    assert recompile_budgets(cap.compiles, {}, {"recompile_limit": 7}) == []
    (given,) = recompile_budgets(cap.compiles, {"recompile_limit": 5}, {"recompile_limit": 8})
    assert given["limit"] == 5 and given["limit_source"] == "torch.compile(recompile_limit=…)"


def test_the_limit_hit():
    cap, entries = _run(VALUES, limit=4)
    (budget,) = cap.recompile_budgets
    (hit,) = cap.recompile_limits
    assert entries == budget.used == 4 and budget.hit and budget.refused == [hit.compile_id]
    assert budget.values == ["0.125", "0.0625", "0.25", "0.5"]


def test_fix_for_the_float_credited_and_the_limit_last(used_up):
    cap, _ = used_up
    (budget,) = cap.recompile_budgets
    fixes = propose(cap).items
    guard_fix = next(f for f in fixes if budget.frame_id in f.limit_frames and f.kind != "recompile_limit")
    last_resort = next(f for f in fixes if f.kind == "recompile_limit")
    assert guard_fix.kind in ("dynamic_float", "specialize_float")
    assert guard_fix.compile_kwargs == {"dynamic": True} or guard_fix.config == {"specialize_float": False}
    assert last_resort.limit_frames == [budget.frame_id] and last_resort.config["recompile_limit"] > 4
    assert fixes.index(guard_fix) < fixes.index(last_resort)
    assert "1 frame at or near the recompile limit" in guard_fix.cost_text


def test_a_size_that_keeps_changing_goes_to_mark_dynamic():
    def grow(x):
        return x.sum() * 2

    torch._dynamo.reset()
    with torch._dynamo.config.patch(recompile_limit=3, automatic_dynamic_shapes=False), compiler.capture() as cap:
        compiled = torch.compile(grow, backend="eager")
        for n in (2, 3, 4):
            compiled(torch.ones(n))
    (budget,) = cap.recompile_budgets
    assert (budget.used, budget.left) == (3, 0) and "size mismatch" in budget.guard
    fix = next(f for f in propose(cap).items if budget.frame_id in f.limit_frames and f.kind != "recompile_limit")
    assert fix.kind == "mark_dynamic" and fix.marks[0].argument == "x" and fix.marks[0].dim == 0


def test_derived_on_load_from_the_compiles(used_up):
    cap, _ = used_up
    data = cap.to_data()
    data.pop("recompile_budgets", None)  # an older capture never wrote it
    loaded = Capture.from_data(data)
    assert [b.to_data() for b in loaded.recompile_budgets] == [b.to_data() for b in cap.recompile_budgets]
