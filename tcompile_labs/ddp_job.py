"""Lab 8's DDP job (sections 5–6): ``torchrun --nproc_per_node 2 tcompile_labs/ddp_job.py OUT``.

Gloo on CPU. Each rank trains ``MLP`` (an nn.Module of ``DEPTH`` square Linear layers) for ``STEPS`` steps with
``torch.compile(train_step, backend="aot_eager")``, where ``train_step`` runs the DDP forward, the loss and
``loss.backward()``; then the same steps run in eager DDP (no compile, the C++ reducer) from the same weights
and data, for comparison. ``--bucket-cap-mb N`` is DDP's ``bucket_cap_mb``; ``--configure FILE`` runs
``configure()``, defined in that Python file, after the eager run (which uses torch's defaults) and before the
compiled run's DDP is built: where ``torch._dynamo.config`` is set.
Run it with TORCH_TRACE=dir for one trace per rank. It writes ``OUT/result_rank_N.json``: the settings the
compiled run used (as torch reads them), its losses and the eager run's, and the largest difference between
the two runs' final weights.
"""
import argparse
import json
import os

import torch
import torch.distributed as dist
from torch import nn

STEPS, BATCH, WIDTH, DEPTH = 2, 8, 512, 4


class MLP(nn.Module):
    """``DEPTH`` Linear(WIDTH, WIDTH) layers with ReLUs between: each layer's weights are 1 MiB of float32."""

    def __init__(self, width: int = WIDTH, depth: int = DEPTH):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = torch.relu(x)
        return x


def batch(rank: int, step: int) -> torch.Tensor:
    """Rank ``rank``'s batch at ``step``: the same on every run."""
    return torch.randn(BATCH, WIDTH, generator=torch.Generator().manual_seed(1000 * step + rank))


def load_configure(path: str | None):
    """``configure`` from the Python file at ``path`` (does nothing without one)."""
    if not path:
        return lambda: None
    namespace = {"torch": torch, "__name__": "configure_file"}
    exec(compile(open(path, encoding="utf-8").read(), path, "exec"), namespace)  # noqa: S102 - the user's own file
    return namespace["configure"]


def train(rank: int, bucket_cap_mb: float, compiled: bool) -> tuple[list[float], MLP]:
    torch.manual_seed(0)
    model = MLP()
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=bucket_cap_mb)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)

    def train_step(x):
        loss = ddp(x).square().mean()
        loss.backward()
        return loss

    step_fn = torch.compile(train_step, backend="aot_eager") if compiled else train_step
    losses = []
    for step in range(STEPS):
        losses.append(float(step_fn(batch(rank, step))))
        optimizer.step()
        optimizer.zero_grad()
    return losses, model


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", help="directory for result_rank_N.json")
    parser.add_argument("--bucket-cap-mb", type=float, default=25.0, help="DDP's bucket_cap_mb (25: DDP's default)")
    parser.add_argument("--configure", help="a Python file defining configure(), run before DDP is built")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    eager_losses, eager_model = train(rank, args.bucket_cap_mb, compiled=False)  # the reference: eager DDP
    load_configure(args.configure)()
    losses, model = train(rank, args.bucket_cap_mb, compiled=True)
    diff = max((a - b).abs().max().item() for a, b in zip(model.parameters(), eager_model.parameters()))
    result = {"rank": rank, "bucket_cap_mb": args.bucket_cap_mb,
              "optimize_ddp": torch._dynamo.utils.get_optimize_ddp_mode(),
              "compiled_autograd": bool(torch._dynamo.config.compiled_autograd),
              "losses": losses, "eager_losses": eager_losses, "max_weight_difference": diff}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"result_rank_{rank}.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
