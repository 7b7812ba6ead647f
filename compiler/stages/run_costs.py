"""What a compile's code costs when it runs: CPU time per kernel (``measure_kernel_times``), when compiling paid
off (``Amortization``, ``amortizations``) and the capture's cost per source line (``line_table``). The map that
spreads a kernel's time over its lines is ``compiler.stages.provenance`` (``apply_times``).

How CPU kernel times are measured (``measure_kernel_times``), and why it does not change what the
user's function runs: after the capture, the compiled function is called a few more times on
copies of the arguments with a ``sys.setprofile`` hook installed for just those calls (and removed
in ``finally``). The hook only observes: Python reports each call of a C function — the C++
kernels are ``cpp_pybinding`` builtins and extern calls are builtins like ``torch.addmm`` — made
from the generated module's ``call()``; the hook reads the clock around each one and names it by
the module global (or ``extern_kernels`` attribute) it is. The generated code, its kernels and
its inputs are exactly what the compiled function runs; nothing is patched or recompiled. The same
hook counts entries into each compile's transformed bytecode (Dynamo's cache entries), i.e. how
many times a call of the function ran each cached compile. The hook adds ~1 µs per Python-level
call to the timed calls, which inflates very small kernels; shares are what to read.
"""
from __future__ import annotations

import math
import re
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import ClassVar

from compiler.stages.compile_time import compile_seconds
from compiler.stages.data import Stage, built


@dataclass(repr=False, eq=False)
class Amortization(Stage):
    """When compiling paid off: compile seconds ÷ the measured saving per call."""

    NAME: ClassVar[str] = "amortization"
    compile_s: float | None = None
    saving_per_call_s: float | None = None
    break_even_calls: int | None = None  # calls after which compiling paid off (None: it never does)
    calls_per_function_call: float | None = None  # how often one call of the function ran this compile
    calls_under_capture: float | None = None  # calls this cached compile served during the capture
    method: str | None = None

    def _text(self):
        saving = (f"saving {self.saving_per_call_s:.3g} s per call" if self.saving_per_call_s is not None
                  else "saving unknown")
        return f"compile {self.compile_s or 0:.3g} s, {saving}: {self._summary()}"

    def _summary(self):
        if self.break_even_calls:
            return f"paid off after {self.break_even_calls} calls"
        if self.saving_per_call_s is None:  # not measured: neither paid off nor not
            untimed = (self.method or "").startswith(NOT_TIMED)
            return f"paid off: unknown: {'no timed calls' if untimed else 'this graph is not timed alone'}"
        return "never paid off"


NOT_TIMED = "no timed calls"  # an Amortization.method that starts so: the run timed nothing


def measure_kernel_times(fn, args=(), kwargs=None, *, calls: int = 5, warmup: int = 2, live_codes=None) -> dict:
    """CPU time per kernel of the generated code, from calls of the compiled function ``fn``.

    Calls ``fn`` ``warmup`` times, then ``calls`` times under a ``sys.setprofile`` hook (see the module
    doc: observe only; installed for these calls and removed in ``finally``) on copies of the
    arguments (the run's copies: ``compiler.capturing.runtime.copy_arguments``). → ``{"available", "method", "function_calls", "modules": {aot_id: {kernel: {"seconds",
    "calls"}}}, "compiles": {compile_id: calls}}`` — totals over the timed calls; ``compiles`` counts
    entries into each compile's transformed bytecode (``live_codes``: compile id → original code)."""
    kwargs = kwargs or {}
    for _ in range(warmup):
        fn(*args, **kwargs)
    transformed = _transformed_codes(live_codes or {})
    modules: dict[int, tuple[str, dict, dict]] = {}  # id(module globals) → (aot id, names by id, totals)
    started: dict[int, float] = {}
    compiles: dict[str, int] = defaultdict(int)
    extern = _extern_namespace()
    clock = time.perf_counter

    def hook(frame, event, arg):
        if event == "call":
            code = frame.f_code
            if code in transformed:
                compiles[transformed[code]] += 1
            elif code.co_name == "call" and id(frame.f_globals) not in modules \
                    and "benchmark_compiled_module" in frame.f_globals:
                modules[id(frame.f_globals)] = _module_entry(frame.f_globals)
            return
        module = modules.get(id(frame.f_globals))
        if module is None:
            return
        if event == "c_call":
            started[id(arg)] = clock()
        elif id(arg) in started:  # c_return, c_exception
            elapsed = clock() - started.pop(id(arg))
            name = module[1].get(id(arg)) or _extern_name(arg, extern)
            if name:
                entry = module[2].setdefault(name, {"seconds": 0.0, "calls": 0})
                entry["seconds"] += elapsed
                entry["calls"] += 1

    previous = sys.getprofile()
    sys.setprofile(hook)
    try:
        for _ in range(calls):
            fn(*args, **kwargs)
    finally:
        sys.setprofile(previous)
    out: dict[str, dict] = {}
    for aot_id, _, totals in modules.values():
        out.setdefault(aot_id, {}).update(totals)
    return {"available": True, "function_calls": calls, "modules": out, "compiles": dict(compiles),
            "method": "CPU: sys.setprofile timing of each kernel call made by the generated module's call(), "
                      f"over {calls} calls of the compiled function after the capture"}


