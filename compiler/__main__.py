"""``python -m compiler report PATH -o report.html``: one standalone HTML file (every stage; for a job,
the rank comparison first) from a TORCH_TRACE log, a job directory or a saved capture — no Jupyter,
no server; opens offline. ``--perfetto OUT.json``: the compile events (and measured kernel times) as a
Chrome trace-event file for ui.perfetto.dev instead (and the HTML too when ``-o`` is given).
``python -m compiler gpu-profile SCRIPT [ARGS…] -o capture.json``: the script's captured call measured by
Nsight Compute — DRAM bytes per kernel beside the estimate (``compiler.capturing.ncu``).
``python -m compiler repro CAPTURE KERNEL -o FILE``: a standalone script that rebuilds one generated kernel's launch,
checks and times it (``compiler.analyses.repro``). ``python -m compiler minify SCRIPT`` / ``bisect SCRIPT``: the
script's first captured call (``compiler.run``/``explore``) minified by torch's minifier / its eager-vs-compiled
drift bisected by torch's CompilerBisector, each in a child process (``compiler.analyses.minify``, ``bisect_drift``).
``python -m compiler check FILE…``: a capture's (or TORCH_TRACE log's) figures against torch's own answers and their
bounds (``compiler.analyses.check``): one line per violation, exit status 1 when there is any."""
from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import warnings


def main(argv=None) -> int:
    from compiler import _interrupted_starting

    try:
        if signal.getsignal(signal.SIGINT) is _interrupted_starting:  # set while the package imported
            signal.signal(signal.SIGINT, signal.default_int_handler)
        return _main(argv)
    except KeyboardInterrupt:  # Ctrl-C: one line and the shell's code for SIGINT, never a traceback or 0
        print("error: interrupted (Ctrl-C); no report written", file=sys.stderr)
        return 130


