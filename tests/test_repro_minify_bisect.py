"""Kernel reproducers, minified failing compiles and bisected drift (issue 45), with real compiles on CPU.

Each test plants what it looks for: a kernel whose output the test computes itself, an Inductor lowering
registered to fail, an Inductor pass patched to be wrong (``prepare`` code the child process runs too)."""
import ast
import json
import subprocess
import sys

import pytest
import torch

import compiler
from compiler.stages.capture import Capture

FAILING_LOWERING = '''
import torch
from torch._inductor import lowering

def planted_cos(*args, **kwargs):
    raise RuntimeError("planted: the cos lowering fails")

lowering.lowerings[torch.ops.aten.cos.default] = planted_cos
'''

WRONG_PASS = '''
import torch
from torch._inductor.fx_passes import post_grad

_real = post_grad.reorder_for_locality

def reorder_for_locality(graph):  # the real pass, then sin made cos: a numerical change in one post-grad pass
    _real(graph)
    for node in graph.nodes:
        if node.op == "call_function" and node.target is torch.ops.aten.sin.default:
            node.target = torch.ops.aten.cos.default

post_grad.reorder_for_locality = reorder_for_locality
'''


def sin_then_mm(x, y):
    return torch.sin(x) @ y, (x * 2).t().contiguous()


@pytest.mark.slow
def test_cpp_kernel_reproducer_runs_standalone_and_matches(tmp_path):
    """~20 s (70 s on the loaded 2-core machine): the reproducer of a captured C++ kernel, saved to a file and run by a fresh interpreter, launches the kernel
    on Inductor's own arguments and writes what the compiled function's launch wrote; its saved input and output
    are sin of each other (the test's own check, independent of the script's)."""
    cap = compiler.explore(sin_then_mm, torch.randn(8, 16), torch.randn(16, 4))
    loaded = Capture.load(cap.save(tmp_path / "cap.json"))  # from a saved capture, as on another machine
    kernel = next(k for k in loaded.compiles[0].kernels.kernels if k.language == "C++" and "sin" in k.name)
    repro = kernel.reproducer()
    assert repro.text == cap.compiles[0].kernels.kernels[[k.name for k in cap.compiles[0].kernels.kernels].index(
        kernel.name)].reproducer().text  # one script, live or loaded
    script, saved = tmp_path / "repro.py", tmp_path / "args.pt"
    repro.save(script)
    done = subprocess.run([sys.executable, str(script), "--save", str(saved)], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1].split(" ", 1)[1])
    assert result["ran"] and result["matched"] and result["identical"] and result["device"] == "cpu"
    assert result["arguments"][0] == {"shape": [8, 16], "stride": [16, 1], "dtype": "torch.float32", "device": "cpu"}
    assert result["us_per_launch"] > 0 and result["captured_us_per_launch"] == pytest.approx(repro.captured_us)
    args = torch.load(saved)
    source, written = args["before"][0], args["standalone"][1]
    torch.testing.assert_close(written, torch.sin(source))  # the kernel computes sin, standalone
    assert torch.equal(args["standalone"][1], args["compiled"][1])  # … exactly as the compiled function's launch


