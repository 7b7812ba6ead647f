"""Redo the GPU costs of saved captures from what they keep (issue 26): `python -m scripts.recost_gpu_captures
CAPTURE.json [NCU.csv]` rewrites the capture with the bytes, FLOPs, roofline and amortization of
compiler.stages.assemble.recompute; with an ncu CSV (compiler.capturing.ncu) it also records the measured DRAM
bytes beside each Triton kernel's estimate. The measured times and the generated code are not touched."""
import sys
from pathlib import Path

import compiler

from compiler.capturing.ncu import attach, read_csv
from compiler.stages.capture import Capture
from compiler.stages.data import plain_data
from compiler.stages.assemble import recompute


def recost(path: Path, ncu_csv: Path | None = None) -> None:
    data = plain_data(compiler.load(path))  # every stage whole, as before saving
    recompute(data)
    if ncu_csv is not None:
        print(f"{path.name}: ncu measured {attach(data, read_csv(ncu_csv.read_text()))} kernels")
    Capture.from_data(data).save(path)  # checked against the schema on the way


if __name__ == "__main__":
    recost(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) > 2 else None)
