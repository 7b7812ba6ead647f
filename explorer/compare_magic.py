"""``%%tcompile --compare SPEC``: compile the cell once per configuration and show the comparison.

    %%tcompile --compare "mode=default,reduce-overhead,max-autotune"
    y = model(x)

The cell becomes a function the way ``%%tcompile`` makes it (``explorer.cell.compile_cell``); the
other ``%%tcompile`` options (``--backend``, ``--mode``, ``--dynamic``, ``--no-timing``, ``--repeat``,
``--stance``, ``--name``, ``--save`` …) apply to every configuration, the SPEC's keys win; every
configuration compiles fresh (caches off). Each configuration runs
the cell through ``compiler.run`` on copies of its tensor inputs: once under capture and, for
timing, many more times (output discarded);
finally the cell runs once in plain Python, so its output shows and the names it assigns are
written back to the notebook as after a normal run. An interrupt keeps and shows the finished
configurations and the interrupted one's partial capture (``--name``/``--save`` still apply), skips
the final run, and ends the cell with a one-line error.
"""
from __future__ import annotations

import contextlib
import io
import sys
import warnings

from IPython.core.error import UsageError

from .cell import compile_cell, unquote
from .progress import Progress


def _base(base_args) -> dict:
    """The options every configuration shares, from the magic's parsed ``Options`` (or a dict)."""
    defaults = {"compile_kwargs": {}, "timing": True, "repeat": 15, "stance": None, "name": None, "save": None}
    if base_args is None or isinstance(base_args, dict):
        return {**defaults, **(base_args or {})}
    return {"compile_kwargs": dict(base_args.compile_kwargs), "timing": base_args.timing,
            "repeat": base_args.repeat, "stance": base_args.stance, "name": base_args.name, "save": base_args.save}


def run_compare(shell, spec: str, cell: str, base_args=None):
    """Run the comparison for ``%%tcompile --compare SPEC``; returns the cell's value (from the final
    plain run). ``base_args``: the magic's ``explorer.magics.Options`` (or a dict of the same fields).

    Every configuration compiles fresh (Inductor caches off), even with ``--cached``: with
    warm caches the later configurations would show cache hits, not compiles.
    """
    from compiler import compare, parse_compare_spec
    from compiler.analyses.compare import CompareInterrupted

    base = _base(base_args)
    spec = unquote(spec.strip())
    try:
        configs = parse_compare_spec(spec)
    except ValueError as exc:
        raise UsageError(f"--compare: {exc}") from None
    namespace = shell.user_ns
    try:
        compiled_cell = compile_cell(cell, namespace)
    except SyntaxError as exc:
        print(f"tcompile: the cell does not parse: {exc.msg} (line {exc.lineno})", file=sys.stderr)
        return None
    args = compiled_cell.arguments(namespace)
    common = dict(base["compile_kwargs"])
    if base["stance"]:
        common["stance"] = base["stance"]
    with Progress(shell, f"comparing {len(configs)} configurations") as progress:
        def report(index, total, label):
            progress.set(label if index < 0 else f"configuration {index + 1}/{total}: {label}")

        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
                warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="tcompile: the machine was busy")  # said below, in one line
            try:
                comparison = compare(compiled_cell.fn, *args, configs=configs, fresh=True, timing=base["timing"],
                                     repeat=base["repeat"], progress=report, spec=spec,
                                     magic="%%tcompile --compare", **common)
            except CompareInterrupted as interrupt:  # kept, named, saved and shown like a finished one
                comparison = interrupt.comparison
    interrupted = comparison.interrupted
    # interrupted: the cell's final plain run is skipped, so nothing is written back
    value = None if interrupted else compiled_cell.write_back(namespace, compiled_cell.fn(*args))
    if base["name"]:
        namespace[base["name"]] = comparison
    if base["save"]:
        try:
            comparison.save(base["save"])
        except OSError as exc:
            print(f"tcompile: --save {base['save']}: {exc}", file=sys.stderr)
    busy = [row.label for row in comparison.rows() if any("machine was busy" in n for n in row.notes)]
    if busy:
        print(f"tcompile: the machine was busy while timing {', '.join(busy)}: the runtimes and speedups are noisy "
              "(other processes share the CPU); compare again when it is idle", file=sys.stderr)
    show(comparison)
    if interrupted:  # the cell ends as failed, in one line, so a "run all" stops here as after any interrupt
        kept = interrupted.finished + [e.label for e in comparison.entries if e.interrupted]
        raise UsageError(f"tcompile --compare: interrupted (KeyboardInterrupt) during {interrupted.during}; "
                         f"shown below: {'; '.join(kept) if kept else 'no configuration'}"
                         + (" (the last one partial)" if any(e.interrupted for e in comparison.entries) else "")
                         + (f"; not run: {'; '.join(interrupted.not_run)}" if interrupted.not_run else "")
                         + " — nothing was written back to the notebook")
    return value


def show(comparison) -> None:
    """Display the compare widget; never let a display failure raise."""
    try:
        from .compare_widget import show_comparison

        show_comparison(comparison)
    except Exception as exc:  # noqa: BLE001
        print(comparison.as_text())
        print(f"tcompile: the compare widget could not be displayed: {type(exc).__name__}: {exc}", file=sys.stderr)
