"""``%%tcompile`` (compile a whole cell) and ``%tcompile f(x)`` (compile one call), with
torch.compile's own option names. ``%load_ext explorer`` registers them (``register``).

The cell form compiles the cell body as one function (see ``explorer.cell``) and hands it to
``compiler.run`` — the same path as ``compiler.explore``: compile, call under capture (so every
other torch.compile the cell triggers is captured too), time eager vs compiled (re-running the
cell body; ``--no-timing`` skips that), profile on CUDA. The names the cell assigns are written back
from the first compiled call. Errors never escape as a traceback: the capture records the stage
reached and the cause, and is shown with whatever was captured. An interrupt (Jupyter's stop button)
during the compile or timing keeps the capture too: it is shown, stored (``--name``) and saved
(``--save``), marked interrupted, and the cell ends with a one-line error so "run all" stops there.

This module only parses, calls ``compiler`` and shows: option values are checked by
``compiler.reference.options`` (its ``OptionError`` becomes a one-line ``UsageError``).
"""
from __future__ import annotations

import ast
import contextlib
import keyword
import re
import sys
import warnings
from dataclasses import dataclass

from IPython.core import magic_arguments
from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class

import compiler
from compiler.reference import options as compile_options
from compiler.reference.options import DYNAMIC, STANCES, OptionError
from compiler.capturing.run import CaptureInterrupted, has_cached_compiles
from compiler.analyses.whatif import target_function

from .cell import compile_cell, unquote
from .progress import Progress

COLD_HINT = "a cold Inductor compile on CPU takes ~15 s"


def register(ipython) -> None:
    """Register ``%tcompile`` / ``%%tcompile`` (called by ``%load_ext explorer``)."""
    ipython.register_magics(TcompileMagics)


@dataclass
class Options:
    compile_kwargs: dict  # passed to torch.compile
    recorded: dict  # what the capture records as its options (JSON-able)
    fresh: bool = True  # cache-free unless --cached
    timing: bool = True
    repeat: int = 15
    stance: str | None = None
    name: str | None = None
    save: str | None = None
    fix: bool = False  # --fix: try the proposed fixes after the capture


