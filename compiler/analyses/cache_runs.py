"""What a cache hit saves, measured: the same calls compiled in fresh Python processes.

``measure_caches(fn, calls, **compile_kwargs)`` (``cap.measure_caches()``) runs three child processes, each
a new interpreter (nothing compiled in memory), each capturing its compiles (``compiler.capture``):

1. **cold** — an empty Inductor cache directory (``TORCHINDUCTOR_CACHE_DIR``, ``TRITON_CACHE_DIR``): every
   cache misses; at the end it saves the mega-cache (``torch.compiler.save_cache_artifacts()``);
2. **warm** — the same directory, now filled: what a rerun of your program gets;
3. **mega-cache** — another empty directory, filled first with ``torch.compiler.load_cache_artifacts()``
   of the bytes the cold run saved: what a new machine (CI, a serving replica) gets from those bytes.

Each run's compile seconds are torch's (``cap.summary.compile_time_s``: every compile's
``entire_frame_compile_time_s`` plus backward); the cache table of each compile is its ``c.caches``;
``outputs_equal``: the child compared its outputs with eager's (``torch.testing.assert_close``).
The function and its calls travel to the children by ``dill`` (functions and classes defined in a notebook
or ``__main__`` by value); what cannot be pickled makes the measurement unavailable, with the reason.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

RUNS = ("cold", "warm", "mega-cache")
METHOD = ("each run is a fresh Python process compiling the same calls under compiler.capture(): cold with an empty "
          "TORCHINDUCTOR_CACHE_DIR (then torch.compiler.save_cache_artifacts()), warm with the directory the cold run "
          "filled, mega-cache with a new empty directory after torch.compiler.load_cache_artifacts(<the cold run's "
          "bytes>); compile seconds are torch's entire_frame_compile_time_s (+ backward) summed over the compiles; "
          "'saved' is cold minus the run, one run each (not a median)")


def _child_env(cache_dir: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCH_TRACE", "TORCH_LOGS", "TORCH_COMPILE_DEBUG"))}
    env["TORCHINDUCTOR_CACHE_DIR"] = cache_dir
    env["TRITON_CACHE_DIR"] = os.path.join(cache_dir, "triton")
    env["PYTHONPATH"] = os.pathsep.join(p for p in [os.getcwd(), *sys.path] if p and os.path.isdir(p))
    return env


def _run_child(mode: str, work: str, cache_dir: str, timeout: float) -> dict:
    out = os.path.join(work, f"{mode}.json")
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", "compiler.analyses.cache_runs", mode, work, cache_dir],
                              env=_child_env(cache_dir), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"name": mode, "error": f"the {mode} run took longer than {timeout:.0f} s and was stopped"}
    wall = round(time.perf_counter() - start, 4)
    if done.returncode != 0 or not os.path.exists(out):
        tail = (done.stderr or done.stdout or "").strip().splitlines()[-1:] or ["no output"]
        return {"name": mode, "process_s": wall, "error": f"the {mode} process failed (exit {done.returncode}): {tail[0][:500]}"}
    with open(out, encoding="utf-8") as f:
        result = json.load(f)
    result["process_s"] = wall
    return result


def measure_caches(fn, calls, timeout: float = 600.0, **compile_kwargs) -> dict:
    """The ``CacheRuns`` data (``compiler.stages.schema.CacheRuns``) of compiling ``fn`` on ``calls`` (argument
    tuples, or ``(args, kwargs)``) cold, warm and from the mega-cache, each in a fresh process."""
    import dill

    from compiler.analyses.fix_experiments import normalize_calls

    calls = normalize_calls(calls)
    with tempfile.TemporaryDirectory(prefix="tcompile-caches-") as work:
        try:
            with open(os.path.join(work, "payload.pkl"), "wb") as f:
                dill.dump({"fn": fn, "calls": calls, "compile_kwargs": compile_kwargs}, f, recurse=True)
        except Exception as exc:  # noqa: BLE001 — what dill cannot pickle makes the measurement unavailable
            return {"available": False, "reason": f"the function or its arguments could not be sent to a fresh "
                                                  f"process (dill: {type(exc).__name__}: {str(exc)[:300]})"}
        shared, empty = os.path.join(work, "cache"), os.path.join(work, "cache-mega")
        runs = [_run_child("cold", work, shared, timeout), _run_child("warm", work, shared, timeout)]
        artifacts = os.path.join(work, "mega.bin")
        size = os.path.getsize(artifacts) if os.path.exists(artifacts) else None
        if size:
            runs.append(_run_child("mega-cache", work, empty, timeout))
        else:
            runs.append({"name": "mega-cache", "error": "torch.compiler.save_cache_artifacts() returned nothing in "
                                                        "the cold run"})
    cold = runs[0].get("compile_s")
    for run in runs:
        if cold is not None and run.get("compile_s") is not None:
            run["saved_s"] = round(cold - run["compile_s"], 4)
    return {"available": True, "runs": runs, "artifacts_bytes": size, "method": METHOD,
            "compile_kwargs": {k: v for k, v in compile_kwargs.items() if isinstance(v, (str, bool, int, float))}}


# --- the child process ----------------------------------------------------------------------------

def _child(mode: str, work: str) -> None:
    import contextlib
    import io

    import dill
    import torch

    from compiler.analyses.fix_experiments import outputs_match
    from compiler.capturing.session import capture
    from compiler.capturing.runtime import copy_arguments

    with open(os.path.join(work, "payload.pkl"), "rb") as f:
        payload = dill.load(f)
    fn, calls, compile_kwargs = payload["fn"], payload["calls"], payload["compile_kwargs"]
    loaded = None
    if mode == "mega-cache":
        with open(os.path.join(work, "mega.bin"), "rb") as f:
            info = torch.compiler.load_cache_artifacts(f.read())
        loaded = {k: len(v) for k, v in (info.artifacts.items() if info is not None else [])}
    outputs, expected = [], []
    with contextlib.redirect_stdout(io.StringIO()):
        for args, kwargs in calls:
            args, kwargs = copy_arguments(args, kwargs)
            expected.append(fn(*args, **kwargs))
        start = time.perf_counter()
        with capture(suppress_errors=True) as cap:
            compiled = torch.compile(fn, **compile_kwargs)
            for args, kwargs in calls:
                args, kwargs = copy_arguments(args, kwargs)
                outputs.append(compiled(*args, **kwargs))
        calls_s = time.perf_counter() - start
    result = {"name": mode, "compile_s": round(cap.summary.compile_time_s, 4), "calls_s": round(calls_s, 4),
              "compiles": [{"compile_id": c.compile_id, "compile_s": c.compile_seconds,
                            "entries": [e.to_data() for e in c.caches.entries] if c.caches.available else [],
                            "phases": [p.to_data() for p in c.timings.phases] if c.timings.available else [],
                            "top_lines": [r.to_data() for r in c.timings.by_line[:3]] if c.timings.available else []}
                           for c in cap.compiles],
              "counters": {group: dict(cap.counters.get(group, {})) for group in ("inductor", "aot_autograd")},
              "error": f"{cap.error.type}: {cap.error.message[:300]}" if cap.error else None}
    if loaded is not None:
        result["loaded_artifacts"] = loaded
    if cap.error is None:
        result["outputs_equal"], result["output_note"] = outputs_match(outputs, expected)
    if mode == "cold":
        saved = torch.compiler.save_cache_artifacts()
        if saved is not None:
            with open(os.path.join(work, "mega.bin"), "wb") as f:
                f.write(saved[0])
    with open(os.path.join(work, f"{mode}.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, default=str)


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2])
