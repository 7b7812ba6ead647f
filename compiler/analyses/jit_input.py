"""torch.jit.trace as the input of torch.compile: what Dynamo does with a traced function or module,
next to compiling the original directly.

    from compiler.analyses.jit_input import explore_jit_trace
    cmp = explore_jit_trace(fn, (x, y), check_trace=True, strict=True)
    cmp.jit_trace.findings               # what really happened, in sentences
    cmp.diff(0, 1)                          # traced vs direct, stage by stage

What torch 2.13 does (checked here, and re-derived from each run's captures rather than assumed):

- ``torch.jit.trace`` warns that it is deprecated ("switch to torch.compile or torch.export").
- A traced *function* (``ScriptFunction``) carries ``_torchdynamo_inline = fn``: Dynamo ignores the
  TorchScript graph and traces the original Python function, inside a wrapper frame named
  ``inner`` (torch/_dynamo/external_utils.py). The FX graph is the direct compile's graph with
  other input names (``L['args'][0]`` instead of ``L['x']``).
- A traced *module* (``TopLevelTracedModule``) has a TorchScript ``forward`` (C++): there is no
  Python frame for Dynamo to compile, so nothing is compiled and every call runs in the TorchScript
  interpreter. (``torch.jit.script`` modules are refused by torch.compile with an error.)
"""
from __future__ import annotations

import time
import warnings

from compiler.analyses.compare import build, check_eager, run_config
from compiler.capturing.run import TORCHSCRIPT_NOT_COMPILED
from compiler.capturing.runtime import copy_arguments, time_interleaved

TRACED_LABEL = "torch.compile(torch.jit.trace(fn))"
DIRECT_LABEL = "torch.compile(fn)"


def trace(fn, example_inputs=None, *, check_trace: bool = True, check_inputs=None, check_tolerance: float = 1e-5,
          strict: bool = True, example_kwarg_inputs: dict | None = None, **trace_kwargs):
    """``torch.jit.trace`` with every argument passed through; → (traced, info) where info records the
    warnings torch raised, the TorchScript graph and code, and how long tracing took."""
    import torch

    parameters = {"check_trace": check_trace, "check_inputs": None if check_inputs is None else f"{len(check_inputs)} input set(s)",
                  "check_tolerance": check_tolerance, "strict": strict,
                  "example_kwarg_inputs": sorted(example_kwarg_inputs) if example_kwarg_inputs else None,
                  **{k: repr(v) for k, v in trace_kwargs.items()}}
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        traced = torch.jit.trace(fn, example_inputs, check_trace=check_trace, check_inputs=check_inputs,
                                 check_tolerance=check_tolerance, strict=strict,
                                 example_kwarg_inputs=example_kwarg_inputs, **trace_kwargs)
    info = {"kind": type(traced).__name__, "seconds": time.perf_counter() - start, "parameters": parameters,
            "warnings": list(dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught)),
            "inlines_original": getattr(traced, "_torchdynamo_inline", None) is not None,
            "graph": _text(lambda: traced.graph), "code": _text(lambda: traced.code)}
    return traced, info


def _text(get) -> str | None:
    try:
        return str(get())
    except Exception:  # noqa: BLE001 — a traced module's graph lives on its forward
        return None


def _args(example_inputs, example_kwarg_inputs):
    if example_kwarg_inputs:
        return (), dict(example_kwarg_inputs)
    if example_inputs is None:
        return (), {}
    return (tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (example_inputs,)), {}


