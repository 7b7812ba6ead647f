"""Compare configurations: the same function compiled once per torch.compile configuration, side by side.

    from compiler.compare import compare, parse_compare_spec
    cmp = compare(fn, x, configs=parse_compare_spec("mode=default,reduce-overhead,max-autotune"))
    cmp.rows()                     # label, compile time, runtime, speedup, graphs, breaks, guards, kernels …
    cmp.diff("mode=default", "mode=max-autotune").changed_stages
    cmp.save("modes.json"); Comparison.load("modes.json")

Each configuration runs ``compiler.explore`` in a clean compile: ``torch._dynamo.reset()`` first and,
with ``fresh=True`` (the default), Inductor's and AOTAutograd's caches off, so a later configuration
never reuses an earlier one's work. Eager is timed once for the whole comparison and every
configuration's compiled function against it, so the speedups share one baseline. A configuration
that fails (a backend whose package is missing, options torch rejects) keeps its error; the others
still run.
"""
from __future__ import annotations

import ast
import contextlib
import itertools
import json
import time
from pathlib import Path

from .model import Capture, CaptureFormatError, JsonFile

FORMAT = "tcompile-comparison"
VERSION = [1, 0]
COMPILE_KEYS = ("backend", "mode", "dynamic", "fullgraph", "options", "disable")
CONFIG_KEYS = (*COMPILE_KEYS, "label", "stance", "dynamo_config")
SPEC_KEYS = ("mode", "backend", "dynamic", "fullgraph", "options", "stance", "recompile_limit", "guard_filter")
_BOOLS = {"true": True, "false": False, "auto": None, "none": None}


# --- the spec mini-language -------------------------------------------------------------------------

def _split_top(text: str, sep: str) -> list[str]:
    """Split on ``sep`` outside brackets and quotes: ``{"a": 1, "b": 2},{"a": 3}`` → two dicts."""
    parts, depth, quote, current = [], 0, None, []
    for char in text:
        if quote:
            quote = None if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "{[(":
            depth += 1
        elif char in "}])":
            depth -= 1
        elif char == sep and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    parts.append("".join(current).strip())
    return [p for p in parts if p]


