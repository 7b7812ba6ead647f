"""A small distributed training job for tests and lab 8: ``torchrun --nproc_per_node 2 tcompile_labs/dist_job.py OUT``.

Gloo on CPU, DDP + torch.compile (backend aot_eager). Every rank trains on batches of 32 rows, except
one step of one rank (``--uneven RANK``, default 1), whose batch is uneven, as a data loader's last shard
can be. Run it with TORCH_TRACE=dir to get one trace per rank; it also captures with tcompile and saves
one capture per rank into OUT (``capture(job_dir=OUT)``). ``--prepare FILE`` runs ``prepare_batch(x)``,
defined in that Python file, on every batch before the compiled call, and trains on what it returns.
``--nccl`` runs it on one GPU per rank with NCCL instead.
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import compiler  # noqa: E402

BATCH, ODD_BATCH, ODD_STEP, STEPS = 32, 48, 2, 3


def batch_size(rank: int, step: int, uneven_rank: int = 1) -> int:
    return ODD_BATCH if (rank, step) == (uneven_rank, ODD_STEP) else BATCH


def load_prepare(path: str | None):
    """``prepare_batch`` from the Python file at ``path`` (identity without one)."""
    if not path:
        return lambda x: x
    namespace = {"torch": torch, "__name__": "prepare_batch_file"}
    exec(compile(open(path, encoding="utf-8").read(), path, "exec"), namespace)  # noqa: S102 - the user's own file
    return namespace["prepare_batch"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", help="directory for one tcompile capture per rank")
    parser.add_argument("--uneven", type=int, default=1, help="the rank that gets one uneven batch")
    parser.add_argument("--prepare", help="a Python file defining prepare_batch(x), run on every batch")
    parser.add_argument("--nccl", action="store_true", help="NCCL, one GPU per rank (default: gloo on CPU)")
    args = parser.parse_args()
    device = torch.device(f"cuda:{os.environ.get('LOCAL_RANK', '0')}") if args.nccl else torch.device("cpu")
    if args.nccl:
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if args.nccl else "gloo")
    rank = dist.get_rank()
    prepare_batch = load_prepare(args.prepare)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
    ddp = nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if args.nccl else None)
    compiled = torch.compile(ddp, backend="aot_eager")
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    with compiler.capture(job_dir=args.out):
        for step in range(STEPS):
            x = prepare_batch(torch.randn(batch_size(rank, step, args.uneven), 16, device=device))
            loss = compiled(x).square().mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
