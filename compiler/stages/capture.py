"""The Capture: typed, JSON-backed data about every compile (fields declared in ``compiler.stages.schema``),
plus the live-only state of a capture made in this process.

Data flows one way: torch → records → ``assemble`` (typed ``CaptureData``, made once) → ``Capture.of`` →
explorer views. A Capture loaded from a file is read by ``CaptureData.from_data`` into the same types and
offers the same API, except what-if checks, which need the live guards.

    >>> import compiler
    >>> cap = compiler.Capture.from_data({"format": "tcompile-capture", "version": [4, 0]})
    >>> cap.summary.compiles, cap.breaks.total, cap.runtime.available
    (0, 0, False)
    >>> compiler.Capture.from_data({"format": "tcompile-capture", "version": [4, 0], "compiles": [5]})
    Traceback (most recent call last):
    ...
    compiler.stages.data.CaptureFormatError: compiles[0]: expected an object, got 5
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from compiler.drawing import draw
from compiler.stages.base import unavailable
from compiler.stages.data import Deferred
from compiler.stages.schema import FORMAT, STAGES, VERSION, CaptureData, CaptureFormatError, Compile, JsonFile, Stage

__all__ = ["FORMAT", "STAGES", "VERSION", "Capture", "CaptureFormatError", "Compile", "JsonFile", "Stage",
           "load", "unavailable"]

# The Capture methods whose work lives on a floor above this one — what-if, fixes, diff, experiments
# (compiler.analyses), saving a TORCH_TRACE or Perfetto file (compiler.readers): name → function, put here
# by that module when it is imported (``METHODS[...] = ...`` at its end). compiler/__init__ imports every one
# of them, and Python runs compiler/__init__ before any module of the package, so a Capture finds them all.
# The data floor never imports a floor above it (compiler/__init__'s docstring: the floors).
from compiler.stages.base import METHODS  # noqa: E402 (declared on the floor's lowest module: stages use it too)


@dataclass
class LiveState:
    """What a capture made in this process keeps besides its data (``cap.live``; never saved, and
    None on a capture loaded from a file).

    - ``codes``: compile id → the original code object Dynamo compiled (its cache entries hold the
      guard managers that ``what_if`` runs).
    - ``records``: the raw records the capture was built from (``compiler.stages.records.Record``), for
      debugging tcompile itself.
    - ``compiled_fn``: the ``torch.compile``-d function ``compiler.run`` called (None for
      ``compiler.capture()``, where the user compiles).
    - ``result``: what the first compiled call returned (``compiler.run``; the ``%%tcompile`` cell's
      names and value come from it).
    - ``args`` / ``kwargs``: the arguments ``compiler.run`` called it with (what-if's defaults and
      the explorer's placeholder).
    """

    codes: dict = field(default_factory=dict)  # compile id → original code object
    records: list = field(default_factory=list)
    compiled_fn: object = None
    result: object = None
    args: tuple | None = None
    kwargs: dict | None = None
    calls: list | None = None  # every call as (args, kwargs), where more than the first was made (fix experiments)

    def entries(self, code):
        from torch._dynamo.eval_frame import _debug_get_cache_entry_list

        return _debug_get_cache_entry_list(code)


@dataclass(repr=False, eq=False)
class Capture(CaptureData, JsonFile):
    """The result of ``compiler.capture()`` / ``compiler.explore()``: ``compiles`` (one ``Compile``
    per frame compile, each stage an attribute), and capture-wide ``breaks``, ``recompiles``,
    ``runtime``, ``cudagraphs``, ``summary``, ``error``.

    ``live`` (a ``LiveState``) holds what only exists in the process that made
    the capture — the guard managers and code objects for what-if, the raw records, the compiled
    function — and is None for a capture loaded from a file. ``trace`` (a
    ``compiler.readers.trace.TraceInfo``: file, counts, problems) and ``trace_records`` / ``trace_strings``
    (the raw records and interned file names) are set on a capture read from a TORCH_TRACE log.
    None of these is saved.
    """

    live: Any = field(default=None, metadata={"live": True})
    trace: Any = field(default=None, metadata={"live": True})
    trace_records: list = field(default_factory=list, metadata={"live": True})
    trace_strings: dict = field(default_factory=dict, metadata={"live": True})

    def __post_init__(self):
        super().__post_init__()
        for stage in (self.breaks, self.cudagraphs, self.runtime, self.gpu_profile, self.cudagraph_comparison,
                      *self.recompiles):
            if stage is not None:
                stage.__dict__["_capture"] = self
        for c in self.compiles:
            c.__dict__["_capture"] = self
            for name in STAGES:
                stage = c.__dict__[name]
                if type(stage) is not Deferred:  # one built on first read is told then (Compile._on_built)
                    stage.__dict__["_compile"] = c

    @classmethod
    def from_data(cls, data, path: str = "", live=None, **live_fields) -> "Capture":
        """Build a capture from its data (read from a file, a trace or a comparison); every field is
        checked against ``compiler.stages.schema``. ``live``, ``trace``, ``trace_records``, ``trace_strings``:
        the live-only fields, set as it is made."""
        return cls.of(CaptureData.from_data(data, path), live=live, **live_fields)

    @classmethod
    def of(cls, saved: CaptureData, *, into: "Capture | None" = None, **fields) -> "Capture":
        """The Capture of typed saved data, with the live-only fields (and ``proposed_fixes``) in ``fields``:
        made once here and never changed after. ``into``: the ``pending`` capture a ``with`` block holds,
        made now (a capture is made once: a made one is refused)."""
        if into is not None and not into.__dict__.get("_pending"):
            raise RuntimeError("this capture was already made; a capture is made once")
        capture = into if into is not None else object.__new__(cls)
        capture.__dict__ = {**saved.__dict__, "live": None, "trace": None, "trace_records": [],
                            "trace_strings": {}, **fields}
        capture.__post_init__()
        return capture

    @classmethod
    def empty(cls, live=None) -> "Capture":
        """A capture with nothing in it (a view drawn for a stage or compile made on its own)."""
        return cls(format=FORMAT, version=list(VERSION), live=live)

    @classmethod
    def pending(cls, live=None) -> "Capture":
        """What ``with compiler.capture() as cap`` holds until the block ends: a capture not made yet
        (reading its data raises), made once when the block ends (``of(..., into=)``)."""
        capture = object.__new__(cls)
        capture.__dict__ = {"live": live, "_pending": True}
        return capture

    def __getattr__(self, name):  # only for attributes not found: a pending capture's data
        if object.__getattribute__(self, "__dict__").get("_pending"):
            raise AttributeError(f"{name}: this capture is made when its with block ends")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _defer(self, build) -> None:
        """Fill this capture from ``build()`` (which returns the built Capture) on its first use instead
        of now: ``with compiler.capture()`` ends without parsing the records (the parse is most of
        the capture's cost per compile), and any attribute read — ``cap.compiles``, ``print(cap)``,
        ``cap.save`` — builds it first, once."""
        self.__dict__["_pending"] = _Pending(build)
        self.__class__ = _Unbuilt

    def compile(self, compile_id: str) -> Compile:
        index = self.__dict__.get("_by_id")  # (the list, its length, id → compile): rebuilt when either changed
        if index is None or index[0] is not self.compiles or index[1] != len(self.compiles):
            by_id: dict = {}
            for c in self.compiles:
                by_id.setdefault(c.compile_id, c)
            index = self.__dict__["_by_id"] = (self.compiles, len(self.compiles), by_id)
        found = index[2].get(compile_id)
        if found is not None and found.compile_id == compile_id:
            return found
        have = [c.compile_id for c in self.compiles[:20]]
        raise KeyError(f"no compile {compile_id!r}; have {have}" + (f" and {len(self.compiles) - 20} more"
                                                                    if len(self.compiles) > 20 else ""))

    @property
    def guards_df(self):
        """Every compile's guards as one pandas DataFrame (with a ``compile_id`` column)."""
        import pandas as pd

        frames = [c.guards.table.assign(compile_id=c.compile_id) for c in self.compiles if c.guards.available]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def line_table(self):
        """Where the time goes, by line of the user's code: a pandas DataFrame with one row per source
        line that produced work — ``line``, ``code``, ``nodes``, ``kernels``, ``time_share`` (sums to 1
        when kernel times were measured), ``seconds`` per call (``compiler.stages.run_costs``)."""
        from compiler.stages.run_costs import line_table

        return line_table(self)

    def line_roofline(self):
        """The GPU roofline by line of the user's code: a pandas DataFrame with one row per compile and source
        line — ``seconds`` (GPU time per call), ``flops``, ``bytes``, ``intensity``, ``achieved_flops_per_s``,
        ``achieved_bytes_per_s``, ``bound``, ``share``, ``served_from``, ``verdict`` — the line's kernels' costs
        split by their provenance shares (``compiler.stages.kernel_costs.line_roofline``); empty off the GPU."""
        import pandas as pd

        from compiler.stages.kernel_costs import line_roofline

        profile = self.gpu_profile
        peak = profile.peak_bytes_per_s if profile is not None and profile.available else None
        rows = [{"compile_id": c.compile_id, **row} for c in self.compiles
                for row in line_roofline(c, (self.environment or {}).get("device_name"), peak)]
        columns = ["compile_id", "file", "line", "code", "seconds", "flops", "bytes", "intensity",
                   "achieved_flops_per_s", "achieved_bytes_per_s", "dtype", "bound", "share", "served_from",
                   "verdict", "kernels", "kernels_costed"]
        return pd.DataFrame(rows, columns=columns)

    def compile_time_table(self, by: str = "line", depth: int | None = None):
        """Where the compile time went, by line of the user's code: a pandas DataFrame with one row per
        compile, line and phase — ``line``, ``code``, ``module``, ``phase``, ``seconds``, ``share`` (of the
        compile's sampled time), ``samples``, ``error_s`` (± interval × √samples) — largest first.
        ``by="module"`` or ``"phase"``: summed over all compiles per module (the innermost one torch knew;
        ``depth=2`` sums ``h.0.attn.c_proj`` into ``h.0``) or phase. Sampled while
        torch compiled (each compile's ``timings.by_line_method`` says how); empty for a loaded TORCH_TRACE."""
        import pandas as pd

        from compiler.stages.compile_time import compile_time_rows

        rows = compile_time_rows(self, by, depth)
        columns = (["compile_id", "line", "code", "module", "phase", "seconds", "share", "samples", "error_s", "file"]
                   if by == "line" else [by, "seconds", "share", "samples"])
        frame = pd.DataFrame(rows, columns=columns)
        if by != "line":
            return frame
        frame["line"] = frame["line"].astype("Int64")
        return frame.sort_values("seconds", ascending=False, ignore_index=True)

    @property
    def interrupted(self) -> bool:
        """A KeyboardInterrupt stopped the capture: it holds what was recorded until then."""
        return self.error is not None and self.error.type == "KeyboardInterrupt"

    @property
    def is_live(self) -> bool:
        return self.live is not None

    def frame_code(self, compile_id: str | None = None):
        """The live code object of a compiled frame (the first one by default), usable as ``fn``
        in ``what_if`` when the function itself is not at hand. None for a loaded capture."""
        if self.live is None or not self.live.codes:
            return None
        return self.live.codes.get(compile_id) if compile_id else next(iter(self.live.codes.values()))

    def what_if(self, fn, *args, dry_run: bool = False, **kwargs):
        """Would calling ``fn(*args, **kwargs)`` hit a cached compile, or recompile — and why?

        By default checks the entry frame's live guards without running ``fn`` (a ``WhatIf``; it
        lists the frames it did not check: those after a graph break, hooks). ``dry_run=True``
        calls ``fn`` once under ``torch.compiler.set_stance("eager_on_recompile")`` — this runs
        your code, nothing is compiled — and reports every frame that would recompile, with its
        failing guard (a ``DryRun``; ``.recompiles`` lists them). Needs a live capture
        (``compiler.analyses.whatif``).
        """
        if self.live is None:
            raise RuntimeError("what-if checks need the live guards of this Python process; "
                               "a capture loaded from a file only holds their text")
        if dry_run:
            return METHODS["dry_run"](self.live, fn, args, kwargs)
        return METHODS["what_if"](self.live, fn, args, kwargs, self.compiles)

    def fixes(self):
        """The proposed fixes for this capture's graph breaks, recompiles and skipped frames, highest
        cost first (a ``compiler.stages.fix_schema.Fixes``: iterate, index, ``fixes()["fix1"]``); each says
        what it changes, its snippet, the findings it addresses and, once tried, its measured effect
        (``compiler.analyses.fixes``). Saved with the capture."""
        if self.proposed_fixes is None:
            self.proposed_fixes = METHODS["propose_fixes"](self)
        for fix in self.proposed_fixes.items:
            fix.__dict__["_capture"] = self
        return self.proposed_fixes

    def try_fixes(self, fn=None, calls=None, **kwargs):
        """Try each applicable fix alone, then the recommended ones together, by re-running the
        captured calls with the change (``compiler.analyses.fix_experiments.try_fixes``); → the Fixes, with
        each ``result`` and ``combined`` filled in. Needs the live function (or ``fn`` and ``calls``)."""
        return METHODS["try_fixes"](self, fn=fn, calls=calls, **kwargs)

    def try_fix(self, fix, fn=None, calls=None, **kwargs):
        """Try one fix (``fix.try_()``; ``compiler.analyses.fix_experiments.try_fix``)."""
        return METHODS["try_fix"](self, fix, fn=fn, calls=calls, **kwargs)

    def compile_fixes(self, model=None):
        """What would save compile time (``compiler.analyses.compile_fixes``): regional compilation of a
        repeated block, warm caches / mega-cache, dynamic=True where recompiles dominate, a cheaper mode —
        a ``Fixes`` like ``fixes()``; ``model``: the live module to look for repeated blocks in (default:
        the captured function). Saved with the capture once proposed."""
        if self.proposed_compile_fixes is None or (model is not None and not self.proposed_compile_fixes.items):
            self.proposed_compile_fixes = METHODS["propose_compile_fixes"](self, model)
        return self.proposed_compile_fixes

    def try_compile_fixes(self, fn=None, calls=None, **kwargs):
        """Try each compile-time change in a fresh process with empty caches, against a baseline compiled
        the same way (``compiler.analyses.compile_fixes.try_compile_fixes``): compile seconds before → after,
        runtime, outputs equal eager."""
        return METHODS["try_compile_fixes"](self, fn=fn, calls=calls, **kwargs)

    def cache_table(self):
        """Every cache of every compile (``c.caches``): a pandas DataFrame, one row per compile and cache —
        ``cache``, ``state`` (hit, miss, bypass, …), ``detail``, ``reason`` (torch's, for a bypass), ``key``,
        ``saved_s`` / ``would_save_s`` (torch's figures)."""
        import pandas as pd

        rows = [{"compile_id": c.compile_id, **{k: v for k, v in e.to_data().items() if k != "key_inputs"}}
                for c in self.compiles if c.caches.available for e in c.caches.entries]
        return pd.DataFrame(rows)

    def measure_caches(self, fn=None, calls=None, timeout: float = 600.0):
        """What a cache hit saves, measured (``compiler.analyses.cache_runs``): the captured calls compiled
        in three fresh processes — cold, warm (the caches the cold run filled), mega-cache
        (``torch.compiler.load_cache_artifacts`` of the cold run's ``save_cache_artifacts``). Kept as
        ``cap.cache_runs`` (saved with the capture). Needs the live function (or ``fn`` and ``calls``)."""
        self.cache_runs = METHODS["measure_caches"](self, fn=fn, calls=calls, timeout=timeout)
        return self.cache_runs

    def minify(self, fn=None, calls=None, **kwargs):
        """Run torch's minifier on this capture's failing compile in a child process (``repro_after="aot"`` for
        Inductor, ``"dynamo"`` for another backend; bounded by ``timeout``, ``progress``/``should_stop`` like Try
        all): the smallest graph that still fails and the runnable script torch wrote (a ``Minified``, kept as
        ``cap.minified``; ``compiler.analyses.minify``). Needs the live function (or ``fn`` and ``calls``)."""
        return METHODS["minify"](self, fn=fn, calls=calls, **kwargs)

    def bisect_drift(self, fn=None, calls=None, **kwargs):
        """Where compiled outputs first differ from eager: torch's ``CompilerBisector`` on the captured calls in a
        child process — backend, subsystem and pass, or nondeterminism (a ``DriftBisection``, kept as
        ``cap.drift_bisection``; ``compiler.analyses.bisect_drift``). Needs the live function (or ``fn``, ``calls``)."""
        return METHODS["bisect_drift"](self, fn=fn, calls=calls, **kwargs)

    def save_trace(self, path):
        """Write the raw records as a TORCH_TRACE log that tlparse reads (``compiler.readers.trace.save_trace``):
        a live capture or one read from a trace can; one loaded from tcompile JSON cannot."""
        return METHODS["save_trace"](self, path)

    def save_perfetto(self, path):
        """Write the compile events of every compile (one track each, with compile ids) and, where measured,
        the kernels' times per call (another track) as one Chrome trace-event JSON file for
        ui.perfetto.dev or chrome://tracing (``compiler.readers.perfetto``); written atomically."""
        return METHODS["save_perfetto"](self, path)

    def diff(self, other, **kwargs):
        """Stage-by-stage differences to another capture (``compiler.analyses.diff.diff``)."""
        return METHODS["diff"](self, other, **kwargs)

    @classmethod
    def from_error(cls, exc: BaseException, stage: str, message: str | None = None, options: dict | None = None,
                   live=None, into: "Capture | None" = None) -> "Capture":
        """A capture that holds only an error raised before anything compiled (e.g. a syntax error).
        ``into``: a ``pending`` capture, made now."""
        from compiler.stages.environment import environment

        return cls.of(CaptureData.from_data({
            "format": FORMAT, "version": list(VERSION), "environment": environment(), "options": options or {},
            "cudagraphs": unavailable("nothing was compiled"),
            "runtime": unavailable("nothing was compiled"),
            "error": {"type": type(exc).__name__, "module": type(exc).__module__,
                      "message": message or str(exc), "stage": stage}}), live=live, into=into)

    def as_text(self) -> str:
        """A plain-text report: what the Overview says first (the fixes' headline, then the findings, worst
        first: ``compiler.stages.findings``), the summary, then every compile's stages."""
        from compiler.stages.findings import overview_lines

        s = self.summary
        lines = [repr(self), *overview_lines(self),
                 f"compile time {s.compile_time_s:.3g} s, {s.guards} guards, {s.kernels} kernels"]
        if self.error:
            lines.append(f"error: {self.error.as_text()}")
        if self.runtime.available:
            lines.append(self.runtime.as_text())
        if self.breaks.items:
            lines += ["", "=== graph breaks ===", self.breaks.as_text()]
        for recompile in self.recompiles:
            lines += ["", recompile.as_text()]
        for found in (self.minified, self.drift_bisection):  # cap.minify() / cap.bisect_drift(), where run
            if found is not None:
                lines += ["", f"=== {found.NAME.replace('_', ' ')} ===", found.as_text()]
        for c in self.compiles:
            lines += ["", f"##### compile {c.compile_id} ({c.name}, {c.status}) #####", c.as_text()]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return draw("capture", self, self.as_text)

    def __eq__(self, other) -> bool:
        return isinstance(other, Capture) and self.to_data() == other.to_data()

    def __repr__(self) -> str:
        if self.__dict__.get("_pending") is True:  # inside its with block (after it: built by the read below)
            return "<Capture pending: made when its with block ends>"
        s = self.summary
        return (f"<Capture {len(self.compiles)} compiles, {s.graphs} graphs, "
                f"{s.graph_breaks} graph breaks, {s.recompiles} recompiles"
                + (f", error {self.error.type} in {self.error.stage}" if self.error else "") + ">")


def load(path) -> Capture:
    """Read a capture saved with ``Capture.save``; a malformed file raises ``CaptureFormatError``."""
    return Capture.load(path)


class _Pending:
    """The deferred build of one capture (``Capture._defer``): run once, under a lock, by the first
    thread that reads the capture; a read from inside the build itself does not start it again."""

    def __init__(self, build):
        self.build = build
        self.lock = threading.RLock()
        self.busy = False

    def run(self, capture: "_Unbuilt") -> None:
        with self.lock:  # the fields read under the lock: a thread that waited finds the capture made
            if self.busy or object.__getattribute__(capture, "__dict__").get("_pending") is not self:
                return
            self.busy = True
            try:
                self.build()  # fills ``capture`` (``Capture.of(..., into=capture)``): made once
                capture.__class__ = Capture  # made: attribute reads are plain again
            finally:
                self.busy = False


class _Unbuilt(Capture):
    """A Capture whose build is pending (``Capture._defer``): the first attribute read builds it and
    turns it into a plain Capture. Only captures made by ``compiler.capture()`` are ever of this class."""

    def __getattribute__(self, name):
        if name not in ("__class__", "__dict__"):
            pending = object.__getattribute__(self, "__dict__").get("_pending")
            if pending is not None:
                pending.run(self)
        return object.__getattribute__(self, name)
