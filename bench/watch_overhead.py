"""Figure 6 — what ``compiler.watch()`` adds to a training loop (``compiler.capturing.watch``).

Five rows, CPU, one warm process:

- memory: what 100,000 steps that compile nothing add (``tracemalloc``, the watch's step times, bounded by
  ``StepTimes``), against the 20 MB budget;
- calls: what runs on a step that compiles nothing — every Python call and C call made by Python code
  (``sys.setprofile``) in steps of a compiled MLP (Inductor), with and without a watch, counted by function:
  the calls outside the watch's own step hook must be the same (no logging record, structured-trace payload,
  metrics or guard hook runs on such a step), and the hook's count is the whole difference. Deterministic;
- per step: the cost of a step that compiles nothing — the optimizer step hook: a clock read, an append and
  two comparisons — as the difference in this thread's CPU time of ``opt.step()`` of a one-parameter SGD with
  and without a watch (interleaved blocks), against the 20 µs budget;
- step time: the compiled MLP's training loop (Inductor), forward + backward + SGD step, in rounds of one
  block with and one without a watch (order alternating), the process CPU time per step; the median of the
  rounds' ratios with a 95 % bootstrap interval (``paired_ratio``: a drift of the machine's speed cancels within
  a round), target ≤ 1.01. On the shared 2-core machine one block's noise is larger than the effect: the interval says how
  far the figure can be trusted. A fifth row estimates the same ratio from the two before it: the plain step
  plus the hook's measured cost (the calls row shows nothing else runs). The GPU row is
  ``scripts/watch_gpu_ratio.py``'s.
"""
from __future__ import annotations

import collections
import statistics
import sys
import time
import tracemalloc

from .table import Row, megabytes, seconds

MEMORY_STEPS, MEMORY_BUDGET = 100_000, 20e6
STEP_BUDGET_S = 20e-6
STEP_TARGET = 1.01
BACKEND = "inductor"  # the compiled loop users run; a warm FX graph cache makes its compile a few seconds
HOOK_FILE = "compiler/capturing/watch.py"


def paired_ratio(plain: list[float], watched: list[float], resamples: int = 2000, confidence: float = 0.95) -> dict:
    """watched ÷ plain from interleaved rounds: each round's ratio (its two blocks ran back to back, so a drift of
    the machine's speed over the run cancels), their median, and a percentile-bootstrap interval of that median
    (the rounds resampled with replacement, fixed seed)."""
    import random

    ratios = [w / p for p, w in zip(plain, watched)]
    rng = random.Random(0)
    medians = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(resamples))
    tail = (1 - confidence) / 2
    return {"ratio": statistics.median(ratios), "interval": [medians[int(tail * resamples)],
                                                             medians[min(resamples - 1, int((1 - tail) * resamples))]],
            "plain_s": statistics.median(plain), "watched_s": statistics.median(watched), "rounds": len(ratios),
            "method": f"median of the {len(ratios)} rounds' watched ÷ plain; {confidence:.0%} percentile-bootstrap "
                      f"interval, {resamples} resamples of the rounds"}


def memory(steps: int = MEMORY_STEPS) -> int:
    import compiler

    w = compiler.watch(show=False)
    try:
        tracemalloc.start()
        start = tracemalloc.get_traced_memory()[0]
        for _ in range(steps):
            w.step()
        grown = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
        w.stop()
    return grown


def hook_cost(reps: int, steps: int) -> dict:
    import torch

    import compiler

    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.0)
    runs = {"watched": [], "plain": []}
    for i in range(reps):
        for variant in (("watched", "plain") if i % 2 == 0 else ("plain", "watched")):
            w = compiler.watch(show=False) if variant == "watched" else None
            start = time.thread_time()  # this thread's CPU time: what the hook costs, not what other processes take
            for _ in range(steps):
                opt.step()
            runs[variant].append((time.thread_time() - start) / steps)
            if w is not None:
                assert w.steps == steps
                w.stop()
    r = paired_ratio(runs["plain"], runs["watched"])
    plain = r["plain_s"]  # the difference and its interval: the ratio's, times the plain median
    return {"medians": {"watched": r["watched_s"], "plain": plain}, "extra_s": (r["ratio"] - 1) * plain,
            "interval_s": [(x - 1) * plain for x in r["interval"]], "runs": runs, "reps": reps, "steps": steps}


