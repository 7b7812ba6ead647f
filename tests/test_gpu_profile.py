"""``python -m compiler gpu-profile SCRIPT``: the script's captured call measured by Nsight Compute (issue 26).

On a CPU it fails in one line naming what is missing. Nsight Compute's CSV is read and put beside the
estimates: ``tests/assets/ncu/gpt2_2layer.csv`` is the CSV ncu wrote on the H100 (``--csv --page raw``) for the
call of ``assets/gpu/gpt2_2layer.json``, both from one run of ``python -m scripts.verify_gpu_models measure OUT g
gpt2_2layer`` (torch 2.11). The two runs of the script are checked on the CPU with a
stand-in for ncu that runs the script as ncu does and writes such a CSV; the real ncu runs in
``scripts/verify_gpu_models.py`` on the GPU machine."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import compiler
from compiler.capturing import ncu
from compiler.stages.data import plain_data
from compiler.stages.schema import kernel_rows

REPO = Path(__file__).resolve().parent.parent
CSV = REPO / "tests" / "assets" / "ncu" / "gpt2_2layer.csv"
GPT2 = REPO / "assets" / "gpu" / "gpt2_2layer.json"

SCRIPT = """\
import torch, compiler

def f(x):
    return (x.sin() + 1).cos()

compiler.explore(f, torch.randn(64, 64))
print("script done")
"""


def cli(*args, env=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "compiler", "gpu-profile", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=timeout, env={**os.environ, **(env or {})})


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error a machine without CUDA gives")
def test_on_a_cpu_gpu_profile_fails_in_one_line(tmp_path):
    script = tmp_path / "model.py"
    script.write_text(SCRIPT)
    done = cli(str(script))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: gpu-profile: no CUDA GPU here")
    missing = cli("--ncu", str(tmp_path / "no-ncu"), str(script))
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1
    assert "Nsight Compute not found" in missing.stderr and "no CUDA GPU" in missing.stderr
    nothing = cli(str(tmp_path / "absent.py"))
    assert nothing.returncode == 2 and nothing.stderr == f"error: gpu-profile: {tmp_path / 'absent.py'}: no such script\n"


def test_recorded_ncu_csv_is_read_per_kernel_and_launch():
    measured = ncu.read_csv(CSV.read_text())
    assert len(measured) == 13 and sum(r["launches"] for r in measured.values()) == 20  # 8 Triton, 5 library kernels
    gelu = measured["triton_poi_fused_add_addmm_mul_pow_tanh_view_4"]  # two launches (one per layer), summed
    assert gelu["launches"] == 2 and gelu["dram_bytes_read"] == 50_371_072
    assert gelu["l2_bytes_written"] == 50_331_648 and gelu["l2_metric"] == "lts__t_sectors_srcunit_tex_op_write.sum"
    assert gelu["seconds"] == pytest.approx(32.576e-6)
    assert measured["triton_red_fused_add_arange_embedding_native_layer_norm_unsqueeze_0"]["dram_bytes_written"] == 3_840


def test_recorded_ncu_bytes_attach_beside_the_estimates_and_agree_on_reads():
    """Attached to the capture, ncu's bytes are per launch beside each estimate; the estimate's reads come within
    5 % of ncu's for every kernel reading over 1 MB (the embedding gather counts its rows, not the table)."""
    data = plain_data(compiler.load(GPT2))
    for c in data["compiles"]:
        for k in kernel_rows(c):
            for key in ("measured_dram_bytes_read", "measured_dram_bytes_written"):
                (k.get("gpu") or {}).pop(key, None)
            (k.get("cost") or {}).pop("measured_dram_bytes", None)
    assert ncu.attach(data, ncu.read_csv(CSV.read_text())) == 8
    rows = ncu.agreement(data)
    assert len(rows) == 8 and rows == sorted(rows, key=lambda r: -r["us_per_call"])
    for r in rows:
        if r["ncu_read"] > 1e6:
            assert r["read_ratio"] == pytest.approx(1, abs=0.05), r["kernel"]
    gelu = next(k for c in data["compiles"] for k in kernel_rows(c) if k["name"].endswith("tanh_view_4"))
    assert gelu["gpu"]["measured_dram_bytes_read"] == 25_185_536  # per launch (50,371,072 over its two launches)
    assert gelu["cost"]["measured_dram_bytes"] == 50_371_072 + 3_479_552  # per call: both launches
    # the bytes the SMs stored into L2 are the bytes the estimate writes (H100: the sectors of every source
    # count 1.5 × as many, the copies between its two L2 partitions)
    assert gelu["gpu"]["measured_l2_bytes_written"] == pytest.approx(gelu["gpu"]["bytes_written"], rel=0.01)


