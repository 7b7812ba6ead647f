"""The answer checkers of the labs — instructor side, never shipped: each computes the expected answer from
the capture (or torch) and compares, so reading it would give the answer away. The instructor notebooks
import them (``from labs.answers import *``, in notebooks/); the nbgrader course runs them only in its hidden
tests, and the student release checks only that an answer was given (``check_answered``)."""
from __future__ import annotations

import math
import re

from tcompile_labs.checks import (  # noqa: F401 - the helpers the answer checkers share with the checks
    _describe_args, _fail, _graphs_named, _kernel_ops, _kernels, _matches_op, _name, _no_answer, _normal, _pass, _plural,
    _require_no_error, _what_if, as_count, check_allclose, check_close, job_records, job_results, saved_for_backward,
)

__all__ = [
    "check_accepting_compile_answer", "check_backends_answer", "check_break_even", "check_break_even_function",
    "check_cheapest_compile_answer", "check_compile_count_answer", "check_ddp_subgraphs_answer", "check_costliest_line", "check_epilogue_answer", "check_extern_op_answer",
    "check_kernels_answer", "check_line_answer", "check_op_count_answer", "check_reason_against_answer",
    "check_recompiled_rank_answer", "check_recordings_answer", "check_reduction_kernel_answer",
    "check_saved_answer", "check_saved_fraction",
    "check_problem_counts_answer", "check_recompiles_answer", "check_first_divergent_backend_answer",
]


def check_break_even(calls, runtime, tolerance_calls: float = 1.0, rel: float = 0.01) -> None:
    """The number of calls after which a compile has paid for itself, from ``runtime`` (a capture's
    ``.runtime``): ``(first_call_s - compiled) / (eager - compiled)`` with median times, or ``math.inf`` when
    the compiled function is not faster. Any correct form passes: unrounded, rounded or rounded up (within
    ``tolerance_calls`` calls or ``rel``, whichever is larger)."""
    if calls is ... or calls is None:
        _fail("break-even calls: no answer yet", "replace ... with your computation")
    eager, compiled = runtime.eager.median_s, runtime.compiled.median_s
    expected = (runtime.first_call_s - compiled) / (eager - compiled) if eager > compiled else math.inf
    try:
        value = float(calls)
    except (TypeError, ValueError):
        _fail(f"break-even calls: {calls!r} is not a number")
    if math.isinf(expected) or math.isinf(value):
        if value != expected:
            _fail(f"break-even calls: {value:.4g} is not right",
                  "when the compiled call is not faster than eager, the compile never pays: math.inf")
        return _pass("break-even calls: never (the compiled function is not faster)")
    if abs(value - expected) > max(tolerance_calls, rel * abs(expected)):
        _fail(f"break-even calls: {value:.4g} is not right (off by more than {tolerance_calls:g} call or "
              f"{rel:.0%})", "(first_call_s - compiled) / (eager - compiled), with the medians of runtime")
    return _pass(f"break-even calls: {value:.4g} (exactly {expected:.2f}; within {tolerance_calls:g} call or "
                 f"{rel:.0%})")


def check_costliest_line(cap, line, close: float = 0.75) -> None:
    """``line`` is the source line with the largest share of the measured kernel time (``cap.line_table()``) — or
    one whose share is at least ``close`` of the largest: the shares are measured again when the notebook is
    graded, and two close lines trade places with the noise of a loaded machine."""
    _require_no_error(cap)
    if line is ... or line is None:
        _fail("no answer yet", "replace ... with a line number from cap.line_table() (or the Source tab's shading)")
    table = cap.line_table()
    if table.empty or table["time_share"].isna().all():
        _fail("no kernel times in this capture",
              "explore with timing=True (the default): kernel times are measured after the compile")
    top = table.loc[table["time_share"].idxmax()]
    try:
        answer = int(line)
    except (TypeError, ValueError):
        _fail(f"{line!r} is not a line number", "give the number in the 'line' column")
    share = table.loc[table["line"] == answer, "time_share"]
    if answer != int(top["line"]) and not (len(share) and share.iloc[0] >= close * top["time_share"]):
        found = f"line {answer} has {share.iloc[0]:.0%} of the kernel time" if len(share) else \
            f"line {answer} produced no kernel"
        _fail(f"{found}; another line costs more", "sort cap.line_table() by time_share")
    row = table.loc[table["line"] == answer].iloc[0]
    return _pass(f"line {answer} ({row['code']}) takes {row['time_share']:.0%} of the kernel time, in "
                 f"{', '.join(row['kernels'])}" + ("" if answer == int(top["line"]) else
                                                   f" (the top line, {int(top['line'])}, {top['time_share']:.0%})"))


