"""Provenance from TORCH_TRACE logs written with Inductor's provenance tracking on (issue 15, item 6).

Reads tlparse's own fixture logs from ../shared/tlparse_inputs (never copied into the repository) and
checks that ``compiler.load_trace`` gives the line mappings tlparse's tests assert
(tests/integration_test.rs, ``test_provenance_tracking_jit_*``: the ``lineMappings`` of
``provenance_tracking_-_0_0_0.html``), and, side by side, what the tlparse CLI writes for the same log.
The AOTInductor logs (``test_provenance_tracking_aot_*``) carry no Dynamo compile id: load_trace makes one
compile of them (``origin="aot_inductor"``, compile id ``-_-_-_-`` as tlparse names it), checked the same way.
No compile runs here: the module takes seconds.
"""
from __future__ import annotations

import json
import re
import subprocess
import warnings
from pathlib import Path

import pytest

from tlparse_fixtures import INPUTS, TLPARSE, needs_inputs, needs_tlparse

import compiler
from compiler.readers.trace import TraceWarning

pytestmark = pytest.mark.any_torch  # compiles nothing, reads only saved files (make test-torch leaves it out)

# What tlparse's integration tests assert (tests/integration_test.rs at e86baba, see SOURCE.md), with
# line numbers as JSON keys, the way tlparse writes them.
EXPECTED = {
    "inductor_provenance_jit_log.txt": {
        "cppCodeToPost": {}, "postToCppCode": {},
        "postToPre": {"11": [17], "14": [20], "17": [23], "20": [26], "21": [26], "22": [26], "23": [26],
                      "24": [26], "4": [11], "5": [11], "8": [14]},
        "postToPyCode": {"11": [138], "14": [138, 132, 142], "17": [132, 142], "20": [147], "21": [147],
                         "22": [147], "23": [147], "24": [147], "5": [132, 142], "8": [138]},
        "preToPost": {"11": [4, 5], "14": [8], "17": [11], "20": [14], "23": [17], "26": [20, 21, 22, 23, 24]},
        "pyCodeToPost": {"132": [5, 17, 14], "138": [11, 8, 14], "142": [5, 17, 14], "147": [24, 20, 23, 22, 21]},
    },
    "inductor_provenance_jit_cuda_log.txt": {
        "cppCodeToPost": {}, "postToCppCode": {},
        "postToPre": {"11": [14], "14": [17], "17": [20], "20": [23], "21": [23], "24": [26], "25": [26],
                      "26": [26], "27": [26], "28": [26], "4": [11], "7": [11], "8": [11]},
        "postToPyCode": {"11": [192], "14": [192], "17": [197, 186, 201], "20": [186, 201], "21": [207],
                         "24": [207], "25": [207], "26": [207], "27": [207], "28": [207], "7": [186, 201],
                         "8": [192]},
        "preToPost": {"11": [4, 7, 8], "14": [11], "17": [14], "20": [17], "23": [20, 21],
                      "26": [24, 25, 26, 27, 28]},
        "pyCodeToPost": {"186": [7, 20, 17], "192": [14, 11, 8], "197": [17], "201": [7, 20, 17],
                         "207": [28, 24, 21, 27, 26, 25]},
    },
    "inductor_provenance_jit_debug_handle_log.txt": {
        "cppCodeToPost": {}, "postToCppCode": {},
        "postToPre": {"12": [17], "15": [20], "18": [23], "19": [23], "22": [26], "23": [26], "24": [26],
                      "25": [26], "26": [26], "4": [11], "5": [11], "6": [11], "9": [14]},
        "postToPyCode": {"12": [204], "15": [211], "18": [216], "19": [223], "22": [223], "23": [223],
                         "24": [223], "25": [223], "26": [223], "29": [204], "5": [197], "6": [204], "9": [204]},
        "preToPost": {"11": [4, 5, 6], "14": [9], "17": [12], "20": [15], "23": [18, 19],
                      "26": [22, 23, 24, 25, 26]},
        "pyCodeToPost": {"197": [5], "204": [12, 9, 6, 29], "211": [15], "216": [18],
                         "223": [26, 22, 19, 25, 24, 23]},
    },
}


def load(name: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceWarning)
        return compiler.load_trace(INPUTS / name)


def tracking_of(cap):
    (c,) = cap.compiles
    (tracking,) = c.provenance.inductor_tracking
    return c, tracking


@needs_inputs
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_line_mappings_equal_tlparse_tests(name):
    """Same keys, same lines, same order within each list as tlparse's assert_eq."""
    _, tracking = tracking_of(load(name))
    assert tracking.line_mappings == EXPECTED[name]
    assert tracking.texts == {"pre_grad": "before_pre_grad_graph", "post_grad": "after_post_grad_graph",
                              "code": "inductor_output_code"}


