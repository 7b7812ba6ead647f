"""The result of ``compiler.compare``: one entry per configuration (its capture, or its error), the
summary table, diffs between configurations, saved and loaded as versioned JSON.

    cmp.rows()                     # label, compile time, runtime, speedup, graphs, breaks, guards, kernels …
    cmp.diff("mode=default", "mode=max-autotune").changed_stages
    cmp.save("modes.json"); Comparison.load("modes.json")
"""
from __future__ import annotations

from compiler.stages.capture import Capture, CaptureFormatError, JsonFile
from compiler.stages.schema import check_document_header

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


def error_text(error: dict) -> str:
    """One line: the error, or its cause when the error only says "backend='x' raised:"."""
    lines = [line for line in str(error.get("message") or "").strip().splitlines() if line.strip()]
    first = lines[0] if lines else ""
    if error.get("cause") and (first.endswith("raised:") or not first):
        return f"{error['type']}: {str(error['cause']).strip().splitlines()[0]}"
    return f"{error['type']}: {first}"


NUMBERS = ("compile_s", "eager_s", "runtime_s", "speedup", "graphs", "graph_breaks", "recompiles", "guards", "kernels")


class Comparison(JsonFile):
    """The result of ``compare()``: ``data["configs"]`` holds one entry per configuration (label,
    config, the capture's data or None, the error); ``captures`` are the Capture objects (live ones,
    with what-if and ``live.compiled_fn``, for a comparison made in this process)."""

    document = "comparison"

    def __init__(self, data: dict, captures: list | None = None):
        self.data = data
        self._captures = captures

    @staticmethod
    def validate_data(data) -> None:
        validate(data)

    @property
    def labels(self) -> list[str]:
        return [e["label"] for e in self.data["configs"]]

    @property
    def entries(self) -> list[dict]:
        return self.data["configs"]

    @property
    def interrupted(self) -> dict | None:
        """For a comparison stopped by an interrupt: ``during`` (where it stopped), ``finished`` and
        ``not_run`` (labels); None when every configuration ran."""
        return self.data.get("interrupted")

    @property
    def jit_trace(self) -> dict | None:
        """For ``compiler.analyses.jit_input.explore_jit_trace``: the trace's record and findings."""
        return self.data.get("jit_trace")

    @property
    def captures(self) -> list[Capture | None]:
        if self._captures is None:  # loaded: read each configuration's capture once
            self._captures = [Capture.from_data(e["capture"]) if e.get("capture") else None for e in self.entries]
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

    def error(self, which) -> dict | None:
        return self.entries[self.index(which)].get("error")

    def rows(self) -> list[dict]:
        """The summary table: one row per configuration, in order; after an interrupt, the configurations
        that never ran too (``not_run``: True, no numbers)."""
        rows = []
        for entry, cap in zip(self.entries, self.captures):
            error = entry.get("error")
            summary = cap.summary if cap is not None else None
            runtime = cap.runtime if cap is not None and cap.runtime.available else None
            rows.append({
                "label": entry["label"], "ok": error is None, "interrupted": bool(entry.get("interrupted")),
                "compile_s": summary.compile_time_s if summary else None,
                "eager_s": runtime.eager.median_s if runtime else None,
                "runtime_s": runtime.compiled.median_s if runtime else None,
                "speedup": runtime.speedup if runtime else None,
                "runtime_note": None if runtime or cap is None else cap.runtime.reason,
                "graphs": summary.graphs if summary else None,
                "graph_breaks": summary.graph_breaks if summary else None,
                "recompiles": summary.recompiles if summary else None,
                "guards": summary.guards if summary else None,
                "kernels": summary.kernels if summary else None,
                "cudagraphs": cudagraphs_cell(cap) if cap is not None else None,
                "error": error_text(error) if error else None,
                "error_stage": error.get("stage") if error else None,
                "missing_package": (error.get("missing") or {}).get("package") if error else None,
                "mode_options": entry.get("mode_options"), "notes": entry.get("notes") or [], "not_run": False,
            })
        # an interrupted comparison: the configurations it never reached, so the table names every one
        for label in (self.interrupted or {}).get("not_run", []):
            rows.append({**dict.fromkeys(NUMBERS), "label": label, "ok": False, "interrupted": False,
                         "runtime_note": None, "cudagraphs": None, "error": None, "error_stage": None,
                         "missing_package": None, "mode_options": None, "notes": [], "not_run": True})
        return rows

    @property
    def df(self):
        import pandas as pd

        return pd.DataFrame(self.rows()).set_index("label")

    def diff(self, a, b, normalized: bool = True):
        """Stage-by-stage differences between two configurations (labels or indexes)."""
        from compiler.analyses.diff import diff

        cap_a, cap_b = self.capture(a), self.capture(b)
        if cap_a is None or cap_b is None:
            missing = self.labels[self.index(a if cap_a is None else b)]
            raise ValueError(f"configuration {missing!r} has no capture: {self.error(missing)}")
        return diff(cap_a, cap_b, labels=(self.labels[self.index(a)], self.labels[self.index(b)]),
                    normalized=normalized)

    def as_text(self) -> str:
        not_run = len((self.interrupted or {}).get("not_run", []))
        lines = [f"tcompile comparison of {self.data.get('function')} ({len(self.entries) + not_run} configurations"
                 + (f", {not_run} not run)" if not_run else ")")]
        for row in self.rows():
            if row["not_run"]:
                lines.append(f"  {row['label']}: not run (interrupted)")
                continue
            if row["interrupted"]:
                lines.append(f"  {row['label']}: INTERRUPTED ({row['error_stage']}); the stages captured before it "
                             "are kept")
                continue
            if not row["ok"]:
                missing = f" (install {row['missing_package']})" if row["missing_package"] else ""
                lines.append(f"  {row['label']}: FAILED in {row['error_stage']}: {row['error']}{missing}")
                continue
            speed = f"{row['speedup']:.2f}x" if row["speedup"] else "–"
            runtime = f"{row['runtime_s'] * 1e6:.1f} µs" if row["runtime_s"] else "–"
            lines.append(f"  {row['label']}: compile {row['compile_s']:.2f} s, runtime {runtime}, speedup {speed}, "
                         f"{row['graphs']} graphs, {row['graph_breaks']} breaks, {row['recompiles']} recompiles, "
                         f"{row['guards']} guards, {row['kernels']} kernels, CUDA graphs {row['cudagraphs']}")
        if self.interrupted:
            lines.append(f"  interrupted during {self.interrupted['during']}"
                         + (f"; not run: {', '.join(self.interrupted['not_run'])}" if self.interrupted["not_run"]
                            else ""))
        acc = self.data.get("accounting") or {}
        if acc:
            lines.append(f"  wall {acc['wall_s']:.2f} s = warm-up {acc.get('warmup_s') or 0:.2f} s + compiles "
                         f"{acc['compile_s']:.2f} s + explore overhead {acc['explore_overhead_s']:.2f} s + timing "
                         f"{acc['timing_s'] + acc['eager_check_s']:.2f} s + other {acc['other_s']:.2f} s")
        return "\n".join(lines)

    __str__ = as_text

    def __eq__(self, other) -> bool:
        return isinstance(other, Comparison) and self.data == other.data

    def __repr__(self) -> str:
        failed = sum(e.get("error") is not None for e in self.entries)
        not_run = len((self.interrupted or {}).get("not_run", []))
        return (f"<Comparison of {self.data.get('function')}: {len(self.entries) + not_run} configurations"
                + (f", {failed} failed" if failed else "")
                + (f", interrupted during {self.interrupted['during']}" if self.interrupted else "") + ">")


def validate(data) -> None:
    """A comparison of a version this reader knows; each configuration's capture checked by the schema."""
    check_document_header(data, FORMAT, VERSION, "comparison")
    if not isinstance(data.get("configs"), list) or not all(isinstance(e, dict) for e in data["configs"]):
        raise CaptureFormatError("configs: expected a list of objects")
    interrupted = data.get("interrupted")
    if interrupted is not None and not (isinstance(interrupted, dict) and isinstance(interrupted.get("during"), str)
                                        and all(isinstance(interrupted.get(k), list) for k in ("finished", "not_run"))):
        raise CaptureFormatError("interrupted: expected an object with during, finished and not_run")
    for index, entry in enumerate(data["configs"]):
        if entry.get("capture") is not None:
            Capture.from_data(entry["capture"], path=f"configs[{index}].capture")


def load(path) -> Comparison:
    return Comparison.load(path)