def _check_count(answer, expected: int, what: str, hint: str) -> None:
    _no_answer(answer, what)
    if as_count(answer) is None or as_count(answer) != expected:
        _fail(f"{what}: {answer!r} is not right", hint)
    return _pass(f"{what}: {answer!r} is right")


def check_kernels_answer(answer, cap) -> None:
    """The number of kernels Inductor generated for ``cap`` (library calls such as ``extern_kernels.mm`` not
    counted): the Overview's *kernels* card."""
    return _check_count(answer, cap.summary.kernels, f"kernels generated for {_name(cap)}",
                        "the 'kernels' card on the Overview tab; library (extern) calls are not generated kernels")


def check_op_count_answer(answer, cap) -> None:
    """The number of operations (nodes other than inputs and the output) in the first FX graph of ``cap``."""
    return _check_count(answer, cap.compiles[0].graph.op_count, f"operations in {_name(cap)}'s FX graph",
                        "count the call nodes: inputs (placeholders) and the output are not operations")


def check_saved_answer(answer, cap) -> None:
    """The number of tensors AOTAutograd's forward graph of ``cap`` saves for the backward (``cap`` must be a
    training capture: an inference graph saves nothing, and 0 would pass for it)."""
    if not any(_graphs_named(c, "forward") for c in cap.compiles):
        _fail("this capture has no forward graph: it is not a training capture, so nothing is saved",
              "solve the exercise that makes the training capture first")
    return _check_count(answer, len(saved_for_backward(cap)), "tensors saved for backward",
                        "the forward's return tuple: the user's outputs first (the loss), then the saved tensors")


def check_recordings_answer(answer, cap) -> None:
    """The number of CUDA graphs ``cap`` recorded."""
    return _check_count(answer, cap.cudagraphs.recorded, "CUDA graphs recorded",
                        "count the 'record' events of the CUDA graphs tab: one per distinct input shape")


def _op_name(value) -> str:
    text = str(value).strip().strip("'\"").casefold()
    for prefix in ("torch.ops.", "extern_kernels.", "aten."):
        text = text.removeprefix(prefix)
    return text.split(".")[0]


def check_extern_op_answer(answer, cap) -> None:
    """The ATen operator that Inductor left to a library kernel in ``cap`` (``"mm"``, ``"aten.mm"`` and
    ``"extern_kernels.mm"`` all name it)."""
    what = "the operator Inductor left to a library"
    _no_answer(answer, what)
    extern = {_op_name(op) for c in cap.compiles for k in c.kernels.kernels if k.language == "extern"
              for op in k.ops_from_name}
    if not extern:
        _fail(f"{_name(cap)} has no library (extern) kernel", "use the capture the exercise names")
    if _op_name(answer) not in extern:
        _fail(f"{what}: {answer!r} is not right",
              "Generated code: the kernel whose language is 'extern' — name the ATen operator it runs")
    return _pass(f"{what}: {answer!r} is right")


def check_saved_fraction(answer, comparison, tolerance: float = 0.01) -> None:
    """The fraction of the call time CUDA graphs removed, ``(without - with) / without`` from the medians of
    ``comparison`` (a capture's ``cudagraph_comparison``), within ``tolerance`` (absolute)."""
    what = "fraction of the call time removed by CUDA graphs"
    _no_answer(answer, what)
    without, with_ = comparison.without_cudagraphs.median_s, comparison.with_cudagraphs.median_s
    expected = (without - with_) / without
    try:
        value = float(answer)
    except (TypeError, ValueError):
        _fail(f"{what}: {answer!r} is not a number")
    if abs(value) > 1.5 and abs(value / 100 - expected) <= tolerance:
        _fail(f"{what}: {value:.4g} looks like a percentage", "give a fraction between 0 and 1")
    if abs(value - expected) > tolerance:
        _fail(f"{what}: {value:.4g} is not right (off by more than {tolerance:g})",
              "(without - with) / without, with the two medians")
    return _pass(f"{what}: {value:.3f} (exactly {expected:.4f}; within {tolerance:g})")