@needs_inputs
def test_post_grad_line_11_is_pre_grad_line_17():
    """The example of the issue, both ways, and what the lines hold: post-grad ``sigmoid`` ↔ pre-grad ``x_2``."""
    c, tracking = tracking_of(load("inductor_provenance_jit_log.txt"))
    assert tracking.line_mappings["postToPre"]["11"] == [17]
    assert 11 in tracking.line_mappings["preToPost"]["17"]
    run = c.inductor.runs[0]
    assert run.post_grad.code.splitlines()[10].strip().startswith("sigmoid:")
    assert run.pre_grad.code.splitlines()[16].strip().startswith("x_2:")
    assert tracking.post_to_pre["sigmoid"] == ["x_2"]


@needs_inputs
def test_kernels_reach_source_lines_through_the_trace():
    """With the log's post-grad graph (``after_post_grad_graph``) and kernel map, every kernel has
    lines of the user's code: gelu's line → the fused gelu kernel, the addmm line → the extern call."""
    c, tracking = tracking_of(load("inductor_provenance_jit_log.txt"))
    prov = c.provenance
    assert c.inductor.runs[0].post_grad.available
    assert tracking.kernel_to_post["cpp_fused_gelu_1"] == ["mul_3", "mul_1", "add", "erf", "mul_2"]
    assert all(k.lines and k.how == "Inductor's provenance tracking (trace)" for k in prov.kernels)
    by_code = {r.code: r.kernels for r in prov.lines}
    assert by_code["z = torch.nn.functional.gelu(y)"] == ["inference:cpp_fused_gelu_1"]
    assert by_code["y = torch.addmm(c, d, b)"] == ["inference:extern_kernels.addmm"]
    assert by_code["x = self.sigmoid(x)"] == ["inference:cpp_fused_mul_relu_sigmoid_0"]
    # the IR is missing from the trace, not from Inductor's work: the note says which
    assert prov.notes == ["inference: the trace holds no scheduler IR for this graph (torch writes it only to the "
                          "ir_pre_fusion/ir_post_fusion debug loggers); kernels linked by Inductor's provenance tracking"]


@needs_inputs
def test_debug_handles_and_nodes_without_a_stack_trace():
    """``extern_kernels.mm:4``/``:5`` are two launches of one kernel; the pattern-made ``mm_default``
    (printed under '# No stacktrace found') takes its line from Inductor's post→pre map."""
    c, tracking = tracking_of(load("inductor_provenance_jit_debug_handle_log.txt"))
    assert {"extern_kernels.mm:4", "extern_kernels.mm:5"} <= set(tracking.kernel_to_post)
    assert set(tracking.kernel_stack_traces) == set(tracking.kernel_to_post)
    mm = c.provenance.kernel("extern_kernels.mm")
    assert set(mm.post_grad_nodes) == {"mm_default", "mm_default_1"}
    lines = {r.line: r.code for r in c.provenance.lines}
    assert [lines[n] for n in mm.lines] == ["x = self.fc1(x)", "y = torch.addmm(c, d, b)"]


@needs_inputs
def test_tracking_is_saved_and_loaded(tmp_path):
    cap = load("inductor_provenance_jit_cuda_log.txt")
    path = cap.save(tmp_path / "cap.json")
    again = compiler.load(path)
    _, before = tracking_of(cap)
    _, after = tracking_of(again)
    assert after.to_data() == before.to_data()
    assert after.line_mappings == EXPECTED["inductor_provenance_jit_cuda_log.txt"]


