"""The result of ``compiler.compare``: one entry per configuration (its capture, or its error), the
summary table, diffs between configurations, saved and loaded as versioned JSON.

    cmp.rows()                     # label, compile time, runtime, speedup, graphs, breaks, guards, kernels …
    cmp.diff("mode=default", "mode=max-autotune").changed_stages
    cmp.save("modes.json"); Comparison.load("modes.json")
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from compiler.stages.capture import Capture, CaptureFormatError, JsonFile
from compiler.stages.schema import Data, check_document_header

FORMAT = "tcompile-comparison"
VERSION = [1, 0]


def cudagraphs_cell(cap: Capture) -> str:
    """What happened to CUDA graphs in one configuration, in a few words."""
    stage = cap.cudagraphs
    if stage.available:
        if stage.used:
            return "used"
        return "skipped: " + "; ".join(stage.skip_reasons_user or stage.skip_reasons or ["?"])
    from compiler.stages.cudagraphs import wants_cudagraphs

    if wants_cudagraphs(cap.options):
        return "requested, not used (no CUDA)" if not cap.environment.get("cuda_available") \
            else "requested, no activity logged"
    return "off"


def error_text(error) -> str:
    """One line: the error, or its cause when the error only says "backend='x' raised:"."""
    lines = [line for line in str(error.message or "").strip().splitlines() if line.strip()]
    first = lines[0] if lines else ""
    if error.cause and (first.endswith("raised:") or not first):
        return f"{error.type}: {str(error.cause).strip().splitlines()[0]}"
    return f"{error.type}: {first}"


NUMBERS = ("compile_s", "eager_s", "runtime_s", "speedup", "graphs", "graph_breaks", "recompiles", "guards", "kernels")


@dataclass(repr=False, eq=False)
class ConfigError(Data):
    """Why a configuration has no (complete) capture: the error, the stage it came from, its cause, and
    the package whose absence caused it (``missing``: module, package)."""

    type: str = ""
    message: str | None = None
    stage: str | None = None
    cause: str | None = None
    missing: dict[str, Any] | None = None


@dataclass(repr=False, eq=False)
class ConfigEntry(Data):
    """One configuration: its label and torch.compile arguments, its capture's data (None when it
    failed before compiling), its error, the options its mode implies, notes, and what it cost."""

    label: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    capture: dict[str, Any] | None = None
    error: ConfigError | None = None
    interrupted: bool = False
    mode_options: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    explore_s: float | None = None
    timing_s: float | None = None


@dataclass(repr=False, eq=False)
class EagerBaseline(Data):
    """Eager's runtime across configurations: each is timed with its own, alternating samples."""

    available: bool = False
    reason: str | None = None
    seconds: float | None = None
    median_s: float | None = None
    spread: list[float] | None = None
    note: str | None = None


@dataclass(repr=False, eq=False)
class Accounting(Data):
    """Where the comparison's wall time went (``compiler.analyses.compare.accounting``)."""

    wall_s: float = 0.0
    warmup_s: float | None = None
    compile_s: float = 0.0
    explore_s: float = 0.0
    timing_s: float = 0.0
    eager_check_s: float = 0.0
    explore_overhead_s: float = 0.0
    other_s: float = 0.0


@dataclass(repr=False, eq=False)
class Interrupted(Data):
    during: str
    finished: list[str] = field(default_factory=list)
    not_run: list[str] = field(default_factory=list)


@dataclass(repr=False, eq=False)
class JitTrace(Data):
    """torch.jit.trace as the input of torch.compile (``compiler.analyses.jit_input``): what was traced,
    how, what it took, TorchScript's own runtime, and the findings."""

    kind: str | None = None
    seconds: float | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    error: ConfigError | None = None
    compile_warnings: list[str] = field(default_factory=list)
    torchscript_runtime: dict[str, Any] | None = None
    findings: list[str] = field(default_factory=list)
    graph: str | None = None
    code: str | None = None
    warnings: list[str] = field(default_factory=list)
    inlines_original: bool | None = None


