"""The error box shown above every view when the capture (or the selected compile) failed."""
from __future__ import annotations

from ..html import details, join, key_values, note, preformatted, shorten, tag


def _capture_error(error):
    """A ``CaptureError``: the exception that ended the captured block."""
    return note(
        tag("strong", f"{error.type} in {error.stage or 'an unknown stage'}: "),
        preformatted(shorten(error.message, 1200), cls="tc-pre tc-message"),
        key_values([("cause", error.cause), ("compile", error.compile_id), ("last trace record", error.last_record)]),
        details("traceback", preformatted(error.traceback)) if error.traceback else None,
        details("what torch logged", preformatted(error.logged)) if getattr(error, "logged", None) else None,
        kind="error")


def _compile_error(compile):
    error = compile.error
    where = f" at {error.file}:{error.line}" if error.file else ""
    return note(tag("strong", f"Compile {compile.compile_id} failed{where}: "),
                preformatted(f"{error.type}: {shorten(error.message, 1200)}", cls="tc-pre tc-message"),
                kind="error")


def render_error(capture, compile) -> str:
    """Empty when nothing failed; ``capture=None`` shows the compile's error alone."""
    from .repro import minified_section

    return join([_capture_error(capture.error) if capture is not None and capture.error else None,
                 _compile_error(compile) if compile is not None and compile.error else None,
                 minified_section(capture) if capture is not None else None])
