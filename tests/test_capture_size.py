"""Captures stay small enough to share (issue 26): what loading rebuilds is not saved — a compile's Kernels
stage (a view of the Inductor runs' kernels, which hold what the GPU measured of each), generated kernels'
source and comments (cut from the module), provenance nodes' kernels (the other direction of the map), bytecode
instructions (read back from the dis listing when that gives them exactly) —
and a capture loads back with every stage equal. The static notebook copy stays under 1 MB."""
import gzip
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import compiler
from compiler.stages.capture import Capture
from compiler.stages.data import plain_data

pytestmark = pytest.mark.any_torch  # compiles nothing, reads only saved files (make test-torch leaves it out)

GPU_CAPTURES = Path(__file__).resolve().parent.parent / "assets" / "gpu"
SHIPPED = sorted(GPU_CAPTURES.glob("*.json"))
# reduce_overhead_small_model.json as 3.0 saved it: each kernel's GPU measurement in the compile's kernel_extras
SAVED_3_0 = Path(__file__).resolve().parent / "assets" / "captures" / "reduce_overhead_small_model_3_0.json.gz"


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_saved_without_what_loading_rebuilds_and_loaded_back_whole(path, tmp_path):
    saved = json.loads(path.read_text())
    for c in saved["compiles"]:
        assert "kernels" not in c and "kernel_extras" not in c and "kernels_from_inductor" not in c
        if c["inductor"].get("available"):
            for run in c["inductor"]["runs"]:
                code = run["code"]
                if any(k["language"] != "extern" for k in code.get("kernels", [])):
                    assert code["texts_from_module"]
                    assert all("source" not in k for k in code["kernels"] if k["language"] != "extern")
        if (c["bytecode"].get("transformed") or {}).get("text"):  # the listing's text gives its instructions back
            assert c["bytecode"]["transformed"]["instructions_from_text"] and "instructions" not in c["bytecode"]["transformed"]
        if c.get("provenance_from_stages"):  # left out: loading builds it again from the stages
            assert "provenance" not in c
        elif c["provenance"].get("nodes"):
            assert c["provenance"]["node_kernels_derived"] and all("kernels" not in n for n in c["provenance"]["nodes"])
    cap = compiler.load(path)
    again = compiler.load(cap.save(tmp_path / path.name))
    assert plain_data(again) == plain_data(cap)  # every stage whole, as before saving
    assert again.to_json() == path.read_text()  # the shipped file is what saving writes today
    for c in cap.compiles:
        for k in c.kernels.kernels if c.kernels.available else []:
            if k.language == "Triton":
                assert k.source.lstrip().startswith("import triton") or "@triton.jit" in k.source
                assert k.gpu is not None  # the GPU's additions came back on each kernel
                assert k.cost is not None or not (cap.gpu_profile and cap.gpu_profile.available)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a\n", "b\n", "c", "\n", "x y\r\n", "é\n", ""]), max_size=30),
       st.lists(st.sampled_from(["a\n", "b\n", "c", "\n", "x y\r\n", "é\n", "new\n"]), max_size=30))
def test_the_ir_after_fusion_saved_as_its_difference_comes_back_exactly(before, after):
    from compiler.stages.schema import apply_line_diff, line_diff

    old, new = "".join(before), "".join(after)
    ops = line_diff(old, new)
    if ops is not None:
        assert apply_line_diff(old, ops) == new and json.loads(json.dumps(ops)) == ops


def test_a_bad_ir_difference_is_a_one_line_error_naming_its_path():
    data = json.loads((GPU_CAPTURES / "mlp_forward_backward.json").read_text())
    ir = data["compiles"][0]["inductor"]["runs"][0]["ir"]
    assert ir["post_fusion_diff"] and ir["post_fusion"]["text"] == ""  # saved as its difference from before fusion
    ir["post_fusion_diff"][0] = [0, 10 ** 9]
    with pytest.raises(compiler.CaptureFormatError, match=r"^compiles\[0\]\.inductor\.runs\[0\]\.ir\.post_fusion_diff: "
                                                          r"expected a text or \[start, end\] of the lines of the text it differs from"):
        Capture.from_data(data)


