"""``python -m compiler report PATH -o report.html``: one standalone HTML file (every stage; for a job,
the rank comparison first) from a TORCH_TRACE log, a job directory or a saved capture — no Jupyter,
no server; opens offline. ``--perfetto OUT.json``: the compile events (and measured kernel times) as a
Chrome trace-event file for ui.perfetto.dev instead (and the HTML too when ``-o`` is given)."""
from __future__ import annotations

import argparse
import sys
import warnings


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compiler", description=__doc__.split(":", 1)[0])
    commands = parser.add_subparsers(dest="command", required=True)
    report = commands.add_parser("report", help="write a standalone HTML report of a trace, a job or a capture")
    report.add_argument("path", help="a TORCH_TRACE log file, a directory of per-rank logs or saved captures, "
                                     "or a tcompile capture (.json)")
    report.add_argument("-o", "--output", default=None,
                        help="the HTML file to write (report.html, unless only --perfetto is asked for)")
    report.add_argument("--perfetto", metavar="OUT.json", default=None,
                        help="write the compile events of every compile, one track each, as Chrome trace-event "
                             "JSON (opens in ui.perfetto.dev and chrome://tracing)")
    report.add_argument("--strict", action="store_true", help="fail on a corrupted line or a payload md5 mismatch")
    report.add_argument("--sources", choices=("trace", "local"), default="trace",
                        help="trace (default): read no local file the log names; local: read the source files "
                             "it names from this machine (regular .py files only, size-capped)")
    args = parser.parse_args(argv)

    from compiler.readers.job import Job, load_trace
    from compiler.stages.schema import CaptureFormatError
    from compiler.readers.trace import TraceError, TraceWarning

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", TraceWarning)
            loaded = load_trace(args.path, strict=args.strict, sources=args.sources)
    except (TraceError, CaptureFormatError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except RecursionError:
        print(f"error: {args.path}: nested too deeply to read", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 — a shared file must end in one line, never a traceback
        print(f"error: {args.path}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    for warning in caught:
        print(f"warning: {warning.message}", file=sys.stderr)
    if args.perfetto:
        from compiler.readers.perfetto import save_perfetto

        try:
            print(f"wrote {save_perfetto(loaded, args.perfetto)} (Chrome trace events)")
        except OSError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        if args.output is None:
            return 0
    from .drawing import renderer

    write_report = renderer("report")
    if write_report is None:
        print("error: the HTML report needs tcompile's explorer package (and its dependencies: pygments, "
              "graphviz, ipywidgets), which is not installed or could not be imported; install tcompile with "
              "`pip install -e .`", file=sys.stderr)
        return 3
    out = write_report(loaded, args.output or "report.html")
    what = (f"job of {len(loaded.captures)} ranks, {len(loaded.divergences)} divergences"
            if isinstance(loaded, Job) else f"{len(loaded.compiles)} compiles")
    print(f"wrote {out} ({what})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