def _transformed_codes(live_codes: dict) -> dict:
    try:
        from torch._C._dynamo.eval_frame import _debug_get_cache_entry_list
    except ImportError:
        return {}
    out = {}
    for code in set(live_codes.values()):
        for entry in _debug_get_cache_entry_list(code):
            out[entry.code] = str(entry.compile_id)
    return out


def _module_entry(module_globals: dict) -> tuple[str, dict, dict]:
    aot_id = ""
    try:
        with open(module_globals.get("__file__") or "", encoding="utf-8") as f:
            match = re.match(r"# AOT ID: \['(?P<id>[^']+)'\]", f.readline())
            aot_id = match["id"] if match else ""
    except OSError:
        pass
    names = {id(v): k for k, v in module_globals.items() if callable(v) and not isinstance(v, type)
             and re.match(r"^(cpp|triton|cuda)_", k)}
    return aot_id, names, {}


def _extern_namespace():
    try:
        from torch._inductor.select_algorithm import extern_kernels
    except ImportError:
        return None
    return extern_kernels


def _extern_name(fn, extern) -> str | None:
    name = getattr(fn, "__name__", None)
    if name and extern is not None and getattr(extern, name, None) is fn:
        return f"extern_kernels.{name}"
    return None


# --- amortization -------------------------------------------------------------------------------

def amortizations(compiles: list, runtime: dict, kernel_times: dict | None, calls_under_capture,
                  gpu_profile: dict | None = None) -> dict[str, Amortization]:
    """Per compile (a ``Compile``, or one being assembled — ``compiler.stages.assemble.CompileInput``, its stages
    by attribute as well), by compile id: compile seconds ÷ measured
    saving per call → calls until compiling paid off, and how many calls the cached compile served (CPU:
    ``kernel_times['compiles']``, entries into its transformed bytecode per call of the function; GPU:
    ``gpu_calls_per_function_call``, its kernels' launches in the profile). A failure leaves every compile's
    amortization out, with the reason."""
    try:
        return _amortizations(compiles, runtime, kernel_times, calls_under_capture, gpu_profile)
    except Exception as exc:  # noqa: BLE001
        return {c.compile_id: Amortization(available=False, reason=f"not computed ({type(exc).__name__}: {exc})")
                for c in compiles}