@dataclass(repr=False, eq=False)
class ComparisonData(Data):
    """The saved comparison, field by field."""

    format: str = FORMAT
    version: list[int] = field(default_factory=lambda: list(VERSION))
    function: str | None = None
    spec: str | None = None
    common: dict[str, Any] = field(default_factory=dict)
    fresh: bool | None = None
    timing: bool | None = None
    repeat: int | None = None
    environment: dict[str, Any] = field(default_factory=dict)
    eager: EagerBaseline | None = None
    configs: list[ConfigEntry] = field(default_factory=list)
    magic: str | None = None
    jit_trace: JitTrace | None = None
    interrupted: Interrupted | None = None
    accounting: Accounting | None = None


@dataclass(repr=False, eq=False)
class ComparisonRow(Data):
    """One row of the summary table (``Comparison.rows``); ``not_run``: a configuration an interrupt
    never reached (no numbers)."""

    label: str = ""
    ok: bool = False
    interrupted: bool = False
    not_run: bool = False
    compile_s: float | None = None
    eager_s: float | None = None
    runtime_s: float | None = None
    speedup: float | None = None
    runtime_note: str | None = None
    graphs: int | None = None
    graph_breaks: int | None = None
    recompiles: int | None = None
    guards: int | None = None
    kernels: int | None = None
    cudagraphs: str | None = None
    error: str | None = None
    error_stage: str | None = None
    missing_package: str | None = None
    mode_options: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)


