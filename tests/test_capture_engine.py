"""The capture engine against real torch.compile runs on CPU; counts are checked against torch's
own counters from the same run, never hard-coded."""
import json
import logging

import pytest
import torch
from torch._dynamo.utils import counters

import compiler


def graph_break_total():
    return sum(counters["graph_break"].values())


def with_print(x):
    y = x.sin() + 1
    print("tcompile-test")
    return y.cos()


def data_dependent(x):
    y = x * 2
    if y.sum() > 0:
        return y + 1
    return y - 1


def test_print_graph_break_matches_counters_and_explain(capsys):
    with compiler.capture() as cap:
        out = torch.compile(with_print, backend="eager")(torch.ones(3))
    assert torch.allclose(out, with_print(torch.ones(3)))
    breaks = cap.breaks
    assert breaks.total == graph_break_total() == 1
    item = breaks.items[0]
    assert item.code == 'print("tcompile-test")'
    assert item.line == with_print.__code__.co_firstlineno + 2
    assert item.gb_code and item.gb_code.startswith("GB")
    assert item.registry.type == item.headline
    assert item.registry.hints
    explained = torch._dynamo.explain(with_print)(torch.ones(3))
    assert cap.summary.graphs == explained.graph_count
    assert cap.summary.graph_breaks == explained.graph_break_count


def test_data_dependent_branch_breaks_and_resumes():
    with compiler.capture() as cap:
        torch.compile(data_dependent, backend="eager")(torch.ones(4))
    explained = torch._dynamo.explain(data_dependent)(torch.ones(4))
    assert cap.breaks.total == explained.graph_break_count == 1
    assert "data-dependent" in cap.breaks.items[0].reason.lower() or "generic_jump" in cap.breaks.items[0].reason
    names = [c.name for c in cap.compiles]
    assert names[0] == "data_dependent"
    assert any(n.startswith("torch_dynamo_resume_in_data_dependent") for n in names)
    resume = next(c for c in cap.compiles if c.name.startswith("torch_dynamo_resume"))
    assert resume.bytecode.available and resume.bytecode.is_resume
    first = cap.compiles[0]
    lines = {i.line for i in first.bytecode.original.instructions}
    assert data_dependent.__code__.co_firstlineno + 2 in lines


def test_shape_and_dtype_recompiles_in_order():
    def f(x):
        return x.relu() * 3

    cf = torch.compile(f, backend="eager", dynamic=False)
    with compiler.capture() as cap:
        cf(torch.ones(4))
        cf(torch.ones(8))
        cf(torch.ones(8, dtype=torch.float64))
    # three frame compiles of one frame (torch counts them in "frames"), so two recompiles
    assert len(cap.compiles) == counters["frames"]["total"] == counters["stats"]["unique_graphs"] == 3
    assert len(cap.recompiles) == counters["frames"]["total"] - 1
    first, second = cap.recompiles
    assert "size mismatch at index 0" in first.reasons[0].guard
    assert first.reasons[0].detail == "expected 4, actual 8"
    assert "dtype mismatch" in second.reasons[0].guard
    assert [r.against for r in second.reasons] == ["0/1", "0/0"]


def test_dynamic_true_graph_has_symbolic_shapes():
    def f(x):
        return x.sum(0) + x.shape[0]

    with compiler.capture() as cap:
        torch.compile(f, backend="eager", dynamic=True)(torch.ones(5, 3))
    graph = cap.compiles[0].graph
    placeholder = next(n for n in graph.nodes if n.op == "placeholder" and n.shape)
    assert any(d.startswith("s") for d in placeholder.shape)
    assert any("Sym(" in (n.type or "") for n in graph.nodes) or "s" in "".join(placeholder.shape)


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def test_module_parameters_have_module_paths_and_guards():
    model = MLP()
    x = torch.randn(2, 8)
    with compiler.capture() as cap:
        out = torch.compile(model, backend="eager")(x)
    assert torch.allclose(out, model(x))
    graph = cap.compiles[0].graph
    modules = {n.module for n in graph.nodes}
    assert {"fc1", "fc2"} <= modules
    linear = [n for n in graph.nodes if n.target.endswith("linear")]
    assert [n.module for n in linear] == ["fc1", "fc2"]
    assert linear[0].shape == ["2", "16"] and linear[0].dtype == "float32"
    guards = cap.compiles[0].guards
    assert guards.count == len(guards.rows) > 0
    tensor_guards = [g for g in guards.rows if g.kind == "TENSOR_MATCH"]
    assert any(g.source == "L['x']" for g in tensor_guards)