@magics_class
class TcompileMagics(Magics):
    @magic_arguments.magic_arguments()
    @magic_arguments.kwds(epilog=(
        "Cell form: the cell body is compiled as one function; names it reads from the notebook are "
        "its parameters, names it assigns are written back after the call (not when the cell fails). "
        "Timing re-runs the whole cell body, eager and compiled, many times (output discarded, tensor "
        "inputs copied): use --no-timing for cells with side effects. "
        "Line form: %tcompile [options] f(args) compiles f, calls it on args (after torch._dynamo.reset(); "
        "with --stance fail_on_recompile, no reset: f's earlier compile is reused and a recompile fails). "
        "Graph-break and FX line numbers count the %%tcompile line as line 1, as in the notebook."))
    @magic_arguments.argument("--backend", default="inductor",
                              help="torch.compile backend: a registered name (torch._dynamo.list_backends) "
                                   "or a callable in the notebook. Default: inductor")
    @magic_arguments.argument("--mode", default=None,
                              help="torch.compile mode: default, reduce-overhead, max-autotune, "
                                   "max-autotune-no-cudagraphs")
    @magic_arguments.argument("--dynamic", choices=sorted(DYNAMIC), default="auto",
                              help="dynamic shapes: true, false, or auto (torch.compile's dynamic=None)")
    @magic_arguments.argument("--fullgraph", action="store_true",
                              help="fail on the first graph break instead of splitting the graph")
    @magic_arguments.argument("--options", default=None, metavar="DICT",
                              help="Inductor options as a JSON or Python dict, quoted: --options '{\"max_autotune\": True}'")
    @magic_arguments.argument("--cached", dest="fresh", action="store_false", default=True,
                              help="let Inductor/AOTAutograd use their caches (faster recompiles, but a cache hit "
                                   "skips lowering and fusion, so the IR before/after fusion is missing). Default: "
                                   "cache-free, every Inductor stage is captured")
    @magic_arguments.argument("--fresh", dest="fresh", action="store_true", default=True,
                              help="cache-free compile: the default (kept so older notebooks still run)")
    @magic_arguments.argument("--no-timing", dest="timing", action="store_false",
                              help="do not time eager vs compiled (timing re-runs the code)")
    @magic_arguments.argument("--repeat", type=int, default=15, metavar="N",
                              help="timing samples per variant (default 15)")
    @magic_arguments.argument("--stance", choices=STANCES, default=None,
                              help="run under torch.compiler.set_stance(NAME)")
    @magic_arguments.argument("--name", default=None, metavar="VAR",
                              help="store the Capture in the notebook variable VAR")
    @magic_arguments.argument("--compare", default=None, metavar="SPEC",
                              help="compile the cell once per configuration and compare them side by side: "
                                   "'mode=default,reduce-overhead,max-autotune', 'backend=eager,aot_eager,inductor', "
                                   "'dynamic=true,false', 'options={\"epilogue_fusion\": False}'; axes joined by ';' "
                                   "give every combination (cell form only)")
    @magic_arguments.argument("--save", default=None, metavar="PATH",
                              help="save the Capture as JSON to PATH (compiler.load reads it back)")
    @magic_arguments.argument("--load", default=None, metavar="PATH",
                              help="show a TORCH_TRACE log, a job directory (per-rank logs or saved captures) or a "
                                   "saved capture instead of compiling (line form: %%tcompile --load PATH)")
    @magic_arguments.argument("--sources", default="trace", choices=("trace", "local"),
                              help="with --load: trace (default) reads no local file the log names; local reads "
                                   "the source files it names from this machine (regular .py files, size-capped)")
    @magic_arguments.argument("--fix", action="store_true",
                              help="after the capture, try each proposed fix (re-running the cell or call once per "
                                   "fix, compiled with the change) and show the measured before → after in Fixes")
    @line_cell_magic
    def tcompile(self, line, cell=None):
        """Capture every stage of torch.compile for a cell (%%tcompile) or one call (%tcompile f(x))."""
        option_text, rest = split_line(line)
        args = magic_arguments.parse_argstring(self.tcompile, option_text)
        opts = parse_options(args, self.shell.user_ns)
        if args.load is not None:
            return load_path(self.shell, args.load, opts, cell, rest, args.sources)
        if args.compare is not None:
            if cell is None:
                raise UsageError("--compare works on a cell: %%tcompile --compare SPEC")
            from .compare_magic import run_compare

            return run_compare(self.shell, args.compare, cell, opts)
        if cell is None:
            return run_line(self.shell, opts, rest)
        if rest:
            raise UsageError(f"unrecognized arguments: {rest} (%%tcompile takes only options; the cell is the code)")
        return run_cell(self.shell, opts, cell)


def load_path(shell, path: str, opts, cell, rest, sources: str = "trace"):
    """``%tcompile --load PATH [--name VAR]``: show what a job left behind (``explorer.show_path``)."""
    if cell is not None or rest:
        raise UsageError("--load shows a file or directory: %tcompile --load PATH (no cell, no call)")
    from compiler.readers.job import TraceError
    from compiler.stages.schema import CaptureFormatError

    from .job_widget import show_path

    from compiler.stages.files import shown_text

    path = unquote(path)
    if not path.strip():
        raise UsageError("--load needs a path: %tcompile --load PATH (a TORCH_TRACE log, a job directory or a "
                         "saved capture)")
    try:
        loaded = show_path(path, sources=sources)
    except (TraceError, CaptureFormatError) as exc:
        raise UsageError(shown_text(" ".join(f"--load: {exc}".split()))) from None
    except Exception as exc:  # noqa: BLE001 — whatever a shared file does, the user gets one line, not a traceback
        raise UsageError(shown_text(" ".join(f"--load: {path}: {type(exc).__name__}: {exc}".split()))) from None
    if opts.name:
        shell.user_ns[opts.name] = loaded


TcompileMagics.tcompile.parser.allow_abbrev = False  # options are split from EXPR by their full names


# --- options ------------------------------------------------------------------------------------

