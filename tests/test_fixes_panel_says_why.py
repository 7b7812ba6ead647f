"""Before/after says why it is disabled (issue 46, item 6): on a loaded capture nothing was tried, and Try needs
the live function — the button said nothing. On the shipped H100 capture, loaded."""
from __future__ import annotations

from pathlib import Path

import compiler
from explorer.fixes_panel import FixesPanel

SHIPPED = Path(__file__).resolve().parent.parent / "assets" / "gpu" / "gpt2_2layer.json"


def test_before_after_on_a_loaded_capture_says_why_it_is_disabled():
    panel = FixesPanel(compiler.load(SHIPPED))
    assert panel.fixes and panel.compare.disabled and panel.try_all.disabled
    tip = panel.compare.tooltip
    assert f"{panel.choice.value} has not been tried" in tip and "loaded from a file" in tip
