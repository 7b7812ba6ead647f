"""Figure 4 — rendering cost, and the size of a big capture.

- Captures of 1,000 and 10,000 FX nodes: a generated chain of pointwise ops compiled with
  ``backend="eager"`` (making the capture is not timed; Dynamo needs seconds for 10,000 ops).
- Timed: ``explorer.page.render_static(capture)`` (every view, one HTML page); the widget as a
  notebook displays it, ``explorer.widget.Explorer(capture)._repr_mimebundle_()`` (first tab, plus
  the static HTML it carries for saved notebooks); and the widget with every tab shown (a tab
  renders when first shown). Each reports "not available yet" while the explorer lacks it.
- Size: ``Capture.to_json()`` of a GPT-2-small forward (12 layers, d=768, 12 heads, 1×32 tokens)
  compiled with Inductor under ``capture(fresh=True)``: caches off, so every stage (IR before and
  after fusion included) is in it — the largest this capture can be.
"""
from __future__ import annotations

import json
import statistics
import time

from .table import Row, megabytes, seconds, unavailable
from .workloads import chain, make

BUDGET_S = {1000: 1.0, 10000: 5.0}
JSON_BUDGET_BYTES = 5_000_000


def _static_renderer():
    try:
        from explorer.page import render_static
    except (ImportError, AttributeError) as exc:
        return None, f"explorer.page.render_static: {type(exc).__name__}: {exc}"
    return render_static, None


def _widget_renderers():
    try:
        from explorer.views import VIEWS
        from explorer.widget import Explorer
    except (ImportError, AttributeError) as exc:
        return None, None, f"explorer.widget.Explorer: {type(exc).__name__}: {exc}"

    def display(capture):
        """What a notebook waits for when the cell shows the explorer: the widget (its first tab)
        and its mime bundle, which carries the static HTML for saved notebooks."""
        bundle = Explorer(capture)._repr_mimebundle_()
        return bundle.get("text/html", "")

    def every_tab(capture):
        widget = Explorer(capture)
        for index in range(len(VIEWS)):
            widget.show_tab(index)
        return "".join(getattr(p, "value", "") for p in widget.panes)

    return display, every_tab, None


def _widget_display():
    display, _, reason = _widget_renderers()
    return display, reason


def _widget_every_tab():
    _, every_tab, reason = _widget_renderers()
    return every_tab, reason


RENDERERS = {"render_static (all views)": _static_renderer,
             "Explorer display (widget + mime bundle)": _widget_display,
             "Explorer widget, every tab shown": _widget_every_tab}


def chain_capture(n_ops: int):
    import torch

    import compiler

    fn = chain(n_ops)
    torch._dynamo.reset()
    start = time.perf_counter()
    with compiler.capture() as cap:
        torch.compile(fn, backend="eager")(torch.randn(8))
    nodes = len(cap.compiles[0].graph.nodes)
    return cap, {"ops": n_ops, "fx_nodes": nodes, "capture_s": time.perf_counter() - start,
                 "json_bytes": len(cap.to_json().encode())}


def time_render(render, capture, repeats: int) -> dict:
    times, html = [], ""
    for _ in range(repeats):
        start = time.perf_counter()
        html = render(capture)
        times.append(time.perf_counter() - start)
    return {"median_s": statistics.median(times), "times_s": times, "html_bytes": len(html.encode()),
            "failed_views": html.count("view failed")}


def gpt2_capture() -> tuple:
    import torch

    import compiler

    fn, args = make("gpt2_small")
    torch._dynamo.reset()
    start = time.perf_counter()
    with torch.no_grad(), compiler.capture(fresh=True) as cap:
        torch.compile(fn)(*args)
    return cap, {"capture_s": time.perf_counter() - start, "json_bytes": len(cap.to_json().encode()),
                 "json_bytes_without_indent": len(json.dumps(cap.to_data(), separators=(",", ":"), default=str).encode()),
                 "json_bytes_by_stage": stage_sizes(cap)}


