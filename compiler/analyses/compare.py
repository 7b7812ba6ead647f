"""Compare configurations: the same function compiled once per torch.compile configuration, side by side.

    from compiler.analyses.compare import compare
    cmp = compare(fn, x, configs="mode=default,reduce-overhead,max-autotune")
    cmp.rows(); cmp.diff("mode=default", "mode=max-autotune").changed_stages

Each configuration runs ``compiler.run`` in a clean compile: ``torch._dynamo.reset()`` first and,
with ``fresh=True`` (the default), Inductor's and AOTAutograd's caches off, so a later configuration
never reuses an earlier one's work. Each configuration's compiled function is timed against eager in
alternating samples (the one timer). A configuration that fails (a backend whose package is
missing, options torch rejects) keeps its error; the others still run. An interrupt (Ctrl-C, Jupyter's
stop button) raises ``CompareInterrupted``, a KeyboardInterrupt whose ``.comparison`` keeps the finished
configurations and the interrupted one's partial capture (``entry["interrupted"]``;
``comparison.interrupted`` says where it stopped and what did not run). The spec language is in
``compiler.analyses.configurations``, the result (``Comparison``) in ``compiler.analyses.comparison``.
"""
from __future__ import annotations

import time

from compiler.analyses.configurations import COMPILE_KEYS, CONFIG_KEYS, config_label, parse_compare_spec
from compiler.analyses.comparison import FORMAT, VERSION, Comparison, ComparisonData
from compiler.stages.capture import Capture
from compiler.reference.options import jsonable
from compiler.capturing.run import CaptureInterrupted
from compiler.capturing.runtime import copy_arguments


def _error(exc: BaseException, stage: str) -> dict:
    import traceback

    from compiler.reference.knobs import missing_package

    text = "".join(traceback.format_exception(exc))
    return {"type": type(exc).__name__, "message": str(exc)[:4000], "stage": stage,
            "missing": missing_package(text), "traceback": text[-8000:]}


def run_config(fn, args, config: dict, *, fresh: bool, kwargs: dict, eager_check: dict | None,
               repeat: int, timing: bool, eager_fn=None) -> tuple[dict, Capture | None]:
    """One configuration through ``compiler.run`` (a clean compile, timed against ``eager_fn``,
    default ``fn``). → (entry, capture)."""
    from compiler.reference.knobs import missing_package, mode_options
    from compiler.capturing.run import run

    unknown = set(config) - set(CONFIG_KEYS)
    label = config.get("label") or config_label(config)
    entry = {"label": label, "config": jsonable({k: v for k, v in config.items() if k != "label"}),
             "capture": None, "error": None, "explore_s": None, "timing_s": 0.0, "mode_options": None}
    if unknown:
        entry["error"] = {"type": "TypeError", "stage": "configuration", "missing": None,
                          "message": f"unknown configuration key(s) {sorted(unknown)}; use {list(CONFIG_KEYS)}"}
        return entry, None
    compile_kwargs = {k: (dict(v) if isinstance(v, dict) else v) for k, v in config.items() if k in COMPILE_KEYS}
    backend = compile_kwargs.get("backend") or "inductor"
    inductor_options = set(compile_kwargs.get("options") or {}) - {"guard_filter_fn"}
    entry["notes"] = [f"backend {jsonable(backend)!r} ignores Inductor options ({', '.join(sorted(inductor_options))}): "
                      "only Inductor reads them"] if inductor_options and backend != "inductor" else []
    if backend == "inductor":
        try:
            entry["mode_options"] = mode_options(compile_kwargs.get("mode"))
        except Exception as exc:  # noqa: BLE001 — an unknown mode: torch.compile will say so below
            entry["mode_options"] = {"error": str(exc)}
    if not timing:
        timing_reason = "timing was turned off (timing=False)"
    elif eager_check is None or not eager_check.get("available"):
        timing_reason = (eager_check or {}).get("reason", "eager was not timed")
    else:
        timing_reason = True
    start = time.perf_counter()
    args, kwargs = copy_arguments(args, kwargs)  # every configuration starts from the same inputs
    try:
        cap = run(fn, args, kwargs, compile_kwargs=compile_kwargs, fresh=fresh, timing=timing_reason, repeat=repeat,
                  stance=config.get("stance"), errors="return", eager_fn=eager_fn,
                  dynamo_config=config.get("dynamo_config"), options={"label": label, "config": entry["config"]})
    except CaptureInterrupted as interrupt:  # the partial capture goes with the interrupt
        _fill(entry, interrupt.capture, start)
        raise ConfigInterrupted(entry, interrupt.capture) from None
    except KeyboardInterrupt:  # before compiler.capturing.run's capture began: nothing captured
        entry["explore_s"] = time.perf_counter() - start
        entry["error"] = {"type": "KeyboardInterrupt", "stage": "interrupted (KeyboardInterrupt) before compiling",
                          "message": "interrupted before this configuration's capture began", "missing": None}
        raise ConfigInterrupted(entry, None) from None
    except Exception as exc:  # noqa: BLE001 — e.g. torch.compile rejects mode together with options
        entry["explore_s"] = time.perf_counter() - start
        entry["error"] = _error(exc, "torch.compile arguments (before compiling)")
        return entry, None
    _fill(entry, cap, start)
    return entry, cap


