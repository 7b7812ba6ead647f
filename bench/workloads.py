"""The workloads every figure runs: small, deterministic, CPU-sized, inference (``torch.no_grad``).

``make(name)`` returns ``(fn, args)``. Modules are wrapped in a plain function so each call of
``fresh_entry`` gets its own code object: Dynamo caches compiles per code object, so two
compiles of one workload in one process (plain vs captured) need two entry points.
"""
from __future__ import annotations

import contextlib
import itertools

import torch
from torch import nn
from torch.nn import functional as F

ALL = ("pointwise", "mlp", "transformer_block", "convnet")  # full mode runs each figure on all four


def pointwise(x):
    y = torch.sin(x) * torch.cos(x) + x.relu()
    return torch.sigmoid(y) * 2 - y.tanh()


class MLP(nn.Sequential):
    def __init__(self, d_in=256, d_hidden=512, d_out=10):
        super().__init__(nn.Linear(d_in, d_hidden), nn.GELU(), nn.Linear(d_hidden, d_hidden), nn.GELU(),
                         nn.Linear(d_hidden, d_out))


class Block(nn.Module):
    """A pre-norm transformer block (attention + MLP), GPT-2 style."""

    def __init__(self, d_model: int, n_heads: int, causal: bool = True):
        super().__init__()
        self.n_heads, self.causal = n_heads, causal
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.fc = nn.Linear(d_model, 4 * d_model)
        self.fc_out = nn.Linear(4 * d_model, d_model)

    def attention(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        return self.proj(y.transpose(1, 2).reshape(b, t, d))

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        return x + self.fc_out(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


class GPT2(nn.Module):
    """GPT-2 small's shape: 12 layers, d=768, 12 heads, vocabulary 50257, 1024 positions."""

    def __init__(self, n_layers=12, d_model=768, n_heads=12, vocab=50257, positions=1024):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d_model), nn.Embedding(positions, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_heads) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


class ConvNet(nn.Sequential):
    def __init__(self):
        super().__init__(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                         nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(32 * 16 * 16, 10))


def make(name: str):
    """``(fn, args)`` for a workload; modules in eval mode."""
    torch.manual_seed(0)
    if name == "pointwise":
        return pointwise, (torch.randn(256, 256),)
    if name == "mlp":
        return MLP().eval(), (torch.randn(32, 256),)
    if name == "transformer_block":
        return Block(128, 4).eval(), (torch.randn(2, 32, 128),)
    if name == "convnet":
        return ConvNet().eval(), (torch.randn(8, 3, 32, 32),)
    if name == "gpt2_small":
        return GPT2().eval(), (torch.randint(0, 50257, (1, 32)),)
    raise KeyError(f"unknown workload {name!r}")


@contextlib.contextmanager
def threads(n: int):
    """Run with ``n`` intra-op threads. In-process timings use 1: on this shared 2-core machine a
    2-thread OpenMP region stalls whenever another process holds a core (40 ms medians seen)."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


_entry_ids = itertools.count()


def fresh_entry(target):
    """A new function with its own code object that calls ``target`` (Dynamo inlines it)."""
    filename = f"<bench entry {next(_entry_ids)}>"
    namespace = {"target": target}
    exec(compile("def entry(*args):\n    return target(*args)\n", filename, "exec"), namespace)
    return namespace["entry"]


def chain(n_ops: int):
    """A function of ``n_ops`` unrolled pointwise ops (about ``n_ops`` FX nodes), generated as
    source text so Dynamo, the FX graph and the views see ``n_ops`` distinct source lines."""
    ops = ("x = x + 1.0", "x = x * 0.5", "x = torch.sin(x)", "x = x - 0.25")
    lines = [f"    {ops[i % len(ops)]}" for i in range(n_ops)]
    source = "import torch\ndef chain(x):\n" + "\n".join(lines) + "\n    return x\n"
    filename = f"<bench chain {n_ops}>"
    import linecache

    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {}
    exec(compile(source, filename, "exec"), namespace)
    return namespace["chain"]


__all__ = ["ALL", "make", "fresh_entry", "chain", "threads"]
