"""The cross-check (issue 33, ``compiler.analyses.check``; ``python -m compiler check FILE``): zero violations on
every shipped capture and recorded trace, and each rule fails on a violation planted in a real capture."""
import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from compiler.analyses.check import check, check_path, code_ops, reconcile_explain
from compiler.stages.capture import Capture
from tlparse_fixtures import INPUTS, needs_inputs

REPO = Path(__file__).resolve().parent.parent
SHIPPED = sorted((REPO / "assets" / "gpu").glob("*.json")) + sorted((REPO / "tests" / "assets" / "captures").glob("*"))
TRACES = sorted((REPO / "tests" / "assets" / "traces").glob("*.log"))


def _data(name: str) -> dict:
    return json.loads((REPO / "assets" / "gpu" / name).read_text())


def _lines(checked) -> list[str]:
    return [v.line() for v in checked.violations]


@pytest.mark.parametrize("path", SHIPPED + TRACES, ids=lambda p: p.name)
def test_shipped_captures_and_traces_have_no_violation(path):
    ((_, checked),) = check_path(path)
    assert _lines(checked) == []
    assert checked.ops == checked.torch_ops  # Dynamo's ops as torch counted them (graph_op_count)


@needs_inputs
@pytest.mark.slow
def test_tlparse_inputs_have_no_violation():
    paths = sorted(p for p in INPUTS.iterdir() if p.suffix in (".log", ".txt") and "corrupted" not in p.name)
    paths += sorted(p for p in INPUTS.iterdir() if p.is_dir())
    found = {str(p.name): [v.line() for _, c in check_path(p) for v in c.violations] for p in paths}
    assert {name: lines for name, lines in found.items() if lines} == {}


# --- each rule on a planted violation ---------------------------------------------------------------

def test_graph_code_statements_count_in_place_updates():
    """Dynamo writes a residual add as ``x_11 += input_2;  x_12 = x_11``: one node (operator.iadd), which the
    parser must keep (torch's graph_op_count counts it)."""
    code = ('class GraphModule(torch.nn.Module):\n'
            '    def forward(self, L_x_: "f32[4]", L_y_: "f32[4]"):\n'
            '        l_x_ = L_x_\n        l_y_ = L_y_\n'
            '        x_11: "f32[4]" = l_x_.relu();  l_x_ = None\n'
            '        x_11 += l_y_;  x_12: "f32[4]" = x_11;  x_11 = l_y_ = None\n'
            '        getitem = x_12[0]\n'
            '        add: "f32[4]" = x_12 + getitem;  x_12 = getitem = None\n'
            '        add[(slice(None, None, None), 0)] = getitem;  setitem = None\n'
            '        return (add,)\n')
    assert code_ops(code) == 5  # relu, +=, getitem, +, setitem (Mask R-CNN's paste_masks_in_image has four)


def test_graph_nodes_rule_fails_on_a_lost_node():
    data = _data("gpt2_2layer.json")
    cap = Capture.from_data(data)
    graph = cap.compiles[0].graph
    lost = next(n for n in graph.nodes if n.op == "call_function")
    graph.nodes.remove(lost)
    graph.op_count -= 1
    lines = _lines(check(cap, rules=["graph_nodes"]))
    assert any("121 ops here, torch's graph_op_count is 122" in line for line in lines)
    assert any("121 ops parsed, 122 statements in the graph code" in line for line in lines)
    # … and names the statement the parser lost, from the graph code (what the GPU script dumps in full)
    assert any(f"nodes here, torch's graph_node_count is 152 (in the code, not parsed: {lost.name}: {lost.name}"
               in line for line in lines)