def test_training_step_captures_joint_forward_backward_and_lazy_backward():
    model = MLP()
    x = torch.randn(4, 8)
    cm = torch.compile(model, backend="aot_eager")
    with compiler.capture() as cap:
        loss = cm(x).sum()
        loss.backward()
    graphs = cap.compiles[0].aot.graphs
    assert {"forward", "backward"} <= set(graphs)
    assert any("aten.mm" in n.target or "aten.addmm" in n.target for n in graphs["backward"].nodes)
    assert cap.compiles[0].aot.training
    ref = MLP()
    ref.load_state_dict(model.state_dict())
    ref(x).sum().backward()
    assert torch.allclose(model.fc1.weight.grad, ref.fc1.weight.grad)


def test_inference_under_no_grad_has_inference_graph_only():
    model = MLP()
    with torch.no_grad(), compiler.capture() as cap:
        torch.compile(model, backend="aot_eager")(torch.randn(2, 8))
    assert set(cap.compiles[0].aot.graphs) == {"inference"}


def test_fullgraph_failure_keeps_stages_and_names_the_stage():
    with pytest.raises(Exception) as raised:
        with compiler.capture() as cap:
            torch.compile(with_print, backend="eager", fullgraph=True)(torch.ones(3))
    assert cap.error.type == type(raised.value).__name__
    assert "fullgraph" in cap.error.stage
    assert cap.compiles and cap.compiles[0].source.available
    assert "print" in cap.error.message


def test_fullgraph_failure_can_be_kept_instead_of_raised():
    cap = compiler.explore(with_print, torch.ones(3), backend="eager", fullgraph=True, errors="return")
    assert cap.error and "fullgraph" in cap.error.stage
    assert not cap.runtime.available and "failed" in cap.runtime.reason


def failing_backend(gm, example_inputs):
    raise RuntimeError("backend exploded on purpose")


def test_backend_that_raises_is_reported_as_backend_compile():
    def f(x):
        return x + 1

    with pytest.raises(Exception):
        with compiler.capture() as cap:
            torch.compile(f, backend=failing_backend)(torch.ones(2))
    assert cap.error.stage == "backend compile"
    assert "backend exploded on purpose" in (cap.error.cause or cap.error.message)
    assert cap.compiles[0].graph.available  # Dynamo's graph was captured before the backend ran


def test_user_code_exception_is_kept():
    def f(x):
        raise ValueError("user bug")

    with compiler.capture(suppress_errors=True) as cap:
        torch.compile(f, backend="eager")(torch.ones(2))
    assert cap.error.type == "ValueError"
    assert cap.error.stage == "running the user's code"


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_eager_and_aot_eager_backends(backend):
    def f(x):
        return torch.tanh(x) * 2

    cap = compiler.explore(f, torch.randn(3), backend=backend, timing=False)
    c = cap.compiles[0]
    assert c.graph.available and not c.inductor.available
    assert c.aot.available == (backend == "aot_eager")
    if backend == "eager":
        assert "eager" in c.aot.reason
    assert "Inductor" in c.inductor.reason or "inductor" in c.inductor.reason.lower()
    # the backend that ran is the one asked for: torch's own counter of AOTAutograd compiles agrees
    from torch._dynamo.utils import counters
    assert bool(counters["aot_autograd"]["total"]) == (backend == "aot_eager")


