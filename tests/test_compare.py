"""Compare configurations, diff captures, knobs as data, torch.jit.trace as input — with real compiles
on CPU (backend="eager"/"aot_eager" where Inductor is not the point; one Inductor comparison)."""
from __future__ import annotations

import json
import zlib
from html import escape

import pytest
import torch

from compiler import experiments, knobs
from compiler.analyses.compare import compare
from compiler.analyses.configurations import parse_compare_spec
from compiler.analyses.comparison import Comparison
from compiler.analyses.diff import CaptureDiff, diff, side_by_side
from compiler.analyses.jit_input import explore_jit_trace
from compiler.stages.capture import CaptureFormatError


def softmax_fn(x, w):
    return torch.softmax(x @ w, dim=-1).sum(0) + x.shape[0]


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.lin(x)) * 2


def helper(x):
    print("side effect in helper")  # a graph break (print)
    return x * 2


def calls_helper(x):
    y = x.sin()
    y = helper(y)
    return y.cos()


def calls_crc32(x):
    y = x.sin()
    n = zlib.crc32(b"abc") % 3  # a C function Dynamo skips: one graph break
    return y.cos() * n


def crc32_polyfill(data, value=0):
    value = ~value & 0xFFFFFFFF
    for byte in data:
        value ^= byte
        for _ in range(8):
            value = (value >> 1) ^ (0xEDB88320 & -(value & 1))
    return ~value & 0xFFFFFFFF


def traceable(x, y):
    return (x.sin() + y).cos()


X = torch.randn(32, 16)
W = torch.randn(16, 16)


# --- the spec ------------------------------------------------------------------------------------

def test_parse_compare_spec():
    assert [c["mode"] for c in parse_compare_spec("mode=default,reduce-overhead,max-autotune")] == \
        ["default", "reduce-overhead", "max-autotune"]
    assert [c["label"] for c in parse_compare_spec("backend=eager,aot_eager,inductor")] == \
        ["backend=eager", "backend=aot_eager", "backend=inductor"]
    baseline, option = parse_compare_spec('options={"epilogue_fusion": False}')
    assert baseline == {"label": "baseline (no options)"} and option["options"] == {"epilogue_fusion": False}
    assert [c["dynamic"] for c in parse_compare_spec("dynamic=true,false")] == [True, False]
    grid = parse_compare_spec("backend=eager,aot_eager; dynamic=true,false")
    assert len(grid) == 4 and grid[1] == {"backend": "eager", "dynamic": False, "label": "backend=eager, dynamic=false"}
    assert parse_compare_spec("recompile_limit=1")[0]["dynamo_config"] == {"recompile_limit": 1}
    assert parse_compare_spec("guard_filter=skip_guard_on_globals_unsafe")[0]["options"]["guard_filter_fn"] is \
        torch.compiler.skip_guard_on_globals_unsafe
    for bad in ("colour=red", "mode", "dynamic=maybe", "options=[1]"):
        with pytest.raises(ValueError):
            parse_compare_spec(bad)


# --- compare: eager backends, a missing package, save/load -------------------------------------

@pytest.fixture(scope="module")
def backends_cmp():
    return compare(softmax_fn, X, W, configs="backend=eager,aot_eager,tvm")


def test_compare_backends_keeps_errors_per_config(backends_cmp):
    rows = {r.label: r for r in backends_cmp.rows()}
    assert rows["backend=eager"].ok and rows["backend=aot_eager"].ok
    for label in ("backend=eager", "backend=aot_eager"):
        row = rows[label]
        assert row.graphs == 1 and row.graph_breaks == 0 and row.recompiles == 0 and row.guards > 0
        assert row.compile_s > 0 and row.runtime_s > 0 and row.speedup > 0
        assert row.cudagraphs == "off"
    tvm = rows["backend=tvm"]
    if knobs.missing_package("No module named 'tvm'") and not _importable("tvm"):
        assert not tvm.ok and tvm.missing_package == "apache-tvm"
        assert "apache-tvm" in tvm.error and tvm.error_stage == "backend compile"
    assert backends_cmp.capture("backend=eager").options["label"] == "backend=eager"


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def test_comparison_save_load_round_trip(backends_cmp, tmp_path):
    path = backends_cmp.save(tmp_path / "cmp.json")
    loaded = Comparison.load(path)
    assert loaded == backends_cmp and [r.to_data() for r in loaded.rows()] == [r.to_data() for r in backends_cmp.rows()]
    assert loaded.captures[0] is not None and not loaded.captures[0].is_live
    assert loaded.diff(0, 1).data == backends_cmp.diff(0, 1).data
    json.loads(path.read_text())  # plain JSON
    data = json.loads(path.read_text())
    data["version"] = [99, 0]
    with pytest.raises(CaptureFormatError):
        Comparison.from_json(json.dumps(data))
    with pytest.raises(CaptureFormatError):
        Comparison.from_json(json.dumps({"format": "tcompile-capture"}))


