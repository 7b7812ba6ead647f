"""Source: the user's function, with graph-break lines, guard origins and traced ops marked."""
from __future__ import annotations

from collections import Counter, defaultdict

from ..html import (Html, badge, code, cut_mark, heading, highlighted_lines, join, key_values, note, para, plural, seconds,
                    shorten, shown_part, table, tag, unavailable)
from .breaks import file_place
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


def _source_table(source, breaks, guards, ops, resume_line=None, provenance=None, uid: str = "",
                  compile_time=None) -> Html:
    """The function, one row per line; with ``provenance`` (line → ``LineProvenance``) each line that
    produced work is coloured by its share of the time and opens its nodes and kernels when clicked;
    with ``compile_time`` (line → ``LineCompileTime`` rows) a column shaded by its share of the compile time."""
    provenance = provenance or {}
    compile_time = compile_time or {}
    compile_top = max((sum(r.share for r in rows) for rows in compile_time.values()), default=0)
    top = max((r.time_share or 0 for r in provenance.values()), default=0)
    rows = []
    for offset, markup in enumerate(highlighted_lines(source.text.rstrip("\n"), "python")):
        line = (source.firstlineno or 1) + offset
        marks = _marks(line, breaks, guards, ops, resume_line)
        kind = "tc-break" if line in breaks else "tc-guarded" if line in guards else None
        prov = provenance.get(line)
        code_cell = tag("code", markup)
        share = None
        if provenance:
            if prov is not None:
                code_cell = pick_label(uid, _line_key(source.filename, line), code_cell)
                marks.append(badge(plural(len(prov.kernels), "kernel"), "info") if prov.kernels else None)
            share = tag("td", share_cell(prov.time_share, prov.seconds) if prov else "", cls="tc-heat-cell")
        compiling = (compile_time_cell(compile_time.get(line), compile_top) if compile_time else None)
        cells = [tag("td", str(line), cls="tc-lineno"), tag("td", code_cell, cls="tc-src"), share, compiling,
                 tag("td", *[m for m in marks if m], cls="tc-marks")]
        rows.append(tag("tr", *cells, cls=kind, style=heat_style(prov.time_share, top) if prov else None,
                        data_row=_line_key(source.filename, line) if provenance else None))
    return tag("div", tag("table", *rows, cls="tc-source"), cls="tc-code tc-source-wrap")


def render_source(capture, compile) -> str:
    source = compile.source  # for a resume frame, the capture holds the function it resumes
    origin = resume_origin(compile)
    if not source.available:
        return _lines_without_source(compile) or unavailable("Source", source.reason)
    filename = source.filename
    breaks = _breaks_by_line(capture, filename)
    intro = para(tag("code", f"{source.name}"), f" in {filename}:{source.firstlineno}", cls="tc-muted")
    resume_note = note(f"{compile.name} is the code Dynamo runs after the graph break at line {origin[1]} "
                       f"of {origin[0]}: it resumes the function there.", kind="info") if origin else None
    legend = para(badge("graph break", "error"), " line where Dynamo stopped tracing · ",
                  badge("guards", "warn"), " guards installed because of this line (hover for conditions) · ",
                  badge("ops", "muted"), " operations traced into this compile's graph", cls="tc-legend")
    provenance = provenance_rows(compile)
    compile_time = compile_time_rows(compile)
    uid = _uid()
    table_html = _source_table(source, breaks, _guards_by_line(compile), _ops_by_line(compile, filename),
                               origin[1] if origin else None, provenance, uid, compile_time)
    if compile_time:
        legend = join([legend, compile_time_legend(compile)])
    if not provenance:
        return join([intro, resume_note, legend, table_html, cut_mark(source.text)])
    keys = {f"{uid}-{_line_key(filename, line)}": [_line_key(filename, line)] for line in provenance}
    prov = compile.provenance
    heat = para(tag("span", "■", style=f"color: rgb({HEAT_RGB})"), " share of the measured kernel time per line "
                f"({prov.time_source or 'not measured'}) · click a line: the nodes and kernels it became",
                cls="tc-legend")
    panels = [picked(uid, _line_key(filename, line), line_panel(compile, row)) for line, row in provenance.items()]
    return tag("div", pick_styles(uid, keys), intro, resume_note, legend, heat, table_html, *panels,
               cut_mark(source.text), other_files(compile), kernel_picker(compile), cls=f"tc-prov tc-prov-{uid}")


