"""Source: the user's function, with graph-break lines, guard origins and traced ops marked."""
from __future__ import annotations

from collections import Counter, defaultdict

from ..html import Html, badge, cut_mark, highlighted_lines, join, note, para, plural, shorten, tag, unavailable
from .common import break_title, resume_origin


def _breaks_by_line(capture, filename) -> dict[int, list]:
    found = defaultdict(list)
    for item in capture.breaks:
        if item.file == filename and item.line:
            found[item.line].append(item)
    return found


def _guards_by_line(compile) -> dict[int, list]:
    found = defaultdict(list)
    for row in compile.guards.rows:
        if row.user_line and row.line:
            found[row.line].append(row)
    return found


def _ops_by_line(compile, filename) -> Counter:
    return Counter(n.line for n in compile.graph.nodes if n.file == filename and n.line)


def _marks(line: int, breaks, guards, ops, resume_line) -> list[Html]:
    marks = [badge(f"graph break ×{item.count}: {shorten(break_title(item), 70)}", "error",
                   title=item.explanation or item.headline) for item in breaks.get(line, [])]
    if line == resume_line:
        marks.append(badge("this compile resumes here", "info"))
    if guards.get(line):
        conditions = "\n".join(shorten(g.condition, 160) for g in guards[line])
        marks.append(badge(plural(len(guards[line]), "guard"), "warn", title=conditions))
    if ops.get(line):
        marks.append(badge(f"{plural(ops[line], 'op')} in graph", "muted"))
    return marks


def _source_table(source, breaks, guards, ops, resume_line=None) -> Html:
    rows = []
    for offset, markup in enumerate(highlighted_lines(source.text.rstrip("\n"), "python")):
        line = (source.firstlineno or 1) + offset
        marks = _marks(line, breaks, guards, ops, resume_line)
        kind = "tc-break" if line in breaks else "tc-guarded" if line in guards else None
        rows.append(tag("tr", tag("td", str(line), cls="tc-lineno"), tag("td", tag("code", markup), cls="tc-src"),
                        tag("td", *marks, cls="tc-marks"), cls=kind))
    return tag("div", tag("table", *rows, cls="tc-source"), cls="tc-code tc-source-wrap")


def render_source(capture, compile) -> str:
    source = compile.source  # for a resume frame, the capture holds the function it resumes
    origin = resume_origin(compile)
    if not source.available:
        return unavailable("Source", source.reason)
    filename = source.filename
    breaks = _breaks_by_line(capture, filename)
    intro = para(tag("code", f"{source.name}"), f" in {filename}:{source.firstlineno}", cls="tc-muted")
    resume_note = note(f"{compile.name} is the code Dynamo runs after the graph break at line {origin[1]} "
                       f"of {origin[0]}: it resumes the function there.", kind="info") if origin else None
    legend = para(badge("graph break", "error"), " line where Dynamo stopped tracing · ",
                  badge("guards", "warn"), " guards installed because of this line (hover for conditions) · ",
                  badge("ops", "muted"), " operations traced into this compile's graph", cls="tc-legend")
    return join([intro, resume_note, legend,
                 _source_table(source, breaks, _guards_by_line(compile), _ops_by_line(compile, filename),
                               origin[1] if origin else None),
                 cut_mark(source.text)])
