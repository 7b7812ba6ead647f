"""Lab 10's part of the nbgrader course (see ``labs/grading.py``, which merges it): points, the hidden tests (the
lab's reference definitions written in, so a student who redefines them changes nothing) and the fresh copy of
``tcompile_labs/checks_modern.py`` they call (``_gm``, loaded like ``_gc`` with the fresh checks as its imports)."""
from __future__ import annotations

POINTS_MODERN = {"10.1": 2, "10.2": 2, "10.3": 2, "10.4": 2}

FRESH_MODERN = """
_gm = _load("_graded_modern", _pl.Path(_ilm.PathFinder.find_spec("tcompile_labs").origin).parent / "checks_modern.py",
            _gc)"""

HIDDEN_MODERN = {
    "10.1": """\
import torch as _t
def _tail(y):
    return _t.nn.functional.gelu(y @ y.T).mean(0)
_gm.check_portable_cache(artifacts, _tail, _t.randn(16, 32))""",
    "10.2": """\
import torch as _t
class _GateReference(_t.nn.Module):
    def __init__(self):
        super().__init__()
        _t.manual_seed(0)
        self.lin = _t.nn.Linear(4, 4)
    def forward(self, x):
        y = self.lin(x)
        if x.sum() > 0:
            return y.relu()
        return y.tanh() * 2
_gm.check_cond_export(ep, Gate, _GateReference, _t.randn(3, 4))""",
    "10.3": """\
import torch as _t
_gm.check_custom_op(scaled_tanh, lambda x, s: _t.tanh(x) * s, _t.randn(6))""",
    "10.4": "",  # the checker builds its own model and optimizers: nothing of the lab's to write in
}


def is_modern_check(line: str) -> bool:
    from tcompile_labs import checks_modern

    return line.split("(")[0].strip() in checks_modern.__all__