def other_files(compile) -> Html | None:
    """Lines of other files (functions this one called, inlined by Dynamo) that produced work, each
    named with its file: their kernels may be shared with this function's lines."""
    prov, filename = compile.provenance, compile.source.filename
    rows = [r for r in prov.lines if r.file != filename] if prov.available else []
    if not rows:
        return None
    top = max((r.time_share or 0 for r in prov.lines), default=0)
    body = [[file_place(r.file, r.line), code(shorten(r.code or "", 80)),
             tag("span", share_cell(r.time_share, r.seconds), style="white-space: nowrap"),
             plural(len(r.kernels), "kernel")] for r in sorted(rows, key=lambda r: -(r.time_share or 0))]
    return join([heading("Lines in other files (functions it called)", 4),
                 table(["file:line", "code", "share", "kernels"], body), ])


def _lines_without_source(compile) -> Html | None:
    """The source file is not on this machine (a trace from elsewhere): the lines that produced work,
    with the code torch's graph comments quote, still shaded and clickable."""
    source, prov = compile.source, compile.provenance
    if not prov.available or not prov.lines:
        return None
    uid = _uid()
    top = max((r.time_share or 0 for r in prov.lines), default=0)
    rows, keys, panels = [], {}, []
    for row in prov.lines:
        key = _line_key(row.file, row.line)
        keys[f"{uid}-{key}"] = [key]
        label = pick_label(uid, key, tag("code", row.code or ""))
        marks = badge(plural(len(row.kernels), "kernel"), "info") if row.kernels else None
        rows.append(tag("tr", tag("td", str(row.line), cls="tc-lineno"), tag("td", label, cls="tc-src"),
                        tag("td", share_cell(row.time_share, row.seconds), cls="tc-heat-cell"),
                        tag("td", marks, cls="tc-marks"),
                        style=heat_style(row.time_share, top), data_row=key))
        panels.append(picked(uid, key, line_panel(compile, row)))
    files = sorted({r.file.replace("\\", "/").rsplit("/", 1)[-1] for r in prov.lines if r.file})
    return tag("div", pick_styles(uid, keys),
               note(f"The source of {', '.join(files) or 'this function'} is not on this machine "
                    f"({source.reason or 'not captured'}). Below: its lines that produced work, as torch's graph "
                    "comments quote them · click a line: the nodes and kernels it became", kind="info"),
               tag("div", tag("table", *rows, cls="tc-source"), cls="tc-code tc-source-wrap"), *panels,
               kernel_picker(compile), cls=f"tc-prov tc-prov-{uid}")


# --- provenance: time share per line, click a line → its nodes and kernels, a kernel → its lines ------

# (the pickers' common rules are in explorer/static/tcompile.css, under "provenance")
# Heat: an orange wash whose opacity grows with the line's share of the time; the text keeps the
# theme's own colour, so it reads on light and dark backgrounds. Clicking works without scripts:
# each line/kernel label checks a hidden radio, and ``:checked +`` shows the panel after it.
HEAT_RGB = "244, 114, 42"


def heat_style(share: float | None, top: float) -> str | None:
    """Inline background for a line with ``share`` of the time (``top``: the largest share shown)."""
    if not share or not top:
        return None
    return f"background: rgba({HEAT_RGB}, {0.08 + 0.5 * share / top:.3f})"


def share_cell(share: float | None, seconds_per_call: float | None = None) -> Html:
    if share is None:
        return Html("")
    bar = tag("span", cls="tc-heat-bar", style=f"width: {max(1, round(40 * share))}px")
    title = f"{seconds(seconds_per_call)} per call" if seconds_per_call is not None else None
    return tag("span", bar, f"{share:.0%}", cls="tc-heat-cell", title=title)


# compile time per line: a blue wash in its own column, beside the runtime's orange rows
COMPILE_RGB = "66, 133, 244"


def compile_time_rows(compile) -> dict[int, list]:
    """Line of this compile's source → its ``LineCompileTime`` rows (one per phase)."""
    found = defaultdict(list)
    if compile.timings.available:
        for row in compile.timings.by_line:
            if row.line is not None and row.file == compile.source.filename:
                found[row.line].append(row)
    return found


def compile_time_cell(rows, top: float) -> Html:
    """One line's share of the compile time (all phases), shaded; hover: seconds per phase."""
    if not rows:
        return tag("td", "", cls="tc-heat-cell")
    share = sum(r.share for r in rows)
    total = sum(r.seconds for r in rows)
    title = f"{seconds(total)} of compile time: " + ", ".join(
        f"{r.phase} {seconds(r.seconds)}" for r in sorted(rows, key=lambda r: -r.seconds))
    bar = tag("span", cls="tc-heat-bar", style=f"width: {max(1, round(40 * share))}px; "
                                                f"background: rgb({COMPILE_RGB})")
    style = f"background: rgba({COMPILE_RGB}, {0.08 + 0.5 * share / top:.3f})" if top else None
    return tag("td", tag("span", bar, f"{share:.0%}", cls="tc-heat-cell", title=title), cls="tc-heat-cell tc-ctime",
               style=style)


