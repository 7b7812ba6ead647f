"""Figure — opening a saved capture in a fresh kernel (issue 35, item 2): ``%tcompile --load PATH`` in a
Jupyter kernel started for it, timed from the cell's execute request to the widget's display message on
the kernel's iopub channel (what the notebook draws), and to the cell's end; then, in the same kernel,
each tab's first visit (``Explorer.show_tab``: the tab's HTML made and set on its widgets, its big tables as
their first page — what the browser draws first — then those tables made sortable, ``finish_tables``) and a
compile switch on every compile tab, with the HTML bytes each one ships to the browser. Kernel-side seconds: the
browser's own drawing is not in them.

    python -m bench.fresh_kernel [CAPTURE ...]

Default: the largest shipped capture (assets/gpu). The kernel is the venv's ``python3`` kernel with this
checkout first on ``PYTHONPATH``. The cell's CPU seconds in the kernel are reported too (on a shared machine
the wall time waits for CPU). Budgets: ≤ 2 s to the widget, ≤ 1 s per tab visit or compile switch.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from .table import Row, megabytes, seconds

REPO = Path(__file__).resolve().parent.parent
WIDGET_S, TAB_S = 2.0, 1.0
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

# Each visit is timed twice: to the tab drawn (its HTML set, big tables as their first page: what the
# browser shows first) and to its tables finished (itables widgets made: sort, search, every row).
TABS = r"""
import json, time
from explorer.views import VIEWS
from explorer.widget import Explorer
def _shipped(w, i):
    return len(w.panes[i].value.encode()) + sum(len(getattr(c, "value", "").encode()) for c in w.pieces[i].children)
def _visit(w, i, change):
    w.defer_tables = True
    t, c = time.perf_counter(), time.process_time(); change(); drawn, drawn_cpu = time.perf_counter() - t, time.process_time() - c
    size = _shipped(w, i)
    w.finish_tables(); w.defer_tables = False
    return [VIEWS[i].title, drawn, size, time.perf_counter() - t, drawn_cpu]
_w = Explorer(_tc_loaded, static_html=False)
_out = {"tabs": [], "switches": []}
for _i, _v in enumerate(VIEWS):
    _out["tabs"].append(_visit(_w, _i, lambda: setattr(_w.tabs, "selected_index", _i)))
    if _v.scope == "compile" and len(_w.compiles) > 1:
        _out["switches"].append(_visit(_w, _i, lambda: setattr(_w.selector, "value", 1)))
        _w.selector.value = 0
