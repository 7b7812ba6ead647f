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
from compiler.stages.drift import Drift

# the result of trying a fix (FixResult.status)
NOT_TRIED, MEASURED, CHANGES_RESULTS, FAILED, INTERRUPTED, STOPPED = (
    "not tried", "measured", "changes results", "failed", "interrupted", "stopped")

# what a fix is for (Fix.goal): fewer graph breaks / recompiles / skipped frames, a faster compiled run
# (slow code, CUDA graphs), or fewer guards to check on each call (a guard filter)
FINDINGS, RUNTIME, GUARDS, COMPILE_TIME = "findings", "runtime", "guards", "compile time"
GOALS = (FINDINGS, RUNTIME, GUARDS, COMPILE_TIME)
TOLERANCES = {"relative_norm"}  # the keys of Fix.tolerance
FASTER = 0.95  # a runtime fix is recommended when the whole interval of after ÷ before lies below this


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
class OutputError(Data):
    """One output value (a leaf of a call's return value, ``index`` in order over every call) against a reference."""

    index: int = 0
    kind: str = ""  # the reference's dtype ("float32"), or its Python type for a non-tensor
    shape: list[int] | None = None
    reference_shape: list[int] | None = None  # set where the shapes differ
    max_abs: float | None = None  # largest |x − ref|
    rel_l2: float | None = None  # ‖x − ref‖₂ / ‖ref‖₂ (float64)
    close: bool = False  # torch.testing.assert_close at the dtype's default tolerance


@dataclass(repr=False, eq=False)
class OutputComparison(Data):
    """One of an experiment's three comparisons (``compiler.analyses.fix_verdicts``)."""

    label: str = ""  # "without the fix vs eager", "with the fix vs eager", "with vs without the fix"
    equal: bool | None = None  # every output close
    outputs: list[OutputError] = field(default_factory=list)
    note: str | None = None  # why nothing could be compared (a different number of outputs)
    check_passed: bool | None = None  # the user's check= (None: none given)
    check_note: str | None = None

    def worst(self) -> tuple[float | None, float | None, int]:
        """(largest relative L2 error, largest absolute error, outputs whose shapes differ)."""
        rel = [o.rel_l2 for o in self.outputs if o.rel_l2 is not None]
        absolute = [o.max_abs for o in self.outputs if o.max_abs is not None]
        return (max(rel) if rel else None), (max(absolute) if absolute else None), sum(
            o.reference_shape is not None for o in self.outputs)

    def as_text(self) -> str:
        """``close (assert_close defaults)`` or ``rel. L2 ≤ 0.31, max abs 2.5e+02, 2 of 12 output shapes differ``."""
        if self.note:
            return self.note
        rel, absolute, shapes = self.worst()
        if self.equal:
            text = "close (assert_close defaults)" + (f", rel. L2 ≤ {rel:.2g}" if rel else "")
        else:
            text = f"rel. L2 ≤ {_num(rel)}, max abs {_num(absolute)}"
            if shapes:
                text += f", {shapes} of {len(self.outputs)} output shapes differ"
        if self.check_passed is not None:
            text += f"; your check {'passes' if self.check_passed else 'fails'}"
        return text


def _num(value) -> str:
    return "–" if value is None else f"{value:.2g}"