STAND_IN = """\
import json, os, subprocess, sys
args = sys.argv[1:]
log = args[args.index("--log-file") + 1]
if {refuse_l2} and "lts__" in args[args.index("--metrics") + 1]:  # as an ncu that does not know the metric
    open(log, "w").write("==ERROR== Failed to find metric regex:^lts__t_sectors_srcunit_tex_op_write.sum$\\n")
    sys.exit(1)
app = args[args.index("raw") + 1:]
done = subprocess.run(app)
json.dump({{"args": args, "mode": os.environ.get("TCOMPILE_GPU_PROFILE")}}, open({seen!r}, "w"))
open(log, "w").write(open({csv!r}).read())
sys.exit(done.returncode)
"""


@pytest.fixture(params=[False], ids=["ncu"])
def stand_in(tmp_path, monkeypatch, request):
    """An executable that runs the program as ncu does (its arguments after ncu's own) and writes a CSV."""
    tool = tmp_path / "ncu"
    (tmp_path / "ncu.py").write_text(STAND_IN.format(csv=str(CSV), seen=str(tmp_path / "seen.json"),
                                                     refuse_l2=request.param))
    tool.write_text(f"#!/bin/sh\nexec {sys.executable} {tmp_path / 'ncu.py'} \"$@\"\n")
    tool.chmod(0o755)
    monkeypatch.setattr(ncu, "preflight", lambda given=None: str(tool))  # this machine has no GPU
    return tool


@pytest.mark.slow
def test_two_runs_plain_then_under_ncu_and_the_capture_keeps_the_measurement(tmp_path, stand_in, capsys):
    script = tmp_path / "model.py"
    script.write_text(SCRIPT)
    out = tmp_path / "measured.json"
    keep = tmp_path / "kept.csv"
    done = ncu.profile_script(str(script), [], str(out), keep_csv=str(keep), timeout=600)
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["mode"] == "measure" and seen["args"][:4] == ["--profile-from-start", "off", "--target-processes", "all"]
    assert seen["args"][-2:] == [sys.executable, str(script)] and ",".join(ncu.METRICS) in seen["args"]
    assert done["kernels_measured"] == 13 and done["launches_measured"] == 20
    assert done["triton_matched"] == 0  # a CPU capture has C++ kernels: nothing to put the CSV's bytes on
    cap = compiler.load(out)
    assert cap.options["gpu_profile"]["metrics"] == list(ncu.METRICS) and cap.runtime.available  # the plain run's times
    assert [k.language for k in cap.compiles[0].kernels.kernels] == ["C++"]
    assert keep.read_text() == CSV.read_text()
    assert capsys.readouterr().out.count("script done") == 1  # the run under ncu: its output passed through


@pytest.mark.slow
@pytest.mark.parametrize("stand_in", [True], ids=["ncu without the L2 metric"], indirect=True)
def test_an_ncu_without_the_l2_metric_is_asked_again_for_dram_bytes_only(tmp_path, stand_in):
    script = tmp_path / "model.py"
    script.write_text(SCRIPT)
    done = ncu.profile_script(str(script), [], str(tmp_path / "measured.json"), timeout=600)
    assert done["metrics"] == list(ncu.METRICS[:3]) and done["kernels_measured"] == 13
    assert "lts__" not in ",".join(json.loads((tmp_path / "seen.json").read_text())["args"])


def test_a_script_without_a_captured_call_is_one_line(tmp_path, stand_in):
    script = tmp_path / "plain.py"
    script.write_text("print('no capture here')\n")
    with pytest.raises(ncu.GpuProfileError, match=r"plain\.py made no captured call: gpu-profile measures the first"):
        ncu.profile_script(str(script), [], str(tmp_path / "out.json"), timeout=120)


