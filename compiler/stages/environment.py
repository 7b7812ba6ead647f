"""What a capture was made with: versions, device, the compile options."""
from __future__ import annotations

import functools
import os
import platform
import re
import sys
import warnings

# The torch versions live capture is tested on: 2.11 (CUDA, the GPU machine), 2.13 (the pinned CPU build),
# 2.14 (``make test-torch TORCH_SPEC=torch==2.14.1``). Any other version still captures, with one warning.
TESTED_LIVE_TORCH = ((2, 11), (2, 13), (2, 14))
_warned: set[str] = set()


class TorchVersionWarning(UserWarning):
    """The running torch is not one tcompile's live capture is tested on (the message names it)."""


def untested_torch(version: str | None = None) -> str | None:
    """The one-line warning for a torch version live capture is not tested on; None for a tested one."""
    if version is None:
        import torch

        version = str(torch.__version__)
    match = re.match(r"^(\d+)\.(\d+)", version)
    if match and (int(match[1]), int(match[2])) in TESTED_LIVE_TORCH:
        return None
    tested = ", ".join(f"{a}.{b}" for a, b in TESTED_LIVE_TORCH)
    return (f"tcompile: torch {version} is untested for live capture (tested: {tested}); capturing anyway — "
            "a stage this torch records differently shows as unavailable with its reason")


def warn_if_untested_torch() -> None:
    """Warn once per process and version (``TorchVersionWarning``), never raise."""
    try:
        message = untested_torch()
        import torch

        version = str(torch.__version__)
    except Exception:  # noqa: BLE001 — a version check must never stop a capture
        return
    if message and version not in _warned:
        _warned.add(version)
        warnings.warn(TorchVersionWarning(message), stacklevel=4)


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
    env["triton"] = _triton_version()
    return env


@functools.lru_cache(maxsize=1)
def _triton_version() -> str | None:
    """Looked up once a process: a failed ``import triton`` searches all of ``sys.path`` every time."""
    try:
        import triton

        return triton.__version__
    except ImportError:
        return None


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
