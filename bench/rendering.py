"""Figure 4 — rendering cost, and the size of a big capture.

- Captures of 1,000 and 10,000 FX nodes: a generated chain of pointwise ops compiled with
  ``backend="eager"`` (making the capture is not timed; Dynamo needs seconds for 10,000 ops).
- Timed: ``explorer.page.render_static(capture)`` (every view, one HTML page); the widget as a
  notebook displays it, ``explorer.widget.Explorer(capture)._repr_mimebundle_()`` (first tab, plus
  the static HTML it carries for saved notebooks); and the widget with every tab shown (a tab
  renders when first shown). Each reports "not available yet" while the explorer lacks it.
- One huge text: a real capture (``compiler.explore`` of a small function, Inductor) saved with a
  ~200 MB text put in one field (a kernel's source; and the FX graph's code, which loading parses into
  nodes), then, each in a fresh process
  (``python -m bench.rendering huge PATH WHAT``), loaded (``compiler.load``) and rendered:
  ``render_static`` and the widget with every tab shown. Time and the process's peak memory
  (``VmHWM``, imports and the loaded capture included) against 5 s and 1 GB.
- Size: ``Capture.to_json()`` of a GPT-2-small forward (12 layers, d=768, 12 heads, 1×32 tokens)
  compiled with Inductor under ``capture(fresh=True)``: caches off, so every stage (IR before and
  after fusion included) is in it — the largest this capture can be.
"""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .table import Row, megabytes, seconds, unavailable
from .workloads import chain, make

BUDGET_S = {1000: 1.0, 10000: 5.0}
JSON_BUDGET_BYTES = 5_000_000
HUGE_TEXT_CHARS = 200_000_000
HUGE_BUDGET_S, HUGE_BUDGET_BYTES = 5.0, 1_000_000_000
HUGE_LINE = "    buf0 = torch.ops.aten.add.Tensor(arg0_1, 1);  arg0_1 = None  # a line of generated code\n"


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


HUGE_FIELDS = {"a kernel's source": ("compiles", 0, "inductor", "runs", 0, "code", "kernels", 0, "source"),
               "the FX graph's code": ("compiles", 0, "graph", "code")}


def huge_text_file(directory: Path, field: str, chars: int = HUGE_TEXT_CHARS) -> tuple[Path, dict]:
    """A real capture saved with one ``chars``-long text in ``field`` (a key of ``HUGE_FIELDS``)."""
    import torch

    import compiler

    def f(x):
        y = x.sin() + 1
        return y.cos() * 2

    data = json.loads(compiler.explore(f, torch.randn(8, 4), timing=False).to_json())
    code = data["compiles"][0]["inductor"]["runs"][0]["code"]
    if code.pop("texts_from_module", False):  # saved without the kernels' texts (the module holds them): put back
        from compiler.stages.code_text import kernel_texts

        texts = kernel_texts(code["module"])
        for kernel in code["kernels"]:
            kernel["source"], kernel["comments"] = texts.get(kernel["name"], (kernel.get("source", ""), ""))
    *keys, last = HUGE_FIELDS[field]
    node = data
    for key in keys:
        node = node[key]
    node[last] = HUGE_LINE * (chars // len(HUGE_LINE))
    path = directory / "huge_text_capture.json"
    path.write_text(json.dumps(data, separators=(",", ":")), encoding="utf-8")
    del data, node
    return path, {"file_bytes": path.stat().st_size, "field": field}


def _peak_bytes() -> int:
    """This process's peak resident memory: VmHWM (``ru_maxrss`` would carry the parent's peak over exec)."""
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmHWM:")[1].split()[0]) * 1024


def huge_child(path: str, what: str) -> dict:
    """In a fresh process: load ``path``, then render it (``what``: load, static, widget)."""
    import compiler
    from explorer.page import render_static
    from explorer.views import VIEWS
    from explorer.widget import Explorer

    out = {"after_imports_bytes": _peak_bytes()}
    start = time.perf_counter()
    cap = compiler.load(path)
    out.update(load_s=time.perf_counter() - start, after_load_bytes=_peak_bytes())
    start = time.perf_counter()
    if what == "static":
        html = render_static(cap)
    elif what == "widget":  # every tab shown, and the mime bundle a notebook displays (static HTML in it)
        widget = Explorer(cap)
        for index in range(len(VIEWS)):
            widget.show_tab(index)
        html = _shown_html(widget) + widget._repr_mimebundle_().get("text/html", "")
    else:
        html = ""
    out.update(render_s=time.perf_counter() - start, html_bytes=len(html.encode()), peak_bytes=_peak_bytes())
    return out


def _shown_html(widget) -> str:
    """The HTML of every HTML widget inside ``widget`` (tabs, their pieces, the rows of cut texts)."""
    import ipywidgets

    if isinstance(widget, ipywidgets.HTML):
        return widget.value
    return "".join(_shown_html(child) for child in getattr(widget, "children", ()))


def _run_huge_child(path: Path, what: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "bench.rendering", "huge", str(path), what], capture_output=True,
                          text=True, timeout=600, cwd=Path(__file__).resolve().parent.parent)
    if done.returncode:
        raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def huge_text_rows(log, fields=tuple(HUGE_FIELDS)) -> tuple[list[Row], dict]:
    out, details = [], {}
    for field in fields:
        rows, details[field] = _huge_text_rows(log, field)
        out += rows
    return out, details