def test_bad_config_is_kept_not_fatal():
    cmp = compare(softmax_fn, X, W, timing=False, warmup=False,
                  configs=[{"backend": "eager"}, {"mode": "default", "options": {"epilogue_fusion": False}},
                           {"backend": "eager", "colour": "red"}])
    ok, both, unknown = cmp.rows()
    assert ok.ok and not both.ok and not unknown.ok
    assert both.error_stage.startswith("torch.compile arguments") and "colour" in unknown.error
    with pytest.raises(ValueError):
        cmp.diff(0, 1)


# --- one Inductor comparison: three modes in one call -------------------------------------------

@pytest.fixture(scope="module")
def modes_cmp():
    return compare(softmax_fn, X, W, configs="mode=default,reduce-overhead,max-autotune")


def test_three_modes_compile_and_record_their_options(modes_cmp, artifact_dir):
    assert [e.error for e in modes_cmp.entries] == [None, None, None]
    for entry, cap in zip(modes_cmp.entries, modes_cmp.captures):
        mode = entry.config["mode"]
        assert cap.options["mode"] == mode and cap.options["fresh"] is True
        assert entry.mode_options == torch._inductor.list_mode_options(mode)
        assert cap.summary.kernels >= 1 and cap.compiles[0].kernels.available
    rows = modes_cmp.rows()
    assert rows[0].cudagraphs == "off"
    assert rows[1].cudagraphs == rows[2].cudagraphs == "requested, not used (no CUDA)"
    assert modes_cmp.entries[2].mode_options["max_autotune"] is True
    # the wall time is accounted for, part by part (how fast each part is: bench/compare_accounting.py)
    acc = modes_cmp.accounting.to_data()
    (artifact_dir / "modes_accounting.json").write_text(json.dumps(acc, indent=1))
    assert acc["warmup_s"] > 0 and acc["compile_s"] > 0 and acc["timing_s"] > 0
    assert acc["compile_s"] == pytest.approx(sum(cap.summary.compile_time_s for cap in modes_cmp.captures))
    parts = acc["warmup_s"] + acc["explore_s"] + acc["timing_s"] + acc["eager_check_s"] + acc["other_s"]
    assert parts == pytest.approx(acc["wall_s"])


def test_mode_diff_lists_option_changes(modes_cmp):
    from explorer.views.compare import render_compare_static

    html = render_compare_static(modes_cmp, 0, 2)
    assert "Inductor options set by the mode" in html and "coordinate_descent_tuning" in html

    d = modes_cmp.diff("mode=default", "mode=max-autotune")
    options = {r.label: r for r in d.stage("summary").options}
    assert options["mode"].changed and options["mode"].b == "max-autotune"
    assert d.stage("kernels").available and d.stage("inductor").available


# --- diff ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def dynamic_cmp():
    return compare(softmax_fn, X, W, configs="dynamic=true,false", backend="aot_eager", timing=False)


def test_diff_dynamic_shows_real_differences(dynamic_cmp):
    d = dynamic_cmp.diff("dynamic=true", "dynamic=false")
    assert {"graph", "guards", "aot"} <= set(d.changed_stages)
    graph = d.stage("graph").items[0]
    assert graph.status == "changed" and "Sym(s" in graph.a and "Sym(s" not in graph.b
    rows = side_by_side(graph)
    assert any(r["tag"] != "equal" for r in rows) and all({"a", "b", "a_no", "b_no"} <= set(r) for r in rows)
    guards = d.stage("guards")
    assert any(g.kind == "LAMBDA_GUARD" and "size()" in g.condition for g in guards.removed)
    assert any("size=[32, 16]" in g.condition for g in guards.added)
    assert "+" in graph.unified and "-" in graph.unified
    assert d.stage("timings").available and d.stage("inductor").available is False  # no Inductor


