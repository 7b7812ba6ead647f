"""Scripts made from findings: a kernel's reproducer (in Generated code), the minified failing compile (under the
error) and the bisected drift (in the Overview) — each drawn from what the capture holds, live or loaded."""
from __future__ import annotations

import base64

from compiler.analyses.repro import captured_time

from ..html import code, code_block, details, join, key_values, para, preformatted, table, tag

DOWNLOAD_LIMIT = 400_000  # characters of a script carried in the page as a download link


def _download(text: str, name: str, label: str):
    if len(text) > DOWNLOAD_LIMIT:
        return para(f"{name}: {len(text) / 1e6:.1f} MB, too large to carry in this page — write it with "
                    "kernel.reproducer().save(path) or python -m compiler repro CAPTURE KERNEL -o FILE.", cls="tc-muted")
    href = "data:text/x-python;base64," + base64.b64encode(text.encode()).decode()
    return para(tag("a", label, href=href, download=name, cls="tc-download"), cls="tc-repro-link")


def reproducer_section(compile):
    """One reproducer script per Inductor run of the compile (its module), any kernel of it by ``--kernel``."""
    if not compile.inductor.available:
        return None
    parts = []
    for run in compile.inductor.runs:
        kernels = [k for k in run.code.kernels if k.language != "extern"] or list(run.code.kernels)
        if not run.code.available or not kernels:
            continue
        first = kernels[0].reproducer()
        role = run.role or "inference"
        name = f"repro_{compile.compile_id.replace('/', '_')}_{role}.py"
        rows = []
        for k in run.code.kernels:
            us, _ = captured_time(k, compile)
            rows.append([code(k.name), k.language, f"{us:.2f} µs" if us else "–",
                         code(f"python {name}" + ("" if k is kernels[0] else f" --kernel {k.name}"))])
        parts += [_download(first.text, name, f"⤓ Download {name}"),
                  table(["kernel", "language", "captured / launch", "run it"], rows, cls="tc-wrap-first"),
                  para("What it cannot rebuild: " + "; ".join(first.notes), cls="tc-muted") if first.notes else None,
                  details(f"The script ({role}; Inductor's module left out here, whole in the download)",
                          code_block(first.shown_text(), "python"))]
    if not parts:
        return None
    return details("Kernel reproducers — a standalone script per graph: rebuilds a kernel's arguments from Inductor's "
                   "module (get_args/call), launches it alone, checks its outputs, times it against the captured time",
                   *parts, cls="tc-reproducers")


def minified_section(capture):
    """torch's minifier's answer for the failing compile (``cap.minify()``)."""
    found = getattr(capture, "minified", None)
    if found is None:
        return None
    if not found.available:
        return para(f"Minifier: {found.reason}", cls="tc-muted")
    return details(f"Minimal failing graph (torch's minifier): {found.nodes_before} → {found.nodes_after} nodes — "
                   f"{', '.join(found.ops) or 'no ops'}",
                   key_values([("failure", found.error), ("repro_after", found.after), ("run it", found.command),
                               ("took", f"{found.seconds:.0f} s" if found.seconds else None),
                               ("stopped", found.stopped)]),
                   code_block(found.graph, "python"),
                   _download(found.repro or "", "repro.py", "⤓ Download repro.py (the minimal graph, runnable)")
                   if found.repro else None,
                   _download(found.launcher or "", "minifier_launcher.py", "⤓ Download minifier_launcher.py")
                   if found.launcher else None,
                   open=True, cls="tc-minified")


def bisection_section(capture):
    """torch's CompilerBisector's answer for the drift (``cap.bisect_drift()``)."""
    found = getattr(capture, "drift_bisection", None)
    if found is None:
        return None
    if not found.available:
        return para(f"Drift bisection: {found.reason}", cls="tc-muted")
    return details(f"Drift bisected (CompilerBisector): {found.verdict}",
                   key_values([("backend", found.backend), ("subsystem", found.subsystem),
                               ("application", str(found.bisect_number) if found.bisect_number is not None else None),
                               ("pass", found.pass_name), ("difference", found.difference),
                               ("tolerance", found.tolerance), ("confirmed", found.confirmed),
                               ("reproduce", found.command),
                               ("checks", f"{found.checks} compiles in {found.seconds:.0f} s"
                                if found.checks is not None and found.seconds else None), ("stopped", found.stopped)]),
                   details("the bisector's log", preformatted("\n".join(found.log))) if found.log else None,
                   open=True, cls="tc-bisection")