def explore_jit_trace(fn, example_inputs=None, *, check_trace: bool = True, check_inputs=None,
                      check_tolerance: float = 1e-5, strict: bool = True, example_kwarg_inputs: dict | None = None,
                      compare_direct: bool = True, fresh: bool = True, timing: bool = True, repeat: int = 15,
                      **compile_kwargs):
    """Explore ``torch.compile(torch.jit.trace(fn, …))`` and (``compare_direct``) ``torch.compile(fn)``
    as a two-configuration Comparison; ``cmp.jit_trace`` holds the trace's record and findings."""
    start = time.perf_counter()
    args, kwargs = _args(example_inputs, example_kwarg_inputs)
    info = {"error": None}
    try:
        traced, info = trace(fn, example_inputs, check_trace=check_trace, check_inputs=check_inputs,
                             check_tolerance=check_tolerance, strict=strict, example_kwarg_inputs=example_kwarg_inputs)
        info["error"] = None
    except Exception as exc:  # noqa: BLE001 — e.g. a trace check failure: recorded, the direct run still happens
        traced = None
        info = {"kind": None, "error": {"type": type(exc).__name__, "message": str(exc)[:4000],
                                        "stage": "torch.jit.trace", "missing": None}}
    eager_check = check_eager(fn, args, kwargs) if timing else None
    entries, captures = [], []
    if traced is not None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            entry, cap = run_config(traced, args, {"label": TRACED_LABEL, **compile_kwargs}, fresh=fresh,
                                    kwargs=kwargs, eager_check=eager_check, repeat=repeat, timing=timing,
                                    eager_fn=fn)
        info["compile_warnings"] = list(dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught))
        if timing and (eager_check or {}).get("available"):
            # the traced object run as TorchScript, uncompiled, against the eager Python function
            info["torchscript_runtime"] = time_interleaved(fn, traced, *copy_arguments(args, kwargs), repeat=repeat)
    else:
        entry, cap = {"label": TRACED_LABEL, "config": compile_kwargs, "capture": None, "error": info["error"],
                      "explore_s": 0.0, "timing_s": 0.0, "mode_options": None}, None
    entries.append(entry)
    captures.append(cap)
    if compare_direct:
        entry, direct = run_config(fn, args, {"label": DIRECT_LABEL, **compile_kwargs}, fresh=fresh, kwargs=kwargs,
                                   eager_check=eager_check, repeat=repeat, timing=timing)
        entries.append(entry)
        captures.append(direct)
    info["findings"] = findings(info, captures[0], captures[1] if compare_direct else None)
    return build(fn, entries, captures, eager_check, start, spec="torch.jit.trace vs direct", common=compile_kwargs,
                 fresh=fresh, timing=timing, repeat=repeat, jit_trace=info)


def _ops(cap) -> list[str]:
    """The graph's operations by FX node name (``sin``, ``add``, ``cos``): input names left out."""
    return [n.name for c in cap.compiles if c.graph.available for n in c.graph.nodes
            if n.op not in ("placeholder", "alias", "output", "get_attr")]


def findings(info: dict, traced_cap, direct_cap) -> list[str]:
    """What happened, from the captures: compiled or not, which frame, graph breaks, same ops as direct."""
    out = [w for w in info.get("warnings", []) if "deprecated" in w]
    if info.get("error"):
        return out + [f"torch.jit.trace failed: {info['error']['type']}: {info['error']['message'].splitlines()[0]}"]
    if traced_cap is None:
        return out + ["torch.compile of the traced object failed before compiling (see its error)"]
    if info.get("inlines_original"):
        out.append("torch.jit.trace set _torchdynamo_inline on the traced function: Dynamo traces the original "
                   "Python function, not the TorchScript graph")
    if traced_cap.error:
        out.append(f"compiling the traced {info['kind']} failed in {traced_cap.error.stage}: {traced_cap.error.type}")
    compiles = traced_cap.compiles
    if not compiles and not traced_cap.error:
        out.append(f"Dynamo compiled nothing: the {info['kind']} is TorchScript: {TORCHSCRIPT_NOT_COMPILED}")
    names = sorted({c.name for c in compiles if c.name})
    if compiles:
        out.append(f"Dynamo compiled {len(compiles)} frame(s) ({', '.join(names)}) into "
                   f"{traced_cap.summary.graphs} graph(s) with {traced_cap.summary.graph_breaks} graph break(s)")
    for item in traced_cap.breaks.items:
        out.append(f"graph break: {item.headline}")
    if direct_cap is not None and compiles and direct_cap.compiles:
        same = _ops(traced_cap) == _ops(direct_cap)
        out.append("the traced graph has the same operations as compiling fn directly" if same else
                   "the traced graph's operations differ from compiling fn directly (see the diff)")
    return out