def test_diff_of_two_saved_captures(dynamic_cmp, tmp_path):
    a, b = dynamic_cmp.captures
    pa, pb = a.save(tmp_path / "a.json"), b.save(tmp_path / "b.json")
    from_files = diff(pa, pb)
    assert from_files.data == diff(a, b).data
    assert diff(a, a).changed_stages == []
    saved = CaptureDiff.load(from_files.save(tmp_path / "d.json"))
    assert saved.changed_stages == from_files.changed_stages and "Dynamo graph" in saved.as_text()


def test_kernel_matching():
    from compiler.analyses.diff import match_kernels
    from compiler.stages.schema import Kernel

    a = [Kernel(name="cpp_fused_relu_0", aten_ops=["relu"]), Kernel(name="cpp_fused_mul_1", aten_ops=["mul"]),
         Kernel(name="extern_kernels.mm")]
    b = [Kernel(name="cpp_fused_relu_1", aten_ops=["relu"]), Kernel(name="extern_kernels.mm"),
         Kernel(name="cpp_fused_add_0", aten_ops=["add"])]
    pairs = {(x and x.name, y and y.name) for x, y in match_kernels(a, b)}
    assert pairs == {("extern_kernels.mm", "extern_kernels.mm"), ("cpp_fused_relu_0", "cpp_fused_relu_1"),
                     ("cpp_fused_mul_1", None), (None, "cpp_fused_add_0")}


# --- knobs ----------------------------------------------------------------------------------------

def test_backends_list_says_what_works_here():
    rows = {r["name"]: r for r in knobs.backends(probe=["eager", "aot_eager", "tvm", "openxla"])}
    assert {"eager", "aot_eager", "inductor"} <= set(rows)
    assert rows["eager"]["works"] and rows["aot_eager"]["works"] and rows["inductor"]["works"] is None
    assert rows["inductor"]["listed_by_default"] and "debug" in rows["eager"]["tags"]
    if not _importable("tvm"):
        assert rows["tvm"]["works"] is False and rows["tvm"]["missing"] == {"module": "tvm", "package": "apache-tvm"}
    if not _importable("torch_xla"):
        assert rows["openxla"]["missing"]["module"] == "torch_xla"


def test_modes_options_and_stances_as_data():
    assert knobs.mode_options("max-autotune")["max_autotune"] is True
    assert knobs.mode_options("default") == {} and "reduce-overhead" in knobs.mode_options()
    options = {r["name"]: r for r in knobs.inductor_options()}
    assert set(options) == set(torch._inductor.list_options()) - {"TYPE_CHECKING"}
    assert options["epilogue_fusion"]["doc"] == "fuse pointwise into templates epilogues"
    assert options["epilogue_fusion"]["value"] is True and options["triton.cudagraphs"]["doc"]
    assert all("fusion" in r["name"] or "fusion" in (r["doc"] or "").lower() for r in knobs.inductor_options("fusion"))
    limit = {r["name"]: r for r in knobs.dynamo_options("recompile_limit")}["recompile_limit"]
    assert limit["value"] == torch._dynamo.config.recompile_limit and "cache entries" in limit["doc"]
    names = [s["name"] for s in knobs.stances()]
    assert names[:2] == ["default", "force_eager"] and "fail_on_recompile" in names
    assert all(s["description"] for s in knobs.stances())


def test_guard_filters_remove_guards():
    result = experiments.guard_filter_effects(Net(), torch.randn(4, 8))
    baseline = result["baseline"]["guards"]
    by_name = {f["name"]: f for f in result["filters"]}
    assert set(by_name) == set(knobs.GUARD_FILTERS)
    for name, effect in by_name.items():
        assert effect["error"] is None
        assert effect["guards"] < baseline and effect["removed"], name
        assert effect["guards"] == baseline - len(effect["removed"]) + len(effect["added"])
    assert all(g["source"].startswith("L['self']") for g in by_name["skip_guard_on_all_nn_modules_unsafe"]["removed"])
    assert all(g["source"].startswith("G[") for g in by_name["skip_guard_on_globals_unsafe"]["removed"])
    assert all(g["kind"] != "TENSOR_MATCH" or "L['x']" not in g["source"]
               for g in by_name["keep_tensor_guards_unsafe"]["removed"])


def test_disable_and_allow_in_graph_change_graph_breaks(capsys):
    rows = experiments.graph_break_effects(calls_helper, torch.randn(4), target="helper")
    counts = {r["variant"]: (r["graph_breaks"], r["graphs"]) for r in rows}
    assert counts == {"as is": (2, 3), "torch.compiler.disable(helper)": (1, 2),
                      "torch.compiler.allow_in_graph(helper)": (0, 1)}
    assert all(r["consistent"] for r in rows)  # the capture agrees with torch._dynamo.explain
    assert calls_helper.__globals__["helper"] is helper  # the swap was undone


