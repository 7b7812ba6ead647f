"""A small distributed training job watched live: ``torchrun --nproc_per_node 2 tests/watch_job.py OUT``.

Gloo on CPU, DDP + torch.compile (backend aot_eager), each rank under ``compiler.watch(job_dir=OUT)``.
Every rank trains on batches of 32, except rank 1 at step 2, which gets 48 rows: rank 1 recompiles, the
others do not. ``--hold FILE``: before step 4 every rank waits (up to ``--hold-timeout`` s) until FILE
exists, so a test that follows OUT from another process proves it saw rank 1's recompile before the job
ended (it writes FILE when it has).
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import compiler  # noqa: E402

BATCH, ODD_BATCH, ODD_RANK, ODD_STEP, HOLD_STEP, STEPS = 32, 48, 1, 2, 4, 6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", help="the job directory: one watch file (and capture) per rank")
    parser.add_argument("--hold", default=None, help="wait for this file before step 4")
    parser.add_argument("--hold-timeout", type=float, default=120.0)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    ddp = nn.parallel.DistributedDataParallel(model)
    compiled = torch.compile(ddp, backend="aot_eager")
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    held = None
    with compiler.watch(job_dir=args.out):
        for step in range(STEPS):
            if step == HOLD_STEP and args.hold:
                start = time.monotonic()
                while not os.path.exists(args.hold) and time.monotonic() - start < args.hold_timeout:
                    time.sleep(0.1)
                held = os.path.exists(args.hold)
            x = torch.randn(ODD_BATCH if (rank, step) == (ODD_RANK, ODD_STEP) else BATCH, 16)
            loss = compiled(x).square().mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    print(f"rank {rank}: held={held}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
