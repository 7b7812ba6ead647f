"""The capture is typed from the records on and made once (issue 21, item 3): every stage builder declares
a type and yields it (the Inductor runs, kernels and provenance included, with what was
measured after the compile built in), recompiles are held once, a ``with capture()`` block's capture is made once
when the block ends, and what a trace cannot hold is said in the build, not patched in afterwards."""
import json
import math
import warnings

import pytest
import torch

import compiler
from compiler.stages.assemble import STAGE_BUILDERS, assemble
from compiler.stages.data import Deferred, Stage
from compiler.stages.schema import (STAGES, Amortization, Autotune, Breaks, CacheEntry, Caches, CaptureData, Compile, CudaGraphs, GeneratedCode, Graph,
                                    Inductor, InductorIR, InductorRun, Kernel, KernelProvenance, Kernels,
                                    LineProvenance, Provenance, ProvenanceNode, SkippedFrame)
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
    for c in data.compiles:
        for builder in typed:
            assert type(getattr(c, builder.stage)) is builder.type, (c.compile_id, builder.stage)
    assert type(data.summary).__name__ == "Summary"


def breaks_once(x):
    y = torch.cos(x) + 1
    print("a graph break")
    return y.relu()


@pytest.fixture(scope="module")
def broken():
    torch._dynamo.reset()
    with compiler.capture(fresh=True) as cap:
        torch.compile(breaks_once)(torch.ones(4))
    return cap


def test_every_builder_declares_its_type():
    assert [b.stage for b in STAGE_BUILDERS if b.type is None] == []


@pytest.mark.parametrize("which, backend", [("recompiled", "eager"), ("broken", "inductor")])
def test_each_builder_returns_its_declared_type(which, backend, request, monkeypatch):
    """No dict between the records and the Compile: each builder of ``STAGE_BUILDERS`` itself returns its
    declared stage type (``build_stages`` converts nothing)."""
    from compiler.stages import assemble as assemble_mod

    records = request.getfixturevalue(which).live.records  # the capture is made before the check
    guarded, returned = assemble_mod._guarded, []

    def checking(stage_type, build, *args):
        built = guarded(stage_type, build, *args)
        # provenance is given as a Deferred of its type, built on its first read (data.Deferred)
        returned.append((stage_type, built.type if type(built) is Deferred else type(built)))
        return built

    monkeypatch.setattr(assemble_mod, "_guarded", checking)
    data = assemble(records, {}, {}, {"backend": backend}, {}, None, {})
    assert len(returned) == len(STAGE_BUILDERS) * len(data.compiles)
    assert [(declared.__name__, got.__name__) for declared, got in returned if got is not declared] == []
    assert all(built.available for c in data.compiles for built in (c.graph, c.guards, c.timings, c.caches))


def test_capture_wide_stages_and_the_inductor_ir_are_typed_as_built(broken):
    data = assemble(broken.live.records, {}, {}, {"backend": "inductor"}, {}, None, {})
    assert type(data.breaks) is Breaks and data.breaks.total == 1 == data.summary.graph_breaks
    assert type(data.cudagraphs) is CudaGraphs and not data.cudagraphs.available
    assert all(type(item) is SkippedFrame for item in data.skipped_frames)
    runs = [run for c in data.compiles for run in c.inductor.runs]
    assert runs and all(type(run.ir) is InductorIR and run.ir.available for run in runs)
    # the fusion rows know their kernels when the IR is typed (kernels.kernel_of_nodes ran before, not after)
    kernels = {k.name for run in runs for k in run.code.kernels}
    assert all(row.kernel in kernels for run in runs for row in run.ir.fusion if row.kernel)
    assert any(row.kernel for run in runs for row in run.ir.fusion)


def test_the_inductor_runs_kernels_provenance_and_amortization_are_typed_as_built(broken):
    data = assemble(broken.live.records, {}, {}, {"backend": "inductor"}, {}, None, {})
    for c in data.compiles:
        assert type(c.inductor) is Inductor and c.inductor.available
        for run in c.inductor.runs:
            assert type(run) is InductorRun and type(run.code) is GeneratedCode and run.code.available
            assert type(run.pre_grad) is Graph and type(run.post_grad) is Graph and run.post_grad.available
            assert all(type(k) is Kernel for k in run.code.kernels)
        # the compile's kernels are its runs' kernels, each named by its run's role: the same objects, not copies
        assert type(c.kernels) is Kernels and c.kernels.available
        rows, own = c.kernels.kernels, [k for run in c.inductor.runs for k in run.code.kernels]
        assert len(rows) == len(own) and rows
        assert all(type(k) is Kernel and k is o for k, o in zip(rows, own))
        assert all(k.role == run.role for run in c.inductor.runs for k in run.code.kernels)
        provenance = c.provenance
        assert type(provenance) is Provenance and provenance.available
        assert all(type(n) is ProvenanceNode for n in provenance.nodes)
        assert all(type(k) is KernelProvenance for k in provenance.kernels) and provenance.kernels
        assert all(type(row) is LineProvenance for row in provenance.lines) and provenance.lines
        # the nodes provenance reads are the typed graph's nodes
        dynamo = [n.name for n in provenance.nodes if n.level == "dynamo"]
        assert dynamo == [n.name for n in c.graph.nodes if n.op not in ("placeholder", "output", "alias")]
        assert type(c.amortization) is Amortization
        assert type(c.caches) is Caches and all(type(e) is CacheEntry for e in c.caches.entries)


