"""What ``compiler.watch()`` adds to a compiled training step on one GPU (issue 37's GPU bench row).

GPT-2 (4 layers from its config, no weights), ``torch.compile`` (Inductor; and ``mode="reduce-overhead"``, CUDA
graphs, where the watch also listens to torch's CUDA-graph loggers), AdamW, batch 8 × 128 tokens, on one CUDA
device. For each mode: compile and warm, then rounds of one block of steps with and one without a watch, the
order alternating, each block timed by the wall clock between two ``torch.cuda.synchronize()``; the median of the
rounds' ratios with a 95 % bootstrap interval (``bench.watch_overhead.paired_ratio``), the difference per step in
µs, and the process CPU time per step the same way. Also what runs on a cached step:
every Python call and C call made by Python on the loop's thread (``sys.setprofile``), with and without a watch
(``bench.watch_overhead.call_diff``): the calls outside the watch's own hook must be the same.

    python -m scripts.watch_gpu_ratio --out "$OUT"          # ≤ 6 min on an H100/H200; imports no IPython

writes OUT/watch_gpu_ratio.json and prints a short table. ``--cpu``: a check of the script without a GPU (a
2-layer narrow GPT-2, aot_eager, a few rounds).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

BATCH, SEQ = 8, 128
TIMING_BUDGET_S = 75  # the rounds of one mode, at most (about)
MODE_START_BY_S = 200  # a mode not started by then is skipped: the whole run stays under 6 minutes


def make_step(device, mode: str | None, cpu: bool):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=1000, use_cache=False) if cpu \
        else GPT2Config(n_layer=4, use_cache=False)
    model = GPT2LMHeadModel(config).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    compiled = torch.compile(model, backend="aot_eager" if cpu else "inductor", mode=mode)
    ids = torch.randint(0, config.vocab_size, (BATCH, SEQ), device=device)

    def step():
        if mode == "reduce-overhead":
            torch.compiler.cudagraph_mark_step_begin()
        loss = compiled(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def measure(step, sync, rounds: int, steps: int) -> dict:
    import compiler
    from bench.watch_overhead import paired_ratio

    def block() -> tuple[float, float]:
        sync()
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(steps):
            step()
        sync()
        return (time.perf_counter() - wall) / steps, (time.process_time() - cpu) / steps

    first = block()[0]
    rounds = min(rounds, max(10, int(TIMING_BUDGET_S / (2 * steps * first))))  # a slow step: fewer rounds, ≥ 10
    runs = {"watched": [], "plain": []}
    alerts = []  # a cached step compiles nothing: none expected (kept, not raised: the timing stands either way)
    for i in range(rounds):
        for variant in (("watched", "plain") if i % 2 == 0 else ("plain", "watched")):
            if variant == "watched":
                with compiler.watch(show=False) as w:
                    runs[variant].append(block())
                alerts += [f"round {i}: {a.as_text()}" for a in w.alerts] + \
                    ([f"round {i}: {w.steps} steps counted of {steps}"] if w.steps != steps else [])
            else:
                runs[variant].append(block())
    out = {"rounds": rounds, "steps": steps, "runs": runs, "alerts": alerts[:50]}
    for index, clock in ((0, "wall"), (1, "cpu")):
        r = paired_ratio([p[index] for p in runs["plain"]], [w[index] for w in runs["watched"]])
        plain = r["plain_s"]
        out[clock] = {**r, "extra_us": (r["ratio"] - 1) * plain * 1e6,
                      "extra_interval_us": [(x - 1) * plain * 1e6 for x in r["interval"]]}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "watch_gpu_ratio_out"))
    parser.add_argument("--rounds", type=int, default=40, help="rounds of one watched and one plain block (default 40)")
    parser.add_argument("--steps", type=int, default=20, help="steps a block (default 20)")
    parser.add_argument("--modes", default="default,reduce-overhead", help="torch.compile modes, comma-separated")
    parser.add_argument("--cpu", action="store_true", help="check the script without a GPU")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    import torch

    from bench.watch_overhead import call_diff

    if args.cpu:
        device, sync, name = torch.device("cpu"), (lambda: None), "cpu"
        modes, rounds = ["default"], min(args.rounds, 6)
    else:
        device, sync, name = torch.device("cuda"), torch.cuda.synchronize, torch.cuda.get_device_name()
        modes, rounds = [m.strip() for m in args.modes.split(",") if m.strip()], args.rounds
    result = {"device": name, "torch": torch.__version__, "python": sys.version.split()[0], "batch": BATCH,
              "seq": SEQ, "model": "GPT-2, 4 layers from its config" if not args.cpu else "GPT-2, 2 narrow layers",
              "modes": {}}
    started = time.time()
    for mode in modes:
        if time.time() - started > MODE_START_BY_S:
            print(f"skipped mode {mode}: {time.time() - started:.0f} s gone, past {MODE_START_BY_S} s", flush=True)
            result.setdefault("skipped", []).append(mode)
            continue
        t = time.time()
        torch._dynamo.reset()
        step = make_step(device, None if mode == "default" else mode, args.cpu)
        for _ in range(3):  # compile (forward; backward at its first call), CUDA-graph warm-up and recording
            step()
        sync()
        compiled_s = time.time() - t
        timing = measure(step, sync, rounds, args.steps)
        try:
            calls = call_diff(step, steps=4 if args.cpu else 8)
        except Exception as exc:  # noqa: BLE001 — the timing above stands; say what failed
            calls = {"error": f"{type(exc).__name__}: {exc}"[:500], "hook": {}, "other": {}, "plain_per_step": 0,
                     "watched_per_step": 0}
        result["modes"][mode] = {"compile_and_warm_s": compiled_s, "calls": calls, **timing}
        w = timing["wall"]
        print(f"[{time.time() - started:6.1f} s] {mode}: compiled in {compiled_s:.1f} s; step {w['plain_s'] * 1e3:.3f} ms "
              f"plain, {w['watched_s'] * 1e3:.3f} ms watched = {w['ratio']:.4f}x [{w['interval'][0]:.4f}, "
              f"{w['interval'][1]:.4f}]", flush=True)
        (out / "watch_gpu_ratio.json").write_text(json.dumps(result, indent=1, default=str))
    print(f"\n{name}, torch {torch.__version__}: GPT-2 training step (batch {BATCH} x {SEQ}), watched vs plain, "
          f"interleaved rounds of {args.steps}-step blocks (rounds: {[r['rounds'] for r in result['modes'].values()]}); "
          "plain, watched: the blocks' medians; ratio: the median of the rounds' watched ÷ plain")
    print(f"{'mode':16} {'clock':5} {'plain':>10} {'watched':>10} {'ratio':>7} {'95% interval':>17} {'extra/step':>11}")
    for mode, r in result["modes"].items():
        for clock in ("wall", "cpu"):
            c = r[clock]
            print(f"{mode:16} {clock:5} {c['plain_s'] * 1e3:8.3f}ms {c['watched_s'] * 1e3:8.3f}ms {c['ratio']:7.4f} "
                  f"[{c['interval'][0]:.4f}, {c['interval'][1]:.4f}] {c['extra_us']:9.1f}µs")
        if r["alerts"]:
            print(f"{mode:16} alerts in the watched blocks (none expected): {len(r['alerts'])}, first: {r['alerts'][0]}")
        calls = r["calls"]
        if calls.get("error"):
            print(f"{mode:16} calls not counted: {calls['error']}")
            continue
        print(f"{mode:16} calls a cached step (loop thread): {calls['plain_per_step']:.0f} plain, "
              f"{calls['watched_per_step']:.0f} watched; the watch's hook {sum(calls['hook'].values()):.1f}; "
              f"other differences {calls['other'] or 'none'}")
    print(f"wrote {out / 'watch_gpu_ratio.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
