"""A distributed job in the notebook: the ranks overview (divergences first) and, below it, the full
``Explorer`` of the rank picked in a dropdown (built when first picked); and ``show_path``, what
``%tcompile --load PATH`` shows for a trace file, a job directory or a saved capture."""
from __future__ import annotations

import ipywidgets as widgets

from .html import style_tag
from .page import render_static, summary_text
from .job_view import render_job, render_job_overview, render_trace_problems
from .widget import Explorer, show


class JobExplorer(widgets.VBox):
    """The ranks of a ``compiler.readers.job.Job``: overview first, then one rank's explorer."""

    def __init__(self, job, rank: int | None = None, defer_tables: bool = False):
        self.job = job
        self.overview = widgets.HTML(str(render_job_overview(job)))
        # the rank that did it first: an event's (with its step) leads its groups; a comparison's majority leads
        first_odd = next(((d.groups[0] if d.step is not None else d.groups[-1])[0] for d in job.divergences
                          if len(d.groups) > 1), None)
        start = rank if rank is not None else (first_odd if first_odd is not None else job.ranks[0])
        self.selector = widgets.Dropdown(options=[(f"rank {r}", r) for r in job.ranks], value=start,
                                         description="Rank:")
        self.holder = widgets.VBox()
        self._explorers: dict[int, Explorer] = {}
        # ``defer_tables``: the first rank's big tables stay their first page until ``finish_tables`` (``show_job``
        # calls it once the explorer is on screen), like ``Explorer``'s
        self.defer_tables = defer_tables
        self.selector.observe(lambda _: self.refresh(), names="value")
        super().__init__([widgets.HTML(style_tag()), self.overview, self.selector, self.holder])
        self.add_class("tc-explorer")
        self.refresh()

    @property
    def explorer(self) -> Explorer:
        """The explorer of the selected rank."""
        rank = self.selector.value
        if rank not in self._explorers:
            self._explorers[rank] = Explorer(self.job.captures[rank], static_html=False, defer_tables=self.defer_tables)
        return self._explorers[rank]

    def refresh(self) -> None:
        self.holder.children = [self.explorer]
        if not self.defer_tables:
            self.finish_tables()

    def finish_tables(self) -> None:
        """The shown rank's big tables as itables widgets (``Explorer.finish_tables``); later ranks' at once."""
        self.defer_tables = False
        self.explorer.finish_tables()

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        return {**bundle, "text/plain": self.job.as_text()}


class StaticJob:
    """The job's static rendering as an output of its own, shown where the widget is not (a saved
    notebook reopened without its kernel, nbconvert), like ``explorer.widget.StaticFallback``: it hides
    the widget's own "Error displaying widget" output and stays under 1 MB."""

    def __init__(self, job):
        self.job = job

    def _repr_mimebundle_(self, **kwargs):
        return {"text/html": render_job(self.job, fallback=True), "text/plain": self.job.as_text()}


def show_job(job, rank: int | None = None) -> None:
    from IPython.display import display

    explorer = JobExplorer(job, rank=rank, defer_tables=True)
    display(explorer)
    display(StaticJob(job))
    explorer.finish_tables()  # after the explorer shows (pandas, for itables, takes ~1 s to import)


class _TraceProblems:
    def __init__(self, capture):
        self.capture = capture

    def _repr_mimebundle_(self, **kwargs):
        return {"text/html": str(render_trace_problems(self.capture)), "text/plain": summary_text(self.capture)}


def show_path(path, strict: bool = False, sources: str = "trace"):
    """Load a TORCH_TRACE log, a job directory (per-rank logs or saved captures) or a saved capture,
    and show it (what ``%tcompile --load PATH`` does). Returns the Capture or Job. A log's source
    files are read from this machine only with ``sources="local"`` (``--sources local``)."""
    from IPython.display import display

    from compiler.readers.job import Job, load_trace

    loaded = load_trace(path, strict=strict, sources=sources)
    if isinstance(loaded, Job):
        show_job(loaded)
    else:
        if loaded.trace is not None and loaded.trace.problems:
            display(_TraceProblems(loaded))
        show(loaded)
    return loaded


__all__ = ["JobExplorer", "render_static", "show_job", "show_path"]
