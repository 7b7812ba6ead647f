"""Record the TORCH_TRACE logs the tests read back: `python -m scripts.record_test_traces [OUT_DIR] [CASE …]`.

Each case runs in a fresh Python with ``TORCH_TRACE`` set (torch reads it at import) and, in the same run,
under ``compiler.capture``: the log is copied to ``OUT_DIR/<case>.log`` (default ``tests/assets/traces/``,
named after the torch that wrote it) and what the live capture saw — compile ids, statuses, graphs, guards,
graph breaks, recompiles — to ``<case>.json`` (``digest``), which ``tests/test_trace_logs.py`` compares with
``load_trace`` of the log. CPU, backend ``eager``: a few hundred KB per log.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "tests" / "assets" / "traces"


def digest(cap) -> dict:
    """What a trace must reproduce of a capture (no timings, no paths of the recording machine)."""
    return {
        "compile_ids": [c.compile_id for c in cap.compiles],
        "status": [c.status for c in cap.compiles],
        "graph_ops": [c.graph.op_count if c.graph.available else None for c in cap.compiles],
        "guards": [c.guards.count if c.guards.available else None for c in cap.compiles],
        "breaks": [{"compile_ids": list(b.compile_ids), "count": b.count, "headline": b.headline, "line": b.line,
                    "file": Path(b.file).name if b.file else None} for b in cap.breaks.items],
        "recompiles": [{"compile_id": r.compile_id, "failed_guard": r.failed_guard} for r in cap.recompiles],
        "summary": {k: v for k, v in cap.summary.to_data().items() if k != "compile_time_s"},
    }


def with_break(x):
    y = x.sin() + 1
    print("a graph break")  # noqa: T201 — the graph break this trace records
    return y.cos() * 2


def break_and_recompile():
    import torch

    compiled = torch.compile(with_break, backend="eager", dynamic=False)
    compiled(torch.randn(4))
    compiled(torch.randn(8))  # a new size under dynamic=False: both frames recompile


CASES = {"break_recompile": break_and_recompile}


def child(case: str, out_json: str) -> None:
    import contextlib
    import io

    import torch

    import compiler

    with contextlib.redirect_stdout(io.StringIO()), compiler.capture(fresh=True) as cap:
        CASES[case]()
    data = {"torch": str(torch.__version__), "case": case, "digest": digest(cap)}
    Path(out_json).write_text(json.dumps(data, indent=1) + "\n")


def record(case: str, out_dir: Path) -> Path:
    import torch  # only for the file name: the child imports its own

    version = str(torch.__version__).split("+")[0].replace(".", "_")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, TORCH_TRACE=str(Path(tmp) / "trace"))
        subprocess.run([sys.executable, "-m", "scripts.record_test_traces", "--child", case,
                        str(Path(tmp) / "digest.json")], check=True, cwd=REPO, env=env)
        (log,) = (Path(tmp) / "trace").glob("*.log")
        stem = f"torch_{version}_{case}"
        out_dir.mkdir(parents=True, exist_ok=True)
        shutil.copy(log, out_dir / f"{stem}.log")
        shutil.copy(Path(tmp) / "digest.json", out_dir / f"{stem}.json")
    return out_dir / f"{stem}.log"


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        child(argv[1], argv[2])
        return 0
    out_dir = Path(argv[0]) if argv else DEFAULT_OUT
    for case in argv[1:] or list(CASES):
        path = record(case, out_dir)
        print(f"{path}: {path.stat().st_size // 1024} KB")  # noqa: T201
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