print(json.dumps(_out))
"""


def _run(client, code: str, timeout: float = 600) -> dict:
    """Execute ``code``; the seconds to the first widget display, to the reply, and the stdout text."""
    start = time.perf_counter()
    msg_id = client.execute(code)
    widget_s, stdout, error = None, [], None
    sent = {"static_html": 0, "widget_state": 0}  # what the cell sends the browser: the static copy, the widgets
    while True:
        msg = client.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind in ("display_data", "execute_result"):
            sent["static_html"] += len(content.get("data", {}).get("text/html", "").encode())
        elif kind in ("comm_open", "comm_msg"):
            sent["widget_state"] += len(json.dumps(content.get("data", {})).encode())
        if kind in ("display_data", "execute_result") and WIDGET_MIME in content.get("data", {}) and widget_s is None:
            widget_s = time.perf_counter() - start
        elif kind == "stream" and content.get("name") == "stdout":
            stdout.append(content["text"])
        elif kind == "error":
            error = f"{content['ename']}: {content['evalue']}"
        elif kind == "status" and content["execution_state"] == "idle":
            break
    if error:
        raise RuntimeError(error)
    return {"widget_s": widget_s, "done_s": time.perf_counter() - start, "stdout": "".join(stdout), **sent}


def measure(path: Path) -> dict:
    import compileall

    from jupyter_client.manager import start_new_kernel

    # as installed: pip writes each module's bytecode, so a kernel does not compile them on import (with
    # PYTHONDONTWRITEBYTECODE set, as here, a checkout's 100 modules took 0.85 s to compile in every kernel)
    for package in ("compiler", "explorer"):
        compileall.compile_dir(REPO / package, quiet=1)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    started = time.perf_counter()
    manager, client = start_new_kernel(kernel_name="python3", env=env, cwd=str(REPO))
    try:
        ready_s = time.perf_counter() - started
        # the kernel's CPU seconds to the widget: read when the explorer is displayed (IPython's display hook
        # calls _repr_mimebundle_ just before it sends the widget's display message)
        opened = _run(client, "import resource as _r, json as _j\n"
                              "def _tc_cpu():\n    u = _r.getrusage(_r.RUSAGE_SELF); return u.ru_utime + u.ru_stime\n"
                              "_tc_start = _tc_cpu()\n"
                              "from ipywidgets import VBox as _VBox\n_tc_shown = []\n"
                              "_tc_repr = _VBox._repr_mimebundle_\n"
                              "def _tc_spy(self, **kw):\n    _tc_shown.append(_tc_cpu()); return _tc_repr(self, **kw)\n"
                              "_VBox._repr_mimebundle_ = _tc_spy\n"
                              f"%load_ext explorer\n%tcompile --load {path} --name _tc_loaded\n"
                              "_VBox._repr_mimebundle_ = _tc_repr\n"
                              "print(_j.dumps([_tc_shown[0] - _tc_start, _tc_cpu() - _tc_start]))")
        widget_cpu, cell_cpu = json.loads(opened["stdout"].strip().splitlines()[-1])
        torch = _run(client, "import sys; print('torch' in sys.modules)")["stdout"].strip() == "True"
        tabs = json.loads(_run(client, TABS)["stdout"].strip().splitlines()[-1])
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    return {"capture": str(path), "capture_bytes": path.stat().st_size, "kernel_ready_s": ready_s,
            "widget_s": opened["widget_s"], "widget_cpu_s": widget_cpu, "cell_s": opened["done_s"], "cell_cpu_s": cell_cpu,
            "load_average": os.getloadavg()[0], "torch_imported": torch, "static_html_bytes": opened["static_html"],
            "widget_state_bytes": opened["widget_state"], **tabs}


def rows_for(result: dict) -> list[Row]:
    name = f"{Path(result['capture']).name} ({megabytes(result['capture_bytes'])})"
    load = f"load average {result['load_average']:.1f} on {os.cpu_count()} cores"
    rows = [Row(f"fresh kernel, %tcompile --load {name}: to the widget", seconds(result["widget_s"]), "2 s budget",
                result["widget_s"] / WIDGET_S, "≤ 1 (≤ 2 s)", high=1.0,
                note=f"{seconds(result['widget_cpu_s'])} of kernel CPU to the widget ({load}: the wall time waits for "
                     f"CPU); cell done in {seconds(result['cell_s'])} ({seconds(result['cell_cpu_s'])} of CPU: the "
                     f"static copy and the sortable tables after the widget included); kernel start "
                     f"{seconds(result['kernel_ready_s'])} (not counted); torch imported: {result['torch_imported']}")]
    rows.append(Row(f"fresh kernel, %tcompile --load {name}: HTML displayed", megabytes(result["static_html_bytes"]),
                    "1 MB budget", result["static_html_bytes"] / 1e6, "≤ 1 (≤ 1 MB)", high=1.0,
                    note=f"the cell's text/html outputs (the static copy a saved notebook keeps); the widgets' state "
                         f"sent alongside: {megabytes(result['widget_state_bytes'])} (the first tab's HTML, then its "
                         "sortable tables)"))
    for what, entries in (("first tab visit", result["tabs"]), ("compile switch", result["switches"])):
        if not entries:
            continue
        slowest = max(entries, key=lambda t: t[1])
        biggest = max(entries, key=lambda t: t[2])
        rows.append(Row(f"{name}: slowest {what}, drawn ({slowest[0]})", seconds(slowest[1]), "1 s budget",
                        slowest[1] / TAB_S, "≤ 1 (≤ 1 s)", high=1.0,
                        note="drawn (its CPU) / tables sortable / HTML shipped: " + "; ".join(
                            f"{t}: {seconds(s)} ({seconds(cpu)}) / {seconds(done)}, {megabytes(b)}"
                            for t, s, b, done, cpu in entries)
                        + f"; largest HTML shipped: {biggest[0]} {megabytes(biggest[2])}; {load}"))
    return rows


def largest_shipped() -> Path:
    return max((REPO / "assets" / "gpu").glob("*.json"), key=lambda p: p.stat().st_size)


def run(quick: bool, log=print, paths: list[Path] | None = None) -> tuple[list[Row], dict]:
    results = []
    for path in paths or [largest_shipped()]:
        results.append(measure(Path(path).resolve()))
        log(f"fresh kernel: {Path(path).name}: widget after {seconds(results[-1]['widget_s'])}")
    return [row for result in results for row in rows_for(result)], {"runs": results}


def main(argv=None) -> int:
    from .table import format_table

    paths = [Path(p) for p in (argv if argv is not None else sys.argv[1:])]
    rows, details = run(False, paths=paths or None)
    print(format_table(rows))
    print(json.dumps(details))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
