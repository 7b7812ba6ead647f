"""What would save compile time, proposed and tried: ``cap.compile_fixes()`` / ``cap.try_compile_fixes()``.

Proposals (``compiler.stages.fix_schema.Fix``, the same schema as the fixes of graph breaks and recompiles,
``goal="compile time"`` on their results):

- **regional compilation** — a model with a repeated ``nn.Module`` block (same class, same structure:
  the same submodules, parameter shapes and dtypes; at least 2 instances) compiles each block instead of
  the whole model (``block.compile()``, torch's regional-compilation recipe), so Dynamo traces and Inductor
  compiles the block once and every instance reuses it; ``torch.compiler.nested_compile_region`` on the
  block's class, with the whole model compiled, is tried too where this torch has it;
- **warm caches / mega-cache** — the measured saving of a rerun with Inductor's caches filled, and of
  ``torch.compiler.save_cache_artifacts`` / ``load_cache_artifacts`` (``compiler.analyses.cache_runs``);
- **dynamic=True** — where recompiles took most of the compile time;
- **a cheaper mode** — ``mode="default"`` instead of max-autotune or reduce-overhead.

Trying one compiles the captured calls in a **fresh Python process with an empty Inductor cache
directory**, the baseline too, so neither profits from what the other (or this process) compiled:
compile seconds are torch's (``entire_frame_compile_time_s`` + backward, summed over every compile of the
run), runtime the median of interleaved eager/compiled calls, outputs compared with eager's
(``torch.testing.assert_close``). The function and calls travel by ``dill``.
"""
from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

from compiler.stages.capture import METHODS
from compiler.stages.fix_schema import CHANGES_RESULTS, FAILED, MEASURED, Fix, Fixes, FixMeasure, FixResult

GOAL = "compile time"
MIN_SHARE = 0.5  # dynamic=True is proposed where recompiles took at least this share of the compile time
CONTAINERS = ("ModuleList", "ModuleDict", "ParameterList", "ParameterDict")
TIMING_REPEAT = 5


# --- repeated blocks ------------------------------------------------------------------------------

def _structure(module) -> tuple:
    """What makes two blocks the same: class, and each submodule's path, class and parameters' shapes and dtypes."""
    return (type(module).__qualname__, type(module).__module__,
            tuple((name, type(m).__qualname__) for name, m in module.named_modules() if name),
            tuple((name, tuple(p.shape), str(p.dtype)) for name, p in module.named_parameters()))


def repeated_blocks(model) -> list[dict]:
    """Groups of structurally identical submodules with children (blocks, not single layers), outermost
    first: ``[{"class": "Block", "paths": ["blocks.0", …], "parameters": n}]``, most parameters first."""
    torch = sys.modules.get("torch")  # a live module means torch is loaded; a loaded capture has none
    if model is None or torch is None or not isinstance(model, torch.nn.Module):
        return []
    groups: dict[tuple, list[str]] = defaultdict(list)
    for path, module in model.named_modules():
        if not path or type(module).__name__ in CONTAINERS or not any(True for _ in module.children()):
            continue
        groups[_structure(module)].append(path)
    repeated = [(key, paths) for key, paths in groups.items() if len(paths) >= 2]
    chosen: list[dict] = []
    for key, paths in sorted(repeated, key=lambda kv: min(p.count(".") for p in kv[1])):  # outermost first
        inside = [p for p in paths if any(p.startswith(q + ".") for c in chosen for q in c["paths"])]
        if inside:
            continue
        block = model.get_submodule(paths[0])
        chosen.append({"class": key[0], "paths": paths,
                       "parameters": sum(p.numel() for p in block.parameters()) * len(paths)})
    return sorted(chosen, key=lambda g: -g["parameters"])


# --- proposing ------------------------------------------------------------------------------------

