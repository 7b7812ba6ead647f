"""torchvision's Mask R-CNN (no weights, one small image, backend eager, CPU) captured for real (issue 27): the
frames Dynamo skips, the graph breaks, the graphs, the failed compiles and the recompile limit are what torch's
own counters and config say. Runs where torchvision is installed (e.g. torch 2.14.1 + torchvision 0.29.1 in a venv
of their own: ``pip install torch==2.14.1 torchvision==0.29.1 -e .[test]``, 20 s); skipped elsewhere, CI included.
Graph breaks torch could not resume from are in the count here and not in torch's counter: tested as such."""
import sys

import pytest
import torch

torchvision = pytest.importorskip("torchvision")

import compiler  # noqa: E402


ROI_ALIGN = {}  # torch's own cache entries of roi_align's code object, read by the fixture


@pytest.fixture(scope="module")
def maskrcnn():
    torch.manual_seed(0)
    model = torchvision.models.detection.maskrcnn_resnet50_fpn(weights=None, weights_backbone=None, min_size=224,
                                                               max_size=224).eval()
    torch._dynamo.reset()
    with torch.no_grad(), compiler.capture() as cap:
        torch.compile(model, backend="eager")([torch.rand(3, 224, 224)])
    code = sys.modules["torchvision.ops.roi_align"].roi_align.__code__  # torch's own cache entries, before a reset
    ROI_ALIGN["entries"] = (code.co_firstlineno, len(torch._dynamo.eval_frame._debug_get_cache_entry_list(code)))
    return cap


def test_skipped_frames_are_what_torch_skipped(maskrcnn):
    """torch records a skip two ways: 'frame skipped: fn (file line N)' for a graph break in a loop, and the
    break's own message where it could not handle a break ('Skipping the function and falling back to eager',
    e.g. enumerate's C __next__ in a list comprehension); every failed compile here is one torch counted."""
    unimplemented = "\n".join(maskrcnn.counters.get("unimplemented", {}))
    assert maskrcnn.skipped_frames, "Mask R-CNN has frames Dynamo gives up on"
    for item in maskrcnn.skipped_frames:
        in_loop = f"frame skipped: {item.function} ({item.file} line {item.line})" in unimplemented
        gave_up = ("Skipping the function and falling back to eager" in (item.cause.reason or "")
                   and item.cause.headline in unimplemented)
        assert in_loop or gave_up, item.function
        assert item.reason and maskrcnn.compile(item.compile_id).status == "failed"
    frames = maskrcnn.counters["frames"]
    assert frames["total"] - frames["ok"] == maskrcnn.summary.failed_compiles
    assert maskrcnn.summary.skipped_frames == len(maskrcnn.skipped_frames)


def test_counts_are_torch_s(maskrcnn):
    """torch's graph_break counter counts only the breaks Dynamo resumed from after an instruction (it logs the ones
    it could not resume from and data-dependent branches as breaks too): the breaks here of that kind are torch's
    count, the rest are said apart, and Overview says so."""
    from explorer.views.overview import explain_note

    counters = maskrcnn.counters
    kinds = maskrcnn.breaks.kinds()
    assert kinds["resumed"] == sum(counters["graph_break"].values()) > 0
    assert maskrcnn.summary.graph_breaks == sum(kinds.values())
    if len(kinds) > 1:
        assert f"counts the {kinds['resumed']} it resumed from" in str(explain_note(maskrcnn))
    assert maskrcnn.summary.graphs == counters["stats"]["unique_graphs"]
    assert counters["frames"]["total"] - counters["frames"]["ok"] == maskrcnn.summary.failed_compiles
    assert all(len(item.compile_ids) == len(set(item.compile_ids)) for item in maskrcnn.breaks.items)


def test_recompile_limits_as_torch_configures_them(maskrcnn):
    limit = torch._dynamo.config.recompile_limit
    for hit in maskrcnn.recompile_limits:
        assert hit.limit == limit and len(hit.compile_ids) == limit
        assert maskrcnn.compile(hit.compile_id).status == "failed"
    refused = {c.compile_id for c in maskrcnn.compiles if c.status == "failed"}
    assert {s.compile_id for s in maskrcnn.skipped_frames} | {h.compile_id for h in maskrcnn.recompile_limits} <= refused


def test_the_report_stays_within_its_budget(maskrcnn, tmp_path):
    from explorer.job_view import REPORT_BYTES
    from explorer.page import FALLBACK_BYTES, render_static

    path = maskrcnn.save(tmp_path / "maskrcnn.json")
    from compiler.__main__ import main

    assert main(["report", str(path), "-o", str(tmp_path / "report.html")]) == 0
    assert (tmp_path / "report.html").stat().st_size <= REPORT_BYTES
    assert len(render_static(maskrcnn, fallback=True).encode()) <= FALLBACK_BYTES


def test_roi_align_budget_said_before_it_bites(maskrcnn):
    """Issue 33: roi_align compiles once per FPN level's spatial_scale (a float torch specialises: its custom op
    takes a Python float) and uses up the recompile limit without hitting it; the budget is torch's own count."""
    from explorer.views.overview import findings

    line, entries = ROI_ALIGN["entries"]
    [budget] = [b for b in maskrcnn.recompile_budgets if b.function == "roi_align"]
    assert budget.line == line and budget.used == entries
    assert budget.guard == "spatial_scale ==" and budget.value_kind == "float"
    assert {"0.125", "0.0625", "0.25"} <= set(budget.values)  # one per FPN level (order: as the images go)
    if budget.left == 0 and not budget.hit:
        assert any("Recompile budget used up" in str(text) and "roi_align" in str(text) for _, text in findings(maskrcnn))
    fix = next(f for f in maskrcnn.fixes() if budget.frame_id in f.limit_frames and f.kind != "recompile_limit")
    assert fix.kind in ("dynamic_float", "specialize_float", "dynamic_true")

