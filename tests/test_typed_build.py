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
from compiler.stages.schema import STAGES, Breaks, CaptureData, CudaGraphs, InductorIR, SkippedFrame
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
    assert {b.stage for b in typed} >= {"source", "bytecode", "graph", "guards", "recompile", "aot", "timings", "shapes"}
    for c in data["compiles"]:
        for builder in typed:
            assert type(c[builder.stage]) is builder.type, (c["compile_id"], builder.stage)
    assert type(data["summary"]).__name__ == "Summary"


def breaks_once(x):
    y = torch.cos(x) + 1
    print("a graph break")
    return y.relu()


def test_capture_wide_stages_and_the_inductor_ir_are_typed_as_built():
    torch._dynamo.reset()
    with compiler.capture(fresh=True) as cap:
        torch.compile(breaks_once)(torch.ones(4))
    data = assemble(cap.live.records, {}, {}, {"backend": "inductor"}, {}, None, {})
    assert type(data["breaks"]) is Breaks and data["breaks"].total == 1 == data["summary"].graph_breaks
    assert type(data["cudagraphs"]) is CudaGraphs and not data["cudagraphs"].available
    assert all(type(item) is SkippedFrame for item in data["skipped_frames"])
    runs = [run for c in data["compiles"] for run in c["inductor"]["runs"]]
    assert runs and all(type(run["ir"]) is InductorIR and run["ir"].available for run in runs)
    # the fusion rows know their kernels when the IR is typed (kernels.kernel_of_nodes ran before, not after)
    kernels = {k["name"] for run in runs for k in run["code"]["kernels"]}
    assert all(row.kernel in kernels for run in runs for row in run["ir"].fusion if row.kernel)
    assert any(row.kernel for run in runs for row in run["ir"].fusion)
    # provenance, which still reads graph nodes as data, sees the same nodes as the typed graph
    for c in data["compiles"]:
        dynamo = [n["name"] for n in c["provenance"]["nodes"] if n["level"] == "dynamo"]
        assert dynamo == [n.name for n in c["graph"].nodes if n.op not in ("placeholder", "output", "alias")]


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
