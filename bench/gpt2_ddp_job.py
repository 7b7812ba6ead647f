"""A real 2-rank job for ``bench.load_job --gpt2-ddp DIR``: a small GPT-2 (transformers, made from a config,
no weights) under DDP + torch.compile, trained a few steps with gloo on CPU, each rank logging a TORCH_TRACE.

    TORCH_TRACE=/tmp/gpt2_ddp_trace torchrun --nproc_per_node 2 bench/gpt2_ddp_job.py

(or ``python -m bench.gpt2_ddp_job --run /tmp/gpt2_ddp_trace``, which starts torchrun with that environment).
Inductor compiles it (the default backend: output code, kernels, runtime estimates are in the logs, as in a
real job); DDP's small buckets (``--bucket-mb``) make Dynamo's DDPOptimizer split the graph at bucket
boundaries, so each rank logs several graphs. Trace files stay under /tmp: never committed.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path


def train(args) -> None:
    import torch
    import torch.distributed as dist
    from transformers import GPT2Config, GPT2LMHeadModel

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    config = GPT2Config(n_layer=args.layers, n_embd=args.width, n_head=4, n_positions=args.seq, vocab_size=args.vocab,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(config)
    ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=args.bucket_mb)
    compiled = torch.compile(ddp, backend=args.backend)
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(rank)
    for step in range(args.steps):
        ids = torch.randint(0, args.vocab, (args.batch, args.seq), generator=generator)
        loss = compiled(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if rank == 0:
            print(f"step {step}: loss {loss.item():.3f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="bench/gpt2_ddp_job.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", metavar="TRACE_DIR", help="start torchrun --nproc_per_node 2 with TORCH_TRACE=TRACE_DIR")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--vocab", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--bucket-mb", type=float, default=1.0, help="DDP bucket size in MB (≥ 1, DDP's first bucket; small: several graphs)")
    parser.add_argument("--backend", default="inductor")
    args, rest = parser.parse_known_args(argv)
    if not args.run:
        train(args)
        return 0
    trace = Path(args.run)
    trace.mkdir(parents=True, exist_ok=True)
    torchrun = Path(sys.executable).parent / "torchrun"
    env = {**os.environ, "TORCH_TRACE": str(trace), "OMP_NUM_THREADS": "1"}
    forwarded = [a for a in (argv if argv is not None else sys.argv[1:]) if a not in ("--run", args.run)]
    return subprocess.run([str(torchrun), "--nproc_per_node", "2", __file__, *forwarded], env=env).returncode


if __name__ == "__main__":
    raise SystemExit(main())