def stage_sizes(cap) -> dict:
    """JSON bytes of each stage of the first compile: where the size goes."""
    data = cap.to_data()["compiles"][0]
    return {k: len(json.dumps(v, indent=1, default=str)) for k, v in sorted(
        data.items(), key=lambda kv: -len(json.dumps(kv[1], default=str)))}


def render_rows(captures: dict, tiny, repeats: dict, log) -> tuple[list[Row], dict]:
    out, details = [], {}
    for name, factory in RENDERERS.items():
        render, reason = factory()
        warmed = False
        for n_ops, (cap, info) in captures.items():
            figure = f"render {info['fx_nodes']:,} FX nodes: {name}"
            target = f"≤ 1 (≤ {BUDGET_S[n_ops]:g} s)"
            if render is None:
                out.append(unavailable(figure, reason, target))
                log(f"  {figure}: not available yet ({reason})")
                continue
            try:
                if not warmed:  # imports, lexers, CSS: paid once per session, not per capture
                    render(tiny)
                    warmed = True
                r = time_render(render, cap, repeats[n_ops])
            except Exception as exc:  # noqa: BLE001 — the views are work in progress
                out.append(unavailable(figure, f"raised {type(exc).__name__}: {exc}", target))
                log(f"  {figure}: raised {type(exc).__name__}: {exc}")
                continue
            details[f"{name} / {n_ops}"] = r
            log(f"  {figure}: {seconds(r['median_s'])} (html {megabytes(r['html_bytes'])}, "
                f"{r['failed_views']} failed views)")
            out.append(Row(figure, seconds(r["median_s"]), f"{BUDGET_S[n_ops]:g} s budget",
                           r["median_s"] / BUDGET_S[n_ops], target, high=1.0,
                           note=f"HTML {megabytes(r['html_bytes'])}"
                                + (f"; {r['failed_views']} view(s) failed" if r["failed_views"] else ""), detail=r))
    return out, details


def run(quick: bool, log=print) -> tuple[list[Row], dict]:
    log("[4] rendering: captures of 1,000 and 10,000 FX nodes (backend='eager'), GPT-2-small JSON size")
    captures = {}
    for n_ops in (1000, 10000):
        cap, info = chain_capture(n_ops)
        captures[n_ops] = (cap, info)
        log(f"  made a capture of {info['fx_nodes']:,} FX nodes in {info['capture_s']:.1f} s "
            f"(JSON {megabytes(info['json_bytes'])}; not timed)")
    tiny = chain_capture(8)[0]
    out, details = render_rows(captures, tiny, {1000: 3 if quick else 5, 10000: 1 if quick else 3}, log)
    details["captures"] = {n: info for n, (_, info) in captures.items()}

    cap, info = gpt2_capture()
    details["gpt2_small"] = info
    log(f"  GPT-2 small (Inductor, fresh=True): capture {info['capture_s']:.1f} s, JSON {megabytes(info['json_bytes'])}")
    out.append(Row("capture JSON size: GPT-2 small forward, Inductor, fresh=True", megabytes(info["json_bytes"]),
                   "5 MB budget", info["json_bytes"] / JSON_BUDGET_BYTES, "≤ 1 (≤ 5 MB)", high=1.0,
                   note=f"{megabytes(info['json_bytes_without_indent'])} without indentation; largest stages: "
                        + ", ".join(f"{k} {megabytes(v)}" for k, v in list(info["json_bytes_by_stage"].items())[:4]),
                   detail=info))
    render, reason = _static_renderer()
    if render is not None:
        try:
            r = time_render(render, cap, 1)
            details["gpt2_render_static"] = r
            out.append(Row("render GPT-2 small capture: render_static (all views)", seconds(r["median_s"]),
                           "", None, "(reference)", note=f"HTML {megabytes(r['html_bytes'])}", detail=r))
        except Exception as exc:  # noqa: BLE001
            log(f"  render_static on GPT-2 raised {type(exc).__name__}: {exc}")
    return out, details
