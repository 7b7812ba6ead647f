"""tcompile's capture engine: every stage of a torch.compile run as one plain-data record.

    with compiler.capture() as cap:
        f = torch.compile(fn); f(x)
    cap.compiles[0].graph.as_text()

or ``compiler.explore(fn, x, mode=..., dynamic=..., fullgraph=..., backend=..., options=...)``
(``compiler.run`` underneath: compile, call, capture, time, profile, build once).
Imports torch and the standard library only (pandas lazily, for tables).
"""
from . import experiments, knobs
from .compare import compare
from .compare_spec import parse_compare_spec
from .comparison import Comparison
from .diff import CaptureDiff, diff_captures
from .job import Divergence, Job, load_job, load_trace
from .model import Capture, CaptureFormatError, Compile, Stage, load
from .options import OptionError
from .run import explore, run
from .session import capture

__all__ = ["Capture", "CaptureDiff", "CaptureFormatError", "Comparison", "Compile", "Divergence", "Job", "load_job", "load_trace", "OptionError", "Stage",
           "capture", "compare", "diff_captures", "experiments", "explore", "knobs", "load",
           "parse_compare_spec", "run"]