def test_substitute_in_graph_removes_a_graph_break():
    before, after = experiments.substitute_effect(calls_crc32, torch.randn(4), original=zlib.crc32,
                                            polyfill=crc32_polyfill, skip_signature_check=True)
    assert (before["graph_breaks"], before["explain_graph_breaks"]) == (1, 1)
    if after["note"] is None:  # torch refuses a second registration in one process
        assert (after["graph_breaks"], after["explain_graph_breaks"]) == (0, 0)
    assert zlib.crc32(b"abc") == crc32_polyfill(b"abc")


def test_recompile_limit_behaviour():
    def f(x):
        return x.sin() * x.shape[0]

    result = experiments.recompile_limit_effect(f, [(torch.randn(n),) for n in (1, 2, 3, 4, 2)], limit=2, dynamic=False)
    assert [c["status"] for c in result["calls"]] == [
        "compiled", "recompiled", "hit the recompile limit: ran eagerly",
        "ran eagerly (the frame stopped compiling after the limit)", "reused compile 0/1"]
    assert result["limit_hit"] and result["recompiles"] == 2 and result["gb_code"] == "GB0039"


# --- torch.jit.trace as input ------------------------------------------------------------------

def test_jit_trace_function_is_inlined_by_dynamo():
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    cmp = explore_jit_trace(traceable, (x, y), check_trace=True, check_inputs=[(torch.randn(2, 8), torch.randn(2, 8))],
                            check_tolerance=1e-4, strict=True, backend="eager", timing=False)
    info = cmp.jit_trace
    assert info.kind == "ScriptFunction" and info.inlines_original
    assert info.parameters["check_tolerance"] == 1e-4 and info.parameters["check_inputs"] == "1 input set(s)"
    assert any("deprecated" in w for w in info.warnings)
    traced, direct = cmp.captures
    assert traced.summary.graphs == direct.summary.graphs == 1
    assert traced.compiles[0].name == "inner"  # torch's wrapper frame around the inlined function
    assert "the traced graph has the same operations as compiling fn directly" in info.findings
    assert "graph" in cmp.diff(0, 1).changed_stages  # input names differ: L['args'][0] vs L['x']


def test_jit_trace_module_is_not_compiled():
    x = torch.randn(4, 8)
    cmp = explore_jit_trace(Net(), x, backend="eager", repeat=3)
    info = cmp.jit_trace
    assert info.kind == "TopLevelTracedModule" and "aten::relu" in info.graph
    traced, direct = cmp.captures
    assert traced.summary.compiles == 0 and direct.summary.graphs == 1
    assert any("Dynamo compiled nothing" in f for f in info.findings)
    assert info.torchscript_runtime["available"]


def test_jit_trace_kwarg_inputs_and_trace_errors():
    x, y = torch.randn(3), torch.randn(3)
    cmp = explore_jit_trace(traceable, example_kwarg_inputs={"x": x, "y": y}, strict=False, check_trace=False,
                            backend="eager", timing=False)
    assert cmp.jit_trace.parameters["example_kwarg_inputs"] == ["x", "y"]
    assert cmp.captures[0].summary.graphs == 1
    failing = explore_jit_trace(lambda x: x.nonexistent(), (x,), backend="eager", timing=False)
    assert failing.entries[0].error.stage == "torch.jit.trace"
    assert failing.rows()[0].ok is False


# --- views, widget, magic ------------------------------------------------------------------------

def test_views_escape_and_render(dynamic_cmp, backends_cmp):
    from explorer.views.compare import render_compare_static
    from explorer.views.diff import render_diff

    dynamic_cmp.entries[0].label = "<b>dyn</b>"
    try:
        html = render_compare_static(dynamic_cmp)
    finally:
        dynamic_cmp.entries[0].label = "dynamic=true"
    assert "<b>dyn</b>" not in html and "&lt;b&gt;dyn&lt;/b&gt;" in html
    assert "tc-diff-del" in html or "tc-diff-old" in html
    assert html.count("<style>") == 2
    failed = render_compare_static(backends_cmp)
    if not _importable("tvm"):
        assert "apache-tvm" in failed and "tc-cmp-failed" in failed
    d = dynamic_cmp.diff(0, 1)
    shown = {"graph": "Sym(s", "guards": "size=[32, 16]", "aot": "Sym(s"}  # what differs, drawn in the pane
    for stage in ("summary", "graph", "guards", "aot", "inductor", "kernels", "timings"):
        pane = render_diff(d, stage)
        assert "dynamic=true" in pane and "dynamic=false" in pane  # both configurations are named
        if not d.stage(stage).available:  # no Inductor with aot_eager: the pane says why
            assert escape(d.stage(stage).reason) in pane, stage
        elif stage in shown:
            assert shown[stage] in pane, stage