_WORD = r"""(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|\S+)"""  # a quoted string, or up to a space
_OPTION = re.compile(rf"\s*(--?[\w-]+)(={_WORD})?")
_VALUE = re.compile(rf"\s*{_WORD}")
_TAKES_VALUE = {"--backend", "--mode", "--dynamic", "--options", "--repeat", "--stance", "--name", "--save",
                "--compare", "--load", "--sources"}


def split_line(line: str) -> tuple[str, str]:
    """``--fullgraph --name=c f(x, "a b")`` → (``--fullgraph --name c``, ``f(x, "a b")``): the options
    (``--opt=value`` spelled ``--opt value``, which IPython's splitter keeps whole when quoted), and the rest."""
    pos, words = 0, []
    while match := _OPTION.match(line, pos):
        pos = match.end()
        name, attached = match.group(1), match.group(2)
        words.append(name)
        if attached:
            words.append(attached[1:])
        elif name in _TAKES_VALUE and (value := _VALUE.match(line, pos)):
            words.append(value.group().strip())
            pos = value.end()
    return " ".join(words), line[pos:].strip()


def parse_options(args, namespace: dict) -> Options:
    """Validate parsed magic arguments (``compiler.reference.options``); a bad value raises a one-line
    UsageError naming the option."""
    if args.repeat < 1:
        raise UsageError(f"--repeat must be at least 1, got {args.repeat}")
    if args.name is not None and (not args.name.isidentifier() or keyword.iskeyword(args.name)):
        raise UsageError(f"--name must be a Python identifier that is not a keyword, got {args.name!r}")
    try:
        options = (compile_options.check_inductor_options(compile_options.parse_dict(unquote(args.options)))
                   if args.options is not None else {})
        compile_options.check_mode_and_options(args.mode, options)
        kwargs = {"backend": compile_options.check_backend(args.backend, namespace),
                  "dynamic": compile_options.check_dynamic(args.dynamic), "fullgraph": args.fullgraph}
        if args.mode is not None:
            kwargs["mode"] = compile_options.check_mode(args.mode)
        stance = compile_options.check_stance(args.stance)
    except OptionError as exc:
        raise UsageError(f"--{exc}") from None
    if options:
        kwargs["options"] = options
    return Options(kwargs, {"backend": args.backend}, fresh=args.fresh, timing=args.timing, repeat=args.repeat,
                   stance=stance, name=args.name, save=unquote(args.save) if args.save else None,
                   fix=getattr(args, "fix", False))


# --- the cell form ------------------------------------------------------------------------------

def run_cell(shell, opts: Options, cell: str):
    """Compile and run the cell through ``compiler.run``; write its names back from the first
    compiled call; return its last value."""
    namespace = shell.user_ns
    recorded = {**opts.recorded, "magic": "%%tcompile"}
    check_stance = opts.stance == "fail_on_recompile"
    try:
        compiled_cell = compile_cell(cell, namespace, reuse=check_stance)
    except SyntaxError as exc:
        line = (exc.text or "").strip()
        cap = compiler.Capture.from_error(exc, stage="parsing the cell (before any compile)", options=recorded,
                                          message=f"{exc.msg} (line {exc.lineno}" + (f": {line})" if line else ")"))
        finish(shell, cap, opts, wrote_back=False)
        return None
    check_name(opts.name, [*compiled_cell.reads, *compiled_cell.outputs], "the cell")
    if check_stance:
        refuse_fail_on_recompile(compiled_cell)
    cap = run(shell, opts, compiled_cell.fn, compiled_cell.arguments(namespace), {}, recorded, reset=False)
    # interrupted while timing: the first compiled call completed, so the cell's names are written back
    ran = cap.error is None or (cap.interrupted and "first compiled call completed" in cap.error.message)
    value = compiled_cell.write_back(namespace, cap.live.result) if ran else None
    try_fixes(shell, cap, opts)
    finish(shell, cap, opts, wrote_back=ran)
    return value


def check_name(name: str | None, used: list[str], where: str) -> None:
    """--name must not overwrite a name the compiled code reads or assigns."""
    if name and name in used:
        raise UsageError(f"--name {name}: {where} uses {name!r}, and storing the capture there would overwrite "
                         "it; choose another name")


