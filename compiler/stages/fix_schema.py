"""The schema of fixes: what ``compiler.fixes`` proposes for a capture's findings and what
``compiler.fix_experiments`` measured when it tried them. Declared like every stage (``compiler.schema``):
saved with the capture JSON under ``"fixes"`` and read back field by field.

    >>> fix = Fix.from_data({"id": "f1", "kind": "capture_scalar_outputs", "title": "t",
    ...                      "config": {"capture_scalar_outputs": True}})
    >>> fix.status, fix.applicable
    ('not tried', True)
    >>> Fix.from_data({"id": "f1", "kind": "k", "title": "t", "breaks": ["0"]})
    Traceback (most recent call last):
    ...
    compiler.stages.data.CaptureFormatError: breaks[0]: expected an integer, got '0'
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from compiler.stages.data import Data, Stage, _Mismatch

# the result of trying a fix (FixResult.status)
NOT_TRIED, MEASURED, CHANGES_RESULTS, FAILED, INTERRUPTED = (
    "not tried", "measured", "changes results", "failed", "interrupted")

# what a fix is for (Fix.goal): fewer graph breaks / recompiles / skipped frames, a faster compiled run
# (slow code, CUDA graphs), or fewer guards to check on each call (a guard filter)
FINDINGS, RUNTIME, GUARDS, COMPILE_TIME = "findings", "runtime", "guards", "compile time"
GOALS = (FINDINGS, RUNTIME, GUARDS, COMPILE_TIME)
TOLERANCES = {"relative_norm"}  # the keys of Fix.tolerance
FASTER = 0.95  # a runtime fix is recommended when the compiled run takes at most this share of the time before


@dataclass(repr=False, eq=False)
class DynamicMark(Data):
    """``torch._dynamo.mark_dynamic(<argument>, dim)`` on the argument named ``argument`` of every call."""

    argument: str = ""
    dim: int = 0
    position: int | None = None  # the positional argument, where the frame takes ``*args`` (``args[0]``)
    maybe: bool = False  # maybe_mark_dynamic: dynamic unless the compile specialises it
    static: bool = False  # torch._dynamo.mark_static_address instead (its memory address never changes)


@dataclass(repr=False, eq=False)
class FixMeasure(Data):
    """One run of the captured calls (the capture's ``summary`` counts, and torch's own counters)."""

    graphs: int = 0
    graph_breaks: int = 0
    recompiles: int = 0
    compiles: int = 0
    frames_skipped: int = 0  # compiles that ended skipped or failed: the frame ran eagerly
    guards: int = 0
    compile_s: float | None = None
    runtime_s: float | None = None  # median compiled time of the last call, when timed
    eager_runtime_s: float | None = None
    busy: bool = False  # the machine was loaded while timing
    recompile_limit_hit: bool = False
    guard_latency_us: float | None = None  # torch's "Guard latency" of each compile, summed
    cudagraph_skips: int | None = None  # CUDA-graph skip reasons torch logged (None: no CUDA graphs wanted)
    counters: dict[str, Any] = field(default_factory=dict)  # torch._dynamo.utils.counters during the run

    def as_text(self) -> str:
        parts = [f"{self.graphs} graphs", f"{self.graph_breaks} graph breaks", f"{self.recompiles} recompiles"]
        if self.frames_skipped:
            parts.append(f"{self.frames_skipped} frames skipped")
        if self.compile_s is not None:
            parts.append(f"compile {self.compile_s:.2f} s")
        if self.guard_latency_us is not None:
            parts.append(f"{self.guards} guards, {self.guard_latency_us:.3g} µs to check")
        if self.cudagraph_skips:
            parts.append(f"{self.cudagraph_skips} CUDA-graph skips")
        if self.runtime_s is not None:
            parts.append(f"run {self.runtime_s * 1e3:.3g} ms" + (" (busy machine)" if self.busy else ""))
        return ", ".join(parts)


@dataclass(repr=False, eq=False)
class FixResult(Data):
    """What trying a fix measured: ``before`` (as captured) → ``after`` (with the change)."""

    status: str = NOT_TRIED  # not tried, measured, changes results, failed, interrupted
    before: FixMeasure | None = None
    after: FixMeasure | None = None
    before_from: str | None = None  # "the capture" or "measured": where the before numbers come from
    outputs_equal: bool | None = None  # the outputs still equal eager within the dtype's tolerance
    output_note: str | None = None  # how they differ, or how they were compared
    error: str | None = None
    calls: int = 0  # calls replayed
    seconds: float | None = None  # how long the experiment took
    fixes: list[str] = field(default_factory=list)  # the fix ids applied together (a combination)
    goal: str = FINDINGS  # what the fix is for (Fix.goal): what "recommended" compares

    @property
    def recommended(self) -> bool:
        """Measured and outputs equal eager, and what the fix is for measured better: fewer graph breaks,
        recompiles or skipped frames (none more); or a compiled run at most ``FASTER`` of the time before, timed
        on a quiet machine (CUDA-graph skips no more); or fewer guards, the run (timed on a quiet machine) no slower
        than ``1/FASTER``."""
        if self.status != MEASURED or self.outputs_equal is not True or not self.before or not self.after:
            return False
        b, a = self.before, self.after
        if self.goal == COMPILE_TIME:
            return b.compile_s is not None and a.compile_s is not None and a.compile_s < b.compile_s
        no_worse = a.graph_breaks <= b.graph_breaks and a.recompiles <= b.recompiles \
            and a.frames_skipped <= b.frames_skipped
        if self.goal == RUNTIME:
            timed = a.runtime_s is not None and b.runtime_s is not None and not (a.busy or b.busy)
            return no_worse and timed and a.runtime_s <= FASTER * b.runtime_s and (a.cudagraph_skips or 0) <= (
                b.cudagraph_skips or 0)
        if self.goal == GUARDS:  # a run timed on a busy machine says nothing either way: the guards decide
            slower = a.runtime_s is not None and b.runtime_s is not None and not (a.busy or b.busy) \
                and a.runtime_s * FASTER > b.runtime_s
            return no_worse and a.guards < b.guards and not slower
        return (a.graph_breaks, a.recompiles, a.frames_skipped) != (b.graph_breaks, b.recompiles, b.frames_skipped) \
            and no_worse

    def as_text(self) -> str:
        if self.status == NOT_TRIED:
            return "not tried"
        head = self.status + (f": {self.error}" if self.error else "")
        if self.before and self.after:
            head += f" — before: {self.before.as_text()} → after: {self.after.as_text()}"
        if self.outputs_equal is not None:
            if self.outputs_equal:
                head += "; outputs equal eager" + (f" ({self.output_note})" if "relative error" in (self.output_note or "")
                                                   else "")
            else:
                head += f"; outputs differ from eager ({self.output_note})"
        return head


@dataclass(repr=False, eq=False)
class Fix(Data):
    """One proposed change: what it is (``title``, ``snippet``), which findings it addresses, how an
    experiment applies it (``config`` patch of ``torch._dynamo.config``, ``compile_kwargs``,
    ``marks``), what the findings cost (``cost``, ``cost_text``, ``cost_method``), and once tried,
    ``result``. ``applicable`` False: a code change shown as a suggestion, never applied."""

    id: str
    kind: str
    title: str
    snippet: str = ""
    why: str | None = None  # the evidence: the hint or guard it came from
    breaks: list[int] = field(default_factory=list)  # indices into cap.breaks.items
    recompiles: list[str] = field(default_factory=list)  # compile ids of the recompiles addressed
    compiles: list[str] = field(default_factory=list)  # compile ids involved (breaks' compiles, skipped frames)
    # frames at or near the recompile limit whose failing guard this fix removes (``cap.recompile_budgets``' frame ids)
    limit_frames: list[int] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)  # the findings in words
    applicable: bool = True
    config: dict[str, Any] = field(default_factory=dict)  # torch._dynamo.config patch (names for callables)
    inductor_config: dict[str, Any] = field(default_factory=dict)  # torch._inductor.config patch ("triton.x" names)
    compile_kwargs: dict[str, Any] = field(default_factory=dict)  # options["guard_filter_fn"]: a torch.compiler name
    matmul_precision: str | None = None  # torch.set_float32_matmul_precision during the experiment
    # how the experiment compares outputs with eager where the change rounds by design (TF32): "relative_norm"
    # ‖after − eager‖₂ / ‖eager‖₂ per tensor; empty: torch.testing.assert_close at the dtype's defaults
    tolerance: dict[str, float] = field(default_factory=dict)
    goal: str = FINDINGS  # findings, runtime (slow code, CUDA graphs) or guards (a guard filter)
    gives_up: str | None = None  # what the change gives up (an unsafe guard filter: what goes unchecked)
    marks: list[DynamicMark] = field(default_factory=list)
    regions: list[str] = field(default_factory=list)  # regional compilation: the module paths compiled instead
    region_method: str | None = None  # "compile" (each block's .compile()) or "nested_compile_region"
    alternatives: list[str] = field(default_factory=list)  # other changes, in words
    cost: float = 0.0  # ranking score: higher first
    cost_text: str = ""
    cost_method: str = ""
    result: FixResult | None = None

    def __post_init__(self):
        unknown = set(self.tolerance) - TOLERANCES
        if unknown:
            exc = _Mismatch(" or ".join(map(repr, sorted(TOLERANCES))), sorted(unknown)[0])
            exc.where.append(".tolerance")
            raise exc
        if self.goal not in GOALS:  # the same check, and message with its JSON path, as Compile.origin's
            exc = _Mismatch(" or ".join(map(repr, GOALS)), self.goal)
            exc.where.append(".goal")
            raise exc

    def to_data(self) -> dict:
        out = super().to_data()
        if not out.get("limit_frames"):  # written only where a frame is at its limit (files saved before stay as they were)
            out.pop("limit_frames", None)
        return out

    @property
    def status(self) -> str:
        if not self.applicable:
            return "suggestion (a code change: not applied)"
        return self.result.status if self.result else NOT_TRIED

    def try_(self, fn=None, calls=None, **kwargs) -> FixResult:
        """Apply this fix in an experiment on the captured calls (``Capture.try_fix``)."""
        capture = self.__dict__.get("_capture")
        if capture is None:
            raise RuntimeError("this fix is not attached to a capture: use cap.fixes()[i].try_()")
        return capture.try_fix(self, fn=fn, calls=calls, **kwargs)

    def as_text(self) -> str:
        lines = [f"[{self.id}] {self.title}  ({self.status})", f"  cost: {self.cost_text} — {self.cost_method}"]
        lines += [f"  finding: {f}" for f in self.findings]
        lines += ["  snippet:"] + [f"    {line}" for line in self.snippet.splitlines()]
        lines += [f"  or: {a}" for a in self.alternatives]
        if self.gives_up:
            lines.append(f"  gives up: {self.gives_up}")
        if self.result and self.result.status != NOT_TRIED:
            lines.append(f"  result: {self.result.as_text()}")
        return "\n".join(lines)


@dataclass(repr=False, eq=False)
class Fixes(Stage):
    """The proposed fixes of a capture, ranked by what their findings cost; ``combined``: the best
    combination, once ``cap.try_fixes()`` measured it."""

    NAME: ClassVar[str] = "fixes"
    items: list[Fix] = field(default_factory=list)
    combined: FixResult | None = None
    note: str | None = None

    def __getitem__(self, index) -> Fix:
        if isinstance(index, str):
            return next(f for f in self.items if f.id == index)
        return self.items[index]

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self):
        return iter(self.items)

    def _text(self) -> str:
        if not self.items:
            return "no fixes proposed"
        text = "\n\n".join(f.as_text() for f in self.items)
        if self.combined and self.combined.status != NOT_TRIED:
            text += f"\n\ncombined ({', '.join(self.combined.fixes)}): {self.combined.as_text()}"
        return text

    def _summary(self) -> str:
        return f"{len(self.items)} fixes"
