"""tcompile's explorer: draws a ``compiler.Capture`` — as an ipywidgets explorer in Jupyter, or as
static HTML where widgets cannot run.

    import compiler, explorer
    cap = compiler.explore(fn, x)
    explorer.show(cap, fn)          # the widget
    html = explorer.render_static(cap)
    explorer.show_path("trace_dir/")  # a TORCH_TRACE log, a job directory or a saved capture

``%load_ext explorer`` registers the ``%%tcompile`` magics.
"""
from .compare_widget import CompareExplorer, show_comparison
from .page import render_static, summary_text
from .job_view import render_job, report_page, write_report
from .job_widget import JobExplorer, show_job, show_path
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


__all__ = ["CompareExplorer", "Explorer", "JobExplorer", "render_job", "show_job", "show_path", "write_report", "VIEWS", "dataframes", "load_ipython_extension", "render_static", "render_view", "show",
           "show_comparison", "summary_text"]


def _register_drawing() -> None:
    """Tell compiler/ how its objects draw (``compiler.drawing``): compiler never imports explorer."""
    from compiler import drawing

    from .job_view import display_job
    from .page import display_capture, display_compile, display_stage
    from .watch_panel import render_watch_html, show_watch_panel

    # a cell's value renders at most 1 MB (explorer.page.DISPLAY_BYTES): the rest is named, not drawn
    for name, renderer in (("stage", display_stage), ("compile", display_compile), ("capture", display_capture),
                           ("job", display_job), ("report", write_report),
                           ("report_page", report_page), ("watch_panel", show_watch_panel),
                           ("watch", render_watch_html)):
        drawing.register(name, renderer)


_register_drawing()
