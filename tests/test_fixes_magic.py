"""``%%tcompile --fix``: the cell is captured, then each proposed fix is tried on it (real IPython shell)."""
from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell

import explorer
import torch_state
from compiler.stages.fix_schema import MEASURED
from explorer import magics

torch_state.load_torch_modules()


@pytest.fixture(scope="module")
def shell():
    sh = InteractiveShell.instance()
    magics.register(sh)
    sh.run_cell("import torch\nx = torch.arange(8.0) - 3")
    return sh


def test_fix_flag_tries_the_fixes_of_the_cell(shell, monkeypatch):
    shown = []
    monkeypatch.setattr(explorer.widget, "show", lambda cap, fn=None, namespace=None: shown.append(cap),
                        raising=False)
    before = torch_state.snapshot()
    shell.run_cell("%%tcompile --backend eager --no-timing --fix --name cap\n"
                   "y = x.nonzero()\n"
                   "n = x.sum().item()\n"
                   "z = y.float().sum() * n")
    torch_state.assert_restored(before)
    cap = shell.user_ns["cap"]
    assert shown == [cap] and cap.summary.graph_breaks == 2
    fixes = cap.fixes()
    assert {f.kind for f in fixes} == {"capture_dynamic_output_shape_ops", "capture_scalar_outputs"}
    assert all(f.result.status == MEASURED and f.result.outputs_equal for f in fixes)
    assert fixes.combined.after.graph_breaks == 0
    ns = shell.user_ns
    assert float(ns["z"]) == float(ns["y"].float().sum() * ns["n"])  # the cell's names were written back
