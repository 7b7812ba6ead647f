"""The live panel of ``compiler.watch()`` (a loop in this kernel) or of ``compiler.watch(job_dir)`` (a job
followed from here): step times as a small chart with the compiles marked, the divergences between ranks,
the alerts newest first — each with its step, rank, compile and fix.

It draws a ``snapshot()`` of the watch (plain data) into an ``ipywidgets.HTML``. A background thread
redraws it at most every ``REDRAW_S`` seconds, and only when something changed: the loop never waits for
the panel (comm messages from a thread reach JupyterLab while the cell runs). ``render_watch`` is the same
HTML for a stopped watch (``_repr_html_``) and for a page.
"""
from __future__ import annotations

import math
import threading

from .html import Html, badge, details, esc, join, para, style_tag, tag

REDRAW_S = 0.5
WIDTH, HEIGHT, PAD = 640, 150, 50
ALERTS_SHOWN = 30
RANK_COLOURS = ["var(--tc-accent)", "var(--tc-ok)", "#8e44ad", "#b8860b", "#16a085", "#c0392b", "#7f8c8d", "#2c3e50"]
COMPILE_COLOURS = {"first": "var(--tc-fg-muted)", "recompile": "var(--tc-warn)", "failed": "var(--tc-error)",
                   "skipped": "var(--tc-error)", "recompile limit": "var(--tc-error)"}
SEVERITY = {"error": "error", "warning": "warn", "info": "info"}

PANEL_CSS = """
.tc-watch .tc-watch-chart { width: 100%; max-width: 680px; height: auto; display: block; }
.tc-watch .tc-watch-chart text { fill: var(--tc-fg-muted); font-size: 10px; font-family: var(--tc-mono); }
.tc-watch .tc-watch-axis { stroke: var(--tc-border-strong); stroke-width: 1; }
.tc-watch .tc-watch-grid { stroke: var(--tc-border); stroke-width: 1; stroke-dasharray: 2 3; }
.tc-watch .tc-watch-alerts { list-style: none; margin: 4px 0; padding: 0; max-height: 340px; overflow-y: auto; }
.tc-watch .tc-watch-alerts li { border-top: 1px solid var(--tc-border); padding: 4px 2px; }
.tc-watch .tc-watch-where { color: var(--tc-fg-muted); font-family: var(--tc-mono); font-size: 90%; margin-right: 6px; }
.tc-watch pre { margin: 2px 0 2px 12px; }
.tc-watch .tc-watch-legend span { margin-right: 12px; font-size: 90%; color: var(--tc-fg-muted); }
"""


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and -1e300 < value < 1e300


def _y(seconds: float, low: float, high: float) -> float:
    value = math.log10(max(seconds, 1e-7))
    return PAD / 2 + (HEIGHT - PAD) * (1 - (value - low) / max(high - low, 1e-9))