def mlp_loop(backend: str = BACKEND):
    """A compiled MLP's training step (Linear 256→512→256, batch 64, SGD), compiled and warm; one thread (no
    OpenMP workers spinning for a core another process holds)."""
    import torch

    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 256))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    compiled = torch.compile(model, backend=backend)
    x = torch.randn(64, 256)

    def step():
        compiled(x).square().mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=False)

    for _ in range(3):  # compile (forward, then backward at its first call), warm
        step()
    return step


def _where(code) -> str:
    name = code.co_filename.replace("\\", "/")
    for marker in ("site-packages/", "/compiler/", "/bench/"):
        if marker in name:
            name = name[name.index(marker) + (len(marker) if marker == "site-packages/" else 1):]
            break
    return f"{name}:{code.co_name}"


def _in_hook(frame, depth: int = 4) -> bool:
    """Whether ``frame`` or one of the ``depth`` frames calling it runs the watch's code (its step hook calls
    nothing deeper)."""
    while frame is not None and depth >= 0:
        if frame.f_code.co_filename.replace("\\", "/").endswith(HOOK_FILE):
            return True
        frame, depth = frame.f_back, depth - 1
    return False


def count_calls(step, steps: int) -> collections.Counter:
    """Each function called in ``steps`` calls of ``step`` (this thread, the backward included), by ``file:function`` (C functions by
    name, with the file of the Python function calling them), those called inside the watch's code marked
    ``[watch]``: how often."""
    import torch

    counts = collections.Counter()

    def profile(frame, event, arg):
        if event in ("call", "c_call"):
            key = _where(frame.f_code) if event == "call" else \
                f"{_where(frame.f_code)} -> {getattr(arg, '__qualname__', None) or arg!r}"
            counts[("[watch] " if _in_hook(frame) else "") + key] += 1

    # the backward on this thread too (on a GPU autograd runs it on a device thread, which setprofile misses)
    with torch.autograd.set_multithreading_enabled(False):
        sys.setprofile(profile)
        try:
            for _ in range(steps):
                step()
        finally:
            sys.setprofile(None)
    return counts


def call_diff(step, steps: int = 32) -> dict:
    """What a watch adds to ``steps`` cached steps, by function (``count_calls`` with minus without, each
    measured twice, interleaved: a count that differs between two plain runs is not the watch's)."""
    import compiler

    runs = {"plain": [], "watched": []}
    for variant in ("plain", "watched", "watched", "plain"):
        # a slow-step alert is not what is counted: profiled steps are slower than the first, unprofiled one
        w = compiler.watch(show=False, slow_ratio=1e9) if variant == "watched" else None
        step()  # the step in which the watch started
        runs[variant].append(count_calls(step, steps))
        if w is not None:
            w.stop()
    plain, watched = runs["plain"], runs["watched"]
    unstable = {k for k in set(plain[0]) | set(plain[1]) if plain[0][k] != plain[1][k]}
    unstable |= {k for k in set(watched[0]) | set(watched[1]) if watched[0][k] != watched[1][k]}
    added = {k: (watched[0][k] - plain[0][k]) / steps for k in set(plain[0]) | set(watched[0])
             if k not in unstable and watched[0][k] != plain[0][k]}
    hook = {k: v for k, v in added.items() if k.startswith("[watch] ")}
    other = {k: v for k, v in added.items() if k not in hook}
    return {"steps": steps, "plain_per_step": sum(plain[0].values()) / steps,
            "watched_per_step": sum(watched[0].values()) / steps, "hook": hook, "other": other,
            "unstable": sorted(unstable)}


def loop_ratio(step, rounds: int, steps: int) -> dict:
    import compiler

    def block():
        start = time.process_time()  # CPU time of the process (all its threads): less of the other processes' noise
        for _ in range(steps):
            step()
        return (time.process_time() - start) / steps

    block()
    runs = {"watched": [], "plain": []}
    for i in range(rounds):
        for variant in (("watched", "plain") if i % 2 == 0 else ("plain", "watched")):
            if variant == "watched":
                with compiler.watch(show=False) as w:
                    runs[variant].append(block())
                assert w.steps == steps, w.as_text()
            else:
                runs[variant].append(block())
    r = paired_ratio(runs["plain"], runs["watched"])
    return {"medians": {"watched": r["watched_s"], "plain": r["plain_s"]}, "ratio": r["ratio"],
            "interval": r["interval"], "method": r["method"], "runs": runs, "rounds": rounds, "steps": steps,
            "spread": {k: [min(v), max(v)] for k, v in runs.items()}}


