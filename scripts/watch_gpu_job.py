"""A 2-GPU NCCL job of a real model, watched live (issues 37, 44): GPT-2 (4 layers, from its config, no weights),
DDP + torch.compile (Inductor), AdamW, sequences of 64 tokens. Two causes on two ranks at two steps, and one every
rank shares: at step 1 every rank changes the loss scale (a float the graph is specialised to: every rank
recompiles), at step 3 rank 0 gets 96 tokens (a recompile, fix ``mark_dynamic``) while rank 1 stalls 2 s (a
slow step), at step 5 rank 1 turns a debug flag on (a recompile and a ``print`` graph break, fix
``reorderable_logging_functions``). With one GPU both ranks share it over gloo. Each rank runs under
``compiler.watch(job_dir=OUT/job)``; ``python -m compiler watch`` follows the directory from another process
while the job runs, and its output (each line with the second it arrived) goes to OUT/watch.txt; at the end the
follower's divergences and the loaded job's are printed side by side (OUT/divergences.txt). Then each rank times
blocks of steps with and without a watch, interleaved, the ranks meeting at a barrier before each block (the
step time ratio with its interval; the single-GPU bench row is ``scripts/watch_gpu_ratio.py``'s).

    python -m scripts.watch_gpu_job --out "$OUT"            # launches torchrun + the follower, ≤ 6 min

writes OUT/job/ (per-rank watch files and captures), OUT/watch.txt (the follower's live output, timed),
OUT/divergences.txt (the follower's and the loaded job's divergences side by side),
OUT/summary.json (when rank 0's recompile alert arrived against the job's end, the alerts table, the
divergences, the saved job's divergence step and fix, the bench), and prints a short table. Imports no
IPython / ipywidgets.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

SEQ, ODD_SEQ, ODD_RANK, ODD_STEP, STEPS, BATCH = 64, 96, 0, 3, 8, 8
SCALE_STEP, STALL_RANK, STALL_STEP, STALL_S, FLAG_RANK, FLAG_STEP = 1, 1, 3, 2.0, 1, 5
DEBUG = False
BENCH_BLOCKS, BENCH_STEPS = 16, 20


def rank_main(out: Path, cpu: bool = False) -> None:
    import torch
    import torch.distributed as dist
    from transformers import GPT2Config, GPT2LMHeadModel

    import compiler
    from bench.watch_overhead import paired_ratio

    global DEBUG
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if not cpu and torch.cuda.device_count() < 2:  # one GPU: both ranks on it, over gloo (NCCL needs one GPU a rank)
        device, sync = torch.device("cuda", 0), torch.cuda.synchronize
        torch.cuda.set_device(0)
        dist.init_process_group("gloo")
        config = GPT2Config(n_layer=4, use_cache=False)
        local = 0
    elif cpu:  # a check of this script on a machine with no GPU: gloo, a tiny GPT-2, aot_eager
        device, sync = torch.device("cpu"), (lambda: None)
        dist.init_process_group("gloo")
        config = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=1000, use_cache=False)
    else:
        device, sync = torch.device("cuda", local), torch.cuda.synchronize
        torch.cuda.set_device(local)
        dist.init_process_group("nccl")
        config = GPT2Config(n_layer=4, use_cache=False)
    rank = dist.get_rank()

    class LanguageModel(torch.nn.Module):
        """GPT-2's loss, times a scale (a float the compiled graph is specialised to), printed under a debug flag."""

        def __init__(self, lm):
            super().__init__()
            self.lm, self.scale = lm, 1.0

        def forward(self, ids):
            loss = self.lm(input_ids=ids, labels=ids).loss * self.scale
            if DEBUG:
                print("debug: loss", loss.shape)
            return loss

    torch.manual_seed(0)
    model = LanguageModel(GPT2LMHeadModel(config)).to(device)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=None if cpu else [local])
    compiled = torch.compile(ddp, backend="aot_eager" if cpu else "inductor")
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-4)
    generator = torch.Generator(device=device).manual_seed(rank)

    def step(seq: int) -> None:
        ids = torch.randint(0, config.vocab_size, (BATCH, seq), device=device, generator=generator)
        loss = compiled(ids)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    started = time.time()
    with compiler.watch(job_dir=out / "job") as w:
        for i in range(STEPS):
            if i == SCALE_STEP:
                model.scale = 2.0
            if (rank, i) == (FLAG_RANK, FLAG_STEP):
                DEBUG = True
            if (rank, i) == (STALL_RANK, STALL_STEP):
                time.sleep(STALL_S)
            step(ODD_SEQ if (rank, i) == (ODD_RANK, ODD_STEP) else SEQ)
        sync()
    job_s = time.time() - started

    # the bench row: blocks of steps with and without a watch, interleaved (same shapes: nothing compiles). The
    # ranks wait for each other before each block: the steps' all-reduces tie them together, so without the
    # barrier a rank that started its block first would time its wait for the other rank (still starting or
    # stopping its watch, collecting garbage) as its own steps.
    def block() -> float:
        sync()
        dist.barrier()
        sync()
        t = time.perf_counter()
        for _ in range(BENCH_STEPS):
            step(SEQ)
        sync()
        return (time.perf_counter() - t) / BENCH_STEPS

    runs = {"watched": [], "plain": []}
    for b in range(BENCH_BLOCKS):
        for variant in (("watched", "plain") if b % 2 == 0 else ("plain", "watched")):
            if variant == "watched":
                with compiler.watch(show=False) as bench_watch:
                    runs[variant].append(block())
                assert bench_watch.steps == BENCH_STEPS
            else:
                runs[variant].append(block())
    r = paired_ratio(runs["plain"], runs["watched"])
    med = {"watched": r["watched_s"], "plain": r["plain_s"]}
    result = {"rank": rank, "steps": w.steps, "job_s": job_s, "alerts": [a.to_json() for a in w.alerts],
              "compiles": w.compiles, "bench": {"medians": med, "ratio": r["ratio"], "interval": r["interval"],
                                                "method": r["method"], "runs": runs},
              "device": "cpu" if cpu else torch.cuda.get_device_name(), "torch": torch.__version__}
    (out / f"rank_{rank}.json").write_text(json.dumps(result, indent=1, default=str))
    dist.barrier()
    dist.destroy_process_group()