def _literal(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return ast.literal_eval(text)


def _axis(key: str, values: list[str]) -> list[dict]:
    """One ``key=v1,v2`` axis → config fragments, each with its label."""
    if key in ("mode", "backend", "stance"):
        return [{key: v, "label": f"{key}={v}"} for v in values]
    if key in ("dynamic", "fullgraph"):
        out = []
        for v in values:
            if v.lower() not in _BOOLS or (key == "fullgraph" and _BOOLS[v.lower()] is None):
                raise ValueError(f"{key}= takes true/false{'/auto' if key == 'dynamic' else ''}, got {v!r}")
            out.append({key: _BOOLS[v.lower()], "label": f"{key}={v.lower()}"})
        return out
    if key == "recompile_limit":
        return [{"dynamo_config": {"recompile_limit": int(v)}, "label": f"recompile_limit={int(v)}"} for v in values]
    if key == "guard_filter":
        import torch

        out = []
        for v in values:
            if v.lower() == "none":
                out.append({"label": "guard_filter=none"})
                continue
            name = v.split(".")[-1]
            if not hasattr(torch.compiler, name):
                raise ValueError(f"guard_filter=: torch.compiler has no {name!r} "
                                 f"(e.g. skip_guard_on_all_nn_modules_unsafe)")
            out.append({"options": {"guard_filter_fn": getattr(torch.compiler, name)}, "label": f"guard_filter={name}"})
        return out
    if key == "options":
        out = [{"label": "baseline (no options)"}]
        for v in values:
            try:
                value = _literal(v)
            except (ValueError, SyntaxError):
                raise ValueError(f"options= takes a JSON or Python dict, got {v!r}") from None
            if not isinstance(value, dict):
                raise ValueError(f"options= takes a dict, got {type(value).__name__}: {v!r}")
            out.append({"options": value, "label": f"options={json.dumps(value)}"})
        return out
    raise ValueError(f"unknown compare key {key!r}; use one of {', '.join(SPEC_KEYS)}")


def parse_compare_spec(spec: str) -> list[dict]:
    """``"mode=default,reduce-overhead"`` → one config per value, each with a readable ``label``.

    Keys: mode, backend, dynamic (true/false/auto), fullgraph (true/false), stance, recompile_limit
    (a ``torch._dynamo.config`` patch), guard_filter (``torch.compiler.*_unsafe`` names, or none) and
    options (dicts; a baseline without options comes first). Several axes separated by ``;`` give
    every combination: ``"backend=eager,aot_eager; dynamic=true,false"`` → 4 configs.
    """
    axes = []
    for part in _split_top(spec.strip(), ";"):
        key, sep, values = part.partition("=")
        if not sep or not values.strip():
            raise ValueError(f"compare spec {part!r} must look like key=value1,value2 (e.g. mode=default,max-autotune)")
        axes.append(_axis(key.strip(), _split_top(values.strip(), ",")))
    if not axes:
        raise ValueError("empty compare spec: e.g. mode=default,reduce-overhead,max-autotune")
    configs = []
    for combination in itertools.product(*axes):
        config: dict = {}
        for fragment in combination:
            for key, value in fragment.items():
                if key in ("options", "dynamo_config") and key in config:
                    config[key] = {**config[key], **value}
                elif key != "label":
                    config[key] = value
        config["label"] = ", ".join(f["label"] for f in combination)
        configs.append(config)
    return configs


def config_label(config: dict) -> str:
    """A readable label for a config without one: ``backend=eager, dynamic=true``."""
    parts = [f"{k}={jsonable(v) if not isinstance(v, str) else v}" for k, v in config.items() if k != "label"]
    return ", ".join(parts) or "default"


def jsonable(value):
    """Configs hold callables (custom backends, guard filters): recorded by their qualified name."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool, type(None))):
        return value
    module = getattr(value, "__module__", None)
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    return f"{module}.{name}" if module and name else repr(value)


# --- running ----------------------------------------------------------------------------------------

def _device(args, kwargs) -> str:
    return "cuda" if any(getattr(a, "is_cuda", False) for a in [*args, *kwargs.values()]) else "cpu"


def _error(exc: BaseException, stage: str) -> dict:
    import traceback

    from .knobs import missing_package

    text = "".join(traceback.format_exception(exc))
    return {"type": type(exc).__name__, "message": str(exc)[:4000], "stage": stage,
            "missing": missing_package(text), "traceback": text[-8000:]}


def _stance(name):
    if not name:
        return contextlib.nullcontext()
    import torch

    return torch.compiler.set_stance(name)


def run_config(fn, args, config: dict, *, fresh: bool, kwargs: dict, eager_check: dict | None,
               repeat: int, timing: bool, eager_fn=None) -> tuple[dict, Capture | None]:
    """One configuration: explore (clean compile), then time the compiled function against
    ``eager_fn`` (default ``fn``) in alternating samples. → (entry, capture)."""
    import torch

    from .knobs import missing_package, mode_options
    from .session import explore

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
    start = time.perf_counter()
    try:
        with torch._dynamo.config.patch(**(config.get("dynamo_config") or {})):
            cap = explore(fn, *args, fresh=fresh, timing=False, errors="return", kwargs=kwargs,
                          stance=config.get("stance"), **compile_kwargs)
    except Exception as exc:  # noqa: BLE001 — e.g. torch.compile rejects mode together with options
        entry["explore_s"] = time.perf_counter() - start
        entry["error"] = _error(exc, "torch.compile arguments (before compiling)")
        return entry, None
    entry["explore_s"] = time.perf_counter() - start
    cap.data["options"].update(label=label, config=entry["config"])
    if cap.data["options"].get("options") is not None:
        cap.data["options"]["options"] = jsonable(cap.data["options"]["options"])
    if cap.error:
        entry["error"] = {k: cap.error.get(k) for k in ("type", "message", "stage", "cause")}
        entry["error"]["missing"] = missing_package("\n".join(str(cap.error.get(k) or "") for k in
                                                              ("traceback", "cause", "message")))
    if not timing:
        cap.data["runtime"] = {"available": False, "reason": "timing was turned off (timing=False)"}
    elif cap.error:
        cap.data["runtime"] = {"available": False, "reason": "not timed: the compiled call failed"}
    elif eager_check is None or not eager_check.get("available"):
        cap.data["runtime"] = {"available": False, "reason": (eager_check or {}).get("reason", "eager was not timed")}
    else:
        start = time.perf_counter()
        try:
            with _stance(config.get("stance")):
                cap.data["runtime"] = time_interleaved(eager_fn or fn, cap.compiled_fn, args, kwargs,
                                                       device=_device(args, kwargs), repeat=repeat)
        except Exception as exc:  # noqa: BLE001
            cap.data["runtime"] = {"available": False, "reason": f"timing failed: {type(exc).__name__}: {exc}"}
        entry["timing_s"] = time.perf_counter() - start
    entry["capture"] = cap.data
    return entry, cap


def _calls_per_sample(fn, args, kwargs, device: str, min_sample_s: float = 0.002) -> int:
    from .runtime import _sync

    number = 1
    while number < 1 << 16:
        start = time.perf_counter()
        for _ in range(number):
            fn(*args, **kwargs)
        _sync(device)
        if time.perf_counter() - start >= min_sample_s:
            break
        number *= 2
    return number


def time_interleaved(eager, compiled, args, kwargs, *, device: str, repeat: int = 15) -> dict:
    """Eager and compiled timed in alternating samples, so both see the same machine load (on a busy
    machine, timing one after the other can make either look several times slower). Each sample
    times enough calls to last 2 ms; the result has ``compiler.runtime.compare``'s shape."""
    import statistics

    from .runtime import _sync

    for fn in (eager, compiled):
        for _ in range(3):
            fn(*args, **kwargs)
    numbers = {id(fn): _calls_per_sample(fn, args, kwargs, device) for fn in (eager, compiled)}
    samples: dict[int, list[float]] = {id(eager): [], id(compiled): []}
    for _ in range(repeat):
        for fn in (eager, compiled):
            number = numbers[id(fn)]
            start = time.perf_counter()
            for _ in range(number):
                fn(*args, **kwargs)
            _sync(device)
            samples[id(fn)].append((time.perf_counter() - start) / number)

    def stats(fn) -> dict:
        values = samples[id(fn)]
        quartiles = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
        return {"median_s": statistics.median(values), "min_s": min(values), "max_s": max(values),
                "q1_s": quartiles[0], "q3_s": quartiles[2], "samples": len(values), "calls_per_sample": numbers[id(fn)]}

    eager_t, compiled_t = stats(eager), stats(compiled)
    return {"available": True, "device": device, "eager": eager_t, "compiled": compiled_t,
            "speedup": eager_t["median_s"] / compiled_t["median_s"] if compiled_t["median_s"] else None,
            "first_call_s": None,
            "method": f"median of {repeat} samples, eager and compiled alternating, after 3 warm-up calls each"
                      + (", CUDA-synchronized" if device == "cuda" else "")}


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


def compare(fn, *args, configs: list[dict], fresh: bool = True, timing: bool = True, repeat: int = 15,
            kwargs: dict | None = None, progress=None, spec: str | None = None, warmup: bool = True,
            **common) -> "Comparison":
    """Explore ``fn(*args)`` once per configuration in ``configs`` (dicts of torch.compile arguments —
    backend, mode, dynamic, fullgraph, options, disable — plus optional ``label``, ``stance`` and
    ``dynamo_config``, a ``torch._dynamo.config.patch``); ``common`` applies to every configuration
    (a configuration's own keys win); ``configs`` may also be a spec string (``parse_compare_spec``).
    ``progress(index, total, label)`` is called before each one (index -1: the warm-up).
    ``warmup=True`` first compiles a tiny function with Inductor (when a configuration uses it), so
    the process's one-time start-up cost is not charged to the first configuration.
    """
    kwargs = kwargs or {}
    start = time.perf_counter()
    if isinstance(configs, str):
        spec, configs = configs, parse_compare_spec(configs)
    warmup_s = None
    if warmup and _uses_inductor(configs, common):
        if progress:
            progress(-1, len(configs), "warming up Inductor")
        warmup_s = warm_up_inductor()
    eager_check = check_eager(fn, args, kwargs) if timing else None
    entries, captures = [], []
    for index, config in enumerate(configs):
        merged = {**common, **config}
        if common.get("options") and config.get("options"):
            merged["options"] = {**common["options"], **config["options"]}
        merged.setdefault("label", config.get("label") or config_label(config))
        if progress:
            progress(index, len(configs), merged["label"])
        entry, cap = run_config(fn, args, merged, fresh=fresh, kwargs=kwargs, eager_check=eager_check,
                                repeat=repeat, timing=timing)
        entries.append(entry)
        captures.append(cap)
    return build(fn, entries, captures, eager_check, start, spec=spec, common=common, fresh=fresh,
                 timing=timing, repeat=repeat, warmup_s=warmup_s)


def build(fn, entries: list, captures: list, eager_check, start: float, **fields) -> "Comparison":
    """The Comparison of finished entries (``start``: perf_counter when the comparison began)."""
    import statistics

    from .environment import environment

    wall = time.perf_counter() - start
    medians = [e["capture"]["runtime"]["eager"]["median_s"] for e in entries
               if ((e.get("capture") or {}).get("runtime") or {}).get("available")]
    eager = None if eager_check is None else {
        **eager_check, "median_s": statistics.median(medians) if medians else None,
        "spread": [min(medians), max(medians)] if medians else None,
        "note": "eager is timed with each configuration, alternating with its compiled samples; this is the "
                "median over configurations"}
    data = {"format": FORMAT, "version": list(VERSION), "function": getattr(fn, "__name__", type(fn).__name__),
            "spec": fields.get("spec"), "common": jsonable(fields.get("common") or {}),
            "fresh": fields.get("fresh"), "timing": fields.get("timing"), "repeat": fields.get("repeat"),
            "environment": environment(), "eager": eager, "configs": entries}
    data["accounting"] = accounting(data, wall, fields.get("warmup_s"))
    return Comparison(data, captures)


def accounting(data: dict, wall_s: float, warmup_s: float | None = None) -> dict:
    """Where the comparison's wall time went: the Inductor warm-up, compiles (torch's own metric), the
    rest of each explore (first call, capture, assembling), timing runs, the eager check, and what is left."""
    entries = data["configs"]
    compile_s = sum(((e.get("capture") or {}).get("summary") or {}).get("compile_time_s") or 0 for e in entries)
    explore_s = sum(e.get("explore_s") or 0 for e in entries)
    timing_s = sum(e.get("timing_s") or 0 for e in entries)
    eager_s = (data.get("eager") or {}).get("seconds") or 0
    return {"wall_s": wall_s, "warmup_s": warmup_s, "compile_s": compile_s, "explore_s": explore_s,
            "timing_s": timing_s, "eager_check_s": eager_s, "explore_overhead_s": explore_s - compile_s,
            "other_s": wall_s - (warmup_s or 0) - explore_s - timing_s - eager_s}


# --- the result -------------------------------------------------------------------------------------

def _cudagraphs_cell(capture_data: dict) -> str:
    stage = capture_data.get("cudagraphs") or {}
    if stage.get("available"):
        if stage.get("used"):
            return "used"
        return "skipped: " + "; ".join(stage.get("skip_reasons_user") or stage.get("skip_reasons") or ["?"])
    options = capture_data.get("options") or {}
    from .cudagraphs import wants_cudagraphs

    if wants_cudagraphs(options):
        return "requested, not used (no CUDA)" if not (capture_data.get("environment") or {}).get("cuda_available") \
            else "requested, no activity logged"
    return "off"


def error_text(error: dict) -> str:
    """One line: the error, or its cause when the error only says "backend='x' raised:"."""
    lines = [line for line in str(error.get("message") or "").strip().splitlines() if line.strip()]
    first = lines[0] if lines else ""
    if error.get("cause") and (first.endswith("raised:") or not first):
        return f"{error['type']}: {str(error['cause']).strip().splitlines()[0]}"
    return f"{error['type']}: {first}"


class Comparison(JsonFile):
    """The result of ``compare()``: one entry per configuration (its capture, or its error)."""

    def __init__(self, data: dict, captures: list | None = None):
        self.data = data
        self._captures = captures  # live Captures (what-if, compiled_fn); None once saved/loaded

    @property
    def labels(self) -> list[str]:
        return [e["label"] for e in self.data["configs"]]

    @property
    def entries(self) -> list[dict]:
        return self.data["configs"]

    @property
    def captures(self) -> list[Capture | None]:
        if self._captures is not None:
            return self._captures
        return [Capture(e["capture"]) if e.get("capture") else None for e in self.entries]

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
        """The summary table: one row per configuration."""
        rows = []
        for entry in self.entries:
            data = entry.get("capture") or {}
            summary = data.get("summary") or {}
            runtime = data.get("runtime") or {}
            error = entry.get("error")
            rows.append({
                "label": entry["label"], "ok": error is None,
                "compile_s": summary.get("compile_time_s"),
                "eager_s": (runtime.get("eager") or {}).get("median_s") if runtime.get("available") else None,
                "runtime_s": (runtime.get("compiled") or {}).get("median_s") if runtime.get("available") else None,
                "speedup": runtime.get("speedup") if runtime.get("available") else None,
                "runtime_note": None if runtime.get("available") else runtime.get("reason"),
                "graphs": summary.get("graphs"), "graph_breaks": summary.get("graph_breaks"),
                "recompiles": summary.get("recompiles"), "guards": summary.get("guards"),
                "kernels": summary.get("kernels"),
                "cudagraphs": _cudagraphs_cell(data) if data else None,
                "error": error_text(error) if error else None,
                "error_stage": error.get("stage") if error else None,
                "missing_package": (error.get("missing") or {}).get("package") if error else None,
                "mode_options": entry.get("mode_options"), "notes": entry.get("notes") or [],
            })
        return rows

    @property
    def df(self):
        import pandas as pd

        return pd.DataFrame(self.rows()).set_index("label")

    def diff(self, a, b, normalized: bool = True):
        """Stage-by-stage differences between two configurations (labels or indexes)."""
        from .diff import diff

        cap_a, cap_b = self.capture(a), self.capture(b)
        if cap_a is None or cap_b is None:
            missing = self.labels[self.index(a if cap_a is None else b)]
            raise ValueError(f"configuration {missing!r} has no capture: {self.error(missing)}")
        return diff(cap_a, cap_b, labels=(self.labels[self.index(a)], self.labels[self.index(b)]),
                    normalized=normalized)

    def as_text(self) -> str:
        lines = [f"tcompile comparison of {self.data.get('function')} ({len(self.entries)} configurations)"]
        for row in self.rows():
            if not row["ok"]:
                missing = f" (install {row['missing_package']})" if row["missing_package"] else ""
                lines.append(f"  {row['label']}: FAILED in {row['error_stage']}: {row['error']}{missing}")
                continue
            speed = f"{row['speedup']:.2f}x" if row["speedup"] else "–"
            runtime = f"{row['runtime_s'] * 1e6:.1f} µs" if row["runtime_s"] else "–"
            lines.append(f"  {row['label']}: compile {row['compile_s']:.2f} s, runtime {runtime}, speedup {speed}, "
                         f"{row['graphs']} graphs, {row['graph_breaks']} breaks, {row['recompiles']} recompiles, "
                         f"{row['guards']} guards, {row['kernels']} kernels, CUDA graphs {row['cudagraphs']}")
        acc = self.data.get("accounting") or {}
        if acc:
            lines.append(f"  wall {acc['wall_s']:.2f} s = warm-up {acc.get('warmup_s') or 0:.2f} s + compiles {acc['compile_s']:.2f} s + explore overhead "
                         f"{acc['explore_overhead_s']:.2f} s + timing {acc['timing_s'] + acc['eager_check_s']:.2f} s "
                         f"+ other {acc['other_s']:.2f} s")
        return "\n".join(lines)

    __str__ = as_text

    document = "comparison"

    @staticmethod
    def validate_data(data) -> None:
        validate(data)

    def __eq__(self, other) -> bool:
        return isinstance(other, Comparison) and self.data == other.data

    def __repr__(self) -> str:
        failed = sum(e.get("error") is not None for e in self.entries)
        return (f"<Comparison of {self.data.get('function')}: {len(self.entries)} configurations"
                + (f", {failed} failed" if failed else "") + ">")


def validate(data) -> None:
    from .model import validate as validate_capture

    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CaptureFormatError(f"not a tcompile comparison: missing \"format\": \"{FORMAT}\"")
    version = data.get("version")
    if not (isinstance(version, list) and len(version) == 2 and version[0] == VERSION[0]):
        raise CaptureFormatError(f"comparison format version {version!r} is not supported (reads {VERSION[0]}.x)")
    if not isinstance(data.get("configs"), list):
        raise CaptureFormatError("malformed comparison: \"configs\" must be a list")
    for entry in data["configs"]:
        if entry.get("capture") is not None:
            validate_capture(entry["capture"])


def load(path) -> Comparison:
    return Comparison.load(path)
