"""The error box shown above every view when the capture (or the selected compile) failed."""
from __future__ import annotations

from ..html import details, join, key_values, note, preformatted, shorten, tag


def _capture_error(error: dict):
    return note(
        tag("strong", f"{error.get('type')} in {error.get('stage') or 'an unknown stage'}: "),
        preformatted(shorten(error.get("message"), 1200), cls="tc-pre tc-message"),
        key_values([("cause", error.get("cause")), ("compile", error.get("compile_id")),
                    ("last trace record", error.get("last_record"))]),
        details("traceback", preformatted(error.get("traceback"))) if error.get("traceback") else None,
        kind="error")


def _compile_error(compile):
    error = compile.error
    where = f" at {error.get('file')}:{error.get('line')}" if error.get("file") else ""
    return note(tag("strong", f"Compile {compile.compile_id} failed{where}: "),
                preformatted(f"{error.get('type')}: {shorten(error.get('message'), 1200)}", cls="tc-pre tc-message"),
                kind="error")


def render_error(capture, compile) -> str:
    """Empty when nothing failed."""
    return join([_capture_error(capture.error) if capture.error else None,
                 _compile_error(compile) if compile is not None and compile.error else None])
