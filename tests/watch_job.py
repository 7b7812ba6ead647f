"""A small distributed training job watched live: ``torchrun --nproc_per_node 2 tests/watch_job.py OUT``.

Gloo on CPU, DDP + torch.compile (backend aot_eager), each rank under ``compiler.watch(job_dir=OUT)``, batches
of 32 rows. Two causes on two ranks at two steps, and one every rank shares:

- step 1: every rank sets the model's ``scale`` to 2.0 — every rank recompiles (the guard ``scale == 1.0``
  fails on all of them: never the guard that differs);
- step 3: rank 0 gets 48 rows — rank 0 recompiles (the batch-size guard; fix ``mark_dynamic``); rank 1 stalls
  for ``STALL_S`` (a slow step, no compile in it);
- step 5: rank 1 turns its ``DEBUG`` flag on — rank 1 recompiles (the flag's guard) and breaks the graph at a new
  place (a ``print``; fix ``reorderable_logging_functions``).

``--hold FILE``: step 6 takes ``FLUSH_S`` more (its end writes the steps of the last second to the watch files,
so a follower sees every rank past step 5), and before step 7 every rank waits (up to ``--hold-timeout`` s)
until FILE exists — a test that follows OUT from another process writes it once it has named the divergences,
which proves it named them before the job ended.
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

BATCH, ODD_BATCH, STEPS = 32, 48, 8
SCALE_STEP = 1  # every rank: scale 1.0 → 2.0
BATCH_RANK, BATCH_STEP = 0, 3  # this rank gets ODD_BATCH rows at this step
STALL_RANK, STALL_STEP, STALL_S = 1, 3, 1.0
FLAG_RANK, FLAG_STEP = 1, 5  # this rank turns DEBUG on from this step
HOLD_STEP, FLUSH_S = 7, 1.2
DEBUG = False


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(16, 32), nn.Linear(32, 4)
        self.scale = 1.0

    def forward(self, x):
        h = torch.relu(self.a(x)) * self.scale
        if DEBUG:
            print("debug: hidden", tuple(h.shape))
        return self.b(h)


def main() -> None:
    global DEBUG
    parser = argparse.ArgumentParser()
    parser.add_argument("out", help="the job directory: one watch file (and capture) per rank")
    parser.add_argument("--hold", default=None, help="wait for this file before step 7")
    parser.add_argument("--hold-timeout", type=float, default=120.0)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = Model()
    ddp = nn.parallel.DistributedDataParallel(model)
    compiled = torch.compile(ddp, backend="aot_eager")
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    held = None
    with compiler.watch(job_dir=args.out):
        for step in range(STEPS):
            if step == SCALE_STEP:
                model.scale = 2.0
            if (rank, step) == (FLAG_RANK, FLAG_STEP):
                DEBUG = True
            if (rank, step) == (STALL_RANK, STALL_STEP):
                time.sleep(STALL_S)
            if step == HOLD_STEP - 1 and args.hold:
                time.sleep(FLUSH_S)
            if step == HOLD_STEP and args.hold:
                start = time.monotonic()
                while not os.path.exists(args.hold) and time.monotonic() - start < args.hold_timeout:
                    time.sleep(0.1)
                held = os.path.exists(args.hold)
            x = torch.randn(ODD_BATCH if (rank, step) == (BATCH_RANK, BATCH_STEP) else BATCH, 16)
            loss = compiled(x).square().mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    print(f"rank {rank}: held={held}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