def render_chart(snapshot: dict) -> Html:
    """Step time (log scale) against step, one line per rank, each compile a mark at its step (grey: a first
    compile, orange: a recompile, red: failed or skipped)."""
    ranks = {rank: {**data, "series": [[step, s] for step, s in data.get("series") or []  # inf, NaN: not drawn
                                        if _finite(step) and step >= 0 and _finite(s) and s >= 0]}
             for rank, data in (snapshot.get("ranks") or {}).items()}
    points = [s for r in ranks.values() for _, s in r.get("series") or []]
    last = max([r.get("steps") if _finite(r.get("steps")) else 0 for r in ranks.values()]
               + [step + 1 for r in ranks.values() for step, _ in r.get("series") or []] + [1])
    if not points:
        return para(esc("no step has ended yet" if snapshot.get("state") != "stopped" else "no steps were counted"),
                    cls="tc-muted")
    low = math.floor(math.log10(max(min(points), 1e-7)))
    high = math.ceil(math.log10(max(max(points), 1e-7)))
    high = high if high > low else low + 1
    x = lambda step: PAD + (WIDTH - PAD - 8) * (step / max(last - 1, 1))  # noqa: E731
    parts = [f'<line class="tc-watch-axis" x1="{PAD}" y1="{HEIGHT - PAD / 2}" x2="{WIDTH - 8}" y2="{HEIGHT - PAD / 2}"/>']
    for power in range(low, high + 1):
        y = _y(10 ** power, low, high)
        label = f"{10 ** power * 1e3:g} ms" if power < 0 else f"{10 ** power:g} s"
        parts.append(f'<line class="tc-watch-grid" x1="{PAD}" y1="{y:.1f}" x2="{WIDTH - 8}" y2="{y:.1f}"/>'
                     f'<text x="2" y="{y + 3:.1f}">{esc(label)}</text>')
    parts.append(f'<text x="{PAD}" y="{HEIGHT - 4}">step 0</text>'
                 f'<text x="{WIDTH - 8}" y="{HEIGHT - 4}" text-anchor="end">step {last - 1}</text>')
    for i, (rank, data) in enumerate(sorted(ranks.items(), key=lambda kv: int(kv[0]))):
        colour = RANK_COLOURS[i % len(RANK_COLOURS)]
        series = data.get("series") or []
        if series:
            path = " ".join(f"{x(step):.1f},{_y(s, low, high):.1f}" for step, s in series)
            parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.2" points="{path}">'
                         f'<title>{esc(f"rank {rank}: step time")}</title></polyline>')
        for step, seconds, compile_id, what in data.get("compiles") or []:
            if not isinstance(step, int) or not 0 <= step < last:
                continue
            mark = COMPILE_COLOURS.get(what, "var(--tc-fg-muted)")
            tip = f"rank {rank}, step {step}: compile {compile_id} ({what}" + (
                f", {seconds:.3g} s)" if _finite(seconds) else ")")
            parts.append(f'<line x1="{x(step):.1f}" y1="{PAD / 2}" x2="{x(step):.1f}" y2="{HEIGHT - PAD / 2}" '
                         f'stroke="{mark}" stroke-width="1.5" stroke-opacity="0.8"><title>{esc(tip)}</title></line>')
    svg = Html(f'<svg class="tc-watch-chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
               f'aria-label="step time per step, compiles marked">{"".join(parts)}</svg>')
    legend = [tag("span", Html(f'<b style="color:{RANK_COLOURS[i % len(RANK_COLOURS)]}">━</b> '), f"rank {rank}")
              for i, rank in enumerate(sorted(ranks, key=int))]
    legend += [tag("span", Html(f'<b style="color:{COMPILE_COLOURS[w]}">┃</b> '), label)
               for w, label in (("first", "compile"), ("recompile", "recompile"), ("failed", "failed / skipped"))]
    return join([svg, tag("div", *legend, cls="tc-watch-legend")])


def render_alert(alert) -> Html:
    where = f"rank {alert.rank} · step {alert.step if alert.step is not None else '?'}" + (
        f" · {alert.compile_id}" if alert.compile_id else "")
    body = [badge(alert.kind.replace("_", " "), SEVERITY.get(alert.severity, "info")), " ",
            tag("span", where, cls="tc-watch-where"), alert.sentence]
    if alert.fix:
        body.append(details(join(["fix: ", alert.fix.get("title") or ""]),
                            tag("pre", alert.fix.get("snippet") or "", cls="tc-pre")))
    return tag("li", *body)


def render_divergence(divergence) -> Html:
    """A divergence as the job overview draws it (``explorer.job_view.render_divergence``): one drawing."""
    from .job_view import render_divergence as draw_divergence

    return draw_divergence(divergence)


