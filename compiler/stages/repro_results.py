"""What a capture keeps of the scripts made from its findings: the minified failing compile (``cap.minify()``,
``compiler.analyses.minify``) and the bisection of its numerical drift (``cap.bisect_drift()``,
``compiler.analyses.bisect_drift``). Both are saved with the capture (``CaptureData.minified`` /
``drift_bisection``) and read back field by field like every stage."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from compiler.stages.data import Stage


@dataclass(repr=False, eq=False)
class Minified(Stage):
    """torch's minifier run on a failing compile, in a child process: the smallest graph that still fails."""

    NAME: ClassVar[str] = "minified"
    after: str | None = None  # torch._dynamo.config.repro_after: "aot" (Inductor) or "dynamo" (another backend)
    error: str | None = None  # the failure the minifier kept (its last line)
    graph: str | None = None  # the minimal failing graph's code (its forward)
    ops: list[str] = field(default_factory=list)  # the call_function targets in it
    nodes_before: int | None = None  # call_function nodes in the graph torch first dumped
    nodes_after: int | None = None  # … in the minimal one
    repro: str | None = None  # the runnable script the minifier wrote (repro.py)
    launcher: str | None = None  # minifier_launcher.py, as torch wrote it
    command: str | None = None  # how to run the repro
    seconds: float | None = None
    stopped: str | None = None  # why the run ended early (time budget, Stop)
    log: list[str] = field(default_factory=list)  # the run's last lines
    torch_version: str | None = None

    def _text(self):
        lines = [f"minified with repro_after={self.after!r}: {self.nodes_before} → {self.nodes_after} nodes "
                 f"({', '.join(self.ops) or 'no ops'}); {self.error or ''}".rstrip("; "),
                 f"run it: {self.command}" if self.command else "", "", self.graph or ""]
        if self.stopped:
            lines.insert(0, self.stopped)
        return "\n".join(line for line in lines if line is not None).strip()

    def _summary(self):
        return f"{self.nodes_before} → {self.nodes_after} nodes: {', '.join(self.ops[:4])}"


@dataclass(repr=False, eq=False)
class DriftBisection(Stage):
    """torch's ``CompilerBisector`` run on the captured calls, in a child process: where compiled outputs first
    differ from eager — the backend, subsystem and pass — or that eager differs from itself."""

    NAME: ClassVar[str] = "drift_bisection"
    found: bool = False  # a backend (and maybe subsystem) where the difference begins
    verdict: str | None = None  # one line
    nondeterministic: bool = False  # eager twice on the same inputs already differs
    backend: str | None = None  # eager, aot_eager, aot_eager_decomp_partition, inductor
    subsystem: str | None = None  # pre_grad_passes, joint_graph_passes, post_grad_passes, lowerings, …
    bisect_number: int | None = None  # which application of the subsystem (0-based)
    pass_name: str | None = None  # the bisector's debug info: the pass (or the lowered node)
    difference: str | None = None  # how the drifting outputs differ (the comparison's note)
    tolerance: str | None = None
    confirmed: str | None = None  # the culprit checked again on its own (TORCH_BISECT_MAX n and n−1)
    command: str | None = None  # how to reproduce it
    checks: int | None = None  # compiles the bisection ran
    seconds: float | None = None
    stopped: str | None = None
    log: list[str] = field(default_factory=list)
    torch_version: str | None = None

    def _text(self):
        lines = [self.stopped, self.verdict, f"difference: {self.difference}" if self.difference else None,
                 f"confirmed: {self.confirmed}" if self.confirmed else None,
                 f"reproduce: {self.command}" if self.command else None,
                 f"{self.checks} checks in {self.seconds:.1f} s" if self.checks is not None and self.seconds else None]
        return "\n".join(line for line in lines if line)

    def _summary(self):
        return self.verdict or ""