def refuse_fail_on_recompile(compiled_cell) -> None:
    """``fail_on_recompile`` forbids every compile, also a frame's first: it only works on a re-run of a
    cell whose compile torch still holds (same text, same inputs)."""
    if not compiled_cell.reused:
        raise UsageError("--stance fail_on_recompile: this cell has not been compiled yet, and the stance forbids "
                         "any compile, also the first one — run it once without --stance, then re-run it with "
                         "--stance fail_on_recompile to check that it does not recompile")
    if not has_cached_compiles(compiled_cell.fn):
        raise UsageError("--stance fail_on_recompile: torch no longer holds this cell's compile (Dynamo's caches "
                         "were reset since, e.g. by %tcompile f(x)) — run it once without --stance first")


def refuse_fail_on_recompile_call(fn, expr: str) -> None:
    """The line form's ``fail_on_recompile``: only when torch holds a compile of this very function."""
    target = target_function(fn)
    if not has_cached_compiles(target):
        name = getattr(target, "__qualname__", None) or expr.split("(")[0].strip()
        raise UsageError(f"--stance fail_on_recompile: torch holds no compile of {name} (not compiled yet, or "
                         "Dynamo's caches were reset since), and the stance forbids any compile, also the first "
                         f"one — run %tcompile {expr} once without --stance, then re-run it with --stance "
                         "fail_on_recompile to check that it does not recompile")


def run(shell, opts: Options, fn, args, kwargs, recorded: dict, *, reset: bool):
    """``compiler.run`` with the magic's options, under a progress display; torch.compile rejecting
    its arguments becomes the capture's error."""
    with Progress(shell, _progress_text(opts)) as progress, warnings.catch_warnings():
        # cache-free is the default here, so torch's note that it also turns PGO off is noise
        warnings.filterwarnings("ignore", message="dynamo_pgo force disabled")
        try:
            return compiler.run(fn, args, kwargs, compile_kwargs=opts.compile_kwargs, fresh=opts.fresh,
                                timing=True if opts.timing else "timing was turned off (--no-timing)",
                                repeat=opts.repeat, stance=opts.stance, errors="return", reset=reset,
                                options=recorded, progress=progress.set)
        except CaptureInterrupted as interrupt:  # kept, shown and named like any capture
            return interrupt.capture
        except Exception as exc:  # noqa: BLE001 — shown as the capture's error, in one line
            return compiler.Capture.from_error(exc, stage="torch.compile arguments (before compiling)",
                                               options=recorded)


# --- the line form ------------------------------------------------------------------------------

def run_line(shell, opts: Options, expr: str):
    """``%tcompile f(x)``: compile f with the options, call it on the evaluated args, show the capture."""
    fn, args, kwargs = evaluate_call(expr, shell.user_ns)
    if not callable(fn):
        raise UsageError(f"%tcompile: {expr.split('(')[0].strip()} is {type(fn).__name__} {_short(fn)}, not a "
                         "function or module: nothing to compile")
    check_name(opts.name, sorted({n.id for n in ast.walk(ast.parse(expr, mode="eval")) if isinstance(n, ast.Name)}),
               "the call")
    # fail_on_recompile checks that a re-run reuses the earlier compile: no reset, or there is none to reuse
    check_stance = opts.stance == "fail_on_recompile"
    if check_stance:
        refuse_fail_on_recompile_call(fn, expr)
    cap = run(shell, opts, fn, args, kwargs, {**opts.recorded, "magic": "%tcompile"}, reset=not check_stance)
    try_fixes(shell, cap, opts)
    finish(shell, cap, opts, wrote_back=None)
    return None


def evaluate_call(expr: str, namespace: dict):
    """``f(x, *ys, k=v)`` evaluated in the notebook namespace → (f, args, kwargs)."""
    if not expr:
        raise UsageError("%tcompile needs a call to compile, e.g. %tcompile --fullgraph f(x)")
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as exc:
        raise UsageError(f"%tcompile: not a Python expression: {expr!r} ({exc.msg})") from None
    call = tree.body
    if not isinstance(call, ast.Call):
        raise UsageError(f"%tcompile: EXPR must be a call like f(x, y), got {expr!r}")
    packer = ast.Call(func=ast.Name("_tcompile_pack", ast.Load()), args=[call.func, *call.args],
                      keywords=call.keywords)
    code = compile(ast.fix_missing_locations(ast.Expression(ast.copy_location(packer, call))), "<tcompile>", "eval")
    try:
        return eval(code, namespace, {"_tcompile_pack": lambda f, *a, **k: (f, a, k)})
    except Exception as exc:  # noqa: BLE001 — the user's expression: one line, no traceback
        raise UsageError(f"%tcompile: could not evaluate {expr!r}: {type(exc).__name__}: {exc}") from None