def render_watch(snapshot: dict) -> Html:
    """The panel's HTML for one snapshot (``Watch.snapshot()`` / ``Follower.snapshot()``)."""
    state = snapshot.get("state", "")
    alerts = snapshot.get("alerts") or []
    total = snapshot.get("alerts_total", len(alerts))
    head = tag("div", tag("strong", snapshot.get("title") or "compiler.watch"), " ",
               badge(state, "ok" if state in ("watching", "following") else "info"), " ",
               tag("span", f"{snapshot.get('steps', 0)} steps · {total} alert{'s' if total != 1 else ''}",
                   cls="tc-watch-where"))
    parts = [head, render_chart(snapshot)]
    parts += [render_divergence(d) for d in snapshot.get("divergences") or []]
    if alerts:
        parts.append(tag("ul", *[render_alert(a) for a in alerts[:ALERTS_SHOWN]], cls="tc-watch-alerts"))
        if len(alerts) > ALERTS_SHOWN or total > len(alerts):
            parts.append(para(f"the newest {min(len(alerts), ALERTS_SHOWN)} of {total} alerts; "
                              "watch.alerts / watch.table() hold every one", cls="tc-muted"))
    else:
        parts.append(para("no alerts yet", cls="tc-muted"))
    if snapshot.get("problems"):
        total = snapshot.get("problems_total") or len(snapshot["problems"])
        parts.append(para(f"{total} line{'s' if total != 1 else ''}, fields or files left out (follower.problems); "
                          "the latest: " + "; ".join(snapshot["problems"]), cls="tc-muted"))
    if snapshot.get("errors"):
        parts.append(para("tcompile's own errors while watching: " + "; ".join(snapshot["errors"]), cls="tc-muted"))
    return tag("div", *parts, cls="tcompile tc-view tc-watch")


def render_watch_html(watch) -> str:
    """A watch (or follower) as static HTML: its stylesheet and the panel (``_repr_html_``)."""
    return str(join([style_tag(), Html(f"<style>{PANEL_CSS}</style>"), render_watch(watch.snapshot())]))


class WatchPanel:
    """The live panel: an ``ipywidgets.HTML`` redrawn from a background thread while the watch runs."""

    def __init__(self, watch, interval: float = REDRAW_S):
        import ipywidgets as widgets

        self.watch, self.interval = watch, interval
        self.body = widgets.HTML("")  # redrawn; the stylesheet is sent once
        self.widget = widgets.VBox([widgets.HTML(str(join([style_tag(), Html(f"<style>{PANEL_CSS}</style>")]))),
                                    self.body])
        self.redraws = self.failures = 0
        self._key = None
        self._halt = threading.Event()
        self.redraw()
        self._thread = threading.Thread(target=self._run, name="tcompile-watch-panel", daemon=True)
        self._thread.start()

    def _key_of(self, snapshot: dict):
        ranks = snapshot.get("ranks") or {}
        return (snapshot.get("state"), snapshot.get("alerts_total"), len(snapshot.get("divergences") or []),
                tuple((r, d.get("steps"), len(d.get("compiles") or [])) for r, d in sorted(ranks.items())))

    def redraw(self) -> None:
        """Draw the watch's snapshot when it changed. A failed draw is shown in the panel (never raised), and the
        next redraw tries again: the panel never freezes on one bad value."""
        try:
            snapshot = self.watch.snapshot()
            key = self._key_of(snapshot)
            if key == self._key:
                return
            html = str(render_watch(snapshot))
        except Exception as exc:  # noqa: BLE001 — the panel must never disturb the loop
            self.failures += 1
            self._key = None
            self.body.value = str(para(f"the live panel could not draw ({type(exc).__name__}: {str(exc)[:200]}); it "
                                       "tries again at the next change — watch.alerts and watch.table() hold "
                                       "everything", cls="tc-muted"))
            return
        self._key = key
        self.body.value = html
        self.redraws += 1

    def _run(self) -> None:
        while not self._halt.wait(self.interval):
            self.redraw()

    def finish(self) -> None:
        """Stop redrawing, after one last redraw (the watch stopped); never raises."""
        self._halt.set()
        self.redraw()

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)


def show_watch_panel(watch) -> WatchPanel:
    """Show the live panel of ``watch`` under the running cell, and return it."""
    from IPython.display import display

    panel = WatchPanel(watch)
    display(panel.widget)
    return panel
