"""tcompile's capture engine: every stage of a torch.compile run as one plain-data record.

    with compiler.capture() as cap:
        f = torch.compile(fn); f(x)
    cap.compiles[0].graph.as_text()

or ``compiler.explore(fn, x, mode=..., dynamic=..., fullgraph=..., backend=..., options=...)``.
Imports torch and the standard library only (pandas lazily, for tables).
"""
from . import knobs
from .compare import Comparison, compare, parse_compare_spec
from .diff import CaptureDiff, diff_captures
from .job import Divergence, Job, load_job, load_trace
from .model import Capture, CaptureFormatError, Compile, Stage, load
from .session import capture, explore

__all__ = ["Capture", "CaptureDiff", "CaptureFormatError", "Comparison", "Compile", "Divergence", "Job", "load_job", "load_trace", "Stage", "capture",
           "compare", "diff_captures", "explore", "knobs", "load", "parse_compare_spec"]