def test_counters_rule_fails_on_a_count_torch_disagrees_with():
    cap = Capture.from_data(_data("mlp_forward_backward.json"))
    assert _lines(check(cap, rules=["counters"])) == []
    cap.summary.graph_breaks += 1
    cap.summary.graphs += 1
    lines = _lines(check(cap, rules=["counters"]))
    assert "counters: graph breaks: the summary says 2, 1 are listed" in lines
    assert "counters: graphs: 3 here, torch's stats['unique_graphs'] is 2" in lines
    cap.breaks.items[0].count += 1
    lines = _lines(check(cap, rules=["counters"]))
    assert ("counters: graph breaks: 2 resumed from here (of 2), torch's counters['graph_break'] sum to 1 over 1 "
            "messages") in lines
    assert any(line.startswith("counters: graph breaks: 2 here, 1 in torch's counter: ") for line in lines)


def test_explain_differences_item_by_item():
    from compiler.analyses.check import graph_key

    cap = Capture.from_data(_data("mlp_forward_backward.json"))
    keys = [graph_key(c.graph.code) for c in cap.compiles if c.graph.available]
    same = {"graph_count": 2, "graph_break_count": 1, "graphs": [{"key": k} for k in keys]}
    assert reconcile_explain(cap, same) == []
    other = {"graph_count": 3, "graph_break_count": 2, "graphs": [{"key": k} for k in keys + keys[:1]]}
    first, *items = reconcile_explain(cap, other)
    assert first.startswith("2 graphs here, 3 in explain() (its graph_break_count 2 is its graphs − 1; it compiles "
                            "one call of its own, on the objects as they are then")
    assert items == [f"{keys[0]}: 1 graphs here, 2 in explain()"]
    assert keys[0].startswith("step (")


def test_time_bounds_rule_fails_on_each_out_of_bounds_figure():
    data = _data("mlp_forward_backward.json")
    cap = Capture.from_data(data)
    assert _lines(check(cap, rules=["time_bounds"])) == []
    cap.gpu_profile.launch_overhead_share = 1.2
    kernel = next(k for c in cap.compiles for k in c.kernels.kernels if k.cost and k.cost.share is not None)
    kernel.cost.served_from, kernel.cost.share = "DRAM", 14.56
    lines = _lines(check(cap, rules=["time_bounds"]))
    assert "time_bounds: gpu profile: launch overhead share 1.200 is outside 0…1" in lines
    assert any(line.endswith("1456% of the DRAM peak") for line in lines)


def test_time_bounds_rule_fails_on_a_skipped_frame_longer_than_the_call():
    from compiler.stages.schema import SkippedFrame

    cap = Capture.from_data(_data("mlp_forward_backward.json"))
    cap.skipped_frames.append(SkippedFrame(compile_id="1/0", function="cast", seconds=0.0923, share=1.0,
                                           call_seconds=0.0604))
    assert _lines(check(cap, rules=["time_bounds"])) == [
        "time_bounds: skipped frame cast (1/0): 92.3 ms per call in a call of 60.4 ms"]


def _parts(found) -> float:
    return found.kernels_us + sum(r.gpu_time_us_per_call for r in found.unclaimed_in_graphs) + sum(
        r.gpu_time_us_per_call for r in found.rest)


def test_gpu_time_breakdown_adds_up_to_the_whole():
    """dynamic_shapes_rerecord (H100): the profiler's share of the foreach-copy launches inside the graph (3.06 µs)
    is more than the row itself (2.78 µs); subtracted from the graphs' time, it left the Triton kernel 2.0 µs of its
    own 2.28 (40 %). Each row now counts for no more than itself: 45 % claimed + 55 % unclaimed = the profiled time."""
    from compiler.stages.kernel_costs import gpu_time_accounted

    cap = Capture.load(REPO / "assets" / "gpu" / "dynamic_shapes_rerecord.json")
    found = gpu_time_accounted(cap)
    rows = {r.name: r.gpu_time_us_per_call for r in cap.gpu_profile.kernels}
    assert _parts(found) == pytest.approx(cap.gpu_profile.gpu_time_us_per_call)
    assert found.kernels_us == pytest.approx(rows["triton_red_fused_mul_sigmoid_sum_0"])
    (unclaimed,) = found.unclaimed_in_graphs
    assert unclaimed.gpu_time_us_per_call == pytest.approx(rows[unclaimed.name])