def check_cheapest_compile_answer(answer, table, rel: float = 0.5, slack_s: float = 0.25) -> None:
    """A ``config`` row of ``table`` (a DataFrame with a ``compile s`` column) whose compile is the cheapest — or
    as cheap within the noise of one measurement on a loaded machine (at most ``rel`` more than the cheapest, plus
    ``slack_s``): eager and aot_eager trade places from run to run, and the table is measured again when the
    notebook is graded."""
    what = "the configuration with the cheapest compile"
    _no_answer(answer, what)
    times = {_normal(name): float(t) for name, t in table["compile s"].items()}
    cheapest = min(times.values())
    if _normal(answer) not in times:
        _fail(f"{what}: {answer!r} is not a row of the table", "copy a name from the 'config' column")
    if times[_normal(answer)] > cheapest * (1 + rel) + slack_s:
        _fail(f"{what}: {answer!r} is not right", "the smallest number in the 'compile s' column")
    return _pass(f"{what}: {answer!r} is right (within the noise of the cheapest)")


def check_recompiled_rank_answer(rank, compile_id, job) -> None:
    """``rank`` is the rank of ``job`` that recompiled and ``compile_id`` (e.g. ``"0/1"``) its new compile."""
    _no_answer(rank, "the rank that recompiled")
    recompiled = {r: cap.recompiles for r, cap in job.captures.items() if cap.recompiles}
    if len(recompiled) != 1 or rank not in recompiled:
        _fail(f"the rank that recompiled: {rank!r} is not right",
              "look at the groups of the 'recompiles' divergence")
    _pass(f"the rank that recompiled: {rank!r} is right")
    _no_answer(compile_id, "its new compile id")
    ids = [r.compile_id for r in recompiled[rank]]
    if _normal(compile_id) not in [_normal(i) for i in ids]:
        _fail(f"its new compile id: {compile_id!r} is not right", "job.captures[odd_rank].recompiles")
    return _pass(f"its new compile id: {compile_id!r} is right")


def check_line_answer(answer, cap, op: str) -> None:
    """``answer`` is the source line (as the FX graph tab numbers it) of the node that calls ``op`` in the
    first compile of ``cap``."""
    what = f"the line that produced {op!r}"
    _no_answer(answer, what)
    lines = sorted({n.line for n in cap.compiles[0].graph.nodes
                    if n.line is not None and n.op not in ("placeholder", "output", "alias")
                    and _matches_op(n.target or "", op)})
    if not lines:
        _fail(f"no {op!r} node with a source line in {_name(cap)}'s FX graph", "use the capture the exercise names")
    if isinstance(answer, bool) or answer not in lines:
        _fail(f"{what}: {answer!r} is not right",
              "the FX graph tab shows each node's line; in a %%tcompile cell the %%tcompile line is line 1")
    return _pass(f"{what}: line {answer} is right")


def check_backends_answer(answer) -> None:
    """``answer`` holds every backend name ``torch.compile`` accepts here (``list_backends`` with no tag
    excluded)."""
    import torch

    what = "every backend torch.compile accepts"
    _no_answer(answer, what)
    from torch._dynamo.backends import registry

    registry._lazy_import()  # every backend registered, whatever its tags (what list_backends filters)
    expected = set(registry._BACKENDS)
    given = {str(a) for a in answer} if isinstance(answer, (list, tuple, set)) else set()
    missing, extra = sorted(expected - given), sorted(given - expected)
    if missing or extra:
        _fail(f"{what}: {len(given)} names; missing {', '.join(missing[:6]) or 'none'}"
              + (" …" if len(missing) > 6 else "") + f"; not backends: {', '.join(extra) or 'none'}",
              "list_backends() hides some backends by default (eager, aot_eager…): read its signature")
    return _pass(f"{what}: {len(expected)} names, "
                 f"{len(expected - set(torch._dynamo.list_backends()))} of them hidden by default")


def check_accepting_compile_answer(answer, cap, fn, *args, **kwargs) -> None:
    """``answer`` is the compile id (e.g. ``"0/1"``) whose guards accept ``fn(*args, **kwargs)`` first
    (what-if on the live guards, in Dynamo's cache order)."""
    what = f"the compile that would run ({_describe_args(args, kwargs)})"
    _no_answer(answer, what)
    result = _what_if(cap, fn, args, kwargs)
    expected = result.accepted_by or "none (a recompile)"
    if _normal(answer) != _normal(expected) and not (result.recompiles and _normal(answer) in ("none", "")):
        _fail(f"{what}: {answer!r} is not right",
              "Dynamo tries the cache entries most recently used (or compiled) first, and takes the first whose "
              "guards pass: ask the what-if panel (Guards tab) or cap.what_if")
    return _pass(f"{what}: {expected}")


