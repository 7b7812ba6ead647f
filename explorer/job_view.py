"""A distributed job (``compiler.readers.job.Job``) as HTML: the ranks overview with divergences first,
then every rank's full explorer (``render_static``), one ``<details>`` each; and standalone report
pages for the ``python -m compiler report`` CLI."""
from __future__ import annotations

from pathlib import Path

from .html import (LIST_PAGE, Html, badge, details, esc, heading, join, note, page_note, para, plural, seconds,
                   style_tag, table, tag)
from .page import DISPLAY_BYTES, FALLBACK_BYTES, REOPENED_CSS, notebook_bytes, render_static, summary_text, utf8_bytes
from .views.tables import datatables_script

SEVERITY_KIND = {"error": "error", "warning": "warn", "info": "info"}


def ranks_label(ranks) -> str:
    ranks = list(ranks)
    return f"{'Ranks' if len(ranks) != 1 else 'Rank'}: {', '.join(map(str, ranks))}"


def render_divergence(divergence) -> Html:
    """One divergence, the step it began in first — the job overview's (report, explorer) and the live panel's."""
    kind = SEVERITY_KIND.get(divergence.severity, "info")
    rows = [[ranks_label(group), behaviour] for group, behaviour in zip(divergence.groups, divergence.behaviours)]
    fix = getattr(divergence, "fix", None)
    parts = []
    if divergence.when:
        known = divergence.step is not None
        parts += [badge(divergence.when, "info" if known else "muted",
                        title="the step it began in, from the ranks' watch files (compiler.watch(job_dir=...))" if known
                        else "TORCH_TRACE logs carry no steps: compiler.watch(job_dir=...) in each rank records them"),
                  " "]
    parts += [tag("strong", divergence.kind.replace("_", " ")), " ", badge(divergence.severity, kind)]
    parts += [para(divergence.explanation)]
    if getattr(divergence, "guard", None):
        parts += [para("Guard that differs: ", tag("code", divergence.guard))]
    parts += [table(["ranks", "what they did"], rows)]
    if fix:
        parts += [para(tag("strong", "Fix: "), str(fix.get("title") or "")),
                  tag("pre", str(fix.get("snippet") or ""), cls="tc-pre")]
    return note(*parts, kind=kind)


def render_ranks_table(job) -> Html:
    rows = []
    for rank in job.ranks[:RANK_ROWS]:
        cap = job.captures[rank]
        s = cap.summary
        rows.append([str(rank), Path(job.files[rank]).name, str(s.compiles), str(s.graph_breaks), str(s.recompiles),
                     seconds(s.compile_time_s), cap.environment.get("torch") or "?"])
    return join([table(["rank", "file", "compiles", "graph breaks", "recompiles", "compile time", "torch"], rows),
                 page_note(len(job.ranks), 0, "ranks", per_page=RANK_ROWS, where="job.captures holds every one")])


RANK_ROWS = 500


def render_job_overview(job) -> Html:
    """Divergences first (what can hang the job), then what was skipped, then the ranks table."""
    parts = [heading(f"Job: {plural(len(job.captures), 'rank')} from {job.path}", 3)]
    parts += _comparison_summary(job)
    if job.problems:
        parts.append(details(f"{plural(len(job.problems), 'file problem')} (skipped or suspicious)",
                             _problem_list(job.problems, "job.problems")))
    parts.append(render_ranks_table(job))
    return tag("div", *parts, cls="tcompile tc-view")


def _comparison_summary(job) -> list[Html]:
    """What the divergences say, in words that claim no more than is known: a rank that could not be read
    (``unread_ranks``) is unknown, not different, and the other divergences compare only the ranks that loaded."""
    unread = [d for d in job.divergences if d.kind == "unread_ranks"]
    compared = [d for d in job.divergences if d.kind != "unread_ranks"]
    from compiler.readers.job import ranks_text

    loaded = ranks_text(job.ranks)
    alike = "same compile ids, recompiles, graph breaks" + (", cache pattern" if len(job.captures) > 1 else "")
    parts = []
    if unread:
        missing = unread[0].groups[-1]
        parts.append(para(f"{ranks_text(missing).capitalize()} could not be read: whether "
                          f"{'it' if len(missing) == 1 else 'they'} compiled like the others is unknown."))
        parts += [render_divergence(d) for d in unread]
    if compared:
        among = f"among the ranks that loaded ({loaded})" if unread else "across ranks"
        parts.append(para(f"{plural(len(compared), 'divergence')} {among} — "
                          f"{'they' if unread else 'the ranks'} did not compile the same way:"))
        parts += [render_divergence(d) for d in compared[:LIST_PAGE]]
        parts.append(page_note(len(compared), 0, "divergences", where="job.divergences holds every one"))
    elif unread and len(job.captures) > 1:
        parts.append(note(f"The ranks that loaded ({loaded}) compiled the same way: {alike}. The unread "
                          f"{'rank is' if len(unread[0].groups[-1]) == 1 else 'ranks are'} not part of this "
                          "comparison.", kind="info"))
    elif unread:
        parts.append(note(f"Only one rank loaded ({loaded}): there is no other rank to compare it with.",
                          kind="info"))
    else:
        parts.append(note(f"The ranks compiled the same way: {alike}.", kind="ok"))
    return parts


