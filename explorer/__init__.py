"""tcompile's explorer: draws a ``compiler.Capture`` — as an ipywidgets explorer in Jupyter, or as
static HTML where widgets cannot run.

    import compiler, explorer
    cap = compiler.explore(fn, x)
    explorer.show(cap, fn)          # the widget
    html = explorer.render_static(cap)

``%load_ext explorer`` registers the ``%%tcompile`` magics.
"""
from .compare_widget import CompareExplorer, show_comparison
from .html import render_static, summary_text
from .views import VIEWS, dataframes, render_view
from .widget import Explorer, show


def load_ipython_extension(ipython) -> None:
    """``%load_ext explorer``: register tcompile's magics (from ``explorer.magics``)."""
    try:
        from . import magics
    except ImportError as exc:
        if exc.name not in (f"{__name__}.magics", "magics"):
            raise
        raise ImportError("tcompile's magics are not installed: explorer/magics.py is missing, so "
                          "%load_ext explorer cannot register %%tcompile") from exc
    magics.register(ipython)


__all__ = ["CompareExplorer", "Explorer", "VIEWS", "dataframes", "load_ipython_extension", "render_static", "render_view", "show",
           "show_comparison", "summary_text"]