def check_reason_against_answer(answer, cap, compile_id: str, input: str) -> None:
    """``answer`` is the earlier compile whose guard on ``input`` failed when ``compile_id`` was compiled
    (the Recompiles tab lists one failing guard per earlier compile)."""
    what = f"the earlier compile whose guard on {input!r} failed for {compile_id}"
    _no_answer(answer, what)
    recompile = next((r for r in cap.recompiles if r.compile_id == compile_id), None)
    if recompile is None:
        _fail(f"{compile_id} is not a recompile of this capture", "use the capture and the compile the exercise names")
    mentions = (f"'{input}'", f"L['{input}']")
    against = [r.against for r in recompile.reasons if any(m in r.text or m in r.guard for m in mentions)]
    if not against:
        _fail(f"no reason of {compile_id} names {input!r}", "use the input the exercise names")
    if _normal(answer) not in [_normal(a) for a in against]:
        _fail(f"{what}: {answer!r} is not right",
              f"the Recompiles tab lists, for {compile_id}, the guard that failed against each earlier compile")
    return _pass(f"{what}: {answer!r} is right")


def _reduction_kernel(cap):
    for c in cap.compiles:
        for k in c.kernels.kernels:
            if k.language != "extern" and re.search(r"reduction|triton_(per|red)_", f"{k.name} {k.triton or ''}"):
                return k
    _fail("no reduction kernel in this capture", "use the capture the exercise names")


def check_reduction_kernel_answer(row_length, loads_of_input, cap) -> None:
    """For the reduction kernel of ``cap`` (a Triton capture): ``row_length`` is the number of elements each
    reduction reduces (``r0_numel``), ``loads_of_input`` the number of ``tl.load`` of ``in_ptr0``."""
    kernel = _reduction_kernel(cap)
    source = kernel.source or ""
    numel = re.search(r"^\s*r(?:0_)?numel = (\d+)", source, re.M)
    if numel is None:
        _fail(f"{kernel.name}: no constant reduction length in its source", "use the capture the exercise names")
    _check_count(row_length, int(numel[1]), "elements per reduced row",
                 "a reduction kernel loops over x (rows: xnumel) and reduces over r (each row: r0_numel)")
    loads = len(re.findall(r"tl\.load\(in_ptr0\b", source))
    _check_count(loads_of_input, loads, "loads of in_ptr0",
                 "count the tl.load(in_ptr0 …) lines: a persistent reduction keeps the row in registers")


def check_epilogue_answer(changed, kernel_name, comparison, gpu_cap) -> None:
    """``changed``: whether turning ``epilogue_fusion`` off changed the generated kernels in ``comparison``
    (two configurations of this machine, compared with ``comparison.diff(0, 1)``); ``kernel_name``: the
    kernel of ``gpu_cap`` that computes the matmul together with its epilogue."""
    _no_answer(changed, "did the kernels change")
    diff = comparison.diff(0, 1)
    expected = bool({"kernels", "inductor"} & set(diff.changed_stages))
    if not isinstance(changed, bool) or changed != expected:
        _fail(f"did the kernels change: {changed!r} is not right",
              "comparison.diff(0, 1).changed_stages lists the stages that differ; epilogue fusion only acts "
              "on a template kernel (a matmul Inductor generates itself): what runs the matmul here?")
    _pass(f"did the kernels change: {changed!r} is right")
    _no_answer(kernel_name, "the kernel that computes the matmul and its epilogue")
    kernels = {k.name: k for c in gpu_cap.compiles for k in c.kernels.kernels}
    kernel = kernels.get(str(kernel_name).strip())
    ops = _kernel_ops(kernel) if kernel is not None else set()
    if kernel is None or kernel.language == "extern" or "mm" not in ops or len(ops - {"mm", "constant"}) < 1:
        _fail(f"the kernel that computes the matmul and its epilogue: {kernel_name!r} is not right "
              f"(kernels: {', '.join(kernels)})", "a generated kernel whose ops include mm and what follows it")
    return _pass(f"{kernel_name} computes {', '.join(sorted(ops - {'constant'}))}: the epilogue runs in the "
                 "matmul's kernel")


