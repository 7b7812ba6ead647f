"""Figure 2 — steady-state overhead: calls of a function compiled under ``compiler.capture()`` vs
the same function compiled plainly, after warm-up.

Both are compiled in this process from two entry points with their own code objects (Dynamo
caches per code object). The captured one is compiled first; the plain one then gets the same
Inductor artifact (FX-graph cache), so the kernels are identical and any difference is what the
capture left behind on the call path. A third leg, a second plain compile, is the control: plain
vs plain is the noise floor. Each round samples the three legs back to back in a rotating order;
the figure is the median of the per-round ratios, which cancels drift from other work on the
machine. One intra-op thread (see ``workloads.threads``).
"""
from __future__ import annotations

import statistics
import time

from .table import Row, seconds
from .workloads import ALL, fresh_entry, make, threads

TARGET = 1.01


def _sample(fn, args, number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn(*args)
    return (time.perf_counter() - start) / number


def _calls_per_sample(fn, args, sample_s: float) -> int:
    number = 1
    while _sample(fn, args, number) * number < sample_s and number < 1 << 16:
        number *= 2
    return number


ORDERS = ((0, 1, 2), (2, 1, 0), (1, 0, 2), (1, 2, 0), (0, 2, 1), (2, 0, 1))  # every position for every leg


def interleaved(fns: dict, args, rounds: int, sample_s: float) -> dict:
    """Per-call seconds of each function, sampled in rotating order; each round's samples are
    adjacent in time, so the per-round ratios cancel drift."""
    names = list(fns)
    for _ in range(20):
        for f in fns.values():
            f(*args)
    number = _calls_per_sample(fns[names[1]], args, sample_s)
    samples = {name: [] for name in names}
    for i in range(rounds):
        for k in ORDERS[i % len(ORDERS)]:
            samples[names[k]].append(_sample(fns[names[k]], args, number))
    return {"samples_s": samples, "calls_per_sample": number, "rounds": rounds}


def paired(samples: dict, a: str, b: str) -> dict:
    ratios = [x / y for x, y in zip(samples[a], samples[b])]
    q1, _, q3 = statistics.quantiles(ratios, n=4)
    return {"ratio": statistics.median(ratios), "iqr": [q1, q3],
            "a_median_s": statistics.median(samples[a]), "b_median_s": statistics.median(samples[b])}


def measure(workload: str, rounds: int, sample_s: float) -> dict:
    """Three legs: compiled under capture, compiled plainly, and a second plain compile (the
    control: plain vs plain shows the noise floor of this measurement on this machine)."""
    import torch

    import compiler

    fn, args = make(workload)
    with torch.no_grad(), threads(1):
        with compiler.capture() as cap:
            captured = torch.compile(fresh_entry(fn))
            captured(*args)
        fns = {"captured": captured, "plain": torch.compile(fresh_entry(fn)),
               "plain_again": torch.compile(fresh_entry(fn))}
        for f in fns.values():
            f(*args)
        timed = interleaved(fns, args, rounds, sample_s)
    return {"captured": paired(timed["samples_s"], "captured", "plain"),
            "control": paired(timed["samples_s"], "plain_again", "plain"),
            "calls_per_sample": timed["calls_per_sample"], "rounds": rounds, "captured_compiles": len(cap.compiles)}


def run(quick: bool, log=print) -> tuple[list[Row], dict]:
    workloads = ("pointwise", "mlp") if quick else ALL
    rounds, sample_s = (200, 0.005) if quick else (600, 0.005)
    log(f"[2] steady state: {', '.join(workloads)}, {rounds} rounds of 3 interleaved {sample_s * 1e3:g} ms samples")
    out, details = [], {}
    for workload in workloads:
        r = measure(workload, rounds, sample_s)
        details[workload] = r
        c, control = r["captured"], r["control"]
        log(f"  {workload:<17} captured {seconds(c['a_median_s'])}  plain {seconds(c['b_median_s'])}  "
            f"paired ratio {c['ratio']:.4f} (plain vs plain: {control['ratio']:.4f})")
        out.append(Row(f"steady-state call: {workload}, compiled under capture vs plain",
                       seconds(c["a_median_s"]), seconds(c["b_median_s"]), c["ratio"], f"≤ {TARGET:.2f}",
                       high=TARGET, detail=r,
                       note=f"median of {rounds} paired ratios (IQR {c['iqr'][0]:.3f}–{c['iqr'][1]:.3f}); "
                            f"control plain vs plain {control['ratio']:.4f} (IQR {control['iqr'][0]:.3f}–"
                            f"{control['iqr'][1]:.3f}); {r['calls_per_sample']} calls/sample"))
    return out, details
