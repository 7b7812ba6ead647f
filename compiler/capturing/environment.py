"""What a capture was made with: versions, device, the compile options."""
from __future__ import annotations

import os
import platform
import sys


def environment() -> dict:
    import torch

    env = {"torch": torch.__version__, "python": sys.version.split()[0], "platform": platform.platform(),
           "machine": platform.machine(), "cuda_available": torch.cuda.is_available(),
           "cuda": torch.version.cuda, "device": "cpu", "device_name": platform.processor() or "CPU",
           "num_threads": torch.get_num_threads()}
    if torch.cuda.is_available():
        env.update(device="cuda", device_name=torch.cuda.get_device_name(0),
                   device_capability=".".join(map(str, torch.cuda.get_device_capability(0))))
    env.update(distributed())
    try:
        import triton

        env["triton"] = triton.__version__
    except ImportError:
        env["triton"] = None
    return env


def recompile_limits() -> dict:
    """Dynamo's limits on compiles per code object (``torch._dynamo.config``) when the capture was made:
    read when a capture ends (inside any config patch of the run); a frame that reaches one runs eagerly for new inputs (``compiler.stages.recompiles.limit_hits``)."""
    from torch._dynamo import config

    return {name: getattr(config, name) for name in ("recompile_limit", "accumulated_recompile_limit")
            if isinstance(getattr(config, name, None), int)}


def distributed() -> dict:
    """The rank and world size of a distributed job (torch.distributed once initialized, else the
    RANK / WORLD_SIZE / LOCAL_RANK variables torchrun sets); empty outside a job."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        out = {"rank": dist.get_rank(), "world_size": dist.get_world_size()}
    elif "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        out = {"rank": int(os.environ["RANK"]), "world_size": int(os.environ["WORLD_SIZE"])}
    else:
        return {}
    if "LOCAL_RANK" in os.environ:
        out["local_rank"] = int(os.environ["LOCAL_RANK"])
    return out
