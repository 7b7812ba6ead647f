"""tcompile's capture engine: every stage of a torch.compile run as one plain-data record.

    with compiler.capture() as cap:
        f = torch.compile(fn); f(x)
    cap.compiles[0].graph.as_text()

or ``compiler.explore(fn, x, mode=..., dynamic=..., fullgraph=..., backend=..., options=...)``
(``compiler.run`` underneath: compile, call, capture, time, profile, build once).
Imports torch and the standard library only (pandas lazily, for tables).

Floors, every import pointing down (module-level and inside functions; ``tests/test_layout.py`` checks it):

    reference, drawing   torch's knobs as tables; how captures draw (a registry explorer fills)
    stages               the typed data and its builders: records → a Capture; the Capture file, the atomic
                         write (``stages.files``), the environment record, a GPU profile matched to kernels
    readers              files in: TORCH_TRACE logs, job directories, AOTInductor logs; TORCH_TRACE/Perfetto out
    capturing            a live run watched: torch's log records, the bytecode hook, timings, GPU profiles
    analyses             questions asked of captures: what-if, fixes, diff, comparisons, experiments
    compiler (this file), __main__   the public API and the command line: may import every floor

A floor imports its own and those below, never one above. What two floors both need lives on the lower one.
The ``Capture`` lives on the data floor and offers what the floors above it do (``cap.what_if()``,
``cap.fixes()``, ``cap.diff()``, ``cap.try_fixes()``, ``cap.save_trace()``, ``cap.save_perfetto()``, …) in
one way: each of those methods calls ``compiler.stages.capture.METHODS[name]``, which the module doing the
work fills when it is imported (a ``METHODS[...] = ...`` line at its end). This file imports each such module
below, and Python runs it before any module of the package, so every Capture finds them all.
"""
import sys


def _interrupted_starting(signum, frame):
    """Ctrl-C while ``python -m compiler`` imports this package, before its ``main`` runs: the CLI's one line."""
    print("error: interrupted (Ctrl-C); nothing written", file=sys.stderr)
    raise SystemExit(130)


def _run_as_cli() -> bool:
    argv = getattr(sys, "orig_argv", [])
    return sys.argv[:1] == ["-m"] and "-m" in argv[:-1] and argv[argv.index("-m") + 1] == "compiler"


if _run_as_cli():  # ``python -m compiler``: the imports below take seconds; compiler.__main__.main takes over after
    import signal

    signal.signal(signal.SIGINT, _interrupted_starting)

import importlib

# The modules that give Capture its upper floors' methods (compiler.stages.capture.METHODS), imported first
# (by name, so that ``compiler.diff`` & co. do not become modules of the public API).
for _module in ("analyses.bisect_drift", "analyses.compile_fixes", "analyses.diff", "analyses.fix_experiments", "analyses.fix_workers",
                "analyses.fixes", "analyses.minify", "analyses.repro", "analyses.whatif", "readers.perfetto", "readers.trace"):
    importlib.import_module(f"compiler.{_module}")
del _module
from compiler.analyses import experiments
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