def propose(cap, model=None) -> Fixes:
    """The compile-time changes for ``cap`` (``model``: the live module, else the capture's own function)."""
    from compiler.analyses.whatif import _original

    live = cap.live
    if model is None and live is not None and live.compiled_fn is not None:
        model = _original(live.compiled_fn)
    total = sum(c.compile_seconds or 0.0 for c in cap.compiles)
    options = cap.options or {}
    items: list[Fix] = []
    for group in repeated_blocks(model)[:1]:
        paths = group["paths"]
        shown = ", ".join(paths[:3]) + (f", … ({len(paths)} in all)" if len(paths) > 3 else "")
        items.append(Fix(id="", kind="regional_compile", regions=paths, region_method="compile",
                         title=f"Compile the repeated block {group['class']} once instead of the whole model "
                               f"(regional compilation: {len(paths)} instances, {shown})",
                         snippet=f"for block in (model.get_submodule(p) for p in {paths!r}):\n"
                                 f"    block.compile()          # instead of torch.compile(model)\nout = model(x)",
                         why=f"{len(paths)} structurally identical {group['class']} blocks: Dynamo traces the whole "
                             "model, each block again; compiled on its own, one compile serves every instance",
                         findings=[f"{group['class']} ×{len(paths)} at {shown}"],
                         alternatives=["torch.compiler.nested_compile_region on the block's forward, with the "
                                       "whole model compiled (one graph; the region is traced once)"]))
        if hasattr(__import__("torch").compiler, "nested_compile_region"):
            items.append(Fix(id="", kind="nested_compile_region", regions=paths, region_method="nested_compile_region",
                             title=f"Mark {group['class']}.forward as a nested compile region and compile the whole "
                                   "model (traced once, reused for every instance)",
                             snippet=f"{group['class']}.forward = torch.compiler.nested_compile_region("
                                     f"{group['class']}.forward)\ncompiled = torch.compile(model)",
                             why=f"{len(paths)} identical {group['class']} blocks",
                             findings=[f"{group['class']} ×{len(paths)}"]))
    if options.get("backend", "inductor") in ("inductor", None):
        items.append(Fix(id="", kind="warm_caches",
                         title="Keep Inductor's caches warm between runs, or ship them: "
                               "torch.compiler.save_cache_artifacts() / load_cache_artifacts()",
                         snippet="artifacts = torch.compiler.save_cache_artifacts()   # after compiling, once\n"
                                 "open('compile_cache.bin', 'wb').write(artifacts[0])\n"
                                 "# in a new process, before compiling:\n"
                                 "torch.compiler.load_cache_artifacts(open('compile_cache.bin', 'rb').read())",
                         why="a rerun in a fresh process with the caches filled skips AOTAutograd and Inductor "
                             "(Dynamo still traces)",
                         findings=[f"{len(cap.compiles)} compile(s), {total:.3g} s"]))
    recompile_s = sum(c.compile_seconds or 0.0 for c in cap.compiles if c.frame_compile_id > 0)
    if total and recompile_s / total >= MIN_SHARE and not options.get("dynamic"):
        items.append(Fix(id="", kind="dynamic_true", compile_kwargs={"dynamic": True},
                         title="Compile with dynamic=True: recompiles took most of the compile time",
                         snippet="compiled = torch.compile(fn, dynamic=True)",
                         why=f"recompiles took {recompile_s:.3g} of {total:.3g} s",
                         findings=[f"{sum(c.frame_compile_id > 0 for c in cap.compiles)} recompiles"]))
    mode = options.get("mode")
    if isinstance(mode, str) and mode != "default" and options.get("backend", "inductor") == "inductor":
        items.append(Fix(id="", kind="cheaper_mode", compile_kwargs={"mode": "default"},
                         title=f"Compile with mode='default' instead of {mode!r} (no autotuning or CUDA graphs: "
                               "less compile time, maybe slower calls)",
                         snippet="compiled = torch.compile(fn)   # mode='default'", why=f"mode {mode!r}"))
    for number, fix in enumerate(items, 1):
        fix.id = f"ct{number}"
        fix.cost_text = f"{total:.3g} s of compile time in the capture"
        fix.cost_method = "not ranked: each is measured when tried (compile seconds before → after)"
    return Fixes(available=True, items=items,
                 note=None if items else "no compile-time change to propose (no repeated block, no Inductor cache, "
                                         "few recompiles, the default mode)")


# --- trying (each run a fresh process) --------------------------------------------------------------

def _spec(fix: Fix | None) -> dict:
    if fix is None:
        return {}
    return {"regions": list(fix.regions), "region_method": fix.region_method, "compile_kwargs": dict(fix.compile_kwargs)}


