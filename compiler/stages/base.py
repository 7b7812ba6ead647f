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


# The Capture's (and its stages') methods whose work lives on a floor above: name → function, filled by the module
# doing the work when it is imported (``compiler.stages.capture`` explains; ``Kernel.reproducer`` reads it too).
METHODS: dict = {}
