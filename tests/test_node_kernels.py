"""A node's kernels in the graph viewers' details (``explorer.graph_viewer.kernel_links``) are the run's kernels:
Inductor writes ``stream0 = get_raw_stream(0)`` between a kernel's ``Source Nodes`` comment and its call on a GPU,
and the details listed ``get_raw_stream`` as the nodes' kernel (issue 46). On the shipped H100 capture."""
from __future__ import annotations

from pathlib import Path

import compiler
from explorer.graph_viewer import kernel_links

SHIPPED = Path(__file__).resolve().parent.parent / "assets" / "gpu" / "gpt2_2layer.json"


def test_node_details_list_only_the_runs_kernels():
    cap = compiler.load(SHIPPED)
    checked = 0
    for c in cap.compiles:
        for run in c.inductor.runs:
            if not run.code.available:
                continue
            names = {k.name for k in run.code.kernels}
            linked = {k.removesuffix(" (guessed from the op name)") for ks in kernel_links(run, c.graph.nodes).values()
                      for k in ks}
            assert "get_raw_stream" not in linked
            assert linked <= names, linked - names
            checked += len(linked)
    assert checked
