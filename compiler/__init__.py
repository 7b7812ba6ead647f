"""tcompile's capture engine: every stage of a torch.compile run as one plain-data record.

    with compiler.capture() as cap:
        f = torch.compile(fn); f(x)
    cap.compiles[0].graph.as_text()

or ``compiler.explore(fn, x, mode=..., dynamic=..., fullgraph=..., backend=..., options=...)``
(``compiler.run`` underneath: compile, call, capture, time, profile, build once).
Imports torch and the standard library only (pandas lazily, for tables).
"""
from compiler.analyses import compile_fixes, experiments, fix_experiments  # noqa: F401 — registers Capture.try_fixes, …
from compiler.reference import knobs
from compiler.analyses.compare import compare
from compiler.analyses.configurations import parse_compare_spec
from compiler.analyses.comparison import Comparison
from compiler.analyses.diff import CaptureDiff, diff_captures
from compiler.readers.job import Divergence, Job, load_job, load_trace
from compiler.stages.capture import Capture, CaptureFormatError, Compile, Stage, load
from compiler.reference.options import OptionError
from compiler.capturing.run import explore, run
from compiler.capturing.session import capture
from compiler.capturing.watch import Watch, watch

__all__ = ["Capture", "CaptureDiff", "CaptureFormatError", "Comparison", "Compile", "Divergence", "Job", "load_job", "load_trace", "OptionError", "Stage",
           "capture", "compare", "diff_captures", "experiments", "explore", "knobs", "load",
           "parse_compare_spec", "run", "Watch", "watch"]
