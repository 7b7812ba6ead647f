"""Figure — loading a 100 MB TORCH_TRACE log (``compiler.load_trace``): wall time and peak memory.

The log is made from real records: one ``compiler.capture()`` of a 64-layer MLP's training step
compiled with ``backend="aot_eager"`` (Dynamo, joint, forward and backward graphs, guards,
chromium events, compilation metrics), written with ``save_trace`` and repeated with fresh frame
ids until the file holds 100 MB (``--quick``: 20 MB). Loading runs in a fresh process that has
imported torch and tcompile first (``import_s``, reported apart); the time is that of the
``load_trace`` call, and peak memory is the process's maximum RSS minus its RSS before the call.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from .table import Row, megabytes, seconds

TARGET_BYTES = {False: 100_000_000, True: 20_000_000}
BUDGET_S, BUDGET_BYTES = 10.0, 1_000_000_000

CHILD = r"""
import json, resource, sys, time, warnings
sys.path.insert(0, sys.argv[2])
t0 = time.perf_counter()
import torch, torch._dynamo
import compiler
from compiler.readers.trace import TraceWarning
import_s = time.perf_counter() - t0

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()

before = rss()
start, cpu_start = time.perf_counter(), time.process_time()
with warnings.catch_warnings():
    warnings.simplefilter("ignore", TraceWarning)
    cap = compiler.load_trace(sys.argv[1])
elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"seconds": elapsed, "cpu_seconds": cpu, "import_s": import_s, "peak_bytes": peak - before, "rss_before": before,
                  "compiles": len(cap.compiles), "records": cap.trace.records}))
"""


def make_trace(path: Path, target_bytes: int) -> dict:
    """A TORCH_TRACE log of ``target_bytes`` made of one real capture's records, repeated with new frame ids."""
    import torch
    from torch import nn

    import compiler
    from compiler.readers.trace import trace_lines

    model = nn.Sequential(*[layer for _ in range(64) for layer in (nn.Linear(64, 64), nn.ReLU())])
    step = torch.compile(lambda x: model(x).sum().backward(), backend="aot_eager")
    torch._dynamo.reset()
    with compiler.capture() as cap:
        step(torch.randn(8, 64))
    records = [r for r in cap.live.records if not r.kind.startswith("log:")]
    frames = max(int(r.metadata.get("frame_id", 0)) for r in records) + 1
    from torch._logging.structured import INTERN_TABLE

    strings = {index: text for text, index in INTERN_TABLE.items()}
    written, copies = 0, 0
    with open(path, "w", encoding="utf-8") as f:
        for line in trace_lines([], strings):
            f.write(line + "\n")
        while written < target_bytes:
            for record in records:
                saved = record.metadata
                if "frame_id" in saved:
                    record.metadata = {**saved, "frame_id": saved["frame_id"] + copies * frames}
                for line in trace_lines([record], {}):
                    f.write(line + "\n")
                    written += len(line) + 1
                record.metadata = saved
            copies += 1
    return {"bytes": path.stat().st_size, "copies": copies, "records_per_copy": len(records)}


def run(quick: bool, log=print) -> tuple[list[Row], dict]:
    target = TARGET_BYTES[quick]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "dedicated_log_torch_trace_big.log"
        made = make_trace(path, target)
        log(f"load_trace: made {megabytes(made['bytes'])} trace ({made['copies']} copies of "
            f"{made['records_per_copy']} records)")
        repo = str(Path(__file__).resolve().parent.parent)
        out = subprocess.run([sys.executable, "-c", CHILD, str(path), repo], capture_output=True, text=True,
                             timeout=600)
        if out.returncode != 0:
            raise RuntimeError(f"loading the trace failed: {out.stderr[-2000:]}")
        result = json.loads(out.stdout.strip().splitlines()[-1])
    size = megabytes(made["bytes"])
    rows = [
        Row(f"load_trace {size} TORCH_TRACE ({result['compiles']} compiles): wall time", seconds(result["seconds"]),
            "10 s budget", result["seconds"] / BUDGET_S, "≤ 1 (≤ 10 s)", high=1.0),
        Row(f"load_trace {size} TORCH_TRACE: peak memory over baseline", megabytes(result["peak_bytes"]),
            "1 GB budget", result["peak_bytes"] / BUDGET_BYTES, "≤ 1 (≤ 1 GB)", high=1.0),
    ]
    return rows, {**made, **result}