def test_inductor_graphs_are_saved_as_differences_and_come_back_exactly():
    """Inductor's pre-grad graph is the Dynamo graph less a line, its post-grad graph the AOT graph after its passes:
    saved as their line differences from those (``GraphDiff``), loaded back as the same code and nodes."""
    path = GPU_CAPTURES / "mlp_forward_backward.json"
    saved = json.loads(path.read_text())
    diffs = [d for c in saved["compiles"] for d in c.get("graph_diffs", [])]
    assert {(d["graph"], d["base"].split(":")[0]) for d in diffs} >= {("pre_grad", "graph"), ("post_grad", "aot")}
    for c in saved["compiles"]:
        for d in c.get("graph_diffs", []):
            assert c["inductor"]["runs"][d["run"]][d["graph"]]["code"] == ""
    cap = compiler.load(path)
    for c in cap.compiles:
        for run in c.inductor.runs:
            for graph in (g for g in (run.pre_grad, run.post_grad) if g.available):
                assert graph.code.startswith(("class ", "def ")) or "def forward" in graph.code
                assert graph.nodes and any(n.op == "call_function" for n in graph.nodes)  # parsed from the code rebuilt
    # the pre-grad graph as captured: the Dynamo graph's code, plus a "# graph id" line
    c = next(c for c in cap.compiles if c.inductor.available)
    extra = set(c.inductor.runs[0].pre_grad.code.splitlines()) - set(c.graph.code.splitlines())
    assert len(extra) == 1 and "# graph id" in extra.pop()
    bad = json.loads(path.read_text())
    first = next(c for c in bad["compiles"] if c.get("graph_diffs"))
    first["graph_diffs"][0]["base"] = "aot:no_such_graph"
    with pytest.raises(compiler.CaptureFormatError, match=r"^compiles\[\d+\]\.graph_diffs: expected graph or aot:"):
        Capture.from_data(bad)


def test_a_provenance_map_the_stages_give_again_is_left_out_and_built_on_read():
    """A compile's provenance map is metadata of its graphs, IR and kernels: saved as a flag where building it from
    the saved stages gives it exactly, and built from them on its first read after loading."""
    from compiler.stages.data import Deferred

    path = GPU_CAPTURES / "pointwise_chain.json"
    saved = json.loads(path.read_text())
    assert saved["compiles"][0]["provenance_from_stages"] is True and "provenance" not in saved["compiles"][0]
    cap = compiler.load(path)
    c = cap.compiles[0]
    assert type(c.__dict__["provenance"]) is Deferred
    assert c.provenance.available and c.provenance.kernels and c.provenance.lines  # built from the stages
    assert any(k.seconds for k in c.provenance.kernels)  # with the GPU's kernel times (on the kernels' rows)
    assert json.loads(cap.to_json())["compiles"][0].get("provenance_from_stages") is True


def test_the_ir_nodes_are_parsed_again_from_their_text_on_load():
    saved = json.loads((GPU_CAPTURES / "mlp_forward_backward.json").read_text())
    ir = saved["compiles"][0]["inductor"]["runs"][0]["ir"]
    assert ir["pre_fusion"]["nodes_from_text"] and ir["pre_fusion"]["nodes"] == []
    cap = compiler.load(GPU_CAPTURES / "mlp_forward_backward.json")
    run = cap.compiles[0].inductor.runs[0]
    assert run.ir.pre_fusion.nodes and run.ir.post_fusion.nodes and not run.ir.post_fusion.nodes_from_text
    assert run.ir.nodes_before == len(run.ir.pre_fusion.nodes)


