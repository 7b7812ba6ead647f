"""What a capture was made with: versions, device, the compile options."""
from __future__ import annotations

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
    try:
        import triton

        env["triton"] = triton.__version__
    except ImportError:
        env["triton"] = None
    return env