def side_by_side(job_dir: Path) -> str:
    """The follower's divergences (a Follower reading the finished directory, as ``python -m compiler watch``
    does) and the loaded job's (``compiler.load_trace``), one after the other, and whether they are equal."""
    import warnings

    import compiler
    from compiler.readers.divergences import EVENT_KINDS
    from compiler.readers.follow import Follower

    follower = Follower(job_dir)
    follower.poll()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = [d for d in compiler.load_trace(job_dir).divergences if d.kind in EVENT_KINDS]
    same = [d.to_json() for d in follower.divergences] == [d.to_json() for d in loaded]
    return "\n".join(["== the follower's divergences", *(d.as_text() for d in follower.divergences),
                      "", "== the loaded job's divergences", *(d.as_text() for d in loaded), "",
                      f"equal (to_json, in order): {same}"])


def driver(out: Path, timeout: float, cpu: bool = False) -> int:
    out.mkdir(parents=True, exist_ok=True)
    job_dir = out / "job"
    job_dir.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    started = time.time()
    follower = subprocess.Popen([sys.executable, "-u", "-m", "compiler", "watch", str(job_dir), "--ranks", "2",
                                 "--timeout", str(timeout)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, env=env, cwd=REPO)
    job = subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                            str(Path(__file__).resolve()), "rank", "--out", str(out)] + (["--cpu"] if cpu else []),
                           stdout=open(out / "torchrun.log", "w"), stderr=subprocess.STDOUT, env=env, cwd=REPO)
    lines: list[tuple[float, str]] = []

    def read_follower() -> None:  # the follower's lines as they come, each with the second it arrived
        for line in follower.stdout:
            lines.append((round(time.time() - started, 2), line.rstrip("\n")))
            print(f"[{lines[-1][0]:7.2f} s] {lines[-1][1]}", flush=True)

    import threading

    reader = threading.Thread(target=read_follower, daemon=True)
    reader.start()
    job_end = None
    while time.time() - started < timeout + 60 and (job.poll() is None or follower.poll() is None):
        if job_end is None and job.poll() is not None:
            job_end = time.time() - started
        time.sleep(0.2)
    for process in (job, follower):
        if process.poll() is None:
            process.kill()
    job.wait(timeout=60)
    follower.wait(timeout=60)
    reader.join(timeout=10)
    if job_end is None:
        job_end = time.time() - started
    (out / "watch.txt").write_text("".join(f"[{t:7.2f} s] {text}\n" for t, text in lines))
    seen = next((t for t, text in lines if text.startswith(f"[rank {ODD_RANK} step {ODD_STEP}] recompile")), None)
    stopped = next((t for t, text in lines if text.startswith("rank ") and " stopped after " in text), None)
    divergence_seen = next((t for t, text in lines if text.startswith(f"DIVERGENCE [step {ODD_STEP}] recompiles")),
                           None)
    flag_seen = next((t for t, text in lines if text.startswith(f"DIVERGENCE [step {FLAG_STEP}]")), None)
    try:
        both = side_by_side(job_dir)
    except Exception as exc:  # noqa: BLE001 — the summary says what failed
        both = f"side by side failed: {type(exc).__name__}: {exc}"
    (out / "divergences.txt").write_text(both + "\n")
    ranks = {}
    for rank in (0, 1):
        path = out / f"rank_{rank}.json"
        if path.exists():
            ranks[rank] = json.loads(path.read_text())
    import compiler

    saved = []
    try:
        loaded = compiler.load_trace(job_dir)
        saved = [d.to_json() for d in loaded.divergences]
    except Exception as exc:  # noqa: BLE001 — the summary says what failed
        saved = [{"error": f"{type(exc).__name__}: {exc}"}]
    summary = {"job_returncode": job.returncode, "follower_returncode": follower.returncode, "job_end_s": job_end,
               "rank0_recompile_alert_s": seen, "recompile_divergence_s": divergence_seen,
               "flag_divergence_s": flag_seen,
               "seen_before_end_s": (job_end - seen) if seen is not None else None, "first_rank_stopped_s": stopped,
               "ranks": ranks, "saved_job_divergences": saved}
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    print("\n=== summary ===")
    print(f"job exit {job.returncode} at {job_end:.1f} s; rank-{ODD_RANK} recompile alert printed by the follower at "
          f"{seen if seen is not None else 'never'} s; step-{ODD_STEP} divergence at {divergence_seen} s, step-{FLAG_STEP} "
          f"divergence at {flag_seen} s; the first rank's watch stopped at {stopped} s")
    for rank, r in sorted(ranks.items()):
        b = r["bench"]
        print(f"rank {rank} ({r['device']}, torch {r['torch']}): {r['steps']} steps, {len(r['alerts'])} alerts, "
              f"compiles {[(c['step'], c['compile_id'], c['what'], round(c['seconds'] or 0, 1)) for c in r['compiles']]}")
        print(f"  bench: step {b['medians']['watched'] * 1e3:.2f} ms watched vs {b['medians']['plain'] * 1e3:.2f} ms "
              f"plain (the blocks' medians); watched ÷ plain, the median of the rounds: {b['ratio']:.4f}x "
              f"[{b['interval'][0]:.4f}, {b['interval'][1]:.4f}] ({BENCH_BLOCKS} interleaved "
              f"rounds of {BENCH_STEPS}-step blocks, the ranks meeting at a barrier before each)")
    for d in saved:
        print(f"saved job divergence: {d.get('kind')} step={d.get('step')} guard={d.get('guard')} "
              f"fix={(d.get('fix') or {}).get('title')}")
    print(both)
    return 0 if job.returncode == 0 else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("role", nargs="?", default="driver", choices=("driver", "rank"))
    parser.add_argument("--out", default=os.environ.get("OUT", "watch_gpu_out"))
    parser.add_argument("--timeout", type=float, default=330.0, help="seconds the follower follows (default 330)")
    parser.add_argument("--cpu", action="store_true", help="check the script without a GPU (gloo, tiny GPT-2, aot_eager)")
    args = parser.parse_args()
    if args.role == "rank":
        rank_main(Path(args.out), cpu=args.cpu)
        return 0
    return driver(Path(args.out), args.timeout, cpu=args.cpu)


if __name__ == "__main__":
    sys.exit(main())