def compile_time_legend(compile) -> Html:
    return para(tag("span", "■", style=f"color: rgb({COMPILE_RGB})"),
                " compile time: each line's share of this compile's sampled compile time (hover: seconds per "
                "phase; the Timings tab has the table and how it was measured)", cls="tc-legend")


def _uid() -> str:
    import uuid

    return uuid.uuid4().hex[:8]


def pick_styles(uid: str, ids_to_rows: dict[str, list[str]]) -> Html:
    """The stylesheet of one picker: the common rules, plus — per choice — the rows it lights up."""
    rules = [f".tcompile .tc-prov-{uid}:has([id=\"{pick}\"]:checked) tr[data-row=\"{row}\"] td "
             f"{{ box-shadow: inset 0 0 0 9999px rgba(25, 118, 210, 0.22); }}"
             for pick, rows in ids_to_rows.items() for row in rows]
    rules += [f".tcompile .tc-prov-{uid}:has([id=\"{pick}\"]:checked) label[for=\"{pick}\"] .tc-chip "  # the choice made
              f"{{ background: rgba(25, 118, 210, 0.22); border-color: var(--tc-accent); }}" for pick in ids_to_rows]
    return Html(f"<style>{''.join(rules)}</style>")


def picked(uid: str, key: str, panel) -> Html:
    """A hidden radio and the panel it shows when checked (after its label is clicked)."""
    return join([Html(f'<input type="radio" class="tc-pick" name="tc-pick-{uid}" id="{uid}-{key}">'),
                 tag("div", panel, cls="tc-pick-panel")])


def pick_label(uid: str, key: str, *content) -> Html:
    return tag("label", *content, cls="tc-pickable", for_=f"{uid}-{key}", title="click: show where it went")


def _line_key(file, line) -> str:
    import zlib

    return f"l{zlib.crc32((file or '').encode()) % 10000}-{line}"


def _kernel_key(key: str) -> str:
    import re

    return "k-" + re.sub(r"[^\w-]", "_", key)


def _kernel_times(provenance) -> dict[str, float | None]:
    return {k.key: k.seconds for k in provenance.kernels}


def _chips(names) -> Html | str:
    """Node names as chips, with a space between them: a long list wraps inside its cell."""
    return join([tag("span", n, cls="tc-chip") for n in names], " ") if names else "–"


def line_panel(compile, row) -> Html:
    """Everything one source line became: its nodes at each level and its kernels, with their time."""
    prov = compile.provenance
    times = _kernel_times(prov)
    total = sum(t or 0 for t in times.values())
    kernels = [join([tag("span", k, cls="tc-chip"),
                     f" {seconds(times[k])} ({times[k] / total:.0%} of kernel time)" if times.get(k) and total else ""])
               for k in row.kernels]
    return join([
        para(tag("strong", file_place(row.file, row.line)), " ", tag("code", row.code or ""),
             f" — {row.time_share:.0%} of the measured kernel time" if row.time_share is not None else ""),
        key_values([("Dynamo FX nodes", _chips(row.dynamo_nodes)), ("AOT nodes", _chips(row.aot_nodes)),
                    ("post-grad nodes", _chips(row.post_grad_nodes)), ("scheduler nodes", _chips(row.ir_nodes)),
                    ("kernels", join(kernels, Html("<br>")) if kernels else "– (no kernel: views or constants)")]),
    ])


def kernel_panel(compile, kernel) -> Html:
    """One kernel back to its lines (highlighted in the function's source) and nodes."""
    source = compile.source
    places = sorted(kernel.places, key=lambda p: -p.share)
    mini = None
    shown: set[int] = set()
    here = {p.line for p in places if p.file == source.filename}  # only this file's lines are lit in its source
    if source.available and source.text and here:
        first = source.firstlineno or 1
        texts = shown_part(source.text).rstrip("\n").split("\n")
        shown = set(range(first, first + len(texts)))
        rows = [tag("tr", tag("td", str(first + i), cls="tc-lineno"), tag("td", text),
                    cls="tc-lit" if first + i in here else None)
                for i, text in enumerate(texts)]
        mini = tag("table", *rows, cls="tc-mini")
    codes = {(r.file, r.line): r.code for r in compile.provenance.lines}
    # every line not lit above is listed with its share: other files, and this file's other functions
    elsewhere = [p for p in places if p.file != source.filename or p.line not in shown]
    other = tag("ul", *(tag("li", file_place(p.file, p.line), f" {p.share:.0%} ",
                            code(codes.get((p.file, p.line)) or "")) for p in elsewhere), cls="tc-kernel-places") \
        if elsewhere else None
    weights = join([join([file_place(p.file, p.line), f" {p.share:.0%}"]) for p in places], ", ")
    return join([
        para(tag("strong", kernel.key), f" — {seconds(kernel.seconds)} per call" if kernel.seconds is not None else "",
             join([" · its work by line: ", weights]) if places else " · no source line (inputs, views or constants)"),
        mini,
        join([para("Lines outside this function's source (other functions or files):", cls="tc-muted"), other])
        if other else None,
        para(_origin_text(kernel), cls="tc-muted"),
        key_values([("origin nodes", _chips(kernel.origin_nodes)), ("post-grad nodes", _chips(kernel.post_grad_nodes)),
                    ("scheduler nodes (before fusion)", _chips(kernel.ir_nodes)),
                    ("after fusion", _chips(kernel.fused_nodes)), ("linked by", kernel.how or "–")]),
    ])


