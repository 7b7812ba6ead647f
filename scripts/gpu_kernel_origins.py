"""Issue 33's cross-check on the GPU machine: graphs node for node, kernel lines from their own origins.

    python -m scripts.gpu_kernel_origins OUT [NAME …]     (default: maskrcnn resnet50 gpt2_2layer train_adamw)

For each model of ``scripts/gpu_models.py``: one ``torch.compile`` (Inductor, fresh caches) under
``compiler.capture()``, with Inductor's provenance tracking on (``trace.provenance_tracking_level=1``: torch's own
kernel → post-grad node record, read back from the capture) and a backend that keeps the GraphModule Dynamo hands
on and the post-grad graph each Inductor run leaves. Then per model: nodes parsed from the printed graphs vs
torch's (Dynamo: per compile id; post-grad: the runs' counts as multisets), kernels, kernels whose lines come from
their origin comments (``origin``), kernels whose lines are among the lines of the post-grad nodes torch's
tracking names for them (checked), violations, and — for comparison — how many kernels the scheduler-IR matcher
(the old way, forced here) gives lines disjoint from torch's. Violations count kernels with an
origin only; kernels torch names no origin for (C++ on CPU) are counted apart. Writes OUT/kernel_origins.json, prints a table.
Imports no IPython; each model takes 1–4 minutes on an H100.
"""
from __future__ import annotations

import collections
import json
import re
import sys
import time
from pathlib import Path

import torch

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _counts(nodes, op=lambda n: n.op) -> dict:
    return dict(collections.Counter(op(n) for n in nodes if op(n) != "alias"))


