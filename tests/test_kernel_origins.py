"""Each kernel's source lines come from the nodes torch says it was generated from (issue 33, item 2), checked
against torch's own origin data: Inductor's provenance tracking (``trace.provenance_tracking_level``), which maps
every kernel call to its post-grad nodes, whose ``# File`` lines are their ``stack_trace``.

Where shapes repeat (three same-shape linears and two same-shape convolutions on five lines), each call of the
shared extern kernel must go to its own line — the old matcher told IR nodes apart by shape and shared by count.
"""
from __future__ import annotations

import inspect
import warnings

import pytest
import torch
import torch.nn as nn

import compiler
from compiler.stages.inductor_tracking import _HANDLE
from compiler.stages.provenance import provenance_stage
from tlparse_fixtures import INPUTS, needs_inputs


def torch_lines(c, tracking, kernel) -> set[int]:
    """The lines of the post-grad nodes torch's provenance tracking names for ``kernel`` (every call of it)."""
    run = next(r for r in c.inductor.runs if r.role == kernel.role)
    lines = {n.name: n.line for n in run.post_grad.nodes if n.line}
    return {lines[p] for name, posts in tracking.kernel_to_post.items() if _HANDLE.sub("", name) == kernel.name
            for p in posts if p in lines}


def comment_provenance(c):
    """The compile's provenance as an in-process capture builds it (no trace: no tracking), from its stages."""
    return provenance_stage(c.graph, c.aot, c.inductor, c.source, kernels=c.kernels)


@needs_inputs
@pytest.mark.parametrize("name", ["inductor_provenance_jit_cuda_log.txt", "inductor_provenance_jit_log.txt",
                                  "inductor_provenance_jit_debug_handle_log.txt"])
def test_trace_kernels_lines_among_torch_origins(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cap = compiler.load_trace(INPUTS / name)
    checked = 0
    for c in cap.compiles:
        tracking = {t.role: t for t in c.provenance.inductor_tracking}
        for k in comment_provenance(c).kernels:
            if k.origin is None:  # a C++ kernel: torch writes no origin comment for it, and says so
                assert k.language == "C++" and "no origin" in k.no_origin
                continue
            assert k.origin == "comments" and k.origin_nodes and k.lines
            assert set(k.lines) <= torch_lines(c, tracking[k.role], k), k.key
            assert {(p.file, p.line) for p in k.places} <= {(p.file, p.line) for p in k.origin_places}
            checked += 1
    assert checked >= 1


class Repeated(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(32, 32), nn.Linear(32, 32), nn.Linear(32, 32)
        self.conv1, self.conv2 = nn.Conv2d(4, 4, 3, padding=1), nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x, img):
        h = torch.relu(self.a(x))  # A
        h = torch.relu(self.b(h))  # B
        h = self.c(h) + h  # C
        y = torch.relu(self.conv1(img))  # CONV1
        y = torch.relu(self.conv2(y)) + y  # CONV2
        return h.sum() + y.sum()


def line_of(marker: str) -> int:
    lines, first = inspect.getsourcelines(Repeated.forward)
    return first + next(i for i, text in enumerate(lines) if text.rstrip().endswith(f"# {marker}"))


@pytest.mark.slow
def test_repeated_shapes_each_call_on_its_own_line():
    from torch._inductor import config as inductor_config

    torch._dynamo.reset()
    with torch.no_grad(), inductor_config.patch({"trace.provenance_tracking_level": 1}), \
            compiler.capture(fresh=True) as cap:
        torch.compile(Repeated())(torch.randn(8, 32), torch.randn(2, 4, 8, 8))
    (c,) = cap.compiles
    (tracking,) = c.provenance.inductor_tracking  # torch's own record, read from the capture
    prov = comment_provenance(c)
    by_name = {k.name: k for k in prov.kernels}
    linear, conv = by_name["extern_kernels.addmm"], by_name["extern_kernels.convolution"]
    assert [s.places[0].line for s in linear.sites] == [line_of(m) for m in ("A", "B", "C")]
    assert [s.places[0].line for s in conv.sites] == [line_of(m) for m in ("CONV1", "CONV2")]
    assert all(len(s.places) == 1 and s.own_node for s in linear.sites + conv.sites)  # each call: its own node's line
    assert sum(s.share for s in linear.sites) == pytest.approx(1.0)
    assert [p.share for p in conv.places] == pytest.approx([0.5, 0.5])  # two equal convolutions, by FLOPs
    for k in (linear, conv):
        assert set(k.lines) == torch_lines(c, tracking, k)
    for k in prov.kernels:
        if k.language == "C++":
            assert k.origin is None and "C++" in k.no_origin
    # with torch's tracking in the capture, every kernel — C++ ones too — takes exactly torch's nodes' lines
    for k in c.provenance.kernels:
        assert k.origin == "trace" and set(k.lines) <= torch_lines(c, tracking, k), k.key


def test_gpu_captures_recorded_earlier_take_their_kernels_origins():
    """Captures saved by earlier versions (format 4.0, torch 2.11 on an H200): their Triton kernels and extern
    calls are attributed from the origin comments their saved generated code holds."""
    cap = compiler.load("assets/gpu/mlp_forward_backward.json")
    kernels = [k for c in cap.compiles if c.provenance.available for k in c.provenance.kernels]
    assert kernels and all(k.origin in ("comments", None) for k in kernels)
    for k in kernels:
        if k.origin:
            assert k.lines and {(p.file, p.line) for p in k.places} <= {(p.file, p.line) for p in k.origin_places}
        else:
            assert k.no_origin