class ConfigInterrupted(KeyboardInterrupt):
    """A KeyboardInterrupt during one configuration of ``run_config``: ``.entry`` and ``.capture`` are
    what it captured until then (capture None when the interrupt came before its capture began)."""

    def __init__(self, entry: dict, capture: Capture | None):
        super().__init__(f"interrupted during configuration {entry['label']!r}")
        self.entry, self.capture = entry, capture


class CompareInterrupted(KeyboardInterrupt):
    """A KeyboardInterrupt during ``compare``, carrying the comparison of what was done until then
    (``.comparison``: the finished configurations, the interrupted one's partial capture marked
    interrupted, and ``comparison.interrupted`` naming it and the configurations not run)."""

    def __init__(self, comparison: Comparison):
        info = comparison.interrupted
        super().__init__(f"interrupted during {info.during}; the comparison keeps the finished configurations "
                         "(exc.comparison)")
        self.comparison = comparison


def _fill(entry: dict, cap: Capture, start: float) -> None:
    """The entry's times, error and notes from its capture."""
    from compiler.reference.knobs import missing_package

    elapsed = time.perf_counter() - start
    entry["timing_s"] = cap.runtime.wall_s or 0.0  # how long the timer ran
    entry["explore_s"] = elapsed - entry["timing_s"]
    if cap.error:
        error = cap.error
        entry["error"] = {"type": error.type, "message": error.message, "stage": error.stage, "cause": error.cause}
        entry["error"]["missing"] = missing_package("\n".join(str(v or "") for v in
                                                              (error.traceback, error.cause, error.message)))
    if cap.interrupted:
        entry["interrupted"] = True
    if busy_note(cap):
        entry["notes"].append(busy_note(cap))
    entry["capture"] = cap.to_data()


def busy_note(cap: Capture | None) -> str | None:
    """The warning ``explore`` shows when the machine was loaded while timing, for one configuration."""
    runtime = cap.runtime if cap is not None else None
    if runtime is None or not runtime.available or not runtime.busy:
        return None
    return (f"the machine was busy while timing (load average {runtime.load_average or 0:.1f} on "
            f"{runtime.cpu_count} cores): these times are noisy — compare again when it is idle")


def check_eager(fn, args, kwargs) -> dict:
    """One plain call: timing is only possible when the function runs eagerly."""
    start = time.perf_counter()
    try:
        fn(*args, **kwargs)
        return {"available": True, "seconds": time.perf_counter() - start}
    except Exception as exc:  # noqa: BLE001
        return {"available": False, "reason": f"not timed: the eager call failed: {type(exc).__name__}: {exc}",
                "seconds": time.perf_counter() - start}


def warm_up_inductor() -> float:
    """Compile a tiny function with Inductor (caches off) and return the seconds it took.

    The first Inductor compile in a process also pays one-time costs (CPU ISA probes, the C++
    precompiled header, worker start-up: ~10 s here); without a warm-up they land on whichever
    configuration happens to come first. Importing Inductor counts as warm-up too.
    """
    start = time.perf_counter()
    import torch
    import torch._inductor.config as inductor_config

    def warm_up(x):
        return (x * 2).relu().sum()

    torch._dynamo.reset()
    with inductor_config.patch(force_disable_caches=True):
        torch.compile(warm_up)(torch.ones(8))
    torch._dynamo.reset()
    return time.perf_counter() - start


def _uses_inductor(configs, common) -> bool:
    return any(({**common, **c}.get("backend") or "inductor") == "inductor" for c in configs)