def _huge_text_rows(log, field: str) -> tuple[list[Row], dict]:
    with tempfile.TemporaryDirectory() as directory:
        path, info = huge_text_file(Path(directory), field)
        log(f"  huge text: a capture of {megabytes(info['file_bytes'])} with a {HUGE_TEXT_CHARS / 1e6:.0f} M-character "
            f"text as {field} (not timed)")
        results = {what: _run_huge_child(path, what) for what in ("load", "static", "widget")}
    out, load = [], results["load"]
    log(f"  huge text: compiler.load {seconds(load['load_s'])}, peak {megabytes(load['after_load_bytes'])} "
        f"(after imports {megabytes(load['after_imports_bytes'])})")
    out.append(Row(f"huge text in {field}: compiler.load of a {megabytes(info['file_bytes'])} capture, peak memory",
                   megabytes(load["after_load_bytes"]), "1 GB budget", load["after_load_bytes"] / HUGE_BUDGET_BYTES,
                   "(reference)", note=f"load {seconds(load['load_s'])}; {megabytes(load['after_imports_bytes'])} "
                                       "after imports", detail=load))
    for what, name in (("static", "render_static (all views)"), ("widget", "Explorer widget, every tab + mime bundle")):
        r = results[what]
        log(f"  huge text: {name}: {seconds(r['render_s'])}, HTML {megabytes(r['html_bytes'])}, "
            f"peak {megabytes(r['peak_bytes'])}")
        out.append(Row(f"huge text in {field}: {name}, time", seconds(r["render_s"]),
                       f"{HUGE_BUDGET_S:g} s budget", r["render_s"] / HUGE_BUDGET_S, f"≤ 1 (≤ {HUGE_BUDGET_S:g} s)",
                       high=1.0, note=f"HTML {megabytes(r['html_bytes'])}", detail=r))
        out.append(Row(f"huge text in {field}: {name}, peak memory (load included)",
                       megabytes(r["peak_bytes"]), "1 GB budget", r["peak_bytes"] / HUGE_BUDGET_BYTES,
                       "≤ 1 (≤ 1 GB)", high=1.0, detail=r))
    return out, {**results, **info}


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
    huge_rows, details["huge_text"] = huge_text_rows(log)
    out += huge_rows
    return out, details


if __name__ == "__main__":
    if sys.argv[1:2] == ["huge"]:  # the child process of huge_text_rows
        print(json.dumps(huge_child(sys.argv[2], sys.argv[3])))
    elif sys.argv[1:2] == ["huge-rows"]:  # those rows alone: python -m bench.rendering huge-rows [FIELD…]
        from .table import format_table

        print(format_table(huge_text_rows(print, tuple(sys.argv[2:]) or tuple(HUGE_FIELDS))[0]))
