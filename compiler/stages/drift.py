"""Drift from eager: how far the compiled function's outputs are from eager's, per output, and what that likely means.

A finding of its own (the Overview, ``cap.as_text()``, the Fixes tab), measured once per Try all — the compile
without any fix against eager, on the same calls — and saved with the fixes (``Fixes.drift``); a fix's verdict then
says only whether the fix moves outputs further. ``compiler.analyses.drift.measure`` makes it from outputs (torch);
this module holds the data and the words (no torch), so a drift bisection can report with the same ones.

Per output (a leaf of the calls' return values, named by its path: ``[0]['boxes']``): its dtype and shape, the
relative L2 error ‖compiled − eager‖₂/‖eager‖₂ and the largest absolute error (float64), whether
``torch.testing.assert_close`` finds it close at the dtype's defaults, and a likely meaning (``meaning_of``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from compiler.stages.data import Data

ROUNDING = 1e-3  # a float output this close (relative L2) differs by the rounding of reordered float arithmetic
WHOLE = 0.1  # beyond this the output differs as a whole: another order or another set of items, not rounding
INTEGERS = ("int8", "int16", "int32", "int64", "uint8", "bool")


@dataclass(repr=False, eq=False)
class OutputDrift(Data):
    """One output against eager's."""

    name: str = ""  # its path in the calls' return values: [0]['boxes'] (call 0's first item's "boxes")
    kind: str = ""  # eager's dtype ("float32"), or the Python type of a non-tensor
    shape: list[int] | None = None
    reference_shape: list[int] | None = None  # eager's, where it differs
    rel_l2: float | None = None
    max_abs: float | None = None
    close: bool = False
    meaning: str = ""

    def as_text(self) -> str:
        if self.reference_shape is not None:
            measure = f"shape {self.shape} where eager's is {self.reference_shape}"
        elif self.close:
            measure = "close to eager"
        else:
            measure = f"rel. L2 {_num(self.rel_l2)}, max abs {_num(self.max_abs)}"
        return f"{self.name or 'output'} ({self.kind}): {measure} — {self.meaning}"


@dataclass(repr=False, eq=False)
class Drift(Data):
    """The compile (no fix) against eager, per output; ``method``: how it was measured."""

    outputs: list[OutputDrift] = field(default_factory=list)
    calls: int = 0
    method: str = ""
    note: str | None = None  # why nothing could be compared (a different number of outputs)

    @property
    def drifts(self) -> bool:
        return bool(self.note) or any(not o.close for o in self.outputs)

    def lines(self) -> list[str]:
        """One line per output that differs (all of them when the count of outputs differs)."""
        if self.note:
            return [self.note]
        return [o.as_text() for o in self.outputs if not o.close]

    def headline(self) -> str:
        """``the compile (no fix) differs from eager in 4 of 4 outputs: [0]['masks'] rel. L2 1.2, …``."""
        if self.note:
            return f"the compile (no fix) differs from eager: {self.note}"
        differ = [o for o in self.outputs if not o.close]
        if not differ:
            return f"the compile (no fix) gives eager's outputs ({len(self.outputs)} outputs close, assert_close)"
        worst = sorted(differ, key=lambda o: -(o.rel_l2 if o.rel_l2 is not None else float("inf")))
        shown = ", ".join(f"{o.name or 'output'} " + ("shape differs" if o.reference_shape is not None
                                                      else f"rel. L2 {_num(o.rel_l2)}") for o in worst[:6])
        return (f"the compile (no fix) differs from eager in {len(differ)} of {len(self.outputs)} outputs: {shown}"
                + (", …" if len(worst) > 6 else ""))

    def as_text(self) -> str:
        return "\n".join([self.headline(), *(f"  {line}" for line in self.lines()),
                          *([f"  measured: {self.method}"] if self.method else [])])


def meaning_of(output: OutputDrift) -> str:
    """What an output's difference from eager likely means (a reading, not a proof: the words say so)."""
    if output.close:
        return "as eager"
    if output.reference_shape is not None:
        return ("a different number of items: for a detector, another number of detections kept — a threshold or "
                "NMS decided differently by a small difference upstream")
    if output.kind in INTEGERS:
        return ("integer values differ: other classes or indices, or the same items in another order (e.g. "
                "detections sorted by a score that differs in its last bits)")
    if output.rel_l2 is None:
        return "differs (no finite measure: inf or NaN where eager has none)"
    if output.rel_l2 <= ROUNDING:
        return "rounding: the compiled kernels order float arithmetic differently (expected, harmless)"
    if output.rel_l2 >= WHOLE:
        return ("differs as a whole, not by rounding: likely the same items in another order or another set of "
                "them (compare sorted), or a real divergence upstream (bisect it)")
    return ("more than rounding: rounding grown through many layers, or an intermediate kept in another dtype "
            "(Inductor keeps some wider or narrower than eager)")


def _num(value) -> str:
    return "–" if value is None else f"{value:.2g}"
