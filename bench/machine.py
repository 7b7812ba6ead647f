"""The machine and versions a bench run was made on."""
from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def load_average() -> str:
    try:
        return "/".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def _command(*args: str) -> str:
    try:
        return subprocess.run(args, capture_output=True, text=True, cwd=REPO, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def versions() -> dict:
    import torch

    out = {"torch": torch.__version__, "python": platform.python_version(),
           "gcc": _command("g++", "--version").splitlines()[0] if _command("g++", "--version") else None,
           "tcompile_commit": _command("git", "rev-parse", "--short", "HEAD"),
           "tcompile_dirty": bool(_command("git", "status", "--porcelain"))}
    for module in ("ipywidgets", "pygments", "pandas"):
        try:
            out[module] = __import__(module).__version__
        except ImportError:
            out[module] = None
    return out


def machine() -> dict:
    import torch

    info = {"cpu_model": cpu_model(), "cores": os.cpu_count(), "torch_threads": torch.get_num_threads(),
            "platform": platform.platform(), "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
            "load_average_start": load_average(), "versions": versions()}
    try:
        info["memory_gb"] = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError):
        pass
    return info