def test_a_graph_several_compiles_hold_is_counted_once():
    """A backward graph compiled without the FX graph cache runs in the profiler's ``## Call CompiledFxGraph None ##``
    range, which every such compile holds (``graph None``): the AdamW training step's ten compiles each took the
    backward launches their kernel rows do not name, 125 % of the profiled time on an H200. mlp_forward_backward
    (H100) with its two other compiles (cast, the resume function) given kernels of their own: the backward
    launches are counted once, claimed by the compile whose rows name them; the breakdown is the one of the
    capture as recorded."""
    from compiler.stages.kernel_costs import gpu_time_accounted

    cap = Capture.from_data(_data("mlp_forward_backward.json"))
    before = gpu_time_accounted(cap)
    own = cap.compiles[0].kernels
    for c in cap.compiles[1:]:
        c.kernels = copy.deepcopy(own)
        for k in c.kernels.kernels:
            k.name, k.gpu_time_us_per_call = f"{k.name}_of_{c.name}", None
    found = gpu_time_accounted(cap)
    total = cap.gpu_profile.gpu_time_us_per_call
    assert _parts(before) == pytest.approx(total) and _parts(found) == pytest.approx(total)
    assert (found.kernels_us, found.in_graphs_us) == pytest.approx((before.kernels_us, before.in_graphs_us))
    assert _lines(check(cap, rules=["time_bounds"])) == []


def test_kernel_lines_rule_fails_on_a_line_outside_its_origins():
    from compiler.stages.schema import KernelPlace

    cap = Capture.from_data(_data("gpt2_2layer.json"))
    checked = check(cap, rules=["kernel_lines"])
    assert _lines(checked) == [] and checked.kernels_lines_in_origins == checked.kernels_with_origin_lines > 0
    prov = cap.compiles[0].provenance
    kernel = next(k for k in prov.kernels if k.places and k.post_grad_nodes)
    kernel.places.append(KernelPlace(file=kernel.places[0].file, line=99999, share=0.5))
    lines = _lines(check(cap, rules=["kernel_lines"]))
    assert len(lines) == 1 and f"{kernel.key}: lines " in lines[0] and ":99999 are not among its origins' lines" in lines[0]


def test_old_captures_are_reread_with_today_s_rules():
    """A roofline verdict saved by an older version (a share of the DRAM peak above 100 %, a bound named for a
    kernel far below it) is read again on load, and says so."""
    data = _data("pointwise_chain.json")
    kernel = next(k for r in data["compiles"][0]["inductor"]["runs"] for k in r["code"]["kernels"]
                  if (k.get("cost") or {}).get("share") is not None)
    cost = kernel["cost"]
    cost.update(served_from="DRAM", share=14.56, bound="memory", verdict="memory-bound at 1456% of the DRAM peak")
    loaded = Capture.from_data(copy.deepcopy(data))
    reread = next(k for k in loaded.compiles[0].kernels.kernels if k.name == kernel["name"]).cost
    assert "re-read on load with today's rules" in reread.verdict and not (reread.served_from == "DRAM"
                                                                            and reread.share > 1)
    assert _lines(check(loaded, rules=["time_bounds"])) == []


def test_roofline_names_neither_bound_far_below_both():
    """ResNet-50's convolution on an H200 at 61 FLOP/B and 39 TFLOP/s (tf32): 13 % of the DRAM peak and 8 % of the
    tf32 peak — near neither bound, not "memory-bound at 13 %"."""
    from compiler.stages.kernel_costs import device_peaks, roofline

    peaks = device_peaks("NVIDIA H200")
    cost = {"flops": 39e12 * 1e-3, "bytes": 39e12 * 1e-3 / 61, "dtype": "tf32"}
    roofline(cost, 1e-3, peaks, 4.8e12)
    assert cost["verdict"].startswith("near neither bound: 13% of the DRAM peak and 8% of the tf32 peak")
    near = {"flops": 1e9, "bytes": 4e9, "dtype": "fp32"}
    roofline(near, 1e-3, peaks, 4.8e12)
    assert near["verdict"] == "memory-bound at 83% of the DRAM peak"


