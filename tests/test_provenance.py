"""Provenance and cost per line on real CPU Inductor compiles (compiler.stages.provenance).

Compiles are shared in module-scoped fixtures: a cold Inductor compile takes 2–30 s here."""
import inspect

import pytest
import torch

import compiler
from compiler.stages.capture import Capture


def three_lines(x, w):
    y = torch.sin(x) * 2 + 1  # POINTWISE
    z = y @ w  # MATMUL
    s = z.sum(dim=1)  # REDUCTION
    return s


class Step(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(32, 16)

    def forward(self, x):
        h = torch.tanh(x) * 3  # FWD_POINTWISE
        y = self.lin(h)  # FWD_LINEAR
        return y.pow(2).mean()  # FWD_LOSS


def line_of(fn, marker: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, text in enumerate(lines) if f"# {marker}" in text)


@pytest.fixture(scope="module")
def three_cap():
    torch._dynamo.reset()
    return compiler.explore(three_lines, torch.randn(256, 128), torch.randn(128, 64), fresh=True, repeat=5)


@pytest.fixture(scope="module")
def train_cap():
    torch._dynamo.reset()
    model = Step()
    with compiler.capture(fresh=True) as cap:
        loss = torch.compile(model)(torch.randn(64, 32))
        loss.backward()
    return cap


def test_each_line_maps_to_its_own_kernels(three_cap):
    prov = three_cap.compiles[0].provenance
    assert prov.available, prov.reason
    pointwise, matmul, reduction = (line_of(three_lines, m) for m in ("POINTWISE", "MATMUL", "REDUCTION"))
    kernels = {line: prov.kernels_of_line(line) for line in (pointwise, matmul, reduction)}
    assert [k.split(":")[-1] for k in kernels[matmul]] == ["extern_kernels.mm"]
    assert len(kernels[pointwise]) == 1 and "cpp_fused" in kernels[pointwise][0]
    assert len(kernels[reduction]) == 1 and "cpp_fused" in kernels[reduction][0]
    assert kernels[pointwise] != kernels[reduction]
    # … and back: each kernel names its line, with its nodes at every level
    assert prov.lines_of_kernel("extern_kernels.mm") == [matmul]
    assert prov.lines_of_kernel(kernels[reduction][0]) == [reduction]
    mm = prov.kernel("extern_kernels.mm")
    assert "mm" in mm.post_grad_nodes and mm.ir_nodes and mm.fused_nodes
    assert {n.level for n in prov.nodes_of_line(pointwise)} >= {"dynamo", "aot", "post_grad", "ir_pre_fusion",
                                                                 "ir_post_fusion"}


def test_cpu_time_spread_over_lines(three_cap):
    table = three_cap.line_table()
    assert list(table.columns[:6]) == ["line", "code", "nodes", "kernels", "time_share", "seconds"]
    assert len(table) == 3  # one row per line that produced work
    assert table["time_share"].sum() == pytest.approx(1.0)
    assert (table["seconds"] > 0).all()
    assert table.set_index("line").loc[line_of(three_lines, "MATMUL"), "code"] == "z = y @ w  # MATMUL"
    prov = three_cap.compiles[0].provenance
    assert prov.time_source.startswith("CPU: sys.setprofile")
    assert all(k.seconds > 0 and k.calls == 1 for k in prov.kernels)


def test_a_saved_provenance_map_names_node_files_by_index_and_leaves_out_defaults(three_cap):
    """A map loading cannot build again from the stages (here: CPU kernel times, measured live) is saved whole, each
    node's file an index into ``node_files`` and its fields at their defaults left out; a wrong index is refused
    on load with the field named. (Moved from test_capture_size: the shipped GPU captures' maps are built again
    from their stages on load since issue 33, so none saves one.)"""
    import json

    saved = json.loads(three_cap.to_json())
    provenance = saved["compiles"][0]["provenance"]
    nodes, files, index = provenance["nodes"], provenance["node_files"], provenance["node_file_index"]
    assert "provenance_from_stages" not in saved["compiles"][0]
    assert len(index) == len(nodes) > 0 and len(files) < len(nodes) and all("file" not in n for n in nodes)
    assert not any(v in (None, []) for n in nodes for v in n.values())  # defaults left out, filled in on load
    loaded = Capture.from_data(json.loads(json.dumps(saved)))
    files = [n.file for n in three_cap.compiles[0].provenance.nodes]
    assert [n.file for n in loaded.compiles[0].provenance.nodes] == files
    assert {n.file for n in loaded.compiles[0].provenance.nodes} == set(files)
    provenance["node_file_index"][0] = len(files)
    with pytest.raises(compiler.CaptureFormatError, match=r"^compiles\[0\]\.provenance\.node_file_index: expected one "
                                                          r"index into node_files"):
        Capture.from_data(saved)


def test_amortization(three_cap):
    a = three_cap.compiles[0].amortization
    assert a.available and a.compile_s > 0
    assert a.calls_per_function_call == 1 and a.calls_under_capture == 1
    assert a.saving_per_call_s is not None
    if a.saving_per_call_s > 0:
        assert a.break_even_calls * a.saving_per_call_s >= a.compile_s
    else:
        assert a.break_even_calls is None and "never" in a.as_text()


def test_backward_kernels_map_to_forward_lines(train_cap):
    c = train_cap.compiles[0]
    prov = c.provenance
    assert prov.available, prov.reason
    assert {r.role for r in c.inductor.runs} == {"forward", "backward"}
    forward_lines = {line_of(Step.forward, m) for m in ("FWD_POINTWISE", "FWD_LINEAR", "FWD_LOSS")}
    backward = [k for k in prov.kernels if k.role == "backward"]
    assert backward and all(k.lines and set(k.lines) <= forward_lines for k in backward)
    # the loss line's gradient is a fused C++ kernel, the linear layer's weight gradient an mm
    assert any(k.language != "extern" for k in backward if line_of(Step.forward, "FWD_LOSS") in k.lines)
    assert prov.lines_of_kernel("extern_kernels.mm", role="backward") == [line_of(Step.forward, "FWD_LINEAR")]
    assert line_of(Step.forward, "FWD_POINTWISE") not in {line for k in backward for line in k.lines}


def test_save_load_keeps_the_map(three_cap, train_cap):
    for cap in (three_cap, train_cap):
        loaded = Capture.from_json(cap.to_json())
        for a, b in zip(cap.compiles, loaded.compiles):
            assert b.provenance.to_data() == a.provenance.to_data()
            assert b.amortization.to_data() == a.amortization.to_data()
        assert loaded.line_table().equals(cap.line_table())
    line = line_of(three_lines, "MATMUL")
    loaded = Capture.from_json(three_cap.to_json())
    assert loaded.compiles[0].provenance.kernels_of_line(line) == three_cap.compiles[0].provenance.kernels_of_line(line)


def _output_code(level: int) -> str:
    import torch._inductor.config as inductor_config

    def f(x):
        return torch.cos(x) + 1

    torch._dynamo.reset()
    with inductor_config.patch({"trace.provenance_tracking_level": level}):
        with compiler.capture(fresh=True) as cap:
            torch.compile(f)(torch.randn(16))
    return cap.compiles[0].kernels.module


def test_inductor_provenance_tracking_changes_the_generated_code():
    """Why compiler.stages.provenance does not turn on Inductor's provenance tracking: it writes debug-handle
    lines into the generated module, so the user's compiled code would not be byte-identical. If this
    fails, torch stopped doing so and tracking could be used instead of the metadata path."""
    off, on = _output_code(0), _output_code(1)
    assert off != on

    def lines(code):  # the AOT id counts graphs in the process: the one expected difference
        return [line for line in code.splitlines() if not line.startswith("# AOT ID:")]

    extra = [line for line in lines(on) if line not in lines(off)]
    assert extra and all("[Provenance debug handles]" in line for line in extra)


def test_views_colour_lines_and_link_lines_and_kernels(three_cap):
    """Source: each line that produced work is shaded by its time share and opens its nodes and kernels;
    Generated code / Inductor: each kernel opens its lines (highlighted) and nodes; Timings: the by-line
    table next to eager vs compiled. Clicking is plain HTML (a label checks a hidden radio)."""
    import re

    from explorer.views import render_view

    c = three_cap.compiles[0]
    prov = c.provenance
    matmul = line_of(three_lines, "MATMUL")
    source = render_view("source", three_cap, c)
    shaded = re.findall(r'<tr[^>]*style="background: rgba\(244, 114, 42, ([0-9.]+)\)"[^>]*data-row="l\d+-(\d+)"', source)
    assert {int(line) for _, line in shaded} == {r.line for r in prov.lines if r.time_share}
    top = max(prov.lines, key=lambda r: r.time_share or 0).line
    assert max(shaded, key=lambda s: float(s[0]))[1] == str(top)  # the darkest line is the costliest
    panel = source[source.find(f"test_provenance.py:{matmul}</code></strong>"):]  # the line panel names its file
    assert "extern_kernels.mm" in panel[:3000] and "post-grad nodes" in panel[:3000]
    assert source.count('type="radio"') == len(prov.lines) + len(prov.kernels)
    for key in ("code", "inductor"):
        html = render_view(key, three_cap, c)
        assert "Click a kernel" in html and 'class="tc-lit"' in html and "view failed" not in html
    timings = render_view("timings", three_cap, c)
    assert "Where the time goes, by line" in timings and "Runtime: eager vs compiled" in timings
    assert timings.index("Runtime: eager vs compiled") < timings.index("Where the time goes, by line")