def test_reproducer_says_what_it_cannot_rebuild():
    from compiler.analyses.repro import kernel_reproducer, notes_for
    from compiler.stages.schema import Kernel

    assert "nothing to rebuild" in notes_for("", Kernel(name="k", language="C++"))[0]
    assert any("get_args" in n for n in notes_for("def call(args):\n    k(x)\n", Kernel(name="k", language="C++")))
    repro = kernel_reproducer(Kernel(name="k", language="C++"))
    assert "nothing to rebuild" in repro.text and repro.captured_us is None
    constants = {node.targets[0].id: ast.literal_eval(node.value) for node in ast.parse(repro.text).body
                 if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") in ("CAPTURED", "NOTES", "MODULE")}
    assert constants["CAPTURED"] is None and constants["MODULE"] == "" and "nothing to rebuild" in constants["NOTES"][0]


@pytest.mark.slow
def test_planted_failing_lowering_is_minified_to_its_op(tmp_path):
    """~60–130 s on 2 cores: a lowering registered to fail for aten.cos is minified by torch's minifier, in a
    child process, to a graph holding that op; the result is saved with the capture and read back equal."""
    from torch._inductor import lowering

    def f(x, y):
        a = torch.sin(x) + y
        return torch.cos(a * 3), a.exp()

    real = lowering.lowerings[torch.ops.aten.cos.default]
    try:
        exec(FAILING_LOWERING, {})  # the failure, here as in the child (prepare)
        cap = compiler.explore(f, torch.randn(8), torch.randn(8), timing=False, errors="return")
    finally:
        lowering.lowerings[torch.ops.aten.cos.default] = real
    assert cap.error is not None and "planted" in cap.error.message
    seen = []
    minified = cap.minify(prepare=FAILING_LOWERING, progress=seen.append, timeout=400)
    assert minified.available, minified.reason
    assert minified.ops == ["torch.ops.aten.cos.default"] and minified.nodes_after < minified.nodes_before
    assert "planted" in minified.error and "def forward" in minified.graph and "minify" in minified.launcher
    assert any(line.startswith("tcompile: minifying") for line in seen)
    again = Capture.load(cap.save(tmp_path / "cap.json")).minified
    assert again.to_data() == minified.to_data()


REFUSING_BACKEND = '''
import torch
from torch._dynamo import register_backend

@register_backend
def refuses_cos(gm, example_inputs):
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in (torch.cos, torch.Tensor.cos):
            raise RuntimeError("planted: refuses_cos cannot compile cos")
    return gm.forward
'''


def test_custom_backend_raising_on_one_op_is_minified_to_it():
    """~20 s: a registered backend that refuses graphs holding cos; the minifier (repro_after="dynamo") keeps the
    one node that makes it fail."""
    from torch._dynamo.backends import registry

    def f(x, y):
        a = torch.sin(x) + y
        return torch.cos(a * 3), a.exp()

    try:
        exec(REFUSING_BACKEND, {})
        cap = compiler.explore(f, torch.randn(8), torch.randn(8), timing=False, errors="return", backend="refuses_cos")
        minified = cap.minify(prepare=REFUSING_BACKEND, timeout=300)
    finally:
        registry._COMPILER_FNS.pop("refuses_cos", None)
    assert minified.available, minified.reason
    assert minified.after == "dynamo" and minified.ops == ["torch.cos"] and minified.nodes_after == 1
    assert "refuses_cos cannot compile cos" in minified.error


@pytest.mark.slow
def test_planted_wrong_pass_is_bisected_to_that_pass(tmp_path):
    """~60–90 s on 2 cores: an Inductor post-grad pass patched to turn sin into cos is found by torch's
    CompilerBisector, in a child process: backend inductor, subsystem post_grad_passes, the pass by name,
    confirmed with TORCH_BISECT_MAX; saved with the capture."""
    def f(x):
        return torch.sin(x) * 2 + x.exp()

    cap = compiler.explore(f, torch.randn(64), timing=False)
    found = cap.bisect_drift(prepare=WRONG_PASS, timeout=400)
    assert found.available and found.found and not found.nondeterministic, found.reason
    assert (found.backend, found.subsystem, found.pass_name) == ("inductor", "post_grad_passes", "reorder_for_locality")
    assert found.confirmed.startswith("yes") and "TORCH_BISECT_SUBSYSTEM=post_grad_passes" in found.command
    assert "reorder_for_locality" in found.verdict
    again = Capture.load(cap.save(tmp_path / "cap.json")).drift_bisection
    assert again.to_data() == found.to_data()


def test_saved_results_are_checked_field_by_field():
    base = {"format": "tcompile-capture", "version": [4, 1]}
    with pytest.raises(compiler.CaptureFormatError, match=r"drift_bisection\.bisect_number: expected an integer"):
        Capture.from_data({**base, "drift_bisection": {"available": True, "bisect_number": "3"}})
    with pytest.raises(compiler.CaptureFormatError, match=r"minified\.ops"):
        Capture.from_data({**base, "minified": {"available": True, "ops": "aten.cos"}})


GPU_CAPTURE = __import__("pathlib").Path(__file__).resolve().parent.parent / "assets" / "gpu" / "pointwise_chain.json"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks what a CPU machine says of a CUDA kernel")
def test_triton_reproducer_from_a_gpu_capture_says_it_needs_cuda(tmp_path):
    """A Triton kernel of a capture made on an H100 (torch 2.11): the script carries the captured time (torch.profiler,
    per launch) and, on a machine without CUDA, exits 2 saying so — never a traceback."""
    cap = Capture.load(GPU_CAPTURE)
    kernel = next(k for k in cap.compiles[0].kernels.kernels if k.language == "Triton")
    repro = kernel.reproducer()
    assert repro.captured_us == pytest.approx(kernel.gpu.time_us_per_launch) and "per launch" in repro.captured_method
    assert any("CUDA" in note for note in repro.notes)
    script = tmp_path / "repro.py"
    repro.save(script)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2 and "cannot rebuild: the kernel runs on CUDA" in done.stdout, done.stderr[-2000:]
    assert "Traceback" not in done.stderr


def test_generated_code_view_offers_the_reproducer():
    """The Generated code tab of a loaded GPU capture: one script per Inductor run to download, each kernel's command
    and captured time per launch (the same ``captured_time`` the script carries)."""
    from compiler.analyses.repro import captured_time
    from explorer.views import render_view

    cap = Capture.load(GPU_CAPTURE)
    page = str(render_view("code", cap, cap.compiles[0]))
    kernel = next(k for k in cap.compiles[0].kernels.kernels if k.language == "Triton")
    assert "Kernel reproducers" in page and 'download="repro_0_0_inference.py"' in page
    assert f"{captured_time(kernel, cap.compiles[0])[0]:.2f} µs" in page


def test_cli_repro_names_the_kernels_it_has(tmp_path):
    from compiler.__main__ import main

    assert main(["repro", str(GPU_CAPTURE), "no_such_kernel", "-o", str(tmp_path / "r.py")]) == 2
    kernel = next(k for k in Capture.load(GPU_CAPTURE).compiles[0].kernels.kernels if k.language == "Triton")
    assert main(["repro", str(GPU_CAPTURE), kernel.name, "-o", str(tmp_path / "r.py")]) == 0
    assert (tmp_path / "r.py").read_text().startswith('"""Reproducer of the Triton kernel')


def test_saved_answers_are_shown_in_the_views_and_the_text():
    """A capture file holding a minified graph and a bisected drift: the Overview shows the drift's verdict, the error
    box the minimal graph with its scripts to download, ``as_text()`` both — each from the saved stage."""
    from explorer.views import render_view
    from explorer.views.error import render_error

    cap = Capture.from_data({
        "format": "tcompile-capture", "version": [4, 1],
        "minified": {"available": True, "after": "aot", "error": "InductorError: planted", "nodes_before": 5,
                     "nodes_after": 1, "ops": ["torch.ops.aten.cos.default"], "command": "python repro.py",
                     "graph": "    def forward(self, mul):\n        cos = torch.ops.aten.cos.default(mul)\n",
                     "repro": "print('repro')\n", "launcher": "print('launcher')\n"},
        "drift_bisection": {"available": True, "found": True, "backend": "inductor", "subsystem": "post_grad_passes",
                            "bisect_number": 0, "pass_name": "reorder_for_locality",
                            "verdict": "the difference begins in inductor — post_grad_passes, application #0: "
                                       "reorder_for_locality", "checks": 13, "seconds": 61.0}})
    overview = str(render_view("overview", cap, None))
    assert "Drift bisected (CompilerBisector)" in overview and "reorder_for_locality" in overview
    error = str(render_error(cap, None))
    assert "5 → 1 nodes" in error and 'download="repro.py"' in error and 'download="minifier_launcher.py"' in error
    text = cap.as_text()
    assert cap.drift_bisection.verdict in text and "5 → 1 nodes" in text


def test_explorer_offers_minify_and_bisect_on_a_failing_live_compile():
    """A live capture whose compile failed gets the Minify / Bisect drift panel under the error box; a click runs the
    capture's method from a worker thread with progress and Stop, and draws the answer (here a stand-in method: the
    child processes are the tests above)."""
    from compiler.stages.repro_results import Minified
    from explorer.repro_panel import ReproPanel
    from explorer.widget import Explorer
    from torch._dynamo.backends import registry

    def f(x):
        return torch.cos(x) + 1

    try:
        exec(REFUSING_BACKEND, {})
        cap = compiler.explore(f, torch.randn(4), timing=False, errors="return", backend="refuses_cos")
    finally:
        registry._COMPILER_FNS.pop("refuses_cos", None)
    panels = [w for w in Explorer(cap).children if isinstance(w, ReproPanel)]
    assert len(panels) == 1 and not panels[0].minify.disabled
    seen = {}

    def minify(timeout, progress, should_stop):
        progress("tcompile: minifying a graph of 3 nodes")
        seen["stop"] = should_stop()
        cap.minified = Minified(available=True, after="dynamo", nodes_before=3, nodes_after=1, ops=["torch.cos"],
                                graph="    def forward(self, x):\n        cos = torch.cos(x)\n", seconds=2.0)
        return cap.minified

    cap.__dict__["minify"] = minify
    panels[0].run("minify", wait=True)
    assert seen["stop"] is False and "done in 2 s" in panels[0].status.value
    assert "3 → 1 nodes" in panels[0].answer.value and not panels[0].minify.disabled
    loaded = Capture.from_data(cap.to_data())
    assert not [w for w in Explorer(loaded).children if isinstance(w, ReproPanel)]
    assert ReproPanel(loaded).minify.disabled
