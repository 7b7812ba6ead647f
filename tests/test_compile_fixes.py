"""What would save compile time, tried (``cap.compile_fixes()``, ``cap.try_compile_fixes()``): a model of
4 identical blocks gets regional compilation proposed, and measured (Inductor, each run a fresh process with
empty caches) it compiles faster with outputs equal to eager."""
from __future__ import annotations

import pytest
import torch

from compiler.analyses.compile_fixes import propose, regional, repeated_blocks


class Block(torch.nn.Module):
    def __init__(self, width: int = 16):
        super().__init__()
        self.up, self.down = torch.nn.Linear(width, 2 * width), torch.nn.Linear(2 * width, width)
        self.norm = torch.nn.LayerNorm(width)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x)))).sin()


class Tower(torch.nn.Module):
    def __init__(self, blocks: int = 4, width: int = 16):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block(width) for _ in range(blocks)])
        self.odd = Block(2 * width)  # same class, another structure (shapes): not one of the repeated blocks
        self.head = torch.nn.Linear(width, 4)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def _tower():
    torch.manual_seed(0)
    return Tower().eval().requires_grad_(False)


def test_repeated_blocks_are_the_identical_outermost_ones():
    groups = repeated_blocks(_tower())
    assert [g["paths"] for g in groups] == [["blocks.0", "blocks.1", "blocks.2", "blocks.3"]]
    assert groups[0]["class"] == "Block"
    assert repeated_blocks(torch.nn.Linear(3, 3)) == [] and repeated_blocks(lambda x: x) == []


def test_regional_compiles_each_block_and_puts_everything_back():
    import compiler

    model, x = _tower(), torch.randn(8, 16)
    with compiler.capture() as cap:
        with regional(model, ["blocks.0", "blocks.1", "blocks.2", "blocks.3"], "compile", {"backend": "eager"}) as run:
            out = run(x)
    torch.testing.assert_close(out, model(x))
    assert all(b._compiled_call_impl is None for b in model.blocks)  # put back
    assert [c.name for c in cap.compiles] == ["forward"]  # one compile serves the 4 blocks (no grad: no recompile)
    torch._dynamo.reset()


@pytest.mark.slow
def test_regional_compilation_is_proposed_and_measured_faster(tmp_path):
    import compiler
    from compiler.analyses.fix_experiments import capture_calls
    from explorer.views.fixes import render_compile_fixes

    model, x = _tower(), torch.randn(8, 16)
    cap = capture_calls(model, [(x,)])
    fixes = cap.compile_fixes()
    regional_fix = next(f for f in fixes if f.kind == "regional_compile")
    assert regional_fix.regions == ["blocks.0", "blocks.1", "blocks.2", "blocks.3"]
    cap.try_compile_fixes(only=[regional_fix.id], timing=False)
    result = regional_fix.result
    assert result.status == "measured" and result.outputs_equal, result.as_text()
    assert result.goal == "compile time"
    assert result.after.compile_s < result.before.compile_s, result.as_text()
    assert result.after.graphs == 1 and result.before.graphs == 1  # one graph: a block, or the whole tower
    assert result.recommended
    cap.save(tmp_path / "c.json")
    back = compiler.load(tmp_path / "c.json")
    assert back.compile_fixes()[regional_fix.id].result.after.compile_s == result.after.compile_s
    html = render_compile_fixes(back)
    assert "regional compilation" in html and "recommended" in html.lower()  # its verdict badge: Recommended
    torch._dynamo.reset()


def test_proposals_from_a_loaded_capture_keep_without_the_module():
    from compiler import Capture

    cap = Capture.from_data({"format": "tcompile-capture", "version": [2, 0], "options": {"mode": "max-autotune"}})
    kinds = [f.kind for f in propose(cap)]
    assert kinds == ["warm_caches", "cheaper_mode"]


def test_dynamic_true_is_proposed_where_recompiles_take_most_of_the_compile_time():
    from compiler import Capture

    def compile_(cid, seconds):
        frame, number = cid.split("/")
        return {"compile_id": cid, "frame_id": int(frame), "frame_compile_id": int(number), "status": "compiled",
                "metrics": {"entire_frame_compile_time_s": seconds}}

    cap = Capture.from_data({"format": "tcompile-capture", "version": [2, 0], "options": {"backend": "inductor"},
                             "compiles": [compile_("0/0", 1.0), compile_("0/1", 2.0), compile_("0/2", 2.0)]})
    fix = next(f for f in propose(cap) if f.kind == "dynamic_true")
    assert fix.compile_kwargs == {"dynamic": True} and "4 of 5 s" in fix.why
    cap.options["dynamic"] = True  # already dynamic: nothing to propose
    assert "dynamic_true" not in [f.kind for f in propose(cap)]
