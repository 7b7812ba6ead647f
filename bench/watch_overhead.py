"""Figure 6 — what ``compiler.watch()`` adds to a training loop (``compiler.capturing.watch``).

Three rows, CPU, one warm process:

- memory: what 100,000 steps that compile nothing add (``tracemalloc``, the watch's step times, bounded by
  ``StepTimes``), against the 20 MB budget;
- per step: the cost of a step that compiles nothing — the optimizer step hook, a clock read, an append and
  two comparisons — as the difference in this thread's CPU time of ``opt.step()`` of a one-parameter SGD with
  and without a watch (blocks of 10,000 steps, interleaved, medians), against the 20 µs budget;
- step time: a compiled MLP's training loop (aot_eager: a Dynamo graph with AOTAutograd's forward and
  backward, no C++ compile), forward + backward + SGD step, blocks of steps with and without a watch,
  interleaved; the ratio of the medians of the per-step process CPU time, target ≤ 1.01. On a shared 2-core
  machine the noise of one block is larger than the effect: read it with the per-step row. The GPU row
  (GPT-2 under DDP + Inductor) is ``scripts/watch_gpu_job.py``'s.
"""
from __future__ import annotations

import statistics
import time
import tracemalloc

from .table import Row, megabytes, seconds

MEMORY_STEPS, MEMORY_BUDGET = 100_000, 20e6
STEP_BUDGET_S = 20e-6
STEP_TARGET = 1.01
BACKEND = "aot_eager"  # a compiled model (Dynamo graph, AOTAutograd forward and backward) without minutes of C++


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
    med = {k: statistics.median(v) for k, v in runs.items()}
    return {"medians": med, "extra_s": med["watched"] - med["plain"], "runs": runs, "reps": reps, "steps": steps}


def loop_ratio(reps: int, steps: int) -> dict:
    import torch

    import compiler

    torch.manual_seed(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # no OpenMP workers spinning for a core the other processes hold: CPU time is the work
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 256))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    compiled = torch.compile(model, backend=BACKEND)
    x = torch.randn(64, 256)

    def block():
        start = time.process_time()  # CPU time of the process (all its threads): less of the other processes' noise
        for _ in range(steps):
            compiled(x).square().mean().backward()
            opt.step()
            opt.zero_grad(set_to_none=False)
        return (time.process_time() - start) / steps

    block()  # compile, warm
    runs = {"watched": [], "plain": []}
    for i in range(reps):
        for variant in (("watched", "plain") if i % 2 == 0 else ("plain", "watched")):
            if variant == "watched":
                with compiler.watch(show=False) as w:
                    runs[variant].append(block())
                assert w.steps == steps, w.as_text()
            else:
                runs[variant].append(block())
    torch.set_num_threads(threads)
    med = {k: statistics.median(v) for k, v in runs.items()}
    return {"medians": med, "ratio": med["watched"] / med["plain"], "runs": runs, "reps": reps, "steps": steps}


def run(quick: bool, log=print) -> tuple[list[Row], dict]:
    log("[6] compiler.watch overhead: memory of 100,000 steps, per-step hook cost, a compiled MLP's loop")
    grown = memory()
    log(f"  memory: {megabytes(grown)} for {MEMORY_STEPS:,} steps")
    hooks = hook_cost(reps=6 if quick else 12, steps=10_000)
    log(f"  per step: +{seconds(hooks['extra_s'])} CPU")
    loop = loop_ratio(reps=6 if quick else 14, steps=100)
    m, h = loop["medians"], hooks["medians"]
    log(f"  memory {megabytes(grown)}; per step +{seconds(hooks['extra_s'])} ({seconds(h['watched'])} vs "
        f"{seconds(h['plain'])}); MLP step {seconds(m['watched'])} vs {seconds(m['plain'])} = {loop['ratio']:.4f}×")
    rows = [
        Row("watch: memory added by 100,000 steps that compile nothing", megabytes(grown), megabytes(MEMORY_BUDGET),
            grown / MEMORY_BUDGET, "≤ 1 (20 MB)", high=1.0, note="tracemalloc, w.step() 100,000 times"),
        Row("watch: cost of a step that compiles nothing (optimizer step hook)", seconds(hooks["extra_s"]),
            seconds(STEP_BUDGET_S), hooks["extra_s"] / STEP_BUDGET_S, "≤ 1 (20 µs)", high=1.0,
            note=f"this thread's CPU time of opt.step() of a 1-parameter SGD with and without a watch: {seconds(h['watched'])} vs "
                 f"{seconds(h['plain'])} per step; medians of {hooks['reps']} interleaved blocks of "
                 f"{hooks['steps']:,} steps"),
        Row(f"watch: compiled MLP training step (CPU, {BACKEND}), watched vs not", seconds(m["watched"]),
            seconds(m["plain"]), loop["ratio"], f"≤ {STEP_TARGET}", high=STEP_TARGET,
            note=f"Linear 256→512→256, batch 64, forward + backward + SGD, one thread, process CPU time per step; medians of "
                 f"{loop['reps']} interleaved blocks of {loop['steps']} steps; on the shared machine one block's noise "
                 "is a few %"),
    ]
    return rows, {"memory_bytes": grown, "hooks": hooks, "loop": loop}