def test_measure_mode_brackets_one_call_and_skips_timing(monkeypatch):
    """Under ncu (TCOMPILE_GPU_PROFILE=measure) compiler.run makes two warm-up calls and one measured call after the
    captured one, times nothing and profiles nothing (torch.profiler and ncu both want CUPTI)."""
    calls = []

    def f(x):
        calls.append(1)
        return x * 2

    monkeypatch.setenv(ncu.ENV, "measure")
    monkeypatch.setitem(ncu._seen, "runs", 0)
    cap = compiler.run(f, torch.ones(4), compile_kwargs={"backend": "eager"})
    assert not cap.runtime.available and cap.runtime.reason == ncu.NOT_TIMED
    assert len(calls) == 1 + 2 + 1  # the captured call, two warm-ups, the measured call (Dynamo replays the append)
    assert ncu._seen["runs"] == 1 and not ncu.measuring()  # only the script's first captured call


def test_units_sectors_and_missing_readings():
    """ncu scales units (Mbyte, usecond, Ksector); a sector is 32 bytes; "n/a" is no reading, not a crash."""
    text = "\n".join(['==PROF== Connected to process 1 (/usr/bin/python3)',
                      '"ID","Kernel Name","dram__bytes_read.sum","dram__bytes_write.sum","gpu__time_duration.sum",'
                      '"lts__t_sectors_op_write.sum"',
                      '"","","Mbyte","Kbyte","usecond","Ksector"',
                      '"0","triton_poi_fused_add_0","1.50","512.00","10.50","2.00"',
                      '"1","triton_poi_fused_add_0","n/a","0","1,000.00","1,024"'])
    row = ncu.read_csv(text)["triton_poi_fused_add_0"]
    assert row["launches"] == 2 and row["dram_bytes_read"] == pytest.approx(1.5e6)
    assert row["seconds"] == pytest.approx(1010.5e-6) and row["l2_bytes_written"] == pytest.approx(32 * (2 + 1024) * 1e3)
    assert ncu.read_csv("==ERROR== the profiler could not connect") == {}
    without_l2 = "\n".join(text.splitlines()[:2]).replace(',"lts__t_sectors_op_write.sum"', "") + \
        '\n"","","Mbyte","Kbyte","usecond"\n"0","triton_poi_fused_add_0","1.50","512.00","10.50"'
    assert ncu.read_csv(without_l2)["triton_poi_fused_add_0"]["l2_bytes_written"] is None


GPU_SCRIPT = """\
import torch, compiler

def f(x, table, ids):
    return (x.sin() * 2 + 1).relu() + table[ids].sum(1)  # (4096, 1024): one gathered row per row of x

x = torch.randn(4096, 1024, device="cuda")
table, ids = torch.randn(50_000, 1024, device="cuda"), torch.randint(0, 50_000, (4096, 1), device="cuda")
compiler.explore(f, x, table, ids, fresh=True)
"""


def test_the_gpu_scripts_call_is_the_size_of_its_input():
    """The GPU test's function on meta tensors (any machine): one output of x's shape. A keepdim gather sum had
    broadcast it to (4096, 4096, 1024), 64 GiB, and the test ran out of memory on the H100."""
    namespace: dict = {}
    exec(GPU_SCRIPT.split("\nx = ")[0].replace("import torch, compiler", "import torch"), namespace)
    x, table = torch.empty(4096, 1024, device="meta"), torch.empty(50_000, 1024, device="meta")
    ids = torch.empty(4096, 1, dtype=torch.long, device="meta")
    assert namespace["f"](x, table, ids).shape == x.shape

@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available() or ncu.find_ncu() is None, reason="needs a CUDA GPU and ncu")
def test_gpu_profile_measures_the_captured_call_on_the_gpu(tmp_path):
    """On the GPU machine: the real ncu measures the script's call; every Triton kernel gets its DRAM bytes, and
    each estimate's reads (a gather counted by the rows it reads, not the 200 MB table) are within 25 %."""
    script = tmp_path / "model.py"
    script.write_text(GPU_SCRIPT)
    out = tmp_path / "measured.json"
    done = cli("-o", str(out), "--keep-csv", str(tmp_path / "ncu.csv"), str(script), timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Triton kernels got their DRAM bytes" in done.stdout
    cap = compiler.load(out)
    triton = [k for c in cap.compiles for k in c.kernels.kernels if k.language == "Triton"]
    assert triton and all(k.gpu.measured_dram_bytes_read is not None for k in triton)
    assert all(k.gpu.measured_l2_bytes_written is not None for k in triton)
    for k in triton:
        if k.gpu.measured_dram_bytes_read > 1e6:
            assert k.gpu.bytes_read == pytest.approx(k.gpu.measured_dram_bytes_read, rel=0.25), k.name
    assert cap.options["gpu_profile"]["triton_matched"] == len(triton) and cap.runtime.available