def _main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compiler", description=__doc__.split(":", 1)[0])
    commands = parser.add_subparsers(dest="command", required=True)
    report = commands.add_parser("report", help="write a standalone HTML report of a trace, a job or a capture")
    report.add_argument("path", help="a TORCH_TRACE log file, a directory of per-rank logs or saved captures, "
                                     "or a tcompile capture (.json)")
    report.add_argument("-o", "--output", default=None,
                        help="the HTML file to write (report.html, unless only --perfetto is asked for); - writes the "
                             "page to stdout")
    report.add_argument("--perfetto", metavar="OUT.json", default=None,
                        help="write the compile events of every compile, one track each, as Chrome trace-event "
                             "JSON (opens in ui.perfetto.dev and chrome://tracing); - writes it to stdout")
    report.add_argument("--strict", action="store_true", help="fail on a corrupted line or a payload md5 mismatch")
    report.add_argument("--sources", choices=("trace", "local"), default="trace",
                        help="trace (default): read no local file the log names; local: read the source files "
                             "it names from this machine (regular .py files only, size-capped)")
    profile = commands.add_parser(
        "gpu-profile", help="measure the DRAM bytes of a script's captured call with Nsight Compute (ncu)",
        description="Run SCRIPT twice: plainly, keeping the capture of its first compiler.run / compiler.explore / "
                    "%%tcompile call (with its measured times), then under Nsight Compute, measuring one call of "
                    "the same compiled function (dram__bytes_read.sum, dram__bytes_write.sum, gpu__time_duration.sum "
                    "per kernel). The capture is saved with ncu's DRAM bytes beside each Triton kernel's estimate.")
    profile.add_argument("script", help="the Python script to run (it captures a call with compiler.run or explore)")
    profile.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments for the script")
    profile.add_argument("-o", "--output", default="gpu_profile.json", help="the capture to write (gpu_profile.json)")
    profile.add_argument("--ncu", default=None, help="the ncu executable (default: ncu on PATH, or /usr/local/cuda/bin/ncu)")
    profile.add_argument("--keep-csv", metavar="CSV", default=None, help="also keep ncu's raw CSV there")
    profile.add_argument("--timeout", type=float, default=None, help="seconds each run of the script may take")
    checking = commands.add_parser(
        "check", help="cross-check a capture or trace: node counts, torch's counters, shares, kernel lines",
        description="Check each FILE (a capture JSON, a TORCH_TRACE log or a directory of them) against torch's own "
                    "answers and the bounds of its figures: one line per violation, exit status 1 when there is any "
                    "(2 when a file cannot be read).")
    checking.add_argument("paths", nargs="+", metavar="FILE", help="capture JSON, TORCH_TRACE log or directory")
    checking.add_argument("-q", "--quiet", action="store_true", help="print only the violations")
    follow = commands.add_parser(
        "watch", help="follow a running job: its ranks, alerts and divergences as they are written",
        description="Follow the job directory DIR while its ranks write into it (compiler.watch(job_dir=DIR) in each "
                    "rank, or TORCH_TRACE=DIR): print each rank as it starts, each alert (step, rank, compile, what "
                    "happened, the fix) and each divergence between ranks as it happens; at the end (every rank "
                    "stopped, --timeout, or Ctrl-C) the table of alerts.")
    follow.add_argument("path", help="the job directory the ranks write into")
    follow.add_argument("--timeout", type=float, default=None, help="stop following after this many seconds")
    follow.add_argument("--ranks", type=int, default=1,
                        help="wait for this many ranks before stopping when every rank seen has stopped (default 1)")
    follow.add_argument("--wait", type=float, default=60.0,
                        help="seconds to wait for the directory to appear (default 60)")
    repro = commands.add_parser(
        "repro", help="write a standalone script that rebuilds, checks and times one generated kernel",
        description="Write a standalone Python file for KERNEL of CAPTURE (a saved capture or TORCH_TRACE log): it "
                    "loads the kernel's Inductor module as Inductor does, builds its arguments with the module's "
                    "get_args()/call() (random values, the captured shapes, strides, dtypes, devices), launches it "
                    "alone, checks its outputs against the compiled launch and times it against the captured time.")
    repro.add_argument("capture", help="a saved capture (.json) or a TORCH_TRACE log")
    repro.add_argument("kernel", help="the kernel's name (ROLE:NAME where forward and backward share it)")
    repro.add_argument("-o", "--output", default=None, help="the script to write (default: KERNEL.py)")
    repro.add_argument("--compile", default=None, help="the compile id, where several compiles have the kernel")
    repro.add_argument("--launch", type=int, default=0, help="which launch of the kernel in call() (default 0)")
    repro.add_argument("--run", action="store_true", help="run the script once in a fresh process and print its result")
    for name, what in (("minify", "minify the failing compile of SCRIPT's first captured call with torch's minifier"),
                       ("bisect", "bisect SCRIPT's first captured call's eager-vs-compiled drift with CompilerBisector")):
        sub = commands.add_parser(name, help=what, description=what[0].upper() + what[1:] + ", in a child process. "
                                  "SCRIPT makes the call with compiler.run or compiler.explore (errors='return' for a "
                                  "failing compile). Options come before SCRIPT; what follows it goes to the script.")
        sub.add_argument("script", help="the Python script to run")
        sub.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments for the script")
        sub.add_argument("--prepare", metavar="FILE", default=None,
                         help="Python code the child runs before compiling (what SCRIPT set up that the function "
                              "does not carry: a registered backend or lowering, a patched pass)")
        sub.add_argument("--timeout", type=float, default=300.0, help="seconds the child may take (default 300)")
        sub.add_argument("-o", "--output", default=None, help="save the capture with the result here (.json)")
    args = parser.parse_args(argv)
    if args.command == "repro":
        return _repro(args)
    if args.command in ("minify", "bisect"):
        return _minify_or_bisect(args)
    if args.command == "gpu-profile":
        return _gpu_profile(args)
    if args.command == "watch":
        return _watch(args)
    if args.command == "check":
        return _check(args)
    if args.output is None and not args.perfetto:
        args.output = "report.html"
    if args.output is not None and args.perfetto is not None and _same_output(args.output, args.perfetto):
        return _fail(f"-o and --perfetto both name {args.output}: name two files")
    for output in (args.output, args.perfetto):
        if output is None or output == "-":
            continue
        from compiler.stages.files import output_target

        if args.path.strip() and _overwrites_input(args.path, output):
            return _fail(f"{output} is the input itself (or a file of the input job): writing it would "
                         "overwrite the input; name another file")
        try:
            output_target(output)
        except OSError as exc:
            return _fail(exc)

    from compiler.readers.job import Job, load_trace
    from compiler.stages.schema import CaptureFormatError
    from compiler.readers.trace import TraceError, TraceWarning

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", TraceWarning)
            loaded = load_trace(args.path, strict=args.strict, sources=args.sources)
    except (TraceError, CaptureFormatError, OSError) as exc:
        return _fail(exc)
    except RecursionError:
        return _fail(f"{args.path}: nested too deeply to read")
    except Exception as exc:  # noqa: BLE001 — a shared file must end in one line, never a traceback
        return _fail(f"{args.path}: {type(exc).__name__}: {exc}")
    for warning in caught:
        _say(f"warning: {_one_line(warning.message)}", sys.stderr)
    if args.perfetto:
        from compiler.readers.perfetto import perfetto_text, save_perfetto

        if args.perfetto == "-":
            sys.stdout.write(perfetto_text(loaded))
            print("wrote the Chrome trace events to stdout", file=sys.stderr)
        else:
            try:
                print(f"wrote {save_perfetto(loaded, args.perfetto)} (Chrome trace events)",
                      file=sys.stderr if args.output == "-" else sys.stdout)
            except OSError as exc:
                return _fail(exc)
        if args.output is None:
            return 0
    from compiler.drawing import renderer
    from compiler.stages.files import shown_text

    report_page, write_report = renderer("report_page"), renderer("report")
    if report_page is None or write_report is None:
        print("error: the HTML report needs tcompile's explorer package (and its dependencies: pygments, "
              "graphviz, ipywidgets), which is not installed or could not be imported; install tcompile with "
              "`pip install -e .`", file=sys.stderr)
        return 3

    what = (f"job of {len(loaded.captures)} ranks, {len(loaded.divergences)} divergences"
            if isinstance(loaded, Job) else f"{len(loaded.compiles)} compiles")
    if args.output == "-":
        sys.stdout.write(shown_text(report_page(loaded)))
        print(f"wrote the report to stdout ({what})", file=sys.stderr)
        return 0
    try:
        out = write_report(loaded, args.output)
    except OSError as exc:  # compiler.stages.files.OutputError: one line naming the path and the cause
        return _fail(exc)
    print(f"wrote {out} ({what})", file=sys.stderr if args.perfetto == "-" else sys.stdout)
    return 0