def check_break_even_function(break_even) -> None:
    """``break_even(first_call_s, eager_s, compiled_s)`` gives the break-even number of calls on made-up
    timings (so no table can answer it): ``(first_call_s - compiled_s) / (eager_s - compiled_s)``, or
    ``math.inf`` when the compiled call is not faster; any correct rounding passes (within 1 call)."""
    import random

    if break_even is ...:
        _fail("no function yet", "define break_even(first_call_s, eager_s, compiled_s)")
    rng = random.Random()
    cases = [(rng.uniform(0.5, 5), rng.uniform(2e-3, 9e-3), rng.uniform(1e-4, 1e-3)) for _ in range(4)]
    cases.append((1.0, 1e-3, 2e-3))
    for first, eager, compiled in cases:
        expected = (first - compiled) / (eager - compiled) if eager > compiled else math.inf
        got = break_even(first, eager, compiled)
        if math.isinf(expected) != math.isinf(float(got)) or (
                not math.isinf(expected) and abs(float(got) - expected) > 1.0):
            _fail(f"break_even({first:.3g}, {eager:.3g}, {compiled:.3g}) = {got!r}: not right",
                  "how many calls until the time saved per call has repaid the first call's extra time?")
    return _pass(f"break_even is right on {len(cases)} made-up timings")


def check_compile_count_answer(answer, fn, calls, **compile_kwargs) -> None:
    """A predicted number of frame compiles for ``fn`` called on each of ``calls`` (argument tuples), compiled
    afresh with ``compile_kwargs``: counted by torch (``torch._dynamo.testing.CompileCounter``) at check time."""
    import torch
    from torch._dynamo.testing import CompileCounter

    _no_answer(answer, "the predicted number of compiles")
    torch._dynamo.reset()
    counter = CompileCounter()
    compiled = torch.compile(fn, backend=counter, **compile_kwargs)
    for args in calls:
        compiled(*args)
    torch._dynamo.reset()
    how = ", ".join(f"{k}={v!r}" for k, v in compile_kwargs.items()) or "the defaults"
    _check_count(answer, counter.frame_count, f"compiles with {how}",
                 "go call by call: which guard does each call fail (sizes, the int, a size of 1)?")


def ddp_subgraphs(job_dir) -> dict[int, int]:
    """Rank → the number of subgraphs DDPOptimizer split the model's forward graph into, in a run of lab 8's DDP
    job: torch's own records (``DDPOptimizer.compile_fn`` logs one ``optimize_ddp_split_child`` per subgraph;
    with one bucket it splits nothing and logs none)."""
    counts = {}
    for rank, records in job_records(job_dir).items():
        split = [r for r in records if r.kind == "optimize_ddp_split_graph"]
        if len(split) != 1:
            _fail(f"rank {rank}: {len(split)} graphs split by DDPOptimizer (expected one: the model's forward)",
                  "run the job with the default torch._dynamo.config.optimize_ddp (run_ddp_job does)")
        counts[rank] = sum(r.kind == "optimize_ddp_split_child" and r.compile_id == split[0].compile_id
                           for r in records)
    return counts


def check_ddp_subgraphs_answer(answer, job_dir) -> None:
    """``answer`` is the number of subgraphs DDPOptimizer split the model's forward into in the job run into
    ``job_dir`` (every rank the same), read from the job's TORCH_TRACE logs at check time."""
    cap_mb = {r["bucket_cap_mb"] for r in job_results(job_dir).values()}
    counts = ddp_subgraphs(job_dir)
    if len(set(counts.values())) != 1 or len(counts) < 2:
        _fail(f"the ranks split differently: {counts}", "run the job again")
    return _check_count(answer, next(iter(counts.values())), f"subgraphs with bucket_cap_mb={cap_mb.pop():g}",
                        "walk the forward graph from its end, adding each layer's parameter bytes to the current "
                        "bucket; a full bucket starts a new one (and the first bucket has its own, smaller cap)")
# --- lab 9: a real model debugged end to end ------------------------------------------------------------------

def _breaks_and_recompiles(fn, calls, **compile_kwargs) -> tuple[int, int]:
    """``fn`` compiled afresh (``backend="eager"`` unless given) and called on each of ``calls`` (argument tuples),
    its printing silenced: (graph breaks as torch counts them, ``torch._dynamo.utils.counters["graph_break"]``;
    recompiles: the compiles torch recorded (``torch._dynamo.utils.get_compilation_metrics``) whose compile id
    ``frame/n`` has ``n`` > 0 — every frame, resume functions included)."""
    import contextlib
    import io

    import torch
    from torch._dynamo.utils import clear_compilation_metrics, counters, get_compilation_metrics

    torch._dynamo.reset()
    counters.clear()
    clear_compilation_metrics()
    compiled = torch.compile(fn, **{"backend": "eager", **compile_kwargs})
    with contextlib.redirect_stdout(io.StringIO()):
        for args in calls:
            compiled(*args)
    breaks = sum(counters["graph_break"].values())
    ids = [re.match(r"(\d+)/(\d+)", m.compile_id or "") for m in get_compilation_metrics()]
    torch._dynamo.reset()
    return breaks, sum(1 for i in ids if i and int(i[2]) > 0)