def test_cli_one_line_per_violation_and_exit_status(tmp_path):
    clean = REPO / "assets" / "gpu" / "pointwise_chain.json"
    data = json.loads(clean.read_text())
    data["summary"]["compiles"] = 7
    planted = tmp_path / "planted.json"
    planted.write_text(json.dumps(data))
    script = ("import sys; from compiler.__main__ import main; code = main(['check', '-q', *sys.argv[1:]]); "
              "print('torch imported' if 'torch' in sys.modules else 'no torch', file=sys.stderr); sys.exit(code)")
    ok = subprocess.run([sys.executable, "-c", script, str(clean)], capture_output=True, text=True, cwd=REPO)
    assert ok.returncode == 0 and ok.stdout == "" and "no torch" in ok.stderr
    bad = subprocess.run([sys.executable, "-c", script, str(planted)], capture_output=True, text=True, cwd=REPO)
    assert bad.returncode == 1 and "no torch" in bad.stderr
    assert bad.stdout.splitlines() == [f"{planted}: counters: compiles: the summary says 7, 1 are listed"]
    missing = subprocess.run([sys.executable, "-c", script, str(tmp_path / "none.json")], capture_output=True,
                             text=True, cwd=REPO)
    assert missing.returncode == 2 and missing.stderr.startswith("error: ")


@pytest.fixture(scope="module")
def train_step_capture():
    """A transformers GPT-2 training step from a config (1 layer, no weights; loss, backward, AdamW step), backend
    eager: transformers' warning about the config's loss_type breaks the graph in six nested frames; Dynamo resumes
    from five and cannot resume from the sixth, and the optimizer's step breaks on purpose."""
    transformers = pytest.importorskip("transformers")
    import torch

    import compiler

    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=64, n_positions=32, use_cache=False,
                                     eos_token_id=0, bos_token_id=0)
    model = transformers.GPT2LMHeadModel(config).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, 64, (2, 8))

    def step(ids):
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.detach()

    torch._dynamo.reset()
    with compiler.capture() as cap:
        torch.compile(step, backend="eager")(ids)
    return cap


def test_graph_breaks_compared_like_with_like_with_torch_s_counter(train_step_capture):
    """torch's counters['graph_break'] counts only the breaks it resumed from after an instruction; the one it cannot
    resume from (same line, same type as five it resumed from) is its own item, said apart, not merged into them."""
    cap = train_step_capture
    kinds = cap.breaks.kinds()
    torch_counter = cap.counters["graph_break"]
    assert kinds["resumed"] == sum(torch_counter.values()) and kinds.get("unresumable", 0) >= 1
    assert cap.summary.graph_breaks == sum(kinds.values())
    assert _lines(check(cap, rules=["counters"])) == []
    unresumable = next(i for i in cap.breaks.items if i.kind == "unresumable")
    assert any(i.kind == "resumed" and (i.file, i.line) == (unresumable.file, unresumable.line)
               for i in cap.breaks.items)
    from explorer.views.overview import explain_note

    assert f"counts the {kinds['resumed']} it resumed from" in str(explain_note(cap))
    # planted: one break torch counted, missing here
    item = next(i for i in cap.breaks.items if i.kind == "resumed")
    item.count -= 1
    cap.breaks.total -= 1
    cap.summary.graph_breaks -= 1
    lines = _lines(check(cap, rules=["counters"]))
    assert lines[0].startswith("counters: graph breaks: ") and f"sum to {sum(torch_counter.values())}" in lines[0]
    assert any(item.headline[:40] in line for line in lines[1:])