class Comparison(JsonFile):
    """The result of ``compare()``, typed (``doc``: a ``ComparisonData``): ``entries`` (one
    ``ConfigEntry`` per configuration), ``captures`` (the Capture objects: live ones, with what-if and
    ``live.compiled_fn``, for a comparison made in this process), ``rows()`` (the summary table)."""

    document = "comparison"

    def __init__(self, doc: ComparisonData, captures: list | None = None):
        self.doc = doc
        self._captures = captures

    @classmethod
    def from_data(cls, data, captures: list | None = None) -> "Comparison":
        validate(data)
        return cls(ComparisonData.from_data(data), captures)

    def to_data(self) -> dict:
        return self.doc.to_data()

    @property
    def labels(self) -> list[str]:
        return [e.label for e in self.entries]

    @property
    def entries(self) -> list[ConfigEntry]:
        return self.doc.configs

    @property
    def interrupted(self) -> Interrupted | None:
        """For a comparison stopped by an interrupt: ``during`` (where it stopped), ``finished`` and
        ``not_run`` (labels); None when every configuration ran."""
        return self.doc.interrupted

    @property
    def jit_trace(self) -> JitTrace | None:
        """For ``compiler.analyses.jit_input.explore_jit_trace``: the trace's record and findings."""
        return self.doc.jit_trace

    @property
    def accounting(self) -> Accounting | None:
        return self.doc.accounting

    @property
    def eager(self) -> EagerBaseline | None:
        return self.doc.eager

    @property
    def captures(self) -> list[Capture | None]:
        if self._captures is None:  # loaded: read each configuration's capture once
            self._captures = [Capture.from_data(e.capture) if e.capture else None for e in self.entries]
        return self._captures

    def index(self, which) -> int:
        if isinstance(which, int):
            return which
        if which in self.labels:
            return self.labels.index(which)
        raise KeyError(f"no configuration {which!r}; have {self.labels}")

    def capture(self, which) -> Capture | None:
        """The capture of a configuration (by label or index); None when it failed before compiling."""
        return self.captures[self.index(which)]

    def error(self, which) -> ConfigError | None:
        return self.entries[self.index(which)].error

    def rows(self) -> list[ComparisonRow]:
        """The summary table: one row per configuration, in order; after an interrupt, the configurations
        that never ran too (``not_run``: True, no numbers)."""
        rows = []
        for entry, cap in zip(self.entries, self.captures):
            error = entry.error
            summary = cap.summary if cap is not None else None
            runtime = cap.runtime if cap is not None and cap.runtime.available else None
            rows.append(ComparisonRow(
                label=entry.label, ok=error is None, interrupted=entry.interrupted,
                compile_s=summary.compile_time_s if summary else None,
                eager_s=runtime.eager.median_s if runtime else None,
                runtime_s=runtime.compiled.median_s if runtime else None,
                speedup=runtime.speedup if runtime else None,
                runtime_note=None if runtime or cap is None else cap.runtime.reason,
                graphs=summary.graphs if summary else None,
                graph_breaks=summary.graph_breaks if summary else None,
                recompiles=summary.recompiles if summary else None,
                guards=summary.guards if summary else None,
                kernels=summary.kernels if summary else None,
                cudagraphs=cudagraphs_cell(cap) if cap is not None else None,
                error=error_text(error) if error else None,
                error_stage=error.stage if error else None,
                missing_package=(error.missing or {}).get("package") if error else None,
                mode_options=entry.mode_options, notes=list(entry.notes)))
        # an interrupted comparison: the configurations it never reached, so the table names every one
        for label in self.interrupted.not_run if self.interrupted else []:
            rows.append(ComparisonRow(label=label, not_run=True))
        return rows

    @property
    def df(self):
        import pandas as pd

        return pd.DataFrame([row.to_data() for row in self.rows()]).set_index("label")

    def diff(self, a, b, normalized: bool = True):
        """Stage-by-stage differences between two configurations (labels or indexes)."""
        from compiler.analyses.diff import diff

        cap_a, cap_b = self.capture(a), self.capture(b)
        if cap_a is None or cap_b is None:
            missing = self.labels[self.index(a if cap_a is None else b)]
            raise ValueError(f"configuration {missing!r} has no capture: {error_text(self.error(missing))}")
        return diff(cap_a, cap_b, labels=(self.labels[self.index(a)], self.labels[self.index(b)]),
                    normalized=normalized)

    def as_text(self) -> str:
        not_run = len(self.interrupted.not_run) if self.interrupted else 0
        lines = [f"tcompile comparison of {self.doc.function} ({len(self.entries) + not_run} configurations"
                 + (f", {not_run} not run)" if not_run else ")")]
        for row in self.rows():
            if row.not_run:
                lines.append(f"  {row.label}: not run (interrupted)")
                continue
            if row.interrupted:
                lines.append(f"  {row.label}: INTERRUPTED ({row.error_stage}); the stages captured before it "
                             "are kept")
                continue
            if not row.ok:
                missing = f" (install {row.missing_package})" if row.missing_package else ""
                lines.append(f"  {row.label}: FAILED in {row.error_stage}: {row.error}{missing}")
                continue
            speed = f"{row.speedup:.2f}x" if row.speedup else "–"
            runtime = f"{row.runtime_s * 1e6:.1f} µs" if row.runtime_s else "–"
            lines.append(f"  {row.label}: compile {row.compile_s:.2f} s, runtime {runtime}, speedup {speed}, "
                         f"{row.graphs} graphs, {row.graph_breaks} breaks, {row.recompiles} recompiles, "
                         f"{row.guards} guards, {row.kernels} kernels, CUDA graphs {row.cudagraphs}")
        if self.interrupted:
            lines.append(f"  interrupted during {self.interrupted.during}"
                         + (f"; not run: {', '.join(self.interrupted.not_run)}" if self.interrupted.not_run else ""))
        acc = self.accounting
        if acc:
            lines.append(f"  wall {acc.wall_s:.2f} s = warm-up {acc.warmup_s or 0:.2f} s + compiles "
                         f"{acc.compile_s:.2f} s + explore overhead {acc.explore_overhead_s:.2f} s + timing "
                         f"{acc.timing_s + acc.eager_check_s:.2f} s + other {acc.other_s:.2f} s")
        return "\n".join(lines)

    __str__ = as_text

    def __eq__(self, other) -> bool:
        return isinstance(other, Comparison) and self.to_data() == other.to_data()

    def __repr__(self) -> str:
        failed = sum(e.error is not None for e in self.entries)
        not_run = len(self.interrupted.not_run) if self.interrupted else 0
        return (f"<Comparison of {self.doc.function}: {len(self.entries) + not_run} configurations"
                + (f", {failed} failed" if failed else "")
                + (f", interrupted during {self.interrupted.during}" if self.interrupted else "") + ">")


def validate(data) -> None:
    """A comparison of a version this reader knows; each configuration's capture checked by the schema."""
    check_document_header(data, FORMAT, VERSION, "comparison")
    if not isinstance(data.get("configs"), list) or not all(isinstance(e, dict) for e in data["configs"]):
        raise CaptureFormatError("configs: expected a list of objects")
    for index, entry in enumerate(data["configs"]):
        if entry.get("capture") is not None:
            Capture.from_data(entry["capture"], path=f"configs[{index}].capture")


def load(path) -> Comparison:
    return Comparison.load(path)