def compare(fn, *args, configs: list[dict] | str, fresh: bool = True, timing: bool = True, repeat: int = 15,
            kwargs: dict | None = None, progress=None, spec: str | None = None, warmup: bool = True,
            magic: str | None = None, **common) -> Comparison:
    """Explore ``fn(*args)`` once per configuration in ``configs`` (dicts of torch.compile arguments —
    backend, mode, dynamic, fullgraph, options, disable — plus optional ``label``, ``stance`` and
    ``dynamo_config``, a ``torch._dynamo.config.patch``); ``common`` applies to every configuration
    (a configuration's own keys win); ``configs`` may also be a spec string (``parse_compare_spec``).
    ``progress(index, total, label)`` is called before each one (index -1: the warm-up).
    ``warmup=True`` first compiles a tiny function with Inductor (when a configuration uses it), so
    the process's one-time start-up cost is not charged to the first configuration. ``magic``
    records which magic asked for the comparison.
    """
    kwargs = kwargs or {}
    start = time.perf_counter()
    if isinstance(configs, str):
        spec, configs = configs, parse_compare_spec(configs)
    warmup_s = eager_check = None
    entries, captures = [], []
    labels = [config.get("label") or config_label(config) for config in configs]
    during = "the Inductor warm-up"
    try:
        if warmup and _uses_inductor(configs, common):
            if progress:
                progress(-1, len(configs), "warming up Inductor")
            warmup_s = warm_up_inductor()
        during = "the eager check (one plain call)"
        eager_check = check_eager(fn, args, kwargs) if timing else None
        for index, config in enumerate(configs):
            merged = {**common, **config}
            if common.get("options") and config.get("options"):
                merged["options"] = {**common["options"], **config["options"]}
            merged.setdefault("label", labels[index])
            during = f"configuration {index + 1}/{len(configs)} ({labels[index]})"
            if progress:
                progress(index, len(configs), merged["label"])
            try:
                entry, cap = run_config(fn, args, merged, fresh=fresh, kwargs=kwargs, eager_check=eager_check,
                                        repeat=repeat, timing=timing)
            except ConfigInterrupted as interrupt:
                interrupt.entry["interrupted"] = True
                entries.append(interrupt.entry)
                captures.append(interrupt.capture)
                raise
            entries.append(entry)
            captures.append(cap)
        interrupted = None
    except KeyboardInterrupt:
        # every hook and config patch is restored by the run's own exits: keep what was done
        interrupted = {"during": during, "finished": [e["label"] for e in entries if not e.get("interrupted")],
                       "not_run": labels[len(entries):]}
    comparison = build(fn, entries, captures, eager_check, start, spec=spec, common=common, fresh=fresh,
                       timing=timing, repeat=repeat, warmup_s=warmup_s, magic=magic, interrupted=interrupted)
    if interrupted:
        raise CompareInterrupted(comparison) from None
    busy = [e["label"] for e, cap in zip(entries, captures) if busy_note(cap)]
    if busy:
        import warnings

        warnings.warn(f"tcompile: the machine was busy while timing {', '.join(busy)}: the runtimes and speedups "
                      "are noisy (other processes share the CPU); compare again when it is idle", stacklevel=2)
    return comparison


def build(fn, entries: list, captures: list, eager_check, start: float, *, jit_trace: dict | None = None,
          magic: str | None = None, warmup_s: float | None = None, **fields) -> Comparison:
    """The Comparison of finished entries, built once (``start``: perf_counter when the comparison
    began; ``jit_trace``: the torch.jit.trace record of ``compiler.analyses.jit_input``)."""
    import statistics

    from compiler.stages.environment import environment

    wall = time.perf_counter() - start
    medians = [cap.runtime.eager.median_s for cap in captures if cap is not None and cap.runtime.available]
    eager = None if eager_check is None else {
        **eager_check, "median_s": statistics.median(medians) if medians else None,
        "spread": [min(medians), max(medians)] if medians else None,
        "note": "eager is timed with each configuration, alternating with its compiled samples; this is the "
                "median over configurations"}
    data = {"format": FORMAT, "version": list(VERSION), "function": getattr(fn, "__name__", type(fn).__name__),
            "spec": fields.get("spec"), "common": jsonable(fields.get("common") or {}),
            "fresh": fields.get("fresh"), "timing": fields.get("timing"), "repeat": fields.get("repeat"),
            "environment": environment(), "eager": eager, "configs": entries}
    if magic:
        data["magic"] = magic
    if jit_trace is not None:
        data["jit_trace"] = jit_trace
    if fields.get("interrupted"):
        data["interrupted"] = fields["interrupted"]
    data["accounting"] = accounting(entries, captures, eager, wall, warmup_s)
    return Comparison(ComparisonData.from_data(data), captures)


def accounting(entries: list, captures: list, eager: dict | None, wall_s: float, warmup_s: float | None = None) -> dict:
    """Where the comparison's wall time went: the Inductor warm-up, compiles (torch's own metric), the
    rest of each run (first call, capture, assembling), timing runs, the eager check, and what is left."""
    compile_s = sum(cap.summary.compile_time_s for cap in captures if cap is not None)
    explore_s = sum(e.get("explore_s") or 0 for e in entries)
    timing_s = sum(e.get("timing_s") or 0 for e in entries)
    eager_s = (eager or {}).get("seconds") or 0
    return {"wall_s": wall_s, "warmup_s": warmup_s, "compile_s": compile_s, "explore_s": explore_s,
            "timing_s": timing_s, "eager_check_s": eager_s, "explore_overhead_s": explore_s - compile_s,
            "other_s": wall_s - (warmup_s or 0) - explore_s - timing_s - eager_s}


def load(path) -> Comparison:
    return Comparison.load(path)


__all__ = ["CompareInterrupted", "Comparison", "ConfigInterrupted", "build", "check_eager", "compare", "load", "parse_compare_spec", "run_config",
           "warm_up_inductor"]
