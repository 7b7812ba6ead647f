"""Record the shipped GPU captures: `python -m scripts.record_gpu_captures [OUT_DIR] [CASE …]`.

Runs every case of scripts/gpu_cases.py on a CUDA machine through `compiler.run(fresh=True)` (or a
`Recorder` when a case calls extra arguments under the same capture), records the case's name in
`options["case"]`, and writes `<case>.json` (default
`assets/gpu/`). Each capture's `environment` names the GPU, torch and triton versions.
"""
import json
import sys
import time
from pathlib import Path

import torch

import compiler
from compiler.capturing.gpu import profile_kernels
from compiler.stages.capture import unavailable
from compiler.capturing.runtime import time_interleaved
from compiler.capturing.session import Recorder
from scripts.gpu_cases import CASES


def record(name: str, out_dir: Path) -> dict:
    fn, args, compile_kwargs, calls = CASES[name]()
    keep_first_output = compile_kwargs.pop("_keep_first_output", False)
    start = time.perf_counter()
    options = {"backend": "inductor", **compile_kwargs, "stance": None, "case": name}
    if keep_first_output:  # use an output after later replays overwrote it
        torch._dynamo.reset()
        compiled = torch.compile(fn, **compile_kwargs)
        recorder = Recorder(fresh=True, suppress_errors=True, options={**options, "calls_under_capture": 3})
        with recorder:
            first = compiled(*args)
            compiled(*args)
            compiled(*args)
            first + 1
        cap = recorder.build({"runtime": unavailable("this case demonstrates an error")})
    elif calls:  # extra shapes: capture the whole sequence of calls
        torch._dynamo.reset()
        compiled = torch.compile(fn, **compile_kwargs)
        recorder = Recorder(fresh=True, options={**options, "calls_under_capture": 2 * (1 + len(calls))})
        with recorder:
            for call_args in [args, *calls]:  # twice each: warm-up, then record
                compiled(*call_args)
                compiled(*call_args)
        runtime = time_interleaved(fn, compiled, args, {}, device="cuda")
        cap = recorder.build({"runtime": runtime, "gpu_profile": profile_kernels(compiled, calls[-1])})
    else:
        cap = compiler.run(fn, *args, compile_kwargs=compile_kwargs, fresh=True, errors="return",
                           options={"case": name})
    path = cap.save(out_dir / f"{name}.json")
    if "--raw" in sys.argv:  # the raw log records behind the GPU stages, for parser development
        raw = [r.to_json() for r in cap.live.records if r.kind.startswith("log:") or "triton" in r.kind]
        (out_dir / f"raw_{name}.json").write_text(json.dumps(raw, default=str))
    graphs = cap.cudagraphs
    return {"case": name, "triton_kernels": kernel_rows(cap), "seconds": round(time.perf_counter() - start, 1), "bytes": path.stat().st_size,
            "summary": cap.summary.to_data(), "unknown": cap.unknown_records,
            "cudagraphs": {"available": graphs.available, "reason": graphs.reason, "recorded": graphs.recorded,
                           "skipped": graphs.skipped, "skip_reasons": graphs.skip_reasons}}


def kernel_rows(cap) -> list[dict]:
    """Per Triton kernel: resources, launch configuration, time and achieved bandwidth (the GPU depth)."""
    rows = []
    for c in cap.compiles:
        for k in c.kernels.kernels if c.kernels.available else []:
            if k.language != "Triton" or k.gpu is None:
                continue
            g = k.gpu
            rows.append({"compile": c.compile_id, "role": k.role, "kernel": k.name, "regs": g.registers,
                         "spills": g.spills, "shared": g.shared_bytes, "warps": g.num_warps, "stages": g.num_stages,
                         "config": g.config, "bytes": g.bytes_per_call, "us": g.time_us_per_launch,
                         "GB/s": round(g.achieved_bytes_per_s / 1e9, 1) if g.achieved_bytes_per_s else None,
                         "share": round(g.bandwidth_share, 3) if g.bandwidth_share is not None else None,
                         "ir": {level: len(text) for level, text in g.ir.items()}, "ir_source": g.ir_source,
                         "notes": g.notes + (
                             [g.bytes_reason] if g.bytes_reason else [])})
    return rows


def main(argv):
    argv = [a for a in argv if not a.startswith("--")]
    out_dir = Path(argv[0]) if argv else Path("assets/gpu")
    out_dir.mkdir(parents=True, exist_ok=True)
    names = argv[1:] or list(CASES)
    for name in names:
        try:
            print(json.dumps(record(name, out_dir), default=str), flush=True)
        except Exception as exc:  # noqa: BLE001 — report and go on to the next case
            print(json.dumps({"case": name, "error": f"{type(exc).__name__}: {exc}"[:2000]}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
