"""Lab 10 (notebooks/labs/lab10_modern.py, checkers in tcompile_labs/checks_modern.py): planted wrong answers and
right answers written otherwise, graded in the lab's top-to-bottom run (tests/test_labs.py merges them), and the
checkers on the cheapest wrong passes, called directly (backend eager/aot_eager: seconds)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from tcompile_labs import checks_modern as cm
from tcompile_labs.checks import CheckFailed

# exercise -> wrong answers (the student's whole cell): each must score 0
PLANTED_WRONG = {
    "10.1": [
        # (in this order: save_cache_artifacts returns every artifact the kernel recorded, and the test runs every
        # planted answer in the lab's one kernel — nbgrader gives each student a kernel of their own)
        # compiled with aot_eager: no Inductor artifact of tail
        "with fresh_cache():\n    torch._dynamo.reset()\n    torch.compile(tail, backend='aot_eager')(y)\n"
        "    artifacts = torch.compiler.save_cache_artifacts()",
        # another shape: the FX graph cache key differs
        "with fresh_cache():\n    torch._dynamo.reset()\n    torch.compile(tail)(torch.randn(8, 32))\n"
        "    artifacts = torch.compiler.save_cache_artifacts()",
        # saved before the compile: the process's earlier artifacts (head's, tail's of another shape), not these
        "with fresh_cache():\n    torch._dynamo.reset()\n    artifacts = torch.compiler.save_cache_artifacts()\n"
        "    torch.compile(tail)(y)",
    ],
    "10.2": [
        # both branches computed: right values, but no branch in the graph
        "class Gate(GateReference):\n    def forward(self, x):\n        y = self.lin(x)\n"
        "        return torch.where(x.sum() > 0, y.relu(), y.tanh() * 2)\n\nep = torch.export.export(Gate(), (x4,))",
        # the branches swapped
        "class Gate(GateReference):\n    def forward(self, x):\n        y = self.lin(x)\n"
        "        return torch.cond(x.sum() > 0, lambda y: y.tanh() * 2, lambda y: y.relu(), (y,))\n\n"
        "ep = torch.export.export(Gate(), (x4,))",
    ],
    "10.3": [
        # a fake implementation but no backward
        "@torch.library.custom_op('lab10::scaled_tanh', mutates_args=())\n"
        "def scaled_tanh(x: torch.Tensor, scale: float) -> torch.Tensor:\n"
        "    return torch.from_numpy(np.tanh(x.numpy(force=True)) * scale)\n\n"
        "scaled_tanh.register_fake(lambda x, scale: torch.empty_like(x))",
        # a backward without the scale
        "@torch.library.custom_op('lab10::scaled_tanh', mutates_args=())\n"
        "def scaled_tanh(x: torch.Tensor, scale: float) -> torch.Tensor:\n"
        "    return torch.from_numpy(np.tanh(x.numpy(force=True)) * scale)\n\n"
        "scaled_tanh.register_fake(lambda x, scale: torch.empty_like(x))\n"
        "def _setup(ctx, inputs, output):\n    ctx.save_for_backward(inputs[0])\n"
        "def _backward(ctx, grad):\n    (x,) = ctx.saved_tensors\n    return grad * (1 - torch.tanh(x) ** 2), None\n"
        "scaled_tanh.register_autograd(_backward, setup_context=_setup)",
        # not an operator: plain torch code (it compiles and trains, but opcheck has nothing to check)
        "def scaled_tanh(x, scale):\n    return torch.tanh(x) * scale",
    ],
    "10.4": [
        # a compiled no-op each step, the update left to eager code
        "_noop = torch.compile(lambda t: t + 0, backend='eager')\n\ndef make_step(opt):\n    def step():\n"
        "        _noop(torch.ones(1))\n        opt.step()\n    return step",
        # compiled, then switched off by a stance on every call
        "def make_step(opt):\n    compiled = torch.compile(opt.step)\n    def step():\n"
        "        with torch.compiler.set_stance('force_eager'):\n            compiled()\n    return step",
    ],
}

# exercise -> a right answer written otherwise than the solution: full marks
PLANTED_RIGHT = {
    "10.1": "torch._dynamo.reset()\ntorch.compile(tail, mode='default')(y)\n"
            "artifacts = torch.compiler.save_cache_artifacts()[0]          # the bytes alone, the default cache dir",
    "10.2": "from torch._higher_order_ops.cond import cond\n\nclass Gate(GateReference):\n"
            "    def forward(self, x):\n        def pos(y):\n            return torch.relu(y)\n\n"
            "        def neg(y):\n            return 2 * torch.tanh(y)\n\n"
            "        return cond(x.sum().gt(0), pos, neg, [self.lin(x)])\n\nep = torch.export.export(Gate(), (x4,))",
    "10.3": "@torch.library.custom_op('lab10::scaled_tanh_v2', mutates_args=())\n"
            "def scaled_tanh(x: torch.Tensor, scale: float) -> torch.Tensor:\n"
            "    return torch.from_numpy(np.tanh(x.numpy(force=True)) * scale)\n\n"
            "@scaled_tanh.register_fake\ndef _(x, scale):\n    return x.new_empty(x.shape)\n\n"
            "def _setup(ctx, inputs, output):\n    ctx.save_for_backward(output)\n    ctx.scale = inputs[1]\n\n"
            "def _backward(ctx, grad):\n    (out,) = ctx.saved_tensors      # from the output: s(1 - (out/s)^2)\n"
            "    return grad * (ctx.scale - out * out / ctx.scale), None\n\n"
            "scaled_tanh.register_autograd(_backward, setup_context=_setup)",
    "10.4": "def make_step(opt):\n    @torch.compile(backend='aot_eager')\n    def step():\n        opt.step()\n"
            "    return step",
}


def _fails(fn, *args):
    with pytest.raises(CheckFailed) as info:
        fn(*args)
    return str(info.value)


class _GateReference(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        if x.sum() > 0:
            return y.relu()
        return y.tanh() * 2


def test_cond_export_accepts_cond_and_rejects_a_baked_branch_where_and_swapped_branches():
    class Gate(_GateReference):
        def forward(self, x):
            return torch.cond(x.sum() > 0, lambda y: y.relu(), lambda y: y.tanh() * 2, (self.lin(x),))

    class Where(_GateReference):
        def forward(self, x):
            y = self.lin(x)
            return torch.where(x.sum() > 0, y.relu(), y.tanh() * 2)

    class Swapped(_GateReference):
        def forward(self, x):
            return torch.cond(x.sum() > 0, lambda y: y.tanh() * 2, lambda y: y.relu(), (self.lin(x),))

    class Baked(_GateReference):
        def forward(self, x):
            return self.lin(x).relu()

    x = torch.randn(3, 4)
    cm.check_cond_export(torch.export.export(Gate(), (x,)), Gate, _GateReference, x)
    assert "no torch.cond" in _fails(cm.check_cond_export, torch.export.export(Where(), (x,)), Where, _GateReference, x)
    assert "no torch.cond" in _fails(cm.check_cond_export, torch.export.export(Baked(), (x,)), Baked, _GateReference, x)
    assert "branch" in _fails(cm.check_cond_export, torch.export.export(Swapped(), (x,)), Swapped, _GateReference, x)
    # an ExportedProgram of the right model, with a class that is not: the fresh export decides
    assert "no torch.cond" in _fails(cm.check_cond_export, torch.export.export(Gate(), (x,)), Where, _GateReference, x)
    assert "not an ExportedProgram" in _fails(cm.check_cond_export, Gate(), Gate, _GateReference, x)


def _opaque(x, scale):
    return torch.from_numpy(np.tanh(x.numpy(force=True)) * scale)


def _make_op(name, fake=True, backward="right"):
    op = torch.library.custom_op(f"lab10test::{name}", mutates_args=())(_typed)
    if fake:
        op.register_fake(lambda x, scale: torch.empty_like(x) if fake is True else x.new_empty(x.shape[0] + 1))
    if backward:
        def setup(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])
            ctx.scale = inputs[1] if backward == "right" else 1.0

        def bw(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * ctx.scale * (1 - torch.tanh(x) ** 2), None
        op.register_autograd(bw, setup_context=setup)
    return op


def _typed(x: torch.Tensor, scale: float) -> torch.Tensor:
    return _opaque(x, scale)


def test_custom_op_accepts_a_full_registration_and_rejects_each_missing_part():
    reference = lambda x, s: torch.tanh(x) * s  # noqa: E731
    x = torch.randn(6)
    cm.check_custom_op(_make_op("right"), reference, x)
    assert "opcheck" in _fails(cm.check_custom_op, _make_op("nofake", fake=False), reference, x)
    assert "opcheck" in _fails(cm.check_custom_op, _make_op("badfake", fake="wrong shape"), reference, x)
    _fails(cm.check_custom_op, _make_op("nobackward", backward=None), reference, x)
    assert "gradcheck" in _fails(cm.check_custom_op, _make_op("noscale", backward="no scale"), reference, x)
    assert "not a custom operator" in _fails(cm.check_custom_op, reference, reference, x)


@pytest.mark.slow
def test_portable_cache_counts_a_hit_and_rejects_artifacts_of_another_shape():
    """Two small Inductor compiles and two checks (about 30 s cold on 2 loaded cores)."""
    from torch._inductor.utils import fresh_cache

    def tail(y):
        return torch.nn.functional.gelu(y @ y.T).mean(0)

    y = torch.randn(16, 32)
    with fresh_cache():
        torch._dynamo.reset()
        torch.compile(tail)(torch.randn(8, 32))
        other = torch.compiler.save_cache_artifacts()
    assert "miss" in _fails(cm.check_portable_cache, other, tail, y)
    with fresh_cache():
        torch._dynamo.reset()
        torch.compile(tail)(y)
        right = torch.compiler.save_cache_artifacts()
    cm.check_portable_cache(right, tail, y)
    cm.check_portable_cache(right[0], tail, y)
    _fails(cm.check_portable_cache, None, tail, y)
    _fails(cm.check_portable_cache, "artifacts", tail, y)


def test_the_torch_internals_lab10_cites_still_exist():
    """Each statement of lab 10 about torch, against the source it cites (as test_labs.py's
    test_the_torch_internals_the_labs_cite_still_exist does for labs 0-9)."""
    import inspect
    from pathlib import Path

    import torch._inductor
    import torch.fx.experimental._config as fx_config
    from torch._dynamo import decorators
    from torch._inductor import codecache, utils as inductor_utils
    from torch.compiler import _cache
    from torch.fx.experimental import symbolic_shapes
    from torch.testing._internal.optests import generate_tests

    # §1: the mega-cache serializes every artifact recorded (appending), None when there is none; hits are counted
    serialize = inspect.getsource(_cache.CacheArtifactManager.serialize)
    assert "cls._serializer.extend" in serialize and "return None" in serialize
    assert "CacheArtifactManager.serialize()" in inspect.getsource(torch.compiler.save_cache_artifacts)
    assert "populate_caches" in inspect.getsource(torch.compiler.load_cache_artifacts)
    assert hasattr(_cache.CacheArtifactManager, "with_fresh_cache") and hasattr(inductor_utils, "fresh_cache")
    source = Path(codecache.__file__).read_text()
    assert 'counters["inductor"]["fxgraph_cache_hit"] += 1' in source and "def _lookup_graph" in source
    # §2: export's data-dependent error, torch.cond, AOTInductor's entry points
    assert hasattr(symbolic_shapes, "GuardOnDataDependentSymNode") and hasattr(torch, "cond")
    assert callable(torch._inductor.aoti_compile_and_package) and callable(torch._inductor.aoti_load_package)
    # §3: opcheck's default tests; triton_op and wrap_triton
    assert generate_tests.DEFAULT_TEST_UTILS == ["test_schema", "test_autograd_registration", "test_faketensor",
                                                 "test_aot_dispatch_dynamic"]
    from torch._library import triton
    assert callable(triton.triton_op) and callable(torch.library.triton_op) and callable(torch.library.wrap_triton)
    # §4: maybe_mark_dynamic records a weak index; mark_dynamic's violation; size-oblivious reasoning
    assert "_dynamo_weak_dynamic_indices" in inspect.getsource(decorators.maybe_mark_dynamic)
    assert hasattr(symbolic_shapes, "ConstraintViolationError") and callable(symbolic_shapes.guard_size_oblivious)
    assert fx_config.backed_size_oblivious is False
    # §5: the optimizer's update functions Dynamo inlines; §6: the minifier's configs and modules; FSDP2
    from torch.optim import adam
    assert callable(adam._single_tensor_adam) and callable(adam._multi_tensor_adam)
    config_source = Path(torch._dynamo.config.__file__).read_text()
    assert '"TORCHDYNAMO_REPRO_LEVEL", 2)' in config_source and '"TORCHDYNAMO_REPRO_AFTER"' in config_source
    assert (Path(torch._dynamo.__file__).parent / "repro" / "after_dynamo.py").exists()
    from torch.distributed.fsdp import fully_shard
    assert callable(fully_shard)


def test_compiled_step_accepts_a_compiled_step_and_rejects_an_eager_update():
    cm.check_compiled_step(lambda opt: torch.compile(opt.step, backend="eager"))
    assert "no compiled code ran" in _fails(cm.check_compiled_step, lambda opt: opt.step)
    noop = torch.compile(lambda t: t + 0, backend="eager")

    def noop_then_eager(opt):
        def step():
            noop(torch.ones(1))
            opt.step()
        return step
    assert "outside it" in _fails(cm.check_compiled_step, noop_then_eager)
    _fails(cm.check_compiled_step, lambda opt: torch.compile(lambda: None))
