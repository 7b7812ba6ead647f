"""Issue 33's cross-check on real models of several families: each captured with Inductor (``compiler.run``, fresh
Inductor cache, timed and, on CUDA, profiled), ``torch._dynamo.explain()`` run on the same call and recorded with the
capture (``"explain"``), the capture saved into OUT and checked (``compiler.analyses.check``, what
``python -m compiler check`` runs); then one table row per model.

    python scripts/gpu_check_models.py OUT [NAME …] [--timeout S]

On CUDA the models are torchvision's Mask R-CNN (``maskrcnn_resnet50_fpn(weights=None)``, one 256 × 256 image,
eval), torchvision's ResNet-50, GPT-2 from its config (transformers, no weights) and a training step (GPT-2 2 layers:
forward, loss, backward, AdamW step). Without CUDA (to try the script anywhere) tiny ones: a residual CNN (in-place
adds), a one-layer GPT-2 and an MLP training step. Each model runs in a process of its own, all at once, each under
``--timeout`` seconds (default 420: the whole run stays under 8 minutes); OUT gets ``NAME.json.gz`` (the capture with
explain()'s record — explain() runs on the model built again, as the capture saw it: a first call),
``NAME.check.json`` (the check's figures and violations, the graph breaks by kind here and torch's counters by break
type), ``NAME.nodes/`` (each Dynamo graph whose node count differs from torch's ``graph_node_count``: the names its
code defines that no node was parsed for, and the code) and ``table.json``. Imports no IPython or explorer. Exit
status 1 when a model has a violation or failed.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def _device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


# --- the models: (function, args) on the device -----------------------------------------------------

def maskrcnn(device):
    import torch
    import torchvision

    model = torchvision.models.detection.maskrcnn_resnet50_fpn(weights=None, weights_backbone=None).to(device).eval()
    images = [torch.rand(3, 256, 256, device=device)]

    def detect(images):
        with torch.no_grad():
            return model(images)

    return detect, (images,)


def resnet50(device):
    import torch
    import torchvision

    model = torchvision.models.resnet50(weights=None).to(device).eval()
    x = torch.randn(8, 3, 224, 224, device=device)

    def classify(x):
        with torch.no_grad():
            return model(x)

    return classify, (x,)


def gpt2(device, layers: int = 2, batch: int = 4, seq: int = 128, **config):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(n_layer=layers, use_cache=False, **config)
    model = GPT2LMHeadModel(config).to(device).eval()
    ids = torch.randint(0, config.vocab_size, (batch, seq), device=device)

    def logits(ids):
        with torch.no_grad():
            return model(input_ids=ids).logits

    return logits, (ids,)


def train_step(device, tiny: bool = False):
    """One training step: forward, loss, backward, AdamW step (GPT-2 2 layers on CUDA, an MLP without)."""
    import torch

    if tiny:
        model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 8)).to(device)
        x, y = torch.randn(16, 32, device=device), torch.randint(0, 8, (16,), device=device)

        def loss_of(x, y):
            return torch.nn.functional.cross_entropy(model(x), y)
        args = (x, y)
    else:
        from transformers import GPT2Config, GPT2LMHeadModel

        config = GPT2Config(n_layer=2, use_cache=False)
        model = GPT2LMHeadModel(config).to(device).train()
        ids = torch.randint(0, config.vocab_size, (4, 128), device=device)

        def loss_of(ids):
            return model(input_ids=ids, labels=ids).loss
        args = (ids,)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step(*args):
        loss = loss_of(*args)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.detach()

    return step, args


def residual_cnn(device):
    """A tiny ResNet-like CNN: its residual adds are in-place (``out += identity``), as torchvision's are."""
    import torch

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(8, 8, 3, padding=1)
            self.bn = torch.nn.BatchNorm2d(8)
            self.relu = torch.nn.ReLU(inplace=True)

        def forward(self, x):
            out = self.bn(self.conv(x))
            out += x
            return self.relu(out)

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), Block(), Block()).to(device).eval()
    x = torch.randn(2, 3, 16, 16, device=device)

    def classify(x):
        with torch.no_grad():
            return model(x)

    return classify, (x,)


