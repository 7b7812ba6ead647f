"""Figure 3 — timing accuracy: tcompile's eager and compiled medians (``compiler.explore(...).runtime``,
i.e. ``compiler.capturing.runtime.interleaved``, the one timer) vs an independent reference on the same workload.

Reference on CPU: ``torch.utils.benchmark.Timer(...).blocked_autorange()`` median, with
``num_threads`` set to this process's thread count (the Timer's default is 1 thread, which would
time a different thing). On CUDA: ``triton.testing.do_bench`` median (it syncs and flushes L2).

Round 1 uses the numbers ``explore()`` reported; later rounds call ``interleaved`` again. tcompile
and the reference alternate; the ratio is the median of the per-round ratios. One intra-op
thread on both sides (see ``workloads.threads``).
"""
from __future__ import annotations

import statistics

from .table import Row, seconds
from .workloads import ALL, fresh_entry, make, threads

LOW, HIGH = 0.95, 1.05


def reference_seconds(fn, args, device: str, min_run_time: float) -> float:
    import torch

    if device == "cuda":
        from triton.testing import do_bench

        return do_bench(lambda: fn(*args), return_mode="median") / 1e3  # ms → s
    from torch.utils.benchmark import Timer

    timer = Timer(stmt="fn(*args)", globals={"fn": fn, "args": args}, num_threads=torch.get_num_threads())
    return timer.blocked_autorange(min_run_time=min_run_time).median


def measure(workload: str, rounds: int, min_run_time: float) -> dict:
    import torch

    import compiler
    from compiler.capturing.runtime import interleaved

    fn, args = make(workload)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        fn = fn.to(device) if isinstance(fn, torch.nn.Module) else fn
        args = tuple(a.to(device) for a in args)
    with torch.no_grad(), threads(1):
        cap = compiler.explore(fresh_entry(fn), *args)
        runtime = cap.runtime
        callables = {"eager": fn, "compiled": cap.live.compiled_fn}
        ours = {k: [getattr(runtime, k).median_s] for k in callables}
        ref = {k: [] for k in callables}
        for i in range(rounds):
            for kind, f in callables.items():
                ref[kind].append(reference_seconds(f, args, device, min_run_time))
                if i + 1 < rounds:
                    ours[kind].append(interleaved([f], args, {}, device=device)[0]["median_s"])
    return {"device": device, "method": runtime.method,
            **{kind: {"tcompile_s": statistics.median(ours[kind]), "reference_s": statistics.median(ref[kind]),
                      "tcompile_rounds_s": ours[kind], "reference_rounds_s": ref[kind]} for kind in callables}}


def run(quick: bool, log=print) -> tuple[list[Row], dict]:
    workloads = ("mlp",) if quick else ALL
    rounds, min_run_time = (11, 0.2) if quick else (21, 0.5)
    log(f"[3] timing accuracy: {', '.join(workloads)}, {rounds} alternating rounds")
    out, details = [], {}
    for workload in workloads:
        r = measure(workload, rounds, min_run_time)
        details[workload] = r
        anchor = "do_bench" if r["device"] == "cuda" else "Timer.blocked_autorange"
        for kind in ("eager", "compiled"):
            ours, ref = r[kind]["tcompile_s"], r[kind]["reference_s"]
            each = [a / b for a, b in zip(r[kind]["tcompile_rounds_s"], r[kind]["reference_rounds_s"])]
            ratio = statistics.median(each)
            log(f"  {workload:<17} {kind:<8} tcompile {seconds(ours)}  {anchor} {seconds(ref)}  ratio {ratio:.3f} "
                f"(rounds {', '.join(f'{x:.3f}' for x in each)})")
            out.append(Row(f"timing accuracy: {workload} {kind} median vs {anchor}", seconds(ours), seconds(ref),
                           ratio, f"{LOW:.2f}–{HIGH:.2f}", low=LOW, high=HIGH, detail={**r[kind], "round_ratios": each},
                           note=f"median of {rounds} per-round ratios; single rounds ranged {min(each):.3f}–"
                                f"{max(each):.3f}, {sum(LOW <= x <= HIGH for x in each)}/{rounds} within the target "
                                f"(explore()'s own report: {each[0]:.3f})"))
    return out, details