def _gpu_profile(args) -> int:
    from compiler.capturing.ncu import GpuProfileError, profile_script

    try:
        done = profile_script(args.script, args.script_args, args.output, ncu=args.ncu, keep_csv=args.keep_csv,
                              timeout=args.timeout)
    except GpuProfileError as exc:
        return _fail(f"gpu-profile: {exc}")
    except Exception as exc:  # noqa: BLE001 — one line, never a traceback
        return _fail(f"gpu-profile: {type(exc).__name__}: {exc}")
    mb = lambda v: f"{v / 1e6:.2f}" if v is not None else "–"  # noqa: E731
    print(f"ncu measured {done['launches_measured']} launches of {done['kernels_measured']} kernels; "
          f"{done['triton_matched']} of {done['triton_kernels']} Triton kernels got their DRAM bytes")
    print("kernel | µs / call | estimated read MB | ncu DRAM read MB | read est ÷ ncu | estimated written MB | "
          "ncu written into L2 MB | (read + written) est ÷ ncu")
    for r in done["rows"]:
        ratio = lambda v: f"{v:.2f}" if v else "–"  # noqa: E731
        print(f"{r['kernel'][:60]} | {r['us_per_call'] or 0:.1f} | {mb(r['read'])} | {mb(r['ncu_read'])} | "
              f"{ratio(r['read_ratio'])} | {mb(r['written'])} | {mb(r['ncu_l2_written'])} | {ratio(r['moved_ratio'])}")
    print(f"wrote {done['output']} (the capture, with ncu's DRAM bytes beside the estimates)")
    return 0


