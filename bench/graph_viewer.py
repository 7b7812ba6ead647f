"""Graph viewer budgets (issue 16): a 10,000-node FX graph's first paint ≤ 1 s, opening one group ≤ 200 ms.

The graph: the chain of 10,000 pointwise ops from ``bench.workloads.chain`` compiled with
``backend="eager"`` (making the capture is not timed). Timed in Python, where the work is: building
the viewer (the collapsible tree, the Graphviz layout of its opening state, the scene it sends) and
opening one group (its layout; a fresh one each time, not the cache). Drawing the scene in the
browser is a few hundred SVG elements; the acceptance test records the click-to-drawn time.

    .venv/bin/python -m bench.graph_viewer
"""
from __future__ import annotations

import json
import statistics
import time

FIRST_PAINT_S, EXPAND_S = 1.0, 0.2


def run(n_ops: int = 10000, repeats: int = 5, log=print) -> dict:
    import torch

    import compiler
    from explorer.graph_viewer import GraphViewer

    from .workloads import chain

    torch._dynamo.reset()
    with compiler.capture() as cap:
        torch.compile(chain(n_ops), backend="eager")(torch.randn(8))
    graph = cap.compiles[0].graph
    GraphViewer(graph)  # imports and the dot binary's first start: paid once per session
    first, expand, sizes = [], [], []
    for _ in range(repeats):
        start = time.perf_counter()
        viewer = GraphViewer(graph)
        first.append(time.perf_counter() - start)
        sizes.append(len(json.dumps(viewer.scene)))
        group = next(b["id"] for b in viewer.scene["boxes"] if b["group"])
        start = time.perf_counter()
        viewer.expand(group)
        expand.append(time.perf_counter() - start)
    out = {"fx_nodes": len(graph.nodes), "first_paint_s": statistics.median(first),
           "expand_s": statistics.median(expand), "boxes_first": len(GraphViewer(graph).scene["boxes"]),
           "boxes_expanded": len(viewer.scene["boxes"]), "scene_bytes": statistics.median(sizes)}
    log(f"graph viewer, {out['fx_nodes']:,} FX nodes: first paint {out['first_paint_s'] * 1000:.0f} ms "
        f"({out['boxes_first']} boxes, scene {out['scene_bytes'] / 1000:.0f} kB; budget {FIRST_PAINT_S:g} s), "
        f"open one group {out['expand_s'] * 1000:.0f} ms ({out['boxes_expanded']} boxes; budget {EXPAND_S * 1000:.0f} ms)")
    return out


if __name__ == "__main__":
    run()