MIN_RANK_BYTES = 20_000  # under this share of the limit, a rank's explorer is named, not rendered


def render_job(job, fallback: bool = False, limit: int | None = None, *, measure=notebook_bytes,
               said: int | None = None) -> str:
    """The overview, then each rank's full explorer (static), as one HTML fragment. ``fallback=True``:
    the stand-in a rendered job widget hides (``explorer.page.REOPENED_CSS``), kept under
    ``FALLBACK_BYTES`` (or ``limit``) — the ranks share what the overview leaves; what does not fit is named.
    Bytes are counted where the page lands (``measure``); its notes name ``said`` (the whole file's limit), else
    the limit."""
    style, overview = style_tag(), render_job_overview(job)
    total = FALLBACK_BYTES if fallback and limit is None else limit
    said = said or total
    if total is not None:
        used = measure(str(style)) + measure(str(overview)) + measure(REOPENED_CSS) + 2_000
        limit = (total - used) // max(1, len(job.ranks))
    ranks = []
    for rank in job.ranks:
        title = f"Rank {rank} — {Path(job.files[rank]).name}"
        if limit is not None and limit < MIN_RANK_BYTES:
            body = note(f"Left out to keep this copy under {said / 1e6:.3g} MB ({len(job.ranks)} "
                        "ranks). The job widget (while the kernel runs) and the logs themselves, reopened with ",
                        tag("code", "%tcompile --load PATH"), ", hold every rank.", kind="muted")
        else:  # the page's stylesheet once, not once per rank
            body = Html(render_static(job.captures[rank], limit=limit, measure=measure, said=said)
                        .replace(str(style), "", 1))
        ranks.append(details(title, body, cls="tc-section"))
    about = para(f"A static copy of the job, kept under {said / 1e6:.3g} MB: each rank's sections that do "
                 "not fit are named, not shown. The job widget (while the kernel runs) and ",
                 tag("code", "%tcompile --load PATH"), " hold everything.", cls="tc-muted") if total else ""
    html = str(tag("div", style, about, overview, heading("Every rank's explorer", 3), *ranks,
                   cls="tcompile tc-static tc-fallback" if fallback else "tcompile tc-static"))
    return REOPENED_CSS + html if fallback else html


def display_job(job) -> str:
    """A job as a cell's value: the overview (divergences first) and the ranks, under
    ``explorer.page.DISPLAY_BYTES`` like the copy a notebook keeps."""
    return render_job(job, limit=DISPLAY_BYTES)


PROBLEMS_SHOWN = 200  # problems a page lists one by one; the rest are counted by kind


def _problem_list(problems, where: str) -> Html:
    from collections import Counter

    shown = problems[:PROBLEMS_SHOWN]
    rest = Counter(getattr(p, "kind", "problem") for p in problems[PROBLEMS_SHOWN:])
    return join([tag("ul", *(tag("li", str(p)) for p in shown)),
                 para(f"… and {len(problems) - len(shown):,} more (" + ", ".join(f"{k} ×{n:,}" for k, n in rest.items())
                      + f"): {where} holds every one.", cls="tc-muted") if rest else None])


def render_trace_problems(capture) -> Html:
    info = getattr(capture, "trace", None)
    if info is None or not info.problems:
        return Html("")
    return details(f"{plural(len(info.problems), 'problem')} reading {Path(info.file).name}",
                   _problem_list(info.problems, "cap.trace.problems"))


REPORT_BYTES = 10_000_000  # a report file stays under this, whatever it shows (its sections share what is left)


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title></head>
<body>
{body}
{tables}
</body></html>
"""


def report_page(obj, title: str | None = None) -> str:
    """A standalone HTML page (CSS and itables' DataTables inlined: works offline, no server) for a Capture
    or a Job; its big tables page, sort and search."""
    from compiler.readers.job import Job

    script = datatables_script()  # big tables page, sort and search, offline
    room = REPORT_BYTES - len(script.encode()) - len(PAGE) - 2_000
    if isinstance(obj, Job):
        title = title or f"tcompile job report — {obj.path}"
        body = render_job(obj, limit=room - len(esc(title).encode()), measure=utf8_bytes, said=REPORT_BYTES)
    else:
        title = title or "tcompile report"
        problems = render_trace_problems(obj)
        body = join([problems, Html(render_static(obj, limit=room - len(problems.encode()) - len(esc(title).encode()),
                                                  measure=utf8_bytes, said=REPORT_BYTES))])
    page = PAGE.format(title=esc(title), body=body, tables=script)
    if len(page.encode()) > REPORT_BYTES:  # not expected (every part above is bounded): say so rather than exceed
        text = obj.as_text() if isinstance(obj, Job) else summary_text(obj)
        body = join([note(f"This report would exceed {REPORT_BYTES / 1e6:g} MB; only its summary is here. Load the "
                          "input with %tcompile --load PATH (or compiler.load_trace) to explore it.", kind="warn"),
                     tag("pre", text[:REPORT_BYTES // 4])])
        page = PAGE.format(title=esc(title), body=body, tables="")
    return page


def write_report(obj, out) -> Path:
    """The report page, written atomically (``compiler.stages.files.write_atomic``)."""
    from compiler.stages.files import shown_text, write_atomic

    return write_atomic(out, shown_text(report_page(obj)))