@dataclass(repr=False, eq=False)
class RuntimeRatio(Data):
    """The compiled call with the fix ÷ without it, timed interleaved in the same experiment, with eager's time."""

    ratio: float = 1.0  # median after ÷ median before
    low: float = 1.0  # the interval (``method``)
    high: float = 1.0
    rounds: int = 0
    before_s: float | None = None  # medians of the interleaved samples, seconds per call
    after_s: float | None = None
    eager_s: float | None = None
    method: str = ""

    def as_text(self) -> str:
        eager = f", eager {self.eager_s * 1e3:.3g} ms" if self.eager_s is not None else ""
        return (f"compiled call {self.ratio:.2f}× ({self.low:.2f}–{self.high:.2f}) of before: "
                f"{self.before_s * 1e3:.3g} → {self.after_s * 1e3:.3g} ms{eager}, {self.rounds} interleaved rounds")


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
    # the three comparisons (without vs eager, with vs eager, with vs without) and the rule applied
    comparisons: list[OutputComparison] = field(default_factory=list)
    output_rule: str | None = None
    timing: RuntimeRatio | None = None  # after ÷ before, timed interleaved in this experiment
    guard_timing: RuntimeRatio | None = None  # the same for the entry frame's guard check, where timed
    where: str | None = None  # "this process" or "worker processes (…)": where the experiment ran
    # the run's measured noise (the A/A experiment, ``Fixes.noise``): a timed effect counts only beyond ±floor
    noise_floor: float | None = None  # of the compiled call (a fraction: 0.06 is ±6 %)
    guard_noise_floor: float | None = None  # of the guard check
    outranked: str | None = None  # why a recommendable change is not recommended: another guard filter measured better
    baseline_only: bool = False  # the A/A experiment: the baseline against itself (no change)

    def floors(self) -> tuple[float, float]:
        """(compiled call, guard check): the smallest effect a verdict counts — the run's noise floor, at least
        1 − ``FASTER``."""
        least = 1 - FASTER
        return max(self.noise_floor or 0.0, least), max(self.guard_noise_floor or 0.0, least)

    def regressions(self) -> list[str]:
        """What measurably got worse: more breaks, recompiles or skipped frames, a compiled call or guard check
        slower beyond the noise floor, a compile more than twice as long."""
        b, a = self.before, self.after
        out = []
        if self.status != MEASURED or not b or not a:
            return out
        for name, word in (("graph_breaks", "graph break"), ("recompiles", "recompile"),
                           ("frames_skipped", "skipped frame")):
            more = getattr(a, name) - getattr(b, name)
            if more > 0:
                out.append(f"{more} more {word}{'s' * (more > 1)}")
        runtime, guards = self.floors()
        if self.timing is not None and self.timing.low > 1 + runtime:
            t = self.timing
            out.append(f"compiled call slower: {t.ratio:.2f}× ({t.low:.2f}–{t.high:.2f}), "
                       f"{t.before_s * 1e3:.3g} → {t.after_s * 1e3:.3g} ms")
        if self.guard_timing is not None and self.goal == GUARDS and self.guard_timing.low > 1 + guards:
            g = self.guard_timing
            out.append(f"guard check slower: {g.ratio:.2f}× ({g.low:.2f}–{g.high:.2f})")
        if b.compile_s and a.compile_s is not None and a.compile_s > 2 * b.compile_s and a.compile_s - b.compile_s > 1:
            out.append(f"compile {b.compile_s:.1f} → {a.compile_s:.1f} s")
        return out

    @property
    def verdict(self) -> str:
        """The verdict's word: Recommended, Not chosen, No gain, No effect (the A/A experiment), Worse, Changes
        results, Failed, Interrupted, Stopped, Not tried."""
        if self.status == STOPPED:
            return "Stopped"
        if self.status in (FAILED, INTERRUPTED, CHANGES_RESULTS):
            return self.status.capitalize()
        if self.status != MEASURED:
            return "Not tried"
        if self.baseline_only:
            same = self.before and self.after and all(getattr(self.before, k) == getattr(self.after, k)
                                                      for k in ("graphs", "graph_breaks", "recompiles", "guards"))
            return "No effect" if same else "Not reproducible"
        if self.recommended:
            return "Recommended"
        if self.outranked:
            return "Not chosen"
        return "Worse" if self.regressions() else "No gain"

    @property
    def recommended(self) -> bool:
        """Measured, outputs no further from eager than without the fix, and what the fix is for measured better:
        fewer graph breaks, recompiles or skipped frames (none more); or a compiled call whose after ÷ before
        interval, timed interleaved, lies wholly below 1 − the noise floor (``floors``; CUDA-graph skips no more); or
        fewer guards with a guard check measured faster beyond its floor, the call not slower beyond its own. Never
        the A/A experiment, nor a guard filter another one outranked."""
        if self.status != MEASURED or self.outputs_equal is not True or not self.before or not self.after \
                or self.baseline_only or self.outranked:
            return False
        b, a = self.before, self.after
        if self.goal == COMPILE_TIME:
            return b.compile_s is not None and a.compile_s is not None and a.compile_s < b.compile_s
        no_worse = a.graph_breaks <= b.graph_breaks and a.recompiles <= b.recompiles \
            and a.frames_skipped <= b.frames_skipped
        runtime, guards = self.floors()
        slower = self.timing is not None and self.timing.low > 1 + runtime
        if self.goal == RUNTIME:
            return no_worse and self.timing is not None and self.timing.high < 1 - runtime \
                and (a.cudagraph_skips or 0) <= (b.cudagraph_skips or 0)
        if self.goal == GUARDS:  # an unsafe filter: only for a guard check measured faster beyond the noise
            measured = self.guard_timing is not None and self.guard_timing.high < 1 - guards
            return no_worse and a.guards < b.guards and measured and not slower
        return (a.graph_breaks, a.recompiles, a.frames_skipped) != (b.graph_breaks, b.recompiles, b.frames_skipped) \
            and no_worse

    def gains(self) -> list[str]:
        """``16 fewer graphs``, ``12 fewer breaks``, … — what the change did to the counts, then the timed ratio."""
        b, a = self.before, self.after
        parts = []
        if b and a:
            for name, word in (("graphs", "graph"), ("graph_breaks", "break"), ("recompiles", "recompile"),
                               ("frames_skipped", "skipped frame")):
                delta = getattr(b, name) - getattr(a, name)
                if delta:
                    parts.append(f"{abs(delta)} {'fewer' if delta > 0 else 'more'} {word}{'s' * (abs(delta) > 1)}")
            if self.goal == GUARDS and a.guards < b.guards:
                parts.append(f"{b.guards - a.guards} fewer guards")
        if self.timing is not None:
            t = self.timing
            parts.append(f"compiled call {t.ratio:.2f}× ({t.low:.2f}–{t.high:.2f}) of before")
        if self.guard_timing is not None and (self.goal == GUARDS or self.baseline_only):
            g = self.guard_timing
            parts.append(f"guard check {g.ratio:.2f}× ({g.low:.2f}–{g.high:.2f}) of before")
        return parts

    def sentence(self, name: str, gives_up: str | None = None) -> str:
        """What to do, in one sentence: ``Recommended: <name> — 16 fewer graphs, …, outputs as close to eager
        as before.`` / ``Failed: <name> — <why>.`` / ``Changes results: …`` / ``No gain: …`` / ``Worse: …``;
        ``gives_up``: what the change gives up, said with a recommendation."""
        word = self.verdict
        if self.status == STOPPED:  # a budget or the user stopped it: what it had, and no verdict either way
            why = (self.error or "the run did not finish").removeprefix("stopped: ")
            return f"Stopped: {name} — {why}; no verdict."
        if self.status in (FAILED, INTERRUPTED):
            return f"{word}: {name} — {self.error or 'the run did not finish'}."
        if self.status == CHANGES_RESULTS:
            return f"Changes results: {name} — {self.output_note}."
        if self.status != MEASURED:
            return f"Not tried: {name}."
        if word == "Worse":
            parts = self.regressions() + [p for p in self.gains() if "fewer" in p]
        else:
            parts = self.gains()
        parts += [self.output_note] if self.output_note else []
        if word == "Not chosen":
            parts.append(self.outranked)
        if word == "Recommended" and gives_up:
            parts.append(f"gives up: {gives_up}")
        return f"{word}: {name} — {', '.join(parts) or 'nothing changed'}."

    def as_text(self) -> str:
        if self.status == NOT_TRIED:
            return "not tried"
        head = self.status + (f": {self.error}" if self.error else "")
        if self.before and self.after:
            head += f" — before: {self.before.as_text()} → after: {self.after.as_text()}"
        if self.timing is not None:
            head += f"; {self.timing.as_text()}"
        if self.guard_timing is not None:
            g = self.guard_timing
            head += (f"; guard check {g.ratio:.2f}× ({g.low:.2f}–{g.high:.2f}) of before: {g.before_s * 1e6:.3g} → "
                     f"{g.after_s * 1e6:.3g} µs per call")
        if self.output_note:
            head += f"; {self.output_note}" if self.outputs_equal is not False else f"; changes results: {self.output_note}"
        for comparison in self.comparisons:
            head += f"\n    {comparison.label}: {comparison.as_text()}"
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
    noise: FixResult | None = None  # the A/A experiment (the baseline against itself): the run's noise floor
    drift: Drift | None = None  # the compile without any fix against eager, per output (its own finding)

    def context_lines(self) -> list[str]:
        """What every verdict is measured against, said once after them: the baseline (one compile time), the
        noise floor, and the A/A experiment's own verdict."""
        lines = []
        baseline = self.baseline_text()
        if baseline:
            lines.append(f"Baseline: {baseline}.")
        noise = self.noise_text()
        if noise:
            lines.append(f"Noise floor: {noise}.")
        if self.noise is not None and self.noise.status != NOT_TRIED:
            lines.append(self.noise.sentence("the baseline against itself (A/A)"))
        return lines

    def baseline_text(self) -> str | None:
        """The compile without any fix every verdict compares with, in one place: ``compile 53.7 s, compiled call
        64 ms, eager 210 ms (a worker process, beside the experiments)``."""
        results = [r for r in [self.noise, *(f.result for f in self.items)] if r is not None and r.before is not None]
        if not results:
            return None
        first = results[0]
        b = first.before
        parts = [", ".join(f"{n} {word}{'s' * (n != 1)}" for n, word in ((b.graphs, "graph"), (b.graph_breaks,
                 "graph break"), (b.recompiles, "recompile")))]
        if b.compile_s is not None:
            parts.append(f"compile {b.compile_s:.1f} s")
        timed = next((r.timing for r in results if r.timing is not None), None)
        if timed is not None:
            parts.append(f"compiled call {timed.before_s * 1e3:.3g} ms, eager {timed.eager_s * 1e3:.3g} ms"
                         if timed.eager_s is not None else f"compiled call {timed.before_s * 1e3:.3g} ms")
        return (f"the compile without any fix — {', '.join(parts)} ({first.before_from or 'measured'}); every "
                "verdict compares with it")

    def noise_text(self) -> str | None:
        """``differences under ±6 % are noise on this machine now`` and how that was measured (None: untimed)."""
        noise = self.noise
        if noise is None or noise.timing is None:
            return None
        runtime, guards = noise.floors()
        text = (f"differences under ±{runtime:.0%} in the compiled call"
                + (f" and ±{guards:.0%} in the guard check" if noise.guard_timing is not None else "")
                + " are noise on this machine now (an A/A experiment: the baseline against itself in a second "
                  f"worker, {noise.timing.ratio:.2f}× ({noise.timing.low:.2f}–{noise.timing.high:.2f})"
                + (f", guard check {noise.guard_timing.ratio:.2f}× ({noise.guard_timing.low:.2f}–"
                   f"{noise.guard_timing.high:.2f})" if noise.guard_timing is not None else "")
                + f"; at least ±{1 - FASTER:.0%})")
        return text

    def __getitem__(self, index) -> Fix:
        if isinstance(index, str):
            return next(f for f in self.items if f.id == index)
        return self.items[index]

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self):
        return iter(self.items)

    def verdicts(self) -> list[str]:
        """What to do, one sentence per tried change (recommended first, as ``items`` is ordered once tried), then
        the recommended combination's sentence (also when it failed) and what was not tried."""
        lines, untried = [], []
        for fix in self.items:
            if not fix.applicable:
                continue
            if fix.result is None or fix.result.status == NOT_TRIED:
                untried.append(fix.kind)
            elif fix.result.fixes[:1] in ([], [fix.id]):  # an experiment for several fixes: said once, by its first
                others = [f"{f.id} {f.kind}" for f in self.items if f is not fix and f.result is not None
                          and f.result.fixes and f.result.fixes[0] == fix.id]
                name = fix.kind + (f" (one experiment, also for {', '.join(others)})" if others else "")
                lines.append(fix.result.sentence(name, fix.gives_up))
        if self.combined is not None and self.combined.status != NOT_TRIED:
            names = " + ".join(next((f.kind for f in self.items if f.id == i), i) for i in self.combined.fixes)
            sentence = self.combined.sentence(f"together ({names})")
            if self.combined.status == MEASURED and not self.combined.recommended:
                sentence = sentence.replace("No gain:", "Not together:", 1)
            lines.append(sentence)
        if untried and lines:
            lines.append(f"Not tried: {', '.join(untried)}.")
        return lines

    def _text(self) -> str:
        if not self.items:
            return "no fixes proposed"
        verdicts = self.verdicts()
        text = "\n".join(verdicts + self.context_lines()) + "\n\n" if verdicts else ""
        text += "\n\n".join(f.as_text() for f in self.items)
        if self.combined and self.combined.status != NOT_TRIED:
            text += f"\n\ncombined ({', '.join(self.combined.fixes)}): {self.combined.as_text()}"
        return text

    def __str__(self) -> str:
        """``print(cap.fixes())``: what to do, one sentence per verdict, then each fix."""
        return self.as_text()

    def _summary(self) -> str:
        return f"{len(self.items)} fixes"