def _repro(args) -> int:
    from compiler.analyses.repro import find_kernel, kernel_reproducer
    from compiler.readers.job import Job, load_trace

    try:
        loaded = load_trace(args.capture)
    except Exception as exc:  # noqa: BLE001 — one line, never a traceback
        return _fail(f"{args.capture}: {type(exc).__name__}: {exc}")
    if isinstance(loaded, Job):
        return _fail(f"{args.capture} is a job of {len(loaded.captures)} ranks: name one rank's capture or log")
    try:
        compile_, kernel = find_kernel(loaded, args.kernel, args.compile)
    except LookupError as exc:
        return _fail(f"repro: {exc}")
    made = kernel_reproducer(kernel, compile_, args.launch)
    output = args.output or re.sub(r"[^\w.-]", "_", kernel.name) + ".py"
    try:
        made.save(output)
    except OSError as exc:
        return _fail(exc)
    print(f"wrote {output}: the {kernel.language} kernel {kernel.name} of compile {compile_.compile_id} "
          f"({kernel.role or 'inference'})" + (f"; captured {made.captured_us:.2f} µs per launch ({made.captured_method})"
                                               if made.captured_us else "; no captured time"))
    for note in made.notes:
        print(f"note: {note}")
    if args.run:
        result = made.run()
        print(result.get("output") or result.get("error"), end="")
        return 0 if result.get("ran") and result.get("matched") else 1
    return 0


def _minify_or_bisect(args) -> int:
    import runpy

    from compiler.capturing.run import AFTER_RUN

    if not os.path.isfile(args.script):
        return _fail(f"{args.script}: no such script")
    prepare = None
    if args.prepare:
        try:
            with open(args.prepare, encoding="utf-8") as f:
                prepare = f.read()
        except OSError as exc:
            return _fail(exc)
    mine = [a for a in args.script_args if a.split("=")[0] in ("--prepare", "--timeout", "-o", "--output")]
    if mine:
        print(f"warning: {' '.join(mine)} after SCRIPT go to the script; {args.command}'s own options come before "
              f"SCRIPT (python -m compiler {args.command} --prepare FILE SCRIPT)", file=sys.stderr)
    made: list = []
    AFTER_RUN.append(made.append)
    argv = sys.argv
    sys.argv = [args.script, *args.script_args]
    try:
        runpy.run_path(args.script, run_name="__main__")
    except SystemExit:
        pass
    except Exception as exc:  # noqa: BLE001 — the script's own failure, after its capture was made or not
        if not made:
            return _fail(f"{args.script}: {type(exc).__name__}: {exc}")
    finally:
        sys.argv = argv
        AFTER_RUN.remove(made.append)
    if not made:
        return _fail(f"{args.script} made no captured call: {args.command} replays the first call that compiler.run or "
                     "compiler.explore makes")
    cap = made[0]
    say = lambda line: print(f"  {line}", flush=True)  # noqa: E731
    print(f"{args.command}: {cap!r} (child process, at most {args.timeout:g} s)", flush=True)
    try:
        if args.command == "minify":
            result = cap.minify(prepare=prepare, timeout=args.timeout, progress=say)
        else:
            result = cap.bisect_drift(prepare=prepare, timeout=args.timeout, progress=say)
    except RuntimeError as exc:
        return _fail(f"{args.command}: {exc}")
    print(result.as_text())
    if args.output:
        try:
            print(f"wrote {cap.save(args.output)} (the capture, with the result)")
        except OSError as exc:
            return _fail(exc)
    return 0 if result.available else 1