def test_what_if_predicts_exactly_the_recompiles_that_happen():
    def f(x, scale):
        return x * scale

    cf = torch.compile(f, backend="eager", dynamic=False)
    with compiler.capture() as cap:
        cf(torch.ones(4), 2)
    candidates = [(torch.ones(4), 2), (torch.ones(5), 2), (torch.ones(4, dtype=torch.float64), 2),
                  (torch.ones(4), 3)]
    predictions = [cap.what_if(f, *args).recompiles for args in candidates]
    observed = []
    for args in candidates:
        before = counters["stats"]["unique_graphs"]
        cf(*args)
        observed.append(counters["stats"]["unique_graphs"] > before)
        torch._dynamo.reset()
        cf(torch.ones(4), 2)
    assert predictions == observed == [False, True, True, True]
    verdict = cap.what_if(f, torch.ones(5), 2)
    assert "size mismatch at index 0" in verdict.as_text()


def test_what_if_on_a_module_and_loaded_capture_refuses(tmp_path):
    model = MLP()
    with compiler.capture() as cap:
        torch.compile(model, backend="eager")(torch.randn(2, 8))
    assert not cap.what_if(model, torch.randn(2, 8)).recompiles
    assert cap.what_if(model, torch.randn(2, 9)).recompiles
    loaded = compiler.load(cap.save(tmp_path / "c.json"))
    with pytest.raises(RuntimeError, match="live guards"):
        loaded.what_if(model, torch.randn(2, 8))


def trace_state():
    from torch._dynamo.convert_frame import _bytecode_hooks
    from torch._logging._internal import trace_log

    from compiler.capturing.records import ARTIFACT_LOGGERS

    loggers = [trace_log] + [logging.getLogger(n) for n in ARTIFACT_LOGGERS.values()]
    import torch._inductor.config as ic

    return ([(lg.name, list(lg.handlers), lg.level, lg.propagate) for lg in loggers],
            dict(_bytecode_hooks), ic.force_disable_caches, ic.fx_graph_cache)


def test_observe_only_everything_restored_on_success_and_error():
    before = trace_state()

    def f(x):
        return (x.sin() * 2).sum()

    x = torch.randn(16)
    with compiler.capture(fresh=True):
        captured = torch.compile(f, backend="eager")(x)
    assert trace_state() == before
    torch._dynamo.reset()
    plain = torch.compile(f, backend="eager")(x)
    assert torch.equal(captured, plain)
    with pytest.raises(ZeroDivisionError):
        with compiler.capture(fresh=True):
            1 / 0
    assert trace_state() == before


def test_save_load_round_trip_and_bad_files(tmp_path):
    with compiler.capture() as cap:
        torch.compile(with_print, backend="eager")(torch.ones(3))
    path = cap.save(tmp_path / "cap.json")
    loaded = compiler.load(path)
    assert loaded == cap and loaded.to_data() == cap.to_data()
    assert loaded.compiles[0].graph.as_text() == cap.compiles[0].graph.as_text()
    assert not loaded.is_live
    text = path.read_text()
    assert json.loads(text)["format"] == "tcompile-capture"  # plain JSON data
    bad_version = text.replace('"version":[4,', '"version":[9,', 1)
    assert bad_version != text
    (tmp_path / "v9.json").write_text(bad_version)
    with pytest.raises(compiler.CaptureFormatError, match="version 9"):
        compiler.load(tmp_path / "v9.json")
    (tmp_path / "junk.json").write_text("{not json")
    with pytest.raises(compiler.CaptureFormatError, match="invalid JSON"):
        compiler.load(tmp_path / "junk.json")
    (tmp_path / "other.json").write_text('{"hello": 1}')
    with pytest.raises(compiler.CaptureFormatError, match="not a tcompile capture"):
        compiler.load(tmp_path / "other.json")


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(error="boom"), r"^error: expected an object, got 'boom'$"),
    (lambda d: d.update(summary=[]), r"^summary: expected an object, got \[\]$"),
    (lambda d: d["compiles"][0].update(guards=5), r"^compiles\[0\]\.guards: expected an object, got 5$"),
    (lambda d: d["compiles"][0]["bytecode"]["transformed"].update(  # a file that keeps the instructions
        instructions=[{"offset": "7"}], instructions_from_text=False),
     r"^compiles\[0\]\.bytecode\.transformed\.instructions\[0\]\.offset: expected an integer, got '7'$"),
    (lambda d: d["compiles"][0]["graph"].update(nodes=[{"line": "7"}]),  # a file that keeps the parsed nodes
     r"^compiles\[0\]\.graph\.nodes\[0\]\.line: expected an integer, got '7'$"),
    (lambda d: d["compiles"][0].pop("compile_id"), r"^compiles\[0\]\.compile_id: missing$"),
    (lambda d: d["breaks"].update(items={}), r"^breaks\.items: expected a list, got \{\}$"),
])
def test_wrongly_shaped_files_name_the_json_path(tmp_path, change, message):
    with compiler.capture() as cap:
        torch.compile(with_print, backend="eager")(torch.ones(3))
    data = cap.to_data()
    change(data)
    with pytest.raises(compiler.CaptureFormatError, match=message):
        compiler.Capture.from_json(json.dumps(data))