def test_format_4_is_written_and_3_and_2_still_read():
    """4.0 writes what a 3.x reader would read wrong without a word (Inductor's graphs as differences, a provenance
    map left out to be built again): a 3.x reader refuses it, this one still reads 3.x and 2.x files and writes
    them as 4.0."""
    for older in ([2, 0], [3, 0]):
        old = Capture.from_data({"format": "tcompile-capture", "version": older, "compiles": []})
        assert json.loads(old.to_json())["version"] == [4, 1]
    assert json.loads(Capture.from_data({"format": "tcompile-capture", "version": [4, 3]}).to_json())["version"] == [4, 3]
    with pytest.raises(compiler.CaptureFormatError, match=r"version 5\.0 is not supported by this tcompile "
                                                          r"\(reads 4\.x, 3\.x and 2\.x\)"):
        Capture.from_data({"format": "tcompile-capture", "version": [5, 0]})


def test_the_largest_shipped_capture_shrank_by_what_it_kept_twice():
    """gpt2_2layer was 2.02 MB with the module twice, every kernel twice and each node's kernels."""
    assert (GPU_CAPTURES / "gpt2_2layer.json").stat().st_size < 1.7e6


def test_bad_kernel_extras_are_one_line_errors_naming_their_path():
    data = json.loads(gzip.decompress(SAVED_3_0.read_bytes()))
    data["compiles"][0]["kernel_extras"][0]["gpu_time_us_per_call"] = "fast"
    with pytest.raises(compiler.CaptureFormatError,
                       match=r"^compiles\[0\]\.kernel_extras\[0\]\.gpu_time_us_per_call: expected a number, got 'fast'$"):
        Capture.from_data(data)


def test_a_compiles_kernels_are_its_runs_kernels_and_each_measurement_is_saved_once():
    """Issue 21: a kernel is one object — its Inductor run's — holding what the GPU measured of it; the Kernels
    stage's rows are those objects (3.0: copies, the measurements only on the copies), and the saved compile holds
    each measurement once, on the run's kernel (3.0: the kernel's bytes on the run's, again with its times in
    ``kernel_extras``)."""
    cap = compiler.load(GPU_CAPTURES / "gpt2_2layer.json")
    for c, saved in zip(cap.compiles, cap.to_data()["compiles"]):
        runs = [r for r in c.inductor.runs if r.code.available]
        assert [id(k) for k in c.kernels.kernels] == [id(k) for r in runs for k in r.code.kernels]
        measured = [(i, j, k) for i, r in enumerate(c.inductor.runs) for j, k in enumerate(r.code.kernels)
                    if k.gpu_time_us_per_call is not None]
        assert measured and all(k.role == c.inductor.runs[i].role for i, _, k in measured)
        for i, j, k in measured:
            row = saved["inductor"]["runs"][i]["code"]["kernels"][j]
            assert row["gpu_time_us_per_call"] == k.gpu_time_us_per_call and row["cost"] == k.cost.to_data()
            assert "role" not in row  # its run's
        text = json.dumps(saved)
        with_bytes = [k for _, _, k in measured if k.gpu and k.gpu.bytes_args_per_call is not None]
        assert with_bytes and text.count('"bytes_args_per_call"') == len(with_bytes)
        assert text.count('"time_us_per_launch"') == len([k for _, _, k in measured if k.gpu and k.gpu.time_us_per_launch])


def test_older_files_load_with_each_measurement_on_its_runs_kernel():
    """A 3.0 file (the measurements in ``kernel_extras``) and a 2.x one (the Kernels stage saved whole, its rows
    copies of the runs' kernels) load as the 4.0 file saved from them: the measurements on the runs' kernels."""
    saved = json.loads(gzip.decompress(SAVED_3_0.read_bytes()))
    assert saved["version"] == [3, 0] and saved["compiles"][0]["kernel_extras"]
    now = compiler.load(GPU_CAPTURES / "reduce_overhead_small_model.json")
    whole = json.loads(json.dumps(saved))  # the Kernels stage saved whole, as 2.x did, its rows in another order
    for c, typed in zip(whole["compiles"], now.compiles):
        del c["kernels_from_inductor"], c["kernel_extras"]
        c["kernels"] = dict(plain_data(typed.kernels), kernels=plain_data(typed.kernels.kernels)[::-1])
    for data in (saved, whole):
        old = Capture.from_data(data)
        assert [plain_data(c) for c in old.compiles] == [plain_data(c) for c in now.compiles]
        kernels = old.compiles[0].kernels.kernels  # a Triton kernel (times, bytes, cost) and two extern calls (cost)
        assert len(kernels) == 3 and kernels[0].gpu_time_us_per_call and all(k.cost is not None for k in kernels)
        assert all(k is o for k, o in zip(old.compiles[0].kernels.kernels, old.compiles[0].inductor.runs[0].code.kernels))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_static_notebook_copy_under_1_mb(path):
    from explorer.page import FALLBACK_BYTES, render_static

    html = render_static(compiler.load(path), fallback=True)
    assert len(html.encode()) <= FALLBACK_BYTES == 1_000_000