def _origin_text(kernel) -> str:
    """Where a kernel's lines come from: the nodes torch names as its origins, or why it names none."""
    if kernel.origin == "trace":
        return f"Origins: Inductor's provenance tracking (trace) names its post-grad nodes ({len(kernel.origin_nodes)})."
    if kernel.origin == "comments":
        calls = len(kernel.sites)
        return (f"Origins: torch's comments in the generated code name {len(kernel.origin_nodes)} source node"
                f"{'s' * (len(kernel.origin_nodes) != 1)}" + (f" over {calls} calls" if calls > 1 else "")
                + (" (an extern call's time goes to its own node)" if kernel.language == "extern" else "") + ".")
    return f"Torch gave no origin: {kernel.no_origin or 'none recorded'}."


def kernel_picker(compile, title: str = "Click a kernel: its source lines and nodes") -> Html | None:
    """Clickable kernels of a compile, each opening its lines (highlighted) and nodes."""
    prov = compile.provenance
    if not prov.available or not prov.kernels:
        return None
    uid = _uid()
    labels = [pick_label(uid, _kernel_key(k.key), tag("span", k.key, cls="tc-chip")) for k in prov.kernels]
    panels = [picked(uid, _kernel_key(k.key), kernel_panel(compile, k)) for k in prov.kernels]
    picks = {f"{uid}-{_kernel_key(k.key)}": [] for k in prov.kernels}
    return tag("div", pick_styles(uid, picks), heading(title, 4), join(labels), *panels, cls=f"tc-prov tc-prov-{uid}")


def provenance_rows(compile) -> dict[int, object]:
    prov = compile.provenance
    source = compile.source
    if not prov.available:
        return {}
    return {r.line: r for r in prov.lines if r.file in (None, source.filename)}


def line_time_table(capture, compile, limit: int = 12) -> Html | None:
    """Where the time goes, by line of the user's code (this compile), largest first."""
    prov = compile.provenance
    if not prov.available or not prov.lines:
        return None
    rows = sorted(prov.lines, key=lambda r: -(r.time_share or 0))[:limit]
    if not any(r.time_share for r in rows):
        return join([heading("Where the time goes, by line", 4),
                     para("Kernel times were not measured for this compile"
                          + (f" ({'; '.join(prov.notes)})" if prov.notes else "") + ".", cls="tc-muted")])
    one_role = len({k.role for k in prov.kernels}) <= 1  # then "inference:" before every kernel says nothing

    def code_and_kernels(row):  # the kernels under the line's code, long names wrapped: the table fits a half-width pane
        kernels = [tag("code", "→ " + (k.split(":", 1)[-1] if one_role else k), cls="tc-wrap") for k in row.kernels]
        return join([tag("code", shorten(row.code or "", 40), cls="tc-wrap"),
                     tag("div", join(kernels), cls="tc-muted") if kernels else None])

    body = [[file_place(r.file, r.line), tag("span", share_cell(r.time_share, r.seconds), style="white-space: nowrap"),
             tag("span", seconds(r.seconds), style="white-space: nowrap"), code_and_kernels(r)] for r in rows]
    # the numbers first, the long code and kernel names last, wrapped (issue 46: at 1,400 px with the file browser
    # open, the column was off-screen)
    table_html = tag("div", table(["file:line", "share", "time / call", "code → kernels"], body),
                     style="overflow-x: auto; max-width: 100%")
    unattributed = prov.unattributed_seconds
    return join([heading("Where the time goes, by line", 4), table_html,
                 para(f"Kernel time measured by {prov.time_source}."
                      + (f" {seconds(unattributed)} per call is in kernels with no source line." if unattributed else ""),
                      cls="tc-muted")])