# --- shared: progress, finishing ----------------------------------------------------------------

def try_fixes(shell, cap, opts: Options) -> None:
    """--fix: try the capture's applicable fixes (``Capture.try_fixes``) under the progress display; a
    failure or an interrupt keeps what finished and is said in one line."""
    if not opts.fix or cap.error is not None or cap.live is None:
        return
    if not any(f.applicable for f in cap.fixes()):
        return
    backend = opts.compile_kwargs.get("backend")
    overrides = {"backend": backend} if backend is not None and not isinstance(backend, str) else None
    with Progress(shell, "trying the proposed fixes") as progress:
        try:
            cap.try_fixes(compile_kwargs=overrides,
                          progress=lambda done, total, text: progress.set(f"{text} ({done} of {total} done)"))
        except KeyboardInterrupt:
            print("tcompile --fix: interrupted; the fixes tried so far keep their results", file=sys.stderr)
        except Exception as exc:  # noqa: BLE001 — the capture is still shown
            print(f"tcompile --fix: {type(exc).__name__}: {exc}", file=sys.stderr)


def finish(shell, cap, opts: Options, *, wrote_back) -> None:
    """Store (--name), save (--save), report an error in one line, and show the capture. An
    interrupted capture is shown too, then the cell ends as failed (a UsageError line, no traceback),
    so a "run all" stops there as after any interrupt."""
    if opts.name:
        shell.user_ns[opts.name] = cap
    if opts.save:
        try:
            cap.save(opts.save)
        except OSError as exc:
            print(f"tcompile: --save {opts.save}: {exc}", file=sys.stderr)
    if cap.error and not cap.interrupted:
        print(error_line(cap.error, wrote_back, bool(cap.compiles)), file=sys.stderr)
    show(cap, cap.live.compiled_fn if cap.live else None, shell.user_ns, opts.name)
    if cap.interrupted:
        raise UsageError(error_line(cap.error, wrote_back, bool(cap.compiles)))


def error_line(error, wrote_back, captured: bool) -> str:
    """One line for the capture's error (``compiler.stages.schema.CaptureError``)."""
    if error.type == "KeyboardInterrupt":
        return (f"tcompile: {error.stage}: {error.message}"
                + ("; the cell's names were written back" if wrote_back else
                   " — nothing was written back to the notebook" if wrote_back is False else "")
                + ("; the stages captured so far are shown below." if captured else "; nothing was compiled."))
    message = (error.message or "").strip().splitlines()
    text = f"tcompile: {error.type} in {error.stage}: {message[0] if message else ''}"
    if error.cause:
        text += f" (cause: {error.cause.splitlines()[0]})"
    if wrote_back is False:
        text += " — nothing was written back to the notebook"
    return text + ("; the stages captured so far are shown below." if captured else ".")


def show(cap, fn, namespace: dict, name: str | None) -> None:
    """Display the capture with ``explorer.show``; never let a display failure raise."""
    import explorer.widget as widget  # read at call time: tests replace explorer.widget.show

    try:
        widget.show(cap, fn=fn, namespace=namespace)
    except Exception as exc:  # noqa: BLE001
        where = f" (it is in {name})" if name else " (use --name VAR to keep it)"
        print(f"tcompile: the explorer could not display the capture: {type(exc).__name__}: {exc}{where}",
              file=sys.stderr)


def _short(value) -> str:
    text = repr(value)
    return f"({text[:60]}…)" if len(text) > 60 else f"({text})"


def _progress_text(opts: Options) -> str:
    backend = opts.recorded["backend"]
    hint = f" ({COLD_HINT})" if backend == "inductor" else ""
    return f"compiling with backend={backend}{hint}"