def test_unreadable_bytes_and_absurd_nesting_are_format_errors(tmp_path):
    (tmp_path / "latin1.json").write_bytes(b'{"format": "tcompile-capture", "x": "\xff\xfe"}')
    with pytest.raises(compiler.CaptureFormatError, match="not UTF-8"):
        compiler.load(tmp_path / "latin1.json")
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(compiler.CaptureFormatError, match="nested deeper"):
        compiler.load(tmp_path / "deep.json")
    with pytest.raises(compiler.CaptureFormatError, match="cannot read"):
        compiler.load(tmp_path / "missing.json")


def test_unknown_keys_from_a_newer_minor_version_are_kept():
    with compiler.capture() as cap:
        torch.compile(with_print, backend="eager")(torch.ones(3))
    data = cap.to_data()
    data["version"] = [4, 7]
    data["new_capture_field"] = {"a": 1}
    data["compiles"][0]["graph"]["new_stage_field"] = [1, 2]
    loaded = compiler.Capture.from_json(json.dumps(data))
    assert loaded.to_data()["new_capture_field"] == {"a": 1}
    assert loaded.compiles[0].graph.to_data()["new_stage_field"] == [1, 2]
    assert loaded.to_data() == data


def test_unknown_records_are_kept_and_counted():
    from torch._logging import trace_structured

    with compiler.capture() as cap:
        trace_structured("tcompile_test_event", metadata_fn=lambda: {"x": 1}, payload_fn=lambda: "hello")
    assert cap.unknown_records == {"tcompile_test_event": 1}
    assert cap.extra_records[0]["payload"] == "hello"


def test_environment_and_options_recorded():
    cap = compiler.explore(lambda x: x + 1, torch.ones(2), backend="eager", dynamic=False, timing=False)
    env = cap.environment
    assert env["torch"] == torch.__version__
    assert env["device"] == ("cuda" if torch.cuda.is_available() else "cpu")
    c = cap.compiles[0]
    assert c.graph.available and "Sym(" not in c.graph.code  # dynamic=False took effect: static sizes
    assert not c.shapes.symbols
    with pytest.raises(TypeError, match="unknown torch.compile option"):
        compiler.explore(lambda x: x, torch.ones(1), bakend="eager")


def test_fullgraph_break_is_listed_as_a_fatal_graph_break():
    cap = compiler.explore(with_print, torch.ones(3), backend="eager", fullgraph=True, errors="return")
    (item,) = cap.breaks.items
    assert item.fatal and item.code == 'print("tcompile-test")' and item.gb_code == "GB0059"
    assert cap.summary.graph_breaks == 1


def test_resume_function_shows_the_function_it_resumes():
    cap = compiler.explore(with_print, torch.ones(3), backend="eager", timing=False)
    resume = next(c for c in cap.compiles if c.name.startswith("torch_dynamo_resume"))
    assert resume.source.resumes == "with_print"
    assert resume.source.text == cap.compiles[0].source.text
    assert resume.source.resume_line == with_print.__code__.co_firstlineno + 2


def test_timing_is_quiet_and_works_on_copies(capsys):
    def bump(x):
        x.add_(1)
        print("side effect")
        return x * 2

    x = torch.zeros(3)
    cap = compiler.explore(bump, x, backend="eager", repeat=3)
    assert torch.equal(x, torch.ones(3))  # only the captured call touched the caller's tensor
    assert capsys.readouterr().out.count("side effect") == 1
    assert cap.first_call_s > 0 and cap.runtime.available


