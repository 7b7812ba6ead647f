"""Inductor's scheduler IR text parsed into nodes, checked against the scheduler's own nodes: the node
lists torch hands to ``log_ir_pre_fusion`` / ``log_ir_post_fusion`` while the same compile logs the text."""
import pytest
import torch
import torch._inductor.debug as inductor_debug

import compiler
from compiler.stages.inductor_ir import parse_ir


def five_inputs(a, b, c, d, e, w):
    y = (a * b + c * d - e).relu()  # one node reads five buffers: torch prints them on five lines
    return y.sum(-1), (y + a).cos(), y @ w  # a reduction, a fusion with y, an extern kernel (mm)


def torch_answer(nodes) -> dict[str, tuple[list[str], list[str]]]:
    """name → (reads, writes) as the scheduler holds them: what its IR text prints as
    ``unmet_dependencies`` + ``met_dependencies`` and ``writes`` + the output buffers."""
    return {n.get_name(): (sorted({d.name for d in n.read_writes.reads | n.unmet_dependencies}),
                           sorted({d.name for d in n.read_writes.writes} | {o.get_name() for o in n.get_outputs()}))
            for n in nodes}


@pytest.fixture(scope="module")
def scheduled():
    """One Inductor compile, and the scheduler's nodes before and after fusion from the same compile."""
    answers = {"pre": [], "post": []}
    originals = inductor_debug.log_ir_pre_fusion, inductor_debug.log_ir_post_fusion

    def pre(nodes):
        answers["pre"].append(torch_answer(nodes))
        return originals[0](nodes)

    def post(nodes):
        answers["post"].append(torch_answer(nodes))
        return originals[1](nodes)

    with pytest.MonkeyPatch.context() as patch:  # the scheduler imports these at the call: patching the module works
        patch.setattr(inductor_debug, "log_ir_pre_fusion", pre)
        patch.setattr(inductor_debug, "log_ir_post_fusion", post)
        args = [torch.randn(16, 8) for _ in range(5)] + [torch.randn(8, 4)]
        cap = compiler.explore(five_inputs, *args, fresh=True, timing=False)
    (run,) = cap.compiles[0].inductor.runs
    return run, answers


def test_every_node_reads_and_writes_what_the_scheduler_says(scheduled):
    run, answers = scheduled
    (pre,), (post,) = answers["pre"], answers["post"]
    parsed_pre = {n.name: (n.reads, n.writes) for n in run.ir_before.nodes}
    parsed_post = {n.name: (n.reads, n.writes) for n in run.ir_after.nodes}
    assert parsed_pre == pre
    assert parsed_post == post
    # the case this test exists for: a dependency list printed over several lines, read in full
    text = run.ir_before.text
    assert "met_dependencies = \n    [   MemoryDep(" in text
    assert any(len(reads) == 5 for reads, _ in pre.values())
    fused = [n for n in run.ir_after.nodes if len(n.members) > 1]
    assert fused and any(n.extern_kernel for n in run.ir_before.nodes)


def test_a_dependency_list_on_continuation_lines():
    text = "\n".join([
        "BEFORE FUSION",
        "op0: SchedulerNode(ComputedBuffer)",
        "op0.writes = ",
        "    [   MemoryDep('buf0', c0, {c0: 128}),",
        "        MemoryDep('buf1', c0, {c0: 128})]",
        "op0.unmet_dependencies = [StarDep(name='buf9', mode=None)]",
        "op0.met_dependencies = ",
        "    [   MemoryDep('arg0_1', c0, {c0: 128}),",
        "        MemoryDep('arg1_1', c0, {c0: 128}),",
        "        WeakDep(name='arg2_1', mutating_buf='buf0', is_fake=False)]",
        "op0.min_input_distance = 0",
        "op0.outputs = [",
        "    buf0: ComputedBuffer",
        "    buf0.users = [NodeUser(node=SchedulerNode(name='op1'), can_inplace=False, is_weak=False)]",
        "]",
    ])
    (node,) = parse_ir(text)
    assert node["reads"] == ["arg0_1", "arg1_1", "arg2_1", "buf9"]
    assert node["writes"] == ["buf0", "buf1"]
