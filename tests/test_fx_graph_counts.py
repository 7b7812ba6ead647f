"""Every FX graph torch builds, parsed node for node (issue 33): the parsed graph of each compile has
exactly the nodes of the GraphModule torch handed on, by FX op kind — Dynamo's graph (the one the backend
gets), AOTAutograd's forward and backward (the ones its compilers get) and Inductor's post-grad graph (the
graph its post-grad passes leave) — on real models: a residual CNN (its ``out += identity`` is the in-place
statement ``x += y;  z = x`` torch prints), a transformers model from its config, and torchvision's ResNet-50
and Mask R-CNN where torchvision is importable (torch 2.14.1 in CI)."""
from __future__ import annotations

import collections
import importlib.util

import pytest
import torch
import torch.nn as nn

import compiler

pytestmark = pytest.mark.filterwarnings("ignore")


class Bottleneck(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(c, c, 1, bias=False), nn.BatchNorm2d(c)
        self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        return self.relu(out)


def residual_cnn():
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), Bottleneck(8), Bottleneck(8), Bottleneck(8),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))


def torch_counts(graph) -> dict:
    return dict(collections.Counter(n.op for n in graph.nodes))


def parsed_counts(graph) -> dict:
    return dict(collections.Counter(n.op for n in graph.nodes if n.op != "alias"))


class Recorder:
    """The GraphModules torch hands on: to the Dynamo backend, to AOTAutograd's compilers, to Inductor's
    post-grad passes (the graph object, counted once the compile is done: passes after the custom one change it)."""

    def __init__(self):
        self.dynamo, self.aot, self.post_grad = [], [], []

    def aot_backend(self):
        from torch._dynamo.backends.common import aot_autograd

        def compiler_of(role):
            def compile_(gm, example_inputs):
                self.aot.append((role, gm))
                return gm
            return compile_

        inner = aot_autograd(fw_compiler=compiler_of("forward"), bw_compiler=compiler_of("backward"))

        def backend(gm, example_inputs):
            self.dynamo.append((compile_id(), gm))
            return inner(gm, example_inputs)
        return backend

    def eager_backend(self, gm, example_inputs):
        self.dynamo.append((compile_id(), gm))
        return gm

    def inductor_backend(self, gm, example_inputs):
        from torch._inductor.compile_fx import compile_fx

        self.dynamo.append((compile_id(), gm))
        return compile_fx(gm, example_inputs)

    def post_grad_pass(self, graph):
        self.post_grad.append(graph)


def compile_id() -> str:
    return str(torch._guards.CompileContext.current_compile_id())


def check_dynamo(cap, recorder):
    """Each compile's parsed Dynamo graph against the GraphModule its backend got, matched by compile id."""
    graphs = {c.compile_id: c.graph for c in cap.compiles if c.graph.available}
    assert sorted(graphs) == sorted(cid for cid, _ in recorder.dynamo) and graphs
    for cid, gm in recorder.dynamo:
        assert parsed_counts(graphs[cid]) == torch_counts(gm.graph), cid
        assert graphs[cid].op_count == sum(n.op not in ("placeholder", "output", "get_attr") for n in gm.graph.nodes)


def test_residual_cnn_every_graph_node_for_node():
    model = residual_cnn()
    x = torch.randn(2, 3, 8, 8)
    recorder = Recorder()
    with compiler.capture() as cap:
        torch._dynamo.reset()
        torch.compile(model, backend=recorder.aot_backend())(x).sum().backward()
    check_dynamo(cap, recorder)
    (c,) = cap.compiles
    adds = [n for n in c.graph.nodes if n.target == "operator.iadd"]
    assert len(adds) == 3 and all(len(n.inputs) == 2 for n in adds)  # the residual adds, with both inputs
    relu_after = {e[1] for e in c.graph.edges if e[0] in {n.name for n in adds}}
    assert len(relu_after) == 3  # each block's last relu reads its add: the blocks connect
    roles = dict(recorder.aot)
    assert set(roles) == {"forward", "backward"}
    for role, gm in roles.items():
        assert parsed_counts(c.aot.graphs[role]) == torch_counts(gm.graph), role


@pytest.mark.slow
def test_residual_cnn_inductor_post_grad_node_for_node():
    from torch._inductor import config as inductor_config

    model = residual_cnn().eval()
    recorder = Recorder()
    with torch.no_grad(), inductor_config.patch(post_grad_custom_post_pass=recorder.post_grad_pass), \
            compiler.capture(fresh=True) as cap:
        torch._dynamo.reset()
        torch.compile(model, backend=recorder.inductor_backend)(torch.randn(2, 3, 8, 8))
    check_dynamo(cap, recorder)
    runs = [r for c in cap.compiles for r in c.inductor.runs]
    assert len(runs) == len(recorder.post_grad) == 1
    assert parsed_counts(runs[0].post_grad) == torch_counts(recorder.post_grad[0])


def test_transformers_model_node_for_node():
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=64, max_position_embeddings=32)
    model = transformers.BertModel(config)
    ids = torch.randint(0, 128, (2, 16))
    recorder = Recorder()
    with compiler.capture() as cap:
        torch._dynamo.reset()
        torch.compile(model, backend=recorder.aot_backend())(ids).last_hidden_state.sum().backward()
    check_dynamo(cap, recorder)
    graphs = [(role, g) for c in cap.compiles for role, g in c.aot.graphs.items() if role != "joint" and g.available]
    assert [role for role, _ in graphs] == [role for role, _ in recorder.aot]
    for (role, graph), (_, gm) in zip(graphs, recorder.aot):
        assert parsed_counts(graph) == torch_counts(gm.graph), role


torchvision_missing = importlib.util.find_spec("torchvision") is None


@pytest.mark.skipif(torchvision_missing, reason="torchvision not installed (CI's torch 2.14.1 run has it)")
@pytest.mark.parametrize("name", ["resnet50", "maskrcnn_backbone_fpn",
                                  pytest.param("maskrcnn_resnet50_fpn", marks=pytest.mark.slow)])
def test_torchvision_models_node_for_node(name):
    """ResNet-50, Mask R-CNN's backbone with its FPN (its ``backbone.fpn`` group) and the whole Mask R-CNN (its
    graph breaks and recompiles: ~30 compiles, minutes on a loaded CPU, so slow)."""
    import torchvision

    if name == "resnet50":
        model, args = torchvision.models.resnet50(weights=None).eval(), (torch.randn(1, 3, 64, 64),)
    else:
        model = torchvision.models.detection.maskrcnn_resnet50_fpn(weights=None, weights_backbone=None,
                                                                   min_size=96, max_size=96).eval()
        args = ([torch.rand(3, 96, 96)],)
        if name == "maskrcnn_backbone_fpn":
            model, args = model.backbone, (torch.randn(1, 3, 96, 96),)
    recorder = Recorder()
    with torch.no_grad(), compiler.capture() as cap:
        torch._dynamo.reset()
        torch.compile(model, backend=recorder.eager_backend)(*args)
    check_dynamo(cap, recorder)
    if name == "resnet50":
        (c,) = cap.compiles
        assert sum(n.target == "operator.iadd" for n in c.graph.nodes) == 16  # the 16 residual adds
        assert len(recorder.dynamo[0][1].graph.nodes) == len([n for n in c.graph.nodes if n.op != "alias"])
