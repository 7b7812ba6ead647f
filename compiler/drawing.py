"""How captures draw, without compiler/ knowing any view: the arrow runs one way, explorer → compiler.

The explorer package registers its renderers here when it is imported (``register``). A capture shown
in Jupyter before anything imported explorer finds it through the ``tcompile.drawing`` entry point
(declared in pyproject.toml), so ``_repr_html_`` draws the same either way; with no renderer at all
(explorer not installed) it falls back to escaped text.

Names: ``stage`` (one Stage), ``compile`` (one Compile), ``capture`` (a whole Capture, static HTML),
``job`` (a Job), ``report`` (``(capture_or_job, path) → path``: the standalone HTML file) and
``report_page`` (the same page as a string).
"""
from __future__ import annotations

import html
import sys
from collections.abc import Callable
from importlib.metadata import entry_points

ENTRY_POINT_GROUP = "tcompile.drawing"
_RENDERERS: dict[str, Callable] = {}
_loaded_entry_points = False


def register(name: str, renderer: Callable) -> None:
    _RENDERERS[name] = renderer


def renderer(name: str) -> Callable | None:
    """The registered renderer, loading the installed drawing packages the first time one is missing."""
    global _loaded_entry_points
    if name not in _RENDERERS and not _loaded_entry_points:
        _loaded_entry_points = True
        for entry in entry_points(group=ENTRY_POINT_GROUP):
            try:
                entry.load()
            except ImportError:
                pass  # a drawing package that cannot import (no IPython, …): text it is
    return _RENDERERS.get(name)


def draw(name: str, obj, text: Callable[[], str]) -> str:
    """``obj`` as HTML by the ``name`` renderer, or its ``text()`` escaped in a <pre> where none is installed."""
    render = renderer(name)
    if render is None:
        return f'<pre style="white-space: pre-wrap">{html.escape(text())}</pre>'
    return render(obj)


def in_jupyter_kernel() -> bool:
    """Running in a Jupyter kernel? (Without importing IPython: only asking whether it is there.) A live view
    (``compiler.watch``'s panel) shows itself there."""
    ipython = sys.modules.get("IPython")
    if ipython is None or "ipykernel" not in sys.modules:
        return False
    try:
        shell = ipython.get_ipython()
    except Exception:  # noqa: BLE001
        return False
    return shell is not None and getattr(shell, "kernel", None) is not None