def _amortizations(compiles, runtime, kernel_times, calls_under_capture, gpu_profile) -> dict[str, Amortization]:
    eager, compiled = (runtime or {}).get("eager"), (runtime or {}).get("compiled")
    saving = eager["median_s"] - compiled["median_s"] if eager and compiled else None
    served = (kernel_times or {}).get("compiles") or {}
    per_call = {cid: n / (kernel_times.get("function_calls") or 1) for cid, n in served.items()} if served else {}
    launched = False
    if not served and (gpu_profile or {}).get("available"):
        per_call, launched = gpu_calls_per_function_call(compiles, gpu_profile), True
        served = per_call
    used = {c.compile_id for c in compiles if per_call.get(c.compile_id)}
    kernel_seconds = {}  # read only to split a saving over compiles: a compile's provenance is built on read
    if saving is not None and len(used) > 1:
        kernel_seconds = {c.compile_id: sum(k.seconds or 0 for k in provenance.kernels) for c in compiles
                          if c.compile_id in used and (provenance := built(c.provenance)).available}
    total_kernel = sum(kernel_seconds.get(cid, 0) for cid in used)
    counted = ("launches of the compile's kernels in the GPU profile ÷ their launches per call of its "
               "generated code" if launched else
               "entries into the compile's transformed bytecode, counted by the kernel-timing run's "
               "sys.setprofile hook")
    method = ("saving = eager − compiled median per call (compiler.capturing.runtime)"
              + (", split over compiles by their measured kernel time" if len(used) > 1 else "")
              + f"; calls served = {counted}" if served else f"{NOT_TIMED}: saving and calls served unknown")
    out = {}
    for c in compiles:
        compile_s = compile_seconds(c.origin, c.metrics, c.timings)
        share = saving_per_call = break_even = None
        if saving is not None and c.compile_id in used:
            share = 1.0 if len(used) == 1 else (kernel_seconds.get(c.compile_id, 0) / total_kernel
                                                if total_kernel else 1.0 / len(used))
        if share is not None:
            saving_per_call = saving * share
            if saving * share > 0 and compile_s is not None:
                break_even = math.ceil(compile_s / (saving * share))
        out[c.compile_id] = Amortization(
            available=compile_s is not None,
            reason=None if compile_s is not None else "torch recorded no compile time for this compile",
            compile_s=compile_s, saving_per_call_s=saving_per_call, break_even_calls=break_even,
            calls_per_function_call=per_call.get(c.compile_id) if served else None,
            calls_under_capture=(calls_under_capture * per_call[c.compile_id]
                                 if calls_under_capture and per_call.get(c.compile_id) else None),
            method=method)
    return out


def gpu_calls_per_function_call(compiles: list, profile: dict) -> dict[str, float]:
    """Per compile id: how many times one call of the function ran the compile, from the GPU profile —
    each profiled Triton kernel's launches per profiled call ÷ its launches per call of the generated
    code (``.run(`` sites in the module of its role); the smallest over the compile's kernels (a kernel
    of the same name in another compile would only add launches)."""
    iters = profile.get("iters") or 1
    out = {}
    for c in compiles:
        modules = {r.role: r.code.module or "" for r in c.inductor.runs if r.code.available}
        ratios = []
        for k in c.kernels.kernels:
            sites = len(re.findall(rf"(?<![\w.]){re.escape(k.name)}\.run\(", modules.get(k.role, "")))
            if k.language == "Triton" and k.profiled_calls and sites:
                ratios.append(k.profiled_calls / iters / sites)
        if ratios:
            out[c.compile_id] = min(ratios)
    return out


def line_table(capture):
    """One row per source line that produced work, over every compile: ``line``, ``code``, ``nodes``
    (Dynamo's FX nodes of the line), ``kernels``, ``time_share`` (of all measured kernel time that has
    a line; sums to 1), ``seconds`` (per call of the function), ``file``, ``compile_ids``."""
    import pandas as pd

    compiles = [c for c in capture.compiles if c.provenance.available]
    rows: dict[tuple, dict] = {}
    for c in compiles:
        prefix = f"{c.compile_id} " if len(compiles) > 1 else ""
        for r in c.provenance.lines:
            row = rows.setdefault((r.file, r.line), {"line": r.line, "code": r.code, "nodes": [], "kernels": [],
                                                     "time_share": None, "seconds": None, "file": r.file,
                                                     "compile_ids": []})
            row["nodes"] += [n for n in r.dynamo_nodes if n not in row["nodes"]]
            row["kernels"] += [prefix + k for k in r.kernels if prefix + k not in row["kernels"]]
            row["compile_ids"].append(c.compile_id)
            if r.seconds is not None:
                row["seconds"] = (row["seconds"] or 0.0) + r.seconds
    total = sum(r["seconds"] or 0.0 for r in rows.values())
    for row in rows.values():
        row["time_share"] = (row["seconds"] or 0.0) / total if total else None
    columns = ["line", "code", "nodes", "kernels", "time_share", "seconds", "file", "compile_ids"]
    return pd.DataFrame([rows[k] for k in sorted(rows, key=lambda k: (k[0] or "", k[1]))], columns=columns)