def _fresh_run(work: str, name: str, spec: dict, timing: bool, timeout: float) -> dict:
    from compiler.analyses.cache_runs import _child_env

    with open(os.path.join(work, f"{name}.spec.json"), "w", encoding="utf-8") as f:
        json.dump({**spec, "timing": timing}, f)
    from compiler.analyses.fix_workers import kill_group

    cache_dir = tempfile.mkdtemp(prefix="cache-", dir=work)
    # its own process group: a stop ends what it started too (Inductor's compile workers), no orphan left
    process = subprocess.Popen([sys.executable, "-m", "compiler.analyses.compile_fixes", work, name],
                               env=_child_env(cache_dir), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=os.name == "posix")
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"stopped after {timeout:.0f} s"}
    finally:
        kill_group(process)
    done = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    out = os.path.join(work, f"{name}.json")
    if done.returncode != 0 or not os.path.exists(out):
        tail = (done.stderr or done.stdout or "").strip().splitlines()[-1:] or ["no output"]
        return {"error": f"the experiment process failed (exit {done.returncode}): {tail[0][:500]}"}
    with open(out, encoding="utf-8") as f:
        return json.load(f)


def try_compile_fixes(cap, fn=None, calls=None, only=None, timing: bool = True, progress=None,
                      timeout: float = 600.0) -> Fixes:
    """Try each compile-time change (``only``: their ids) against a baseline, each in a fresh process with
    an empty cache directory; results land on ``cap.compile_fixes()`` (saved with the capture)."""
    import dill

    from compiler.analyses.fix_experiments import replay_of

    fixes = cap.compile_fixes(model=fn)
    todo = [f for f in fixes.items if only is None or f.id in only]
    replay = replay_of(cap, fn, calls)
    from compiler.analyses.fix_workers import remove_dir

    notes: list[str] = []
    work = tempfile.mkdtemp(prefix="tcompile-ct-")
    try:
        with open(os.path.join(work, "payload.pkl"), "wb") as f:
            dill.dump({"fn": replay.fn, "calls": replay.calls, "compile_kwargs": replay.compile_kwargs}, f, recurse=True)
        total = len(todo) + 1
        if progress:
            progress(0, total, "compiling the baseline in a fresh process")
        base = _fresh_run(work, "baseline", {}, timing, timeout)
        before = FixMeasure.from_data(base["measure"]) if base.get("measure") else None
        for done, fix in enumerate(todo, 1):
            if progress:
                progress(done, total, f"trying {fix.id}: {fix.title}")
            fix.result = _try_one(cap, fix, work, before, base, replay, timing, timeout)
    finally:
        remove_dir(work, notes)  # an error removing it is a note, never an exception that hides the results
    fixes.note = ("each run a fresh process with an empty Inductor cache directory; compile seconds: torch's, "
                  "summed over the run's compiles" + ("" if before else f"; the baseline failed: {base.get('error')}")
                  + "".join(f"; {n}" for n in notes))
    return fixes


def _try_one(cap, fix, work, before, base, replay, timing, timeout) -> FixResult:
    start = time.perf_counter()
    result = FixResult(goal=GOAL, before=before, before_from="measured (a fresh process, empty caches)",
                       calls=len(replay.calls), fixes=[fix.id])
    if before is None:
        result.status, result.error = FAILED, f"the baseline failed: {base.get('error')}"
        return result
    if fix.kind == "warm_caches":
        cap.cache_runs = measure_caches_of(cap, replay.fn, replay.calls, timeout)
        warm, mega = cap.cache_runs.run("warm"), cap.cache_runs.run("mega-cache")
        if not cap.cache_runs.available or warm is None or warm.error or warm.compile_s is None:
            result.status = FAILED
            result.error = cap.cache_runs.reason or (warm.error if warm else "no warm run")
            return result
        cold = cap.cache_runs.run("cold")
        result.before = FixMeasure(compile_s=cold.compile_s, compiles=len(cold.compiles))
        result.after = FixMeasure(compile_s=warm.compile_s, compiles=len(warm.compiles))
        result.before_from = "the cold run of cap.cache_runs (a fresh process, empty cache directory)"
        result.outputs_equal = warm.outputs_equal
        result.output_note = ("compared in the warm process with torch.testing.assert_close; mega-cache "
                              f"(load_cache_artifacts in a new process, empty directory): compile "
                              f"{mega.compile_s if mega and mega.compile_s is not None else '–'} s")
    else:
        run = _fresh_run(work, fix.id, _spec(fix), timing, timeout)
        if run.get("error") or not run.get("measure"):
            result.status, result.error = FAILED, run.get("error") or "no measure"
            result.seconds = round(time.perf_counter() - start, 3)
            return result
        result.after = FixMeasure.from_data(run["measure"])
        result.outputs_equal, result.output_note = run.get("outputs_equal"), run.get("output_note")
    result.status = MEASURED if result.outputs_equal else CHANGES_RESULTS
    result.seconds = round(time.perf_counter() - start, 3)
    return result


