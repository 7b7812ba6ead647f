"""Figure — a real model in the explorer (issue 16: sizes and speed on GPT-2-small).

A transformers GPT-2 built from config with GPT-2-small sizes (12 layers, 768 wide, vocab 50257, no
weights downloaded, eager attention) on 2×64 token ids, compiled once with Inductor the way
``%%tcompile`` compiles (``compiler.run(fresh=True, timing=False)``: cache-free, so every stage is in
the capture). Measured on that capture:

- compile ending → explorer shown: from the end of the first compiled call to the explorer widget
  displayed (``compiler.run``'s ``Recorder.build``, which assembles the capture, then
  ``explorer.widget.Explorer(...)`` and its mime bundle: what ``%%tcompile`` does before the widget
  reaches the notebook; the static copy is rendered after it, into its own output). Budget 0.5 s;
- every tab built: the widget, then each tab shown once, the first time (the rendering caches are cold
  for this capture; imports and Graphviz were warmed on a tiny capture). Budget 1 s;
- the static copy a notebook output keeps (``render_static(fallback=True)``): size ≤ 1 MB, and its time;
- the capture JSON (``Capture.to_json``): ≤ 5 MB, and loading it back.

``python -m bench.gpt2_explorer`` (needs ``transformers``; ~2 minutes here, most of it the compile).
"""
from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from .table import Row, megabytes, seconds, unavailable

SHOWN_BUDGET_S = 0.5
TABS_BUDGET_S = 1.0
FALLBACK_BUDGET_BYTES = 1_000_000
JSON_BUDGET_BYTES = 5_000_000


def gpt2_small():
    import torch
    import transformers

    torch.manual_seed(0)
    config = transformers.GPT2Config(attn_implementation="eager")
    return transformers.GPT2LMHeadModel(config).eval(), torch.randint(0, config.vocab_size, (2, 64))


def capture_with_build_time():
    """The capture, and how long ``Recorder.build`` took (timed around the real method)."""
    import torch

    import compiler
    from compiler.capturing import session

    model, ids = gpt2_small()
    built, original = {}, session.Recorder.build

    def timed_build(self, measurements=None):
        start = time.perf_counter()
        try:
            return original(self, measurements)
        finally:
            built["build_s"] = time.perf_counter() - start

    session.Recorder.build = timed_build
    try:
        start = time.perf_counter()
        with torch.no_grad():
            cap = compiler.run(model, ids, fresh=True, timing=False, errors="return")
        built["run_s"] = time.perf_counter() - start
    finally:
        session.Recorder.build = original
    return cap, built


def warm_up() -> None:
    """Imports, lexers, CSS and Graphviz on a tiny capture of another function: paid once per session."""
    import torch

    import compiler
    from explorer.views import VIEWS
    from explorer.widget import Explorer

    with compiler.capture() as tiny:
        torch.compile(lambda x: (x + 1).softmax(-1), backend="inductor")(torch.randn(4, 4))
    widget = Explorer(tiny, static_html=False)
    for index in range(len(VIEWS)):
        widget.show_tab(index)
    widget._repr_mimebundle_()


def measure(log) -> dict:
    from explorer.page import render_static
    from explorer.views import VIEWS
    from explorer.widget import Explorer

    import compiler

    cap, built = capture_with_build_time()
    log(f"  GPT-2-small compiled with Inductor, cache-free, in {built['run_s']:.1f} s "
        f"({len(cap.compiles)} compiles, {sum(len(c.graph.nodes) for c in cap.compiles)} FX nodes); "
        f"assembling the capture took {built['build_s']:.2f} s" + (f"; ERROR {cap.error.type}" if cap.error else ""))
    warm_up()

    def shown():
        start = time.perf_counter()
        Explorer(cap, static_html=False)._repr_mimebundle_()
        return time.perf_counter() - start

    def every_tab():
        start = time.perf_counter()
        widget = Explorer(cap, static_html=False)
        per_tab = {}
        for index, view in enumerate(VIEWS):
            tab_start = time.perf_counter()
            widget.show_tab(index)
            per_tab[view.key] = time.perf_counter() - tab_start
        return time.perf_counter() - start, per_tab

    tabs = [every_tab() for _ in range(2)]  # the first is what a user waits for: rendering caches are cold
    tabs_s = tabs[0][0]
    display_s = statistics.median(shown() for _ in range(3))
    start = time.perf_counter()
    fallback = render_static(cap, fallback=True)
    fallback_s = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as folder:
        path = cap.save(Path(folder) / "gpt2.json")
        text = path.read_text()
        start = time.perf_counter()
        compiler.load(path)
        load_s = time.perf_counter() - start
    result = {**built, "display_s": display_s, "shown_s": built["build_s"] + display_s, "every_tab_s": tabs_s,
              "per_tab_s": tabs[0][1], "every_tab_again_s": tabs[1][0], "fallback_bytes": len(fallback.encode()), "fallback_s": fallback_s,
              "full_static_bytes": len(render_static(cap).encode()), "json_bytes": len(text.encode()), "load_s": load_s}
    log(f"  explorer shown {result['shown_s']:.2f} s (build {built['build_s']:.2f} + widget {display_s:.2f}); "
        f"every tab {tabs_s:.2f} s ({', '.join(f'{k} {v:.2f}' for k, v in result['per_tab_s'].items() if v >= 0.02)}); "
        f"fallback {megabytes(result['fallback_bytes'])} in {fallback_s:.2f} s (all views: "
        f"{megabytes(result['full_static_bytes'])}); JSON {megabytes(result['json_bytes'])}, loads in {load_s:.2f} s")
    return result


def rows(r: dict) -> list[Row]:
    return [
        Row("GPT-2 small (2×64, Inductor): compile ending → explorer shown (assemble + widget)", seconds(r["shown_s"]),
            f"{SHOWN_BUDGET_S:g} s budget", r["shown_s"] / SHOWN_BUDGET_S, "≤ 1", high=1.0,
            note=f"assembling {seconds(r['build_s'])}, widget and its bundle {seconds(r['display_s'])}", detail=r),
        Row("GPT-2 small (2×64, Inductor): every tab built", seconds(r["every_tab_s"]), f"{TABS_BUDGET_S:g} s budget",
            r["every_tab_s"] / TABS_BUDGET_S, "≤ 1", high=1.0,
            note=", ".join(f"{k} {seconds(v)}" for k, v in r["per_tab_s"].items() if v >= 0.02)),
        Row("GPT-2 small (2×64, Inductor): static copy in the notebook output", megabytes(r["fallback_bytes"]),
            "1 MB budget", r["fallback_bytes"] / FALLBACK_BUDGET_BYTES, "≤ 1", high=1.0,
            note=f"rendered in {seconds(r['fallback_s'])}; every view in full would be {megabytes(r['full_static_bytes'])}"),
        Row("GPT-2 small (2×64, Inductor): capture JSON", megabytes(r["json_bytes"]), "5 MB budget",
            r["json_bytes"] / JSON_BUDGET_BYTES, "≤ 1", high=1.0, note=f"loads in {seconds(r['load_s'])}"),
    ]


def run(quick: bool, log=print) -> tuple[list[Row], dict]:
    log("[gpt2] GPT-2-small (transformers, 2×64 tokens) in the explorer: latency, tabs, static copy, JSON")
    try:
        import transformers  # noqa: F401
    except ImportError as exc:
        return [unavailable("GPT-2 small in the explorer", f"transformers is not installed: {exc}")], {}
    result = measure(log)
    return rows(result), result


if __name__ == "__main__":
    from .table import format_table

    measured_rows, _ = run(quick=True)
    print(format_table(measured_rows))