def _check(args) -> int:
    from compiler.analyses.check import check_path

    violations, unreadable = 0, 0
    for path in args.paths:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                results = check_path(path)
        except Exception as exc:  # noqa: BLE001 — an unreadable file is one line, never a traceback
            _say(f"error: {_one_line(f'{path}: {type(exc).__name__}: {exc}')}", sys.stderr)
            unreadable += 1
            continue
        for name, checked in results:
            if checked.unread is not None:  # a rank or file not checked is said, and fails the check
                _say(f"error: {_one_line(f'{name}: not checked: {checked.unread}')}", sys.stderr)
                unreadable += 1
                continue
            for violation in checked.violations:
                _say(f"{_one_line(name)}: {_one_line(violation.line())}")
            violations += len(checked.violations)
            if not args.quiet:
                _say(f"{_one_line(name)}: {checked.compiles} compiles, Dynamo ops {checked.ops} here / "
                     f"{checked.torch_ops} torch's, {checked.graphs} graphs against their code, "
                     f"{checked.kernels_lines_in_origins} of {checked.kernels_with_origin_lines} kernels with lines "
                     f"among their origins' ({checked.kernels_without_origin} without origin), "
                     f"{len(checked.violations)} violations", sys.stderr)
    return 2 if unreadable else 1 if violations else 0


def _watch(args) -> int:
    import time

    from compiler.readers.follow import POLL_S, Follower
    from compiler.readers.trace import TraceError

    started = time.monotonic()
    deadline = started + args.timeout if args.timeout is not None else None
    wait_until = started + args.wait if deadline is None else min(started + args.wait, deadline)
    while not os.path.isdir(args.path) and time.monotonic() < wait_until:
        time.sleep(POLL_S)
    try:
        follower = Follower(args.path)
    except TraceError as exc:
        return _fail(exc)
    _say(f"following {args.path} (Ctrl-C stops)")
    try:
        while True:  # --timeout is a wall-clock bound: each poll stops reading at it
            for kind, value in follower.poll(deadline):
                if kind == "rank":
                    state = follower.ranks[value]
                    _say(f"rank {value} started ({state.source}: {_one_line(state.file)})")
                elif kind == "alert":
                    _say(value.as_text())
                elif kind == "divergence":
                    _say("DIVERGENCE " + value.as_text())
                elif kind == "stop":
                    _say(f"rank {value} stopped after {follower.ranks[value].watch.steps} steps")
                elif kind == "restart":
                    _say(f"rank {value[0]} restarted ({value[1]}): followed from its new start")
                elif kind == "problem":
                    _say(f"warning: {_one_line(value)}", sys.stderr)
            if follower.done and len(follower.ranks) >= args.ranks:
                break
            if deadline is not None and time.monotonic() >= deadline:
                _say(f"stopped following after {args.timeout:g} s")
                break
            time.sleep(POLL_S if deadline is None else max(0.0, min(POLL_S, deadline - time.monotonic())))
    except KeyboardInterrupt:
        _say("interrupted")
    _say(follower.table_text())
    return 0


def _say(text, file=None) -> None:
    """Print text read from files to a terminal: control characters shown, never executed (``terminal_text``),
    and written whatever the terminal's encoding (what it cannot encode as escapes)."""
    from compiler.stages.files import terminal_text

    file = file or sys.stdout
    text = terminal_text(text)
    try:
        print(text, file=file, flush=True)
    except UnicodeEncodeError:
        encoding = getattr(file, "encoding", None) or "ascii"
        print(text.encode(encoding, "backslashreplace").decode(encoding, "replace"), file=file, flush=True)


def _one_line(text) -> str:
    from compiler.stages.files import terminal_text

    return terminal_text(" ".join(str(text).split()), newlines=False)


def _fail(message) -> int:
    _say(f"error: {_one_line(message)}", sys.stderr)
    return 2


def _same_output(a: str, b: str) -> bool:
    """Do two outputs name one file (both stdout, or one path by any spelling or link)?"""
    if "-" in (a, b):
        return a == b
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def _overwrites_input(path: str, output: str) -> bool:
    """``output`` is the input, or an existing file directly in the input job directory."""
    try:
        if os.path.samefile(path, output):
            return True
    except OSError:
        if os.path.realpath(path) == os.path.realpath(output):
            return True
    return (os.path.isdir(path) and os.path.lexists(output)
            and os.path.dirname(os.path.realpath(output)) == os.path.realpath(path))


if __name__ == "__main__":
    sys.exit(main())
