"""What the tcompile labs need at run time, shipped with tcompile (so a student release stands alone):
the checkers (``tcompile_labs.checks``), the GPU captures labs 5 and 6 read (recorded on an NVIDIA H100 with
torch 2.11; package data ``tcompile_labs.gpu``, kept in the repository's ``assets/gpu/``) and lab 8's
two-process jobs (``dist_job.py``, ``ddp_job.py``). No solution and no hidden test is here: those stay in ``notebooks/labs/``."""
from __future__ import annotations

from pathlib import Path

__all__ = ["ddp_job_script", "gpu_captures", "job_script"]

HERE = Path(__file__).resolve().parent


def gpu_captures() -> Path:
    """The folder of the shipped GPU captures (``*.json``): ``tcompile_labs/gpu/`` in an installed tcompile
    (pyproject maps ``assets/gpu`` there), ``assets/gpu/`` in a source checkout or an editable install."""
    installed = HERE / "gpu"
    return installed if any(installed.glob("*.json")) else HERE.parent / "assets" / "gpu"


def job_script() -> Path:
    """Lab 8's job: ``torchrun --nproc_per_node 2 <job_script()> OUT [--uneven RANK] [--prepare FILE]``."""
    return HERE / "dist_job.py"


def ddp_job_script() -> Path:
    """Lab 8's DDP job (sections 5–6): ``torchrun --nproc_per_node 2 <ddp_job_script()> OUT [--bucket-cap-mb N]
    [--configure FILE]``."""
    return HERE / "ddp_job.py"