# --- the child process ----------------------------------------------------------------------------

@contextlib.contextmanager
def regional(model, paths, method, compile_kwargs):
    """The model with its blocks at ``paths`` compiled on their own (``method="compile"``: the callable is the
    model, run eagerly around them) or marked as nested compile regions (the callable is the whole model
    compiled); everything put back on the way out."""
    import torch

    blocks = [model.get_submodule(p) for p in paths]
    if method == "nested_compile_region":
        classes = {type(b) for b in blocks}
        saved = {cls: cls.__dict__.get("forward") for cls in classes}
        try:
            for cls in classes:
                cls.forward = torch.compiler.nested_compile_region(cls.forward)
            yield torch.compile(model, **compile_kwargs)
        finally:
            for cls, forward in saved.items():
                if forward is None:
                    del cls.forward
                else:
                    cls.forward = forward
        return
    before = [getattr(block, "_compiled_call_impl", None) for block in blocks]  # a block the user compiled stays so
    try:
        for block in blocks:
            block.compile(**compile_kwargs)
        yield model
    finally:
        for block, previous in zip(blocks, before):
            block._compiled_call_impl = previous


def _child(work: str, name: str) -> None:
    import io

    import dill
    import torch

    from compiler.analyses.fix_experiments import measure_of, outputs_match
    from compiler.capturing.runtime import copy_arguments, time_interleaved
    from compiler.capturing.session import Recorder

    with open(os.path.join(work, "payload.pkl"), "rb") as f:
        payload = dill.load(f)
    with open(os.path.join(work, f"{name}.spec.json"), encoding="utf-8") as f:
        spec = json.load(f)
    fn, calls = payload["fn"], payload["calls"]
    kwargs = {**payload["compile_kwargs"], **spec.get("compile_kwargs", {})}
    expected, outputs = [], []
    with contextlib.redirect_stdout(io.StringIO()):
        for args, call_kwargs in calls:
            args, call_kwargs = copy_arguments(args, call_kwargs)
            expected.append(fn(*args, **call_kwargs))
    recorder = Recorder(suppress_errors=True, options={**{k: v for k, v in kwargs.items() if isinstance(v, (str, bool, int))},
                                                       "experiment": True})
    result: dict = {}
    with contextlib.ExitStack() as stack:
        stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
        with recorder:
            if spec.get("regions"):
                compiled = stack.enter_context(regional(fn, spec["regions"], spec.get("region_method"), kwargs))
            else:
                compiled = torch.compile(fn, **kwargs)
            for args, call_kwargs in calls:
                args, call_kwargs = copy_arguments(args, call_kwargs)
                outputs.append(compiled(*args, **call_kwargs))
        cap = recorder.build()
        runtime = None
        if spec.get("timing") and cap.error is None:
            args, call_kwargs = copy_arguments(*calls[-1])
            eager = fn
            if spec.get("regions") and spec.get("region_method") != "nested_compile_region":
                def eager(*a, **k):  # the blocks are compiled in place: eager is the model under force_eager
                    with torch.compiler.set_stance("force_eager"):
                        return fn(*a, **k)
            runtime = time_interleaved(eager, compiled, args, call_kwargs, repeat=TIMING_REPEAT)
    result["measure"] = measure_of(cap, recorder.counters, runtime).to_data()
    if cap.error:
        result["error"] = f"{cap.error.type}: {(cap.error.message or '').splitlines()[0][:300] if cap.error.message else ''}"
    else:
        result["outputs_equal"], result["output_note"] = outputs_match(outputs, expected)
    with open(os.path.join(work, f"{name}.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, default=str)


def measure_caches_of(cap, fn=None, calls=None, timeout: float = 600.0):
    """``Capture.measure_caches``: the captured calls (or ``fn`` on ``calls``) in cold / warm / mega-cache processes."""
    from compiler.analyses.cache_runs import measure_caches
    from compiler.analyses.fix_experiments import replay_of
    from compiler.stages.schema import CacheRuns

    replay = replay_of(cap, fn, calls)
    return CacheRuns.from_data(measure_caches(replay.fn, replay.calls, timeout=timeout, **replay.compile_kwargs))


# Capture.compile_fixes / try_compile_fixes / measure_caches (compiler.stages.capture)
METHODS.update(propose_compile_fixes=propose, try_compile_fixes=try_compile_fixes, measure_caches=measure_caches_of)

if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2])