def _is_count(value) -> bool:
    return as_count(value) is not None


def check_problem_counts_answer(breaks, recompiles, cap) -> None:
    """``breaks`` / ``recompiles``: the graph breaks and recompiles of the capture ``cap`` as torch recorded them
    while it compiled (``counters["graph_break"]`` over the capture, the compile ids ``frame/n`` with ``n`` > 0 of
    every frame) — what tcompile's Overview shows. The graded test recomputes them with torch
    (``_breaks_and_recompiles``) from the lab's own server."""
    _require_no_error(cap)
    _no_answer(breaks, "graph breaks")
    _no_answer(recompiles, "recompiles")
    expected_breaks, expected_recompiles = cap.summary.graph_breaks, len(cap.recompiles)
    if not _is_count(breaks) or breaks != expected_breaks:
        _fail(f"graph breaks: {breaks!r} is not right",
              "count every time Dynamo stopped tracing, not the lines: a frame compiled again breaks again "
              "(the Overview's 'graph breaks' card; hover it)")
    _pass(f"graph breaks: {breaks} is right")
    if not _is_count(recompiles) or recompiles != expected_recompiles:
        _fail(f"recompiles: {recompiles!r} is not right",
              "count the compiles whose id is frame/n with n > 0 — in every frame, the resume functions after a "
              "graph break too (the Recompiles tab)")
    return _pass(f"recompiles: {recompiles} is right")


def check_recompiles_answer(answer, fn, calls, **compile_kwargs) -> None:
    """A predicted number of recompiles of ``fn`` over ``calls`` (argument tuples, e.g. batches marked with
    ``torch._dynamo.mark_dynamic``), counted by torch when ``fn`` is compiled afresh now."""
    _no_answer(answer, "the predicted number of recompiles")
    _, expected = _breaks_and_recompiles(fn, calls, **compile_kwargs)
    if not _is_count(answer) or answer != expected:
        _fail(f"recompiles: {answer!r} is not right",
              "go call by call: which sizes does a dimension marked dynamic still specialize on?")
    return _pass(f"recompiles: {answer} is right")


BISECT_BACKENDS = ("eager", "aot_eager", "inductor")


def first_divergent_backend(fn, *args, seed: int = 0, backends=BISECT_BACKENDS):
    """The first of ``backends`` whose ``torch.compile(fn)`` output differs from ``fn`` run eagerly, each run from
    the same random seed under ``torch.no_grad()`` (None if none differs), and the largest difference per backend."""
    import torch

    def run(f):
        torch.manual_seed(seed)
        with torch.no_grad():
            return f(*args)

    reference = run(fn)
    differences = {}
    for backend in backends:
        torch._dynamo.reset()
        out = run(torch.compile(fn, backend=backend))
        differences[backend] = (out.double() - reference.double()).abs().max().item()
        if not torch.allclose(out, reference, rtol=1e-4, atol=1e-5):
            torch._dynamo.reset()
            return backend, differences
    torch._dynamo.reset()
    return None, differences


def check_first_divergent_backend_answer(answer, fn, *args) -> None:
    """``answer`` is the first backend of eager → aot_eager → inductor whose output of ``fn(*args)`` differs from
    eager's, from the same seed: computed now by running each (``first_divergent_backend``)."""
    what = "the first backend whose output differs from eager"
    _no_answer(answer, what)
    expected, differences = first_divergent_backend(fn, *args)
    if expected is None:
        _fail("no backend differs from eager here: is the model in training mode (dropout on)?",
              "model.train() before the bisection")
    if _normal(answer) != _normal(expected):
        _fail(f"{what}: {answer!r} is not right",
              "run each backend from the same torch.manual_seed and compare with eager (torch.allclose)")
    return _pass(f"{what}: {answer!r} (largest differences: "
                 + ", ".join(f"{b} {d:.3g}" for b, d in differences.items()) + ")")
