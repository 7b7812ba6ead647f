"""The capture is typed from the records on and made once (issue 21, item 3): the stage builders that
declare a type yield it, recompiles are held once, a ``with capture()`` block's capture is made once
when the block ends, and what a trace cannot hold is said in the build, not patched in afterwards."""
import json
import warnings

import pytest
import torch

import compiler
from compiler.stages.assemble import STAGE_BUILDERS, assemble
from compiler.stages.data import Stage
from compiler.stages.schema import STAGES, CaptureData
from tlparse_fixtures import INPUTS, needs_inputs


def rank_changes(x):
    return torch.sin(x) * 2


@pytest.fixture(scope="module")
def recompiled():
    torch._dynamo.reset()
    with compiler.capture() as cap:
        fn = torch.compile(rank_changes, backend="eager")
        fn(torch.ones(3))
        fn(torch.ones(3, 3))  # a rank change: a recompile
    return cap


def test_builders_that_declare_a_type_yield_it(recompiled):
    live = recompiled.live
    data = assemble(live.records, {}, {}, {"backend": "eager"}, {}, None, {})
    typed = [b for b in STAGE_BUILDERS if b.type is not None]
    assert {b.stage for b in typed} >= {"source", "bytecode", "guards", "recompile", "timings", "shapes"}
    for c in data["compiles"]:
        for builder in typed:
            assert type(c[builder.stage]) is builder.type, (c["compile_id"], builder.stage)
    assert type(data["summary"]).__name__ == "Summary"


def test_recompiles_are_held_once_in_the_compiles(recompiled):
    (recompile,) = recompiled.recompiles
    held = recompiled.compile(recompile.compile_id).recompile
    assert recompile.reasons is held.reasons and recompile.name == "rank_changes"
    saved = recompiled.to_data()
    assert saved["recompiles"] == [recompile.to_data()]  # still written, for readers of the format
    saved["recompiles"] = [dict(saved["recompiles"][0], name="edited")]
    loaded = CaptureData.from_data(saved)
    assert [r.name for r in loaded.recompiles] == ["rank_changes"]  # derived, never read back
    assert "_unknown" not in loaded.__dict__


def test_a_with_block_capture_is_made_once_when_the_block_ends():
    with compiler.capture() as cap:
        with pytest.raises(AttributeError, match="made when its with block ends"):
            cap.compiles
        assert "pending" in repr(cap)
        torch.compile(rank_changes, backend="eager")(torch.ones(2))
    assert cap.compiles and cap.proposed_fixes is not None
    with pytest.raises(RuntimeError, match="made once"):
        compiler.Capture.of(CaptureData.from_data(cap.to_data()), into=cap)
    assert not hasattr(compiler.Capture, "_become")


def test_a_saved_capture_round_trips(recompiled, tmp_path):
    path = recompiled.save(tmp_path / "cap.json")
    text = path.read_text()
    assert compiler.load(path).to_json() == text
    assert json.loads(text)["recompiles"][0]["compile_id"] == recompiled.recompiles[0].compile_id


@needs_inputs
def test_what_a_trace_cannot_hold_is_said_as_it_is_built():
    from compiler.readers.trace_capture import UNAVAILABLE

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cap = compiler.load_trace(INPUTS / "simple.log")
    for c in cap.compiles:
        assert c.bytecode.reason == UNAVAILABLE["bytecode"]
        assert all(run.ir.available or run.ir.reason == UNAVAILABLE["ir"] for run in c.inductor.runs)
        assert all(isinstance(getattr(c, stage), Stage) for stage in STAGES)