def test_measured_times_are_built_into_provenance_and_amortization(broken):
    """What was measured after the compile is an input of the build: each kernel's CPU time is spread over
    its lines as provenance is built, and the amortization weighs the saving per call against the compile."""
    first = next(c for c in broken.compiles if c.kernels.available)
    aot_id = first.inductor.runs[0].code.aot_id
    names = [k.name for k in first.kernels.kernels]
    kernel_times = {"available": True, "function_calls": 2, "method": "a test's times",
                    "modules": {aot_id: {name: {"seconds": 0.2, "calls": 2} for name in names}},
                    "compiles": {first.compile_id: 2}}
    runtime = {"eager": {"median_s": 3.0}, "compiled": {"median_s": 1.0}}
    data = assemble(broken.live.records, {}, {}, {"backend": "inductor"}, {}, None, {},
                    measurements={"kernel_times": kernel_times, "runtime": runtime})
    c = next(c for c in data.compiles if c.compile_id == first.compile_id)
    provenance = c.provenance
    assert provenance.time_source == "a test's times"
    assert {k.name: k.seconds for k in provenance.kernels} == {name: pytest.approx(0.1) for name in names}
    assert sum(row.time_share or 0 for row in provenance.lines) == pytest.approx(1.0)
    amortization = c.amortization
    assert type(amortization) is Amortization and amortization.saving_per_call_s == pytest.approx(2.0)
    assert amortization.calls_per_function_call == 1.0
    assert amortization.break_even_calls == math.ceil(amortization.compile_s / 2.0)


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


def test_autotune_choices_are_built_into_the_caches_stage(broken):
    """The autotune choices recorded beside the records are an input of the compile's build: its caches stage
    says autotuning ran as it is built (not edited after), and the choices are typed."""
    from compiler.stages.caches import AUTOTUNE

    cid = broken.compiles[0].compile_id
    choice = {"compile_id": cid, "op": "mm", "input_sizes": [[4, 4]], "choices": []}
    plain = assemble(broken.live.records, {}, {}, {"backend": "inductor"}, {}, None, {})
    tuned = assemble(broken.live.records, {}, {}, {"backend": "inductor"}, {}, None, {}, autotune=[choice])
    state = {c.compile_id: c.caches.state(AUTOTUNE) for c in plain.compiles}
    assert state[cid] == "not used"
    for c in tuned.compiles:
        assert c.caches.state(AUTOTUNE) == ("ran" if c.compile_id == cid else state[c.compile_id])
        assert all(type(a) is Autotune for a in c.autotune) and len(c.autotune) == (c.compile_id == cid)


def test_the_compiles_and_the_capture_data_are_made_once(broken, monkeypatch):
    """``assemble`` returns typed data, each ``Compile`` and the ``CaptureData`` made once: nothing is set on
    either after it is made (a compile's name from its frame, a resume function's source and each compile's
    amortization are read across compiles before the compiles are made)."""
    made = set()

    def marking(post_init):
        def wrapped(self):
            post_init(self)
            made.add(id(self))
        return wrapped

    def refusing(self, name, value):
        assert id(self) not in made, f"{type(self).__name__}.{name} set after it was made"
        object.__setattr__(self, name, value)

    for cls in (Compile, CaptureData):
        monkeypatch.setattr(cls, "__post_init__", marking(cls.__post_init__))
        monkeypatch.setattr(cls, "__setattr__", refusing)
    data = assemble(broken.live.records, {}, {}, {"backend": "inductor"}, {}, None, {})
    assert type(data) is CaptureData and data.compiles and all(type(c) is Compile for c in data.compiles)
    assert {id(data), *map(id, data.compiles)} <= made
    (resumed,) = [c for c in data.compiles if c.source.resumes]
    assert resumed.source.resumes == "breaks_once" and resumed.name.startswith("torch_dynamo_resume_in_breaks_once")
    assert resumed.source.name == resumed.name and "def breaks_once" in resumed.source.text
