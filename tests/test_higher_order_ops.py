"""Higher-order ops keep their bodies as subgraphs (``Graph.subgraphs``): per-graph op counts equal
the live GraphModules torch hands the backend, no node name appears twice in one graph, the op that
runs a body has the node fetching it among its inputs; Inductor work on a body is labeled as such."""
from __future__ import annotations

import pytest
import torch
from functorch.compile import make_boxed_func
from torch._dynamo.backends.common import aot_autograd
from torch._higher_order_ops.map import map as hop_map
from torch._higher_order_ops.while_loop import while_loop
from torch.utils.checkpoint import checkpoint

import compiler

OPS = ("call_function", "call_method", "call_module")


def cond(x):
    return torch.cond(x.sum() > 0, lambda x: x.sin() + 1, lambda x: x.cos() * 2, (x,))


def nested_cond(x):
    def inner(x):
        return torch.cond(x.mean() > 0, lambda y: y.sin(), lambda y: y.cos(), (x,))
    return torch.cond(x.sum() > 0, inner, lambda x: x * 2, (x,))


def loop(x):
    return while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x.sin()), (torch.tensor(0), x))


def mapped(xs, y):
    return hop_map(lambda x, y: x.sin() + y, xs, y)


def checkpointed(x):
    return checkpoint(lambda x: x.sin().cos(), x, use_reentrant=False) + 1


@torch.compiler.nested_compile_region
def region(x):
    return x.sin().relu()


def invoked(x):
    return region(x) + region(x * 2)


CASES = {"cond": (cond, lambda: (torch.randn(4),)),
         "nested_cond": (nested_cond, lambda: (torch.randn(4),)),
         "while_loop": (loop, lambda: (torch.randn(4),)),
         "map": (mapped, lambda: (torch.randn(3, 4), torch.randn(4))),
         "checkpoint": (checkpointed, lambda: (torch.randn(4, requires_grad=True),)),
         "invoke_subgraph": (invoked, lambda: (torch.randn(4),))}


def live_counts(gm: torch.fx.GraphModule) -> dict[str, int]:
    """torch's answer: operations per graph, bodies by their path (``cond_true_1/cond_false_0``)."""
    out = {"": sum(n.op in OPS for n in gm.graph.nodes)}
    for name, child in gm.named_children():
        if isinstance(child, torch.fx.GraphModule):
            out.update({f"{name}/{k}".rstrip("/"): v for k, v in live_counts(child).items()})
    return out


def parsed_counts(graph, prefix: str = "") -> dict[str, int]:
    out = {prefix.rstrip("/"): graph.op_count}
    for name, body in graph.subgraphs.items():
        out.update(parsed_counts(body, f"{prefix}{name}/"))
    return out


def check_structure(graph) -> None:
    """No duplicate node names; every body is fetched by a get_attr node that feeds the op running it."""
    names = [n.name for n in graph.nodes]
    assert len(names) == len(set(names)), names
    fetched = {n.name: n.target for n in graph.nodes if n.op == "get_attr" and n.target in graph.subgraphs}
    assert set(fetched.values()) == set(graph.subgraphs)
    for fetch in fetched:
        users = [n for n in graph.nodes if fetch in n.inputs]
        assert users and all("higher_order" in (n.target or "") for n in users), (fetch, users)
        assert all([fetch, n.name] in graph.edges for n in users)
    for body in graph.subgraphs.values():
        assert body.available and body.code.lstrip().startswith("class ")
        check_structure(body)


def run(fn, make_args, backend):
    with compiler.capture() as cap:
        out = torch.compile(fn, backend=backend, fullgraph=True)(*make_args())
        if isinstance(out, torch.Tensor) and out.requires_grad:
            out.sum().backward()
    assert cap.error is None and len(cap.compiles) == 1
    return cap.compiles[0]


@pytest.mark.parametrize("case", CASES)
def test_dynamo_graph_keeps_bodies_as_subgraphs(case):
    fn, make_args = CASES[case]
    seen = []

    def backend(gm, example_inputs):
        seen.append(gm)
        return gm.forward

    compiled = run(fn, make_args, backend)
    graph = compiled.graph
    assert parsed_counts(graph) == live_counts(seen[0])
    assert len(live_counts(seen[0])) > 1  # the case has bodies at all
    assert graph.op_count == compiled.metrics["graph_op_count"]  # torch's own count of the outer graph
    check_structure(graph)


@pytest.mark.parametrize("case", ["cond", "nested_cond", "while_loop", "map", "checkpoint"])
def test_aot_graphs_keep_bodies_as_subgraphs(case):
    fn, make_args = CASES[case]
    seen = {}

    def recorder(role):
        def compile_graph(gm, example_inputs):
            seen[role] = gm
            return make_boxed_func(gm.forward)
        return compile_graph

    backend = aot_autograd(fw_compiler=recorder("forward"), bw_compiler=recorder("backward"),
                           inference_compiler=recorder("inference"))
    compiled = run(fn, make_args, backend)
    assert compiled.aot.available and seen
    for role, gm in seen.items():
        graph = compiled.aot.graphs[role]
        assert parsed_counts(graph) == live_counts(gm), role
        check_structure(graph)


def test_inductor_labels_work_on_bodies_as_subgraphs():
    with compiler.capture(fresh=True) as cap:
        torch.compile(cond)(torch.randn(8))
    inductor = cap.compiles[0].inductor
    bodies = cap.compiles[0].aot.graphs["inference"].subgraphs  # torch's names for the bodies
    assert sorted(bodies) == ["false_graph_0", "true_graph_0"]
    assert [r.role for r in inductor.runs] == ["inference", "subgraph true_graph_0", "subgraph false_graph_0"]
    main, *subs = inductor.runs
    assert main.code.available and main.ir.available and set(main.post_grad.subgraphs) == set(bodies)
    for run in subs:
        name = run.role.split()[1]
        # the scheduler names a body's nodes after it (true_graph_0_op0): the IR is the body's own
        assert run.ir.available and all(n.name.startswith(f"{name}_") for n in run.ir.post_fusion.nodes)
        assert run.post_grad.op_count == main.post_grad.subgraphs[name].op_count == bodies[name].op_count
        assert not run.code.available and "inference compile" in run.code.reason
    assert {k.role for k in cap.compiles[0].kernels.kernels} == {"inference"}


def test_training_inductor_bodies_name_their_compile():
    x = torch.randn(8, requires_grad=True)
    with compiler.capture(fresh=True) as cap:
        torch.compile(cond)(x).sum().backward()
    roles = [r.role for r in cap.compiles[0].inductor.runs]
    assert [r for r in roles if not r.startswith("subgraph")] == ["forward", "backward"]
    assert roles[1:3] == ["subgraph true_graph_0 (forward)", "subgraph false_graph_0 (forward)"]
    assert all(r.endswith("(backward)") for r in roles[4:]) and len(roles) == 6