def test_a_capture_saved_to_a_gz_name_is_the_same_json_gzip_compressed(tmp_path):
    """A many-compile capture is megabytes of distinct text (Mask R-CNN on the H100: 10.8 MB of JSON, 64
    compiles); saved to ``.json.gz`` it is the same JSON, compressed, and loads back whole through every
    reader (``compiler.load``, ``load_trace``, the report CLI)."""
    import gzip
    import subprocess
    import sys

    from compiler.readers.job import load_trace

    path = GPU_CAPTURES / "gpt2_2layer.json"
    cap = compiler.load(path)
    saved = cap.save(tmp_path / "gpt2.json.gz")
    raw = saved.read_bytes()
    assert gzip.decompress(raw).decode() == path.read_text()
    assert len(raw) < path.stat().st_size / 4
    for loaded in (compiler.load(saved), load_trace(saved)):
        assert plain_data(loaded) == plain_data(cap)
    done = subprocess.run([sys.executable, "-m", "compiler", "report", str(saved), "-o", str(tmp_path / "r.html")],
                          capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0, done.stderr
    assert cap.compiles[0].kernels.kernels[0].name in (tmp_path / "r.html").read_text()


def test_a_job_directory_of_gz_captures_loads_every_rank(tmp_path):
    """Captures shared gzip-compressed as a job (``tcompile_capture_rank_N.json.gz``) load as its ranks."""
    from compiler.readers.job import Job, load_trace

    for rank, name in enumerate(["gpt2_2layer", "pointwise_chain"]):
        compiler.load(GPU_CAPTURES / f"{name}.json").save(tmp_path / f"tcompile_capture_rank_{rank}.json.gz")
    job = load_trace(tmp_path)
    assert isinstance(job, Job) and sorted(job.captures) == [0, 1] and not job.problems
    assert job.captures[1].compiles[0].kernels.kernels[0].name == \
        compiler.load(GPU_CAPTURES / "pointwise_chain.json").compiles[0].kernels.kernels[0].name


@pytest.mark.parametrize("case", ["bomb", "cut", "broken"])
def test_a_hostile_gz_capture_is_one_clear_error_and_never_fills_memory(case, tmp_path):
    """A few kilobytes of gzip can expand to gigabytes: reading stops at a cap (here lowered to 1 MB), and a
    cut-short or corrupted file is refused in one line, like any malformed capture."""
    import gzip

    from compiler.stages.data import CaptureFormatError, gunzipped

    text = (GPU_CAPTURES / "pointwise_chain.json").read_bytes()
    raw = {"bomb": gzip.compress(b" " * 5_000_000), "cut": gzip.compress(text)[:-100],
           "broken": gzip.compress(text)[:20] + b"\xff" * 200}[case]
    with pytest.raises(CaptureFormatError) as caught:
        gunzipped(raw, "capture", limit=1_000_000)
    assert {"bomb": "expands beyond", "cut": "cut short", "broken": "broken gzip"}[case] in str(caught.value)
    assert "\n" not in str(caught.value)
    (tmp_path / "x.json.gz").write_bytes(raw)
    if case != "bomb":
        with pytest.raises(CaptureFormatError):
            compiler.load(tmp_path / "x.json.gz")