def run(quick: bool, log=print) -> tuple[list[Row], dict]:
    log("[6] compiler.watch overhead: memory of 100,000 steps, calls on a cached step, per-step hook cost, "
        "a compiled MLP's loop")
    grown = memory()
    log(f"  memory: {megabytes(grown)} for {MEMORY_STEPS:,} steps")
    hooks = hook_cost(reps=10 if quick else 20, steps=10_000)
    h = hooks["medians"]
    log(f"  per step: +{seconds(hooks['extra_s'])} CPU ({seconds(h['watched'])} vs {seconds(h['plain'])})")
    step = mlp_loop()
    calls = call_diff(step)
    log(f"  calls per cached step: {calls['plain_per_step']:.0f} plain, {calls['watched_per_step']:.0f} watched; "
        f"the hook's {sum(calls['hook'].values()):.0f}: {sorted(calls['hook'])}; others {calls['other']}")
    loop = loop_ratio(step, rounds=40 if quick else 120, steps=10)
    m, (low, high) = loop["medians"], loop["interval"]
    log(f"  MLP step {seconds(m['watched'])} vs {seconds(m['plain'])} = {loop['ratio']:.4f}× [{low:.4f}, {high:.4f}]")
    other = sum(abs(v) for v in calls["other"].values())
    rows = [
        Row("watch: memory added by 100,000 steps that compile nothing", megabytes(grown), megabytes(MEMORY_BUDGET),
            grown / MEMORY_BUDGET, "≤ 1 (20 MB)", high=1.0, note="tracemalloc, w.step() 100,000 times"),
        Row("watch: calls on a cached step outside the watch's hook (compiled MLP, Inductor)",
            f"{calls['watched_per_step'] - sum(calls['hook'].values()):.0f} calls", f"{calls['plain_per_step']:.0f} calls",
            1 + other / calls["plain_per_step"], "= 1 (the same calls)", low=1.0, high=1.0,
            note=f"sys.setprofile, Python calls and the C calls they make, {calls['steps']} steps with and without a "
                 f"watch; the hook adds {sum(calls['hook'].values()):.0f} a step "
                 f"({', '.join(sorted({k.rsplit(':', 1)[-1] for k in calls['hook']}))}); other differences: "
                 f"{calls['other'] or 'none'}"),
        Row("watch: cost of a step that compiles nothing (optimizer step hook)", seconds(hooks["extra_s"]),
            seconds(STEP_BUDGET_S), hooks["extra_s"] / STEP_BUDGET_S, "≤ 1 (20 µs)", high=1.0,
            note=f"this thread's CPU time of opt.step() of a 1-parameter SGD with and without a watch: {seconds(h['watched'])} vs "
                 f"{seconds(h['plain'])} per step (95 % interval of the difference {seconds(hooks['interval_s'][0])} … "
                 f"{seconds(hooks['interval_s'][1])}); {hooks['reps']} interleaved blocks of {hooks['steps']:,} steps"),
        Row(f"watch: compiled MLP training step (CPU, {BACKEND}), watched vs not", seconds(m["watched"]),
            seconds(m["plain"]), loop["ratio"], f"≤ {STEP_TARGET}", high=STEP_TARGET,
            note=f"95 % interval {low:.4f} … {high:.4f}; Linear 256→512→256, batch 64, forward + backward + SGD, one "
                 f"thread, process CPU time per step; {loop['rounds']} rounds of {loop['steps']}-step blocks with and "
                 f"without a watch, order alternating; {loop['method']}"),
        Row(f"watch: compiled MLP training step (CPU, {BACKEND}), 1 + the hook's cost ÷ the plain step",
            f"+{seconds(hooks['extra_s'])}", seconds(m["plain"]), 1 + hooks["extra_s"] / m["plain"], f"≤ {STEP_TARGET}",
            high=STEP_TARGET,
            note=f"an estimate from the rows above: the calls row shows the hook is all a cached step adds, so the "
                 f"watched step is the plain one plus the hook's measured cost (95 % interval "
                 f"{1 + hooks['interval_s'][0] / m['plain']:.4f} … {1 + hooks['interval_s'][1] / m['plain']:.4f}); "
                 "it needs no quiet machine, the direct ratio above does"),
    ]
    return rows, {"memory_bytes": grown, "hooks": hooks, "calls": calls, "loop": loop}