EXPLAIN_BEFORE_S = 300  # explain() runs after a capture that took less (it traces the model again)
CUDA_MODELS = {"maskrcnn": maskrcnn, "resnet50": resnet50, "gpt2": gpt2, "train_adamw": train_step}
CPU_MODELS = {"residual_cnn": residual_cnn, "gpt2_tiny": lambda d: gpt2(d, layers=1, batch=2, seq=16, n_embd=64,
                                                                         n_head=2),
              "train_mlp": lambda d: train_step(d, tiny=True)}


# --- one model, in its own process ------------------------------------------------------------------

def one(name: str, out: Path, backend: str = "inductor") -> dict:
    import torch

    import compiler
    from compiler.analyses.check import check, explain_record

    device = _device()
    models = CUDA_MODELS if device == "cuda" else CPU_MODELS
    start = time.perf_counter()
    torch.manual_seed(0)
    factory = {**CPU_MODELS, **CUDA_MODELS}.get(name)
    if factory is None:
        raise SystemExit(f"unknown model {name}: {sorted(models)}")
    fn, args = factory(device)
    cap = compiler.run(fn, *args, compile_kwargs={"backend": backend}, fresh=True, errors="return", repeat=5,
                       options={"case": name})
    captured_s = time.perf_counter() - start
    torch._dynamo.reset()
    explained = None
    if captured_s > EXPLAIN_BEFORE_S:  # keep the model inside its time: explain() traces every frame again
        print(f"{name}: explain() skipped: the capture took {captured_s:.0f} s", file=sys.stderr)
    else:
        try:  # on the model built again: a module that caches on its first call (Mask R-CNN's MultiScaleRoIAlign
            # sets its scales in _setup_scales, two graphs) would run other code on the captured one
            torch.manual_seed(0)
            fresh_fn, fresh_args = factory(device)
            explained = explain_record(torch._dynamo.explain(fresh_fn)(*fresh_args))
        except Exception as exc:  # noqa: BLE001 — explain() failing is reported, the check runs without it
            print(f"{name}: explain() failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    data = cap.to_data()
    if explained is not None:
        data["explain"] = explained
    path = out / f"{name}.json.gz"
    path.write_bytes(gzip.compress(json.dumps(data).encode(), compresslevel=6, mtime=0))
    checked = check(cap, explained)
    nodes_differ = node_differences(cap, out / f"{name}.nodes")
    result = {"model": name, "device": device, "torch": torch.__version__, "compiles": checked.compiles,
              "graphs_checked": checked.graphs, "ops": checked.ops, "torch_ops": checked.torch_ops,
              "kernels_lines_in_origins": checked.kernels_lines_in_origins,
              "kernels_with_origin_lines": checked.kernels_with_origin_lines,
              "kernels_without_origin": checked.kernels_without_origin, "kernels_checked": checked.kernels,
              "recompile_budgets": [b.as_text() for b in cap.recompile_budgets],
              "skipped_frames": len(cap.skipped_frames), "graph_breaks": cap.summary.graph_breaks,
              "explain_graphs": explained and explained["graph_count"], "graphs": cap.summary.graphs,
              "error": cap.error.as_text() if cap.error else None,
              "break_kinds": cap.breaks.kinds(), "torch_graph_break": _by_first_line(cap.counters.get("graph_break")),
              "torch_unimplemented": _by_first_line(cap.counters.get("unimplemented")),
              "nodes_differ": nodes_differ,
              "violations": [v.line() for v in checked.violations], "capture_s": round(captured_s, 1),
              "seconds": round(time.perf_counter() - start, 1), "bytes": path.stat().st_size}
    (out / f"{name}.check.json").write_text(json.dumps(result, indent=1))
    return result


def _by_first_line(counter: dict | None) -> dict:
    """torch's counter (keyed by a break's whole message) by the message's first line (the break's type)."""
    out: dict = {}
    for message, n in (counter or {}).items():
        first = (str(message).strip().splitlines() or [""])[0][:160]
        out[first] = out.get(first, 0) + n
    return out


def node_differences(cap, folder: Path) -> list[str]:
    """For each Dynamo graph whose node count here differs from torch's (``graph_node_count``): the names its code
    defines that the parser made no node of, and the reverse, each with its code (``check.node_difference``), into
    ``folder/<compile>.json`` with the graph's code beside it (``<compile>.py.txt``); the compile ids."""
    from compiler.analyses.check import node_difference

    found = []
    for c in cap.compiles:
        torch_nodes = c.metrics.get("graph_node_count")
        if c.origin != "dynamo" or not c.graph.available or not c.graph.code or not isinstance(torch_nodes, int):
            continue
        nodes = sum(n.op != "alias" for n in c.graph.nodes)
        if nodes == torch_nodes:
            continue
        folder.mkdir(parents=True, exist_ok=True)
        stem = c.compile_id.replace("/", "_")
        difference = node_difference(c.graph)
        (folder / f"{stem}.json").write_text(json.dumps({"compile": c.compile_id, "nodes_here": nodes,
                                                          "torch_graph_node_count": torch_nodes,
                                                          "torch_graph_op_count": c.metrics.get("graph_op_count"),
                                                          "ops_here": c.graph.op_count, **difference}, indent=1))
        (folder / f"{stem}.py.txt").write_text(c.graph.code)
        found.append(c.compile_id)
        print(f"{cap.options.get('case')}: {c.compile_id}: {nodes} nodes here, torch's {torch_nodes}; in the code, not "
              f"parsed: {difference['in_code_not_parsed']}; parsed, not in the code: "
              f"{difference['parsed_not_in_code']}", file=sys.stderr)
    return found


def table(results: list[dict]) -> str:
    head = "model | compiles | Dynamo ops here / torch's | kernels with lines among their origins | violations | s"
    rows = [head, "-" * len(head)]
    for r in results:
        if "error_run" in r:
            rows.append(f"{r['model']} | – | – | – | run failed: {r['error_run'][:120]} | {r.get('seconds', '–')}")
            continue
        rows.append(f"{r['model']} | {r['compiles']} | {r['ops']} / {r['torch_ops']} | "
                    f"{r['kernels_lines_in_origins']} / {r['kernels_with_origin_lines']}"
                    f" ({r['kernels_without_origin']} without origin) | {len(r['violations'])} | {r['seconds']}")
    return "\n".join(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("names", nargs="*")
    parser.add_argument("--timeout", type=float, default=420.0, help="seconds each model may take (all run at once)")
    parser.add_argument("--backend", default="inductor", help="the torch.compile backend (inductor; aot_eager to try "
                                                               "the script quickly on a CPU)")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.one:
        print(json.dumps(one(args.names[0], args.out, args.backend)))
        return 0
    names = args.names or list(CUDA_MODELS if _device() == "cuda" else CPU_MODELS)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    started = {name: (time.perf_counter(), subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), str(args.out), name, "--one", "--backend", args.backend],
        cwd=REPO, env=env,
        stdout=subprocess.PIPE, stderr=open(args.out / f"{name}.log", "w"), text=True)) for name in names}
    results = []
    for name, (start, process) in started.items():
        left = max(1.0, args.timeout - (time.perf_counter() - start))
        try:
            stdout, _ = process.communicate(timeout=left)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            results.append({"model": name, "error_run": f"over {args.timeout:.0f} s", "seconds": round(args.timeout)})
            continue
        last = (stdout or "").strip().splitlines()[-1:] or [""]
        try:
            results.append(json.loads(last[0]))
        except json.JSONDecodeError:
            tail = (args.out / f"{name}.log").read_text(errors="replace").strip().splitlines()[-1:] or ["?"]
            results.append({"model": name, "error_run": f"exit {process.returncode}: {tail[0]}",
                            "seconds": round(time.perf_counter() - start, 1)})
    (args.out / "table.json").write_text(json.dumps(results, indent=1))
    print(table(results))
    for r in results:
        for line in r.get("violations", [])[:15]:
            print(f"{r['model']}: {line}")
        if r.get("nodes_differ"):
            print(f"{r['model']}: node counts differ from torch's in {r['nodes_differ']}: see {r['model']}.nodes/")
        if r.get("break_kinds"):
            print(f"{r['model']}: graph breaks here by kind {r['break_kinds']}; torch's counters['graph_break'] "
                  f"{sum(r['torch_graph_break'].values())} over {len(r['torch_graph_break'])} types")
        for budget in r.get("recompile_budgets", [])[:5]:
            print(f"{r['model']}: recompile budget: {budget}")
        if r.get("error"):
            print(f"{r['model']}: capture error: {r['error']}")
    return 1 if any(r.get("violations") or "error_run" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