def check(name: str) -> dict:
    import compiler
    import compiler.stages.provenance as provenance
    from compiler.stages.inductor_tracking import _HANDLE
    from scripts.gpu_models import MODELS
    from torch._inductor import config as inductor_config
    from torch._inductor.compile_fx import compile_fx

    torch._dynamo.reset()
    fn, args = MODELS[name]()
    dynamo, post = [], []

    def backend(gm, example_inputs):
        # counted now: Inductor may later rewrite or empty the graph it was handed (seen on the GPU: 0 nodes)
        dynamo.append((str(torch._guards.CompileContext.current_compile_id()), _counts(gm.graph.nodes)))
        return compile_fx(gm, example_inputs)

    start = time.perf_counter()
    with inductor_config.patch({"trace.provenance_tracking_level": 1, "post_grad_custom_post_pass": post.append}), \
            compiler.capture(fresh=True, suppress_errors=True) as cap:
        torch.compile(fn, backend=backend)(*args)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    graphs = {c.compile_id: c.graph for c in cap.compiles if c.graph.available}
    node_rows = []
    for cid, theirs in dynamo:
        ours = _counts(graphs[cid].nodes) if cid in graphs else None
        node_rows.append({"compile": cid, "parsed": sum((ours or {}).values()), "torch": sum(theirs.values()),
                          "equal": ours == theirs})
    runs = [r for c in cap.compiles for r in c.inductor.runs if r.post_grad.available]
    post_equal = sorted(map(json.dumps, (dict(sorted(_counts(r.post_grad.nodes).items())) for r in runs))) == \
        sorted(map(json.dumps, (dict(sorted(_counts(g.nodes).items())) for g in post)))

    def torch_lines(c, tracking, kernel):
        run = next(r for r in c.inductor.runs if r.role == kernel.role)
        lines = {n.name: (n.file, n.line) for n in run.post_grad.nodes if n.line}
        return {lines[p] for k, posts in tracking.kernel_to_post.items() if _HANDLE.sub("", k) == kernel.name
                for p in posts if p in lines}

    kernels = with_origin = checked = 0
    violations, old_disjoint, examples, inferred_outside = [], 0, [], 0
    for c in cap.compiles:
        if not c.inductor.available:
            continue
        tracking = {t.role: t for t in c.provenance.inductor_tracking}
        ours = provenance.provenance_stage(c.graph, c.aot, c.inductor, c.source, kernels=c.kernels)
        saved = provenance.kernel_sites, provenance._SOURCE_MAP
        provenance.kernel_sites, provenance._SOURCE_MAP = (lambda module, names: {}), re.compile(r"(?!x)x")
        try:  # the old way: the scheduler IR matched to post-grad nodes by shape
            old = {k.key: k for k in provenance.provenance_stage(c.graph, c.aot, c.inductor, c.source).kernels}
        finally:
            provenance.kernel_sites, provenance._SOURCE_MAP = saved
        for k in ours.kernels:
            kernels += 1
            theirs = torch_lines(c, tracking[k.role], k) if k.role in tracking else set()
            places = {(p.file, p.line) for p in k.places}
            if k.origin:
                with_origin += 1
            if theirs:
                checked += 1
                if not places <= theirs and not k.origin:
                    inferred_outside += 1  # a C++ kernel (CPU): torch names no origin, its lines are the IR's guess
                elif not places <= theirs:
                    violations.append({"compile": c.compile_id, "kernel": k.key, "ours": sorted(places, key=str),
                                       "torch": sorted(theirs, key=str)})
                before = {(p.file, p.line) for p in old[k.key].places} if k.key in old else set()
                if before and not before & theirs:
                    old_disjoint += 1
                    if len(examples) < 5:
                        examples.append({"kernel": k.key, "old": sorted(before, key=str)[:4],
                                         "torch": sorted(theirs, key=str)[:4]})
    return {"model": name, "seconds": round(time.perf_counter() - start, 1), "compiles": len(cap.compiles),
            "error": cap.error.as_text()[:300] if cap.error else None,
            "dynamo_graphs": len(node_rows), "dynamo_equal": sum(r["equal"] for r in node_rows),
            "nodes_parsed": sum(r["parsed"] for r in node_rows), "nodes_torch": sum(r["torch"] for r in node_rows),
            "post_grad_graphs": len(runs), "post_grad_equal": post_equal, "kernels": kernels,
            "with_origin": with_origin, "checked_against_torch": checked, "violations": violations,
            "no_origin_outside_torch": inferred_outside,
            "old_way_disjoint": old_disjoint, "old_way_examples": examples, "node_rows": node_rows}


def main(argv: list[str]) -> None:
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    names = argv[1:] or ["maskrcnn", "resnet50", "gpt2_2layer", "train_adamw"]
    rows = []
    for name in names:
        try:
            rows.append(check(name))
        except Exception as exc:  # noqa: BLE001 — one model's failure is its row
            rows.append({"model": name, "error": f"{type(exc).__name__}: {exc}"[:500]})
        (out / "kernel_origins.json").write_text(json.dumps(rows, indent=1, default=str))
        r = rows[-1]
        print(json.dumps({k: v for k, v in r.items() if k not in ("node_rows", "old_way_examples")}, default=str)[:1500],
              flush=True)
    print(f"{'model':14} {'compiles':>8} {'dynamo eq':>10} {'nodes ours/torch':>17} {'post eq':>7} {'kernels':>7} "
          f"{'origin':>6} {'checked':>7} {'viol':>4} {'old disjoint':>12}")
    for r in rows:
        if "kernels" not in r:
            print(f"{r['model']:14} error: {r.get('error')}")
            continue
        print(f"{r['model']:14} {r['compiles']:>8} {r['dynamo_equal']:>4}/{r['dynamo_graphs']:<5} "
              f"{r['nodes_parsed']:>8}/{r['nodes_torch']:<8} {str(r['post_grad_equal']):>7} {r['kernels']:>7} "
              f"{r['with_origin']:>6} {r['checked_against_torch']:>7} {len(r['violations']):>4} {r['old_way_disjoint']:>12}")


if __name__ == "__main__":
    main(sys.argv[1:])