def test_compare_widget(dynamic_cmp):
    from explorer.compare_widget import CompareExplorer

    widget = CompareExplorer(dynamic_cmp)
    assert "Dynamo graph" in widget.pane.value
    assert widget.stage.label == "Changed stages"  # never a blank dropdown
    widget.stage.value = "guards"
    assert "only in" in widget.pane.value
    widget.config_b.value = 0
    assert "same configuration" in widget.pane.value
    bundle = widget._repr_mimebundle_()
    assert "text/html" in bundle and "tcompile comparison" in bundle["text/plain"]


def test_run_compare_magic(monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell

    from explorer import compare_magic

    shell = InteractiveShell.instance()
    shell.run_cell("import torch\nx = torch.arange(4.0)")
    shown = []
    monkeypatch.setattr(compare_magic, "show", shown.append)
    value = compare_magic.run_compare(shell, "backend=eager,aot_eager", "y = x.sin() * 2\ny.sum()",
                                      {"name": "cmp", "repeat": 3})
    comparison = shell.user_ns["cmp"]
    assert shown == [comparison] and comparison.labels == ["backend=eager", "backend=aot_eager"]
    assert torch.equal(shell.user_ns["y"], torch.arange(4.0).sin() * 2) and torch.equal(value, shell.user_ns["y"].sum())
    assert all(r.ok and r.graphs == 1 for r in comparison.rows())


def test_tcompile_compare_cell_magic(monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell

    from explorer import compare_magic

    shell = InteractiveShell.instance()
    shell.extension_manager.load_extension("explorer")
    shell.run_cell("import torch\nx = torch.arange(4.0)")
    shown = []
    monkeypatch.setattr(compare_magic, "show", shown.append)
    shell.run_cell_magic("tcompile", "--compare backend=eager,aot_eager --repeat 3 --name cmp2", "y = x.cos() + 1")
    comparison = shell.user_ns["cmp2"]
    assert shown == [comparison] and comparison.labels == ["backend=eager", "backend=aot_eager"]
    assert torch.equal(shell.user_ns["y"], torch.arange(4.0).cos() + 1)


@pytest.mark.browser
def test_screenshots(dynamic_cmp, artifact_dir):
    from jupyterlab_harness import open_browser, render_html_screenshot, require_browser

    from explorer.views.compare import render_compare_static

    require_browser()
    html = render_compare_static(dynamic_cmp)
    with open_browser() as page:
        page.set_content(html, wait_until="load")
        labels = page.locator(".tc-cmp-table .tc-cmp-label:visible")
        assert labels.all_inner_texts() == dynamic_cmp.labels  # one visible row per configuration
        assert labels.first.evaluate("e => getComputedStyle(e).fontWeight") == "600"  # compare.css applies
        assert page.locator(".tc-cmp-table").first.bounding_box()["height"] > 0
    for theme in ("light", "dark"):  # for people to look at
        render_html_screenshot(html, artifact_dir / f"compare_{theme}.png", theme=theme, width=1200)


# --- a busy machine is said, as explore says it (issue 14 item 7) --------------------------------

def test_compare_warns_when_the_machine_was_busy(monkeypatch):
    import os

    cores = os.cpu_count() or 1
    monkeypatch.setattr(os, "getloadavg", lambda: (4.0 * cores, 4.0 * cores, 4.0 * cores))
    with pytest.warns(UserWarning, match="the machine was busy while timing backend=eager"):
        cmp = compare(helper, torch.randn(8), configs="backend=eager", repeat=2, warmup=False)
    row = cmp.rows()[0]
    assert cmp.captures[0].runtime.busy  # the same flag explore's view warns on
    assert any(note.startswith("the machine was busy while timing (load average") for note in row.notes)


def test_traced_module_row_says_nothing_was_compiled():
    cmp = explore_jit_trace(Net(), torch.randn(4, 8), backend="eager", repeat=2, compare_direct=False)
    row = cmp.rows()[0]
    assert row.speedup is None and "no Python frame to compile" in row.runtime_note