def tlparse_line_mappings(log: Path, out: Path, page: str = "provenance_tracking_-_0_0_0.html") -> dict:
    result = subprocess.run([TLPARSE, str(log), "-o", str(out), "--overwrite", "--no-browser", "-i"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    html = (out / page).read_text()
    match = re.search(r'<script id="lineMappings" type="application/json">(.*?)</script>', html, re.S)
    assert match, "tlparse wrote no lineMappings"
    return json.loads(match[1])


@needs_inputs
@needs_tlparse
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_side_by_side_with_tlparse(name, tmp_path):
    _, tracking = tracking_of(load(name))
    assert tracking.line_mappings == tlparse_line_mappings(INPUTS / name, tmp_path / "out")


# AOTInductor logs: their records carry no compile id; load_trace makes them one compile ("-_-_-_-", as tlparse
# files them), whose tracking gives tlparse's mappings, C++ wrapper lines too — as does the plain reading of the
# records (compiler.stages.inductor_tracking.tracking_from_records).
EXPECTED_AOT = {
    "inductor_provenance_aot_cuda_log.txt": {
        "cppCodeToPost": {"1060": [14, 27, 24], "1064": [21, 18, 15], "1071": [24], "1079": [14, 27, 24],
                          "1084": [35, 31, 28, 34, 33, 32]},
        "postToCppCode": {"14": [1060, 1079], "15": [1064], "18": [1064], "21": [1064], "24": [1071, 1060, 1079],
                          "27": [1060, 1079], "28": [1084], "31": [1084], "32": [1084], "33": [1084],
                          "34": [1084], "35": [1084]},
        "postToPre": {"11": [8], "14": [8], "15": [8], "18": [11], "21": [14], "24": [17], "27": [20], "28": [20],
                      "31": [23], "32": [23], "33": [23], "34": [23], "35": [23]},
        "postToPyCode": {},
        "preToPost": {"11": [18], "14": [21], "17": [24], "20": [27, 28], "23": [31, 32, 33, 34, 35],
                      "8": [11, 14, 15]},
        "pyCodeToPost": {},
    },
    "inductor_provenance_aot_debug_handle_log.txt": {
        "cppCodeToPost": {"1074": [12], "1079": [19, 16, 13], "1087": [22], "1096": [25],
                          "1102": [33, 29, 26, 32, 31, 30]},
        "postToCppCode": {"12": [1074], "13": [1079], "16": [1079], "19": [1079], "22": [1087], "25": [1096],
                          "26": [1102], "29": [1102], "30": [1102], "31": [1102], "32": [1102], "33": [1102]},
        "postToPre": {"11": [8], "12": [8], "13": [8], "16": [11], "19": [14], "22": [17], "25": [20], "26": [20],
                      "29": [23], "30": [23], "31": [23], "32": [23], "33": [23]},
        "postToPyCode": {},
        "preToPost": {"11": [16], "14": [19], "17": [22], "20": [25, 26], "23": [29, 30, 31, 32, 33],
                      "8": [11, 12, 13]},
        "pyCodeToPost": {},
    },
    "inductor_provenance_aot_log.txt": {
        "cppCodeToPost": {"813": [12, 24, 21], "821": [18, 15, 21], "829": [12, 24, 21], "834": [31, 27, 30, 29, 28]},
        "postToCppCode": {"12": [813, 829], "15": [821], "18": [821], "21": [821, 813, 829], "24": [813, 829],
                          "27": [834], "28": [834], "29": [834], "30": [834], "31": [834]},
        "postToPre": {"11": [8], "12": [8], "15": [11], "18": [14], "21": [17], "24": [20], "27": [23], "28": [23],
                      "29": [23], "30": [23], "31": [23]},
        "postToPyCode": {},
        "preToPost": {"11": [15], "14": [18], "17": [21], "20": [24], "23": [27, 28, 29, 30, 31], "8": [11, 12]},
        "pyCodeToPost": {},
    },
    "inductor_provenance_aot_log_old.txt": {  # old artifact names: inductor_pre_grad_graph, inductor_post_grad_graph
        "cppCodeToPost": {"704": [21], "717": [31, 27, 30, 29, 28]},
        "postToCppCode": {"21": [704], "27": [717], "28": [717], "29": [717], "30": [717], "31": [717]},
        "postToPre": {"11": [8], "12": [8], "15": [11], "18": [14], "21": [17], "24": [20], "27": [23], "28": [23],
                      "29": [23], "30": [23], "31": [23]},
        "postToPyCode": {},
        "preToPost": {"11": [15], "14": [18], "17": [21], "20": [24], "23": [27, 28, 29, 30, 31], "8": [11, 12]},
        "pyCodeToPost": {},
    },
}


def aot_tracking(name: str) -> dict:
    from compiler.stages.inductor_tracking import tracking_from_records
    from compiler.readers.trace import read_records

    notes: list[str] = []
    tracking = tracking_from_records(read_records(INPUTS / name), notes)
    assert notes == []
    return tracking


AOT_LOGS = sorted(EXPECTED_AOT) + ["inductor_provenance_extended_log.txt"]


@needs_inputs
@pytest.mark.parametrize("name", sorted(EXPECTED_AOT))
def test_aot_inductor_line_mappings_equal_tlparse_tests(name):
    """Through load_trace: one compile, named for what it is, whose tracking is tlparse's lineMappings."""
    c, tracking = tracking_of(load(name))
    assert (c.compile_id, c.origin, c.name) == ("-_-_-_-", "aot_inductor", "AOTInductor export, no Dynamo frame")
    assert tracking.line_mappings == EXPECTED_AOT[name]
    assert tracking.texts["aot_code"] == "inductor_aot_wrapper_code"
    assert aot_tracking(name)["line_mappings"] == EXPECTED_AOT[name]


@needs_inputs
@pytest.mark.parametrize("name", AOT_LOGS)
def test_aot_inductor_compile_stages(name):
    """The stages the records hold are there; those a Dynamo frame would have say why they are not."""
    cap = load(name)
    c, tracking = tracking_of(cap)
    assert c.status == "compiled" and (cap.summary.compiles, cap.summary.frames) == (1, 0)
    assert "graph_dump" not in cap.unknown_records  # the wrapper and kernel code were read
    for stage in ("source", "bytecode", "graph", "guards", "recompile"):
        assert not c.stage(stage).available and "outside any Dynamo frame" in c.stage(stage).reason
    assert not c.amortization.available and "AOTInductor" in c.amortization.reason
    assert list(c.aot.graphs) == ["inference"]
    (run,) = c.inductor.runs
    assert run.role == "inference" and run.pre_grad.available and run.post_grad.available
    assert not run.ir.available and "not part of TORCH_TRACE" in run.ir.reason
    # the generated code is the C++ wrapper, numbered as tlparse numbers it: each cppCode line names its kernel
    module = run.code.module.splitlines()
    linked = {k.split(":")[0] for k in tracking.kernel_to_post}
    assert tracking.line_mappings["cppCodeToPost"]
    for line in tracking.line_mappings["cppCodeToPost"]:
        assert any(name in module[int(line) - 1] for name in linked), module[int(line) - 1]
    assert linked <= {k.name for k in c.kernels.kernels}
    assert c.timings.available and c.timings.phases
    # the device is the one the wrapper was generated for (aoti_include/cuda.h or cpu.h)
    on_gpu = any(k.language == "Triton" for k in c.kernels.kernels)
    assert cap.environment["device"] == ("cuda" if on_gpu else "cpu")
    if on_gpu:
        assert "TORCH_TRACE log holds no CUDA graph records" in cap.cudagraphs.reason


@needs_inputs
@pytest.mark.parametrize("name", AOT_LOGS)
def test_aot_inductor_kernels_reach_user_lines(name):
    """Every kernel Inductor's record links reaches lines of the user's code through the post-grad graph."""
    c, tracking = tracking_of(load(name))
    prov = c.provenance
    linked = {k.split(":")[0] for k, posts in tracking.kernel_to_post.items() if posts}
    for kernel in prov.kernels:
        if kernel.name in linked:
            assert kernel.lines and kernel.how == "Inductor's provenance tracking (trace)", kernel
    by_code = {r.code: r.kernels for r in prov.lines}
    gelu = by_code["z = torch.nn.functional.gelu(y)"]
    assert len(gelu) == 1 and "fused" in gelu[0] and "gelu" in gelu[0]
    assert all(r.code for r in prov.lines)  # every line's file is the one of the nodes that quote it
    assert prov.notes == ["inference: the trace holds no scheduler IR for this graph (torch writes it only to "
                          "the ir_pre_fusion/ir_post_fusion debug loggers); kernels linked by Inductor's "
                          "provenance tracking"]


@needs_inputs
def test_aot_inductor_compile_is_saved_and_loaded(tmp_path):
    cap = load("inductor_provenance_aot_debug_handle_log.txt")
    again = compiler.load(cap.save(tmp_path / "cap.json"))
    (c,) = again.compiles
    assert c.origin == "aot_inductor" and c.to_data() == cap.compiles[0].to_data()
    data = json.loads((tmp_path / "cap.json").read_text())
    data["compiles"][0]["origin"] = "export"
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(compiler.stages.data.CaptureFormatError, match=r"compiles\[0\]\.origin: expected 'dynamo' or "
                       "'aot_inductor', got 'export'"):
        compiler.load(tmp_path / "bad.json")


@needs_inputs
@needs_tlparse
@pytest.mark.parametrize("name", AOT_LOGS)
def test_aot_inductor_side_by_side_with_tlparse(name, tmp_path):
    wanted = tlparse_line_mappings(INPUTS / name, tmp_path / "out", "provenance_tracking_-_-_-_-.html")
    assert aot_tracking(name)["line_mappings"] == wanted
    assert tracking_of(load(name))[1].line_mappings == wanted


@needs_inputs
def test_views_of_a_trace_from_another_machine():
    """The source file is not here: Source lists the lines torch's comments quote, each opening its
    kernels; Inductor shows the log's own record (post-grad node → pre-grad nodes → kernel:handle)."""
    from explorer.views.inductor import render_inductor
    from explorer.views.source import render_source

    cap = load("inductor_provenance_jit_debug_handle_log.txt")
    c = cap.compiles[0]
    assert not c.source.available
    source = render_source(cap, c)
    assert "test_provenance_tracing.py is not on this machine" in source
    assert "y = torch.addmm(c, d, b)" in source and "forward:extern_kernels.mm" in source
    inductor = render_inductor(cap, c)
    assert "Inductor&#x27;s provenance record, from the trace (5 kernels)" in inductor  # escaped text
    assert "extern_kernels.mm:5" in inductor
