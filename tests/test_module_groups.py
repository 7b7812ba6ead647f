"""Module groups drawn as torch's ``nn_module_stack`` names them (issue 46, item 4): an op in a module's own
``forward`` — a ResNet Bottleneck's ``out += identity`` and its final relu — sits in that module's group, not
outside it; an op of a module without parameters (an input transform, an FPN-style interpolate) is in its own
module, and not "guessed". Checked against the ``nn_module_stack`` of the very graph Dynamo handed the backend.
The Bottleneck is built here by hand, as torchvision writes it (torchvision is not a dependency)."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

import compiler
from compiler.capturing.compile_sampler import module_path
from explorer.views.graph_layout import module_paths


class Bottleneck(nn.Module):  # torchvision.models.resnet.Bottleneck, its forward as written there
    expansion = 4

    def __init__(self, inplanes, planes, downsample=None):
        super().__init__()
        width = planes
        self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, planes * self.expansion, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        out = self.relu(out)
        out = self.conv3(out)
        out = self.bn3(out)
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        out = self.relu(out)
        return out


class Normalize(nn.Module):  # an input transform with no parameters (Mask R-CNN's GeneralizedRCNNTransform)
    def forward(self, x):
        return (x - x.mean()) / (x.std() + 1e-5)


class TopDown(nn.Module):  # FPN's top-down step: a lateral conv, then an interpolate in the module's own forward
    def __init__(self, channels):
        super().__init__()
        self.lateral = nn.Conv2d(channels, channels, 1)

    def forward(self, x):
        return self.lateral(x) + F.interpolate(x, scale_factor=1.0, mode="nearest")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.transform = Normalize()
        self.stem = nn.Conv2d(3, 16, 3, padding=1)
        down = nn.Sequential(nn.Conv2d(16, 16, 1, bias=False), nn.BatchNorm2d(16))
        self.layer1 = nn.Sequential(Bottleneck(16, 4, downsample=down), Bottleneck(16, 4))
        self.fpn = TopDown(16)

    def forward(self, x):
        return self.fpn(self.layer1(self.stem(self.transform(x))))


def test_every_op_is_in_the_group_torchs_nn_module_stack_names(tmp_path):
    truth: dict[str, str | None] = {}

    def backend(gm, example_inputs):
        for node in gm.graph.nodes:
            if node.op not in ("placeholder", "output", "get_attr"):
                truth[node.name] = module_path(node.meta.get("nn_module_stack"))
        return gm.forward

    model = Net().eval()
    with compiler.capture() as cap:
        torch.compile(model, backend=backend)(torch.randn(1, 3, 8, 8))
    graph = cap.compiles[0].graph
    nodes = [n for n in graph.nodes if n.name in truth]
    assert len(nodes) == len(truth) > 30
    drawn = module_paths(graph.nodes)
    wrong = {n.name: (drawn[n.name], truth[n.name]) for n in nodes if drawn[n.name] != truth[n.name]}
    assert wrong == {}
    # what the issue saw: the residual add and the final relu of each Bottleneck, in its group
    adds = [n for n in nodes if n.target in ("operator.iadd", "operator.add") and truth[n.name].startswith("layer1")]
    assert {drawn[n.name] for n in adds} == {"layer1.0", "layer1.1"}
    assert {drawn[n.name] for n in nodes if "interpolate" in (n.target or "")} == {"fpn"}
    assert all(not n.module_guess for n in nodes)  # torch named each one: none "(guessed)"
    loaded = compiler.load(cap.save(tmp_path / "cap.json")).compiles[0].graph  # the saved capture draws the same
    assert module_paths(loaded.nodes) == drawn

