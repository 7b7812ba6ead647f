"""The smallest pieces every stage builder shares, kept at the bottom so any module may use them."""
from __future__ import annotations

import re


# --- declared here, built below (``compiler.stages.schema`` ties the stages into a ``Compile``) ---

def key_of(role: str | None, name: str) -> str:
    """A kernel's or node's key in provenance: ``role:name`` (names repeat between forward and backward)."""
    return f"{role}:{name}" if role else name


_RESUME = re.compile(r"^torch_dynamo_resume_in_(?P<fn>\w+?)_at_(?P<line>\d+)$")


def resume_origin(name: str | None) -> tuple[str, int] | None:
    """``torch_dynamo_resume_in_f_at_4`` → ``("f", 4)``: the function and line a resume frame continues."""
    match = _RESUME.match(name or "")
    return (match["fn"], int(match["line"])) if match else None


def unavailable(reason: str, **extra) -> dict:
    """The data of a stage torch did not produce, with the reason."""
    return {"available": False, "reason": reason, **extra}


# The methods of a capture's data whose work lives on a floor above the data floor — what-if, fixes, diff,
# experiments, reproducers (compiler.analyses), saving a TORCH_TRACE or Perfetto file (compiler.readers): name →
# function, put here by that module when it is imported (``METHODS[...] = ...`` at its end). compiler/__init__
# imports every one of them, and Python runs compiler/__init__ before any module of the package, so a Capture
# (or a Kernel) finds them all. The data floor never imports a floor above it (compiler/__init__'s docstring).
METHODS: dict = {}