def test_capture_from_error_holds_only_the_error():
    try:
        compile("x = (", "<cell>", "exec")
    except SyntaxError as exc:
        cap = compiler.Capture.from_error(exc, stage="parsing the cell")
    assert cap.error.stage == "parsing the cell" and cap.compiles == []
    assert compiler.Capture.from_json(cap.to_json()) == cap


def test_what_if_with_only_the_frame_code():
    def f(x, y):
        return x + y

    with compiler.capture() as cap:
        torch.compile(f, backend="eager", dynamic=False)(torch.ones(2), torch.ones(2))
    code = cap.frame_code()
    assert code is f.__code__
    assert not cap.what_if(code, torch.ones(2), y=torch.ones(2)).recompiles
    assert cap.what_if(code, torch.ones(3), torch.ones(3)).recompiles
    with pytest.raises(TypeError, match="missing y"):
        cap.what_if(code, torch.ones(2))


def test_a_stage_parser_failure_costs_only_that_stage(monkeypatch):
    import compiler.stages.assemble as assemble

    def broken(*args):
        raise ValueError("unexpected format")

    monkeypatch.setattr(assemble, "guards_stage", broken)
    with compiler.capture() as cap:
        out = torch.compile(with_print, backend="eager")(torch.ones(3))
    assert torch.allclose(out, with_print(torch.ones(3)))
    c = cap.compiles[0]
    assert not c.guards.available and "could not parse" in c.guards.reason and "unexpected format" in c.guards.reason
    assert c.graph.available and cap.breaks.total == 1


def test_a_run_copies_the_arguments_once_and_never_touches_the_callers_tensors(monkeypatch):
    """The captured call runs on the caller's own arguments (as their call would); every later call —
    timing, kernel times — runs on one copy made once per run (compiler.capturing.runtime.copy_arguments)."""
    import compiler.capturing.run as run_mod
    import compiler.capturing.runtime as runtime_mod

    copies = []
    original = runtime_mod.copy_arguments

    def counting(*args, **kwargs):
        copies.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(run_mod, "copy_arguments", counting)
    monkeypatch.setattr(runtime_mod, "copy_arguments", counting)

    def bump(x):
        x.add_(1)
        return x * 2

    x = torch.zeros(4)
    cap = compiler.explore(bump, x, backend="eager", repeat=3)
    assert cap.runtime.available and cap.runtime.eager.samples == 3
    assert torch.equal(x, torch.ones(4))  # the captured call only; hundreds of timed calls never reached x
    assert copies == [1]


def test_capture_is_built_on_first_use_once_and_the_artifact_loggers_are_off_again(monkeypatch):
    """The block ends without assembling (issue 22: the parse is most of the capture's cost per compile);
    the first read builds the capture once — also when threads read it together — with the same content."""
    import threading

    import compiler.capturing.session as session
    from compiler.capturing.records import ARTIFACT_LOGGERS
    from compiler.stages.capture import Capture

    builds = []
    original = session.Recorder.build
    monkeypatch.setattr(session.Recorder, "build", lambda self, *a, **k: builds.append(1) or original(self, *a, **k))
    ir_pre = logging.getLogger(ARTIFACT_LOGGERS["ir_pre_fusion"])
    enabled_before = ir_pre.isEnabledFor(logging.INFO)
    with compiler.capture() as cap:
        assert ir_pre.isEnabledFor(logging.INFO)  # the IR logger is on inside (torch checks this)
        torch.compile(with_print, backend="eager")(torch.ones(3))
    assert ir_pre.isEnabledFor(logging.INFO) == enabled_before  # … and its cached answer is off again after
    assert builds == [] and type(cap) is not Capture  # nothing parsed yet
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(cap.breaks.total)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert builds == [1] and type(cap) is Capture
    assert seen == [graph_break_total()] * 4 == [1] * 4
    assert [r.kind for r in cap.live.records if r.kind == "dynamo_start"] == ["dynamo_start"] * len(cap.compiles)
    assert cap.compiles[0].bytecode.available and cap.compiles[0].bytecode.original.instructions
