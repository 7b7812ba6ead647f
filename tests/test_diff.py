"""compiler.analyses.diff on typed captures: one stage per compiler.stages.schema stage, a diff that reads like a
diff, and a saved diff checked on load. Eager-backend captures only (no Inductor compile)."""
import dataclasses
import json

import pytest
import torch

import compiler
from compiler.analyses.diff import DIFF_STAGES, CaptureDiff, diff, normalize, side_by_side
from compiler.stages.schema import STAGES, CaptureFormatError, Compile, Stage


def scale(x):
    return (x * 2).sum(0)


@pytest.fixture(scope="module")
def captures():
    x = torch.ones(8, 3)
    out = []
    for dynamic in (False, True):
        torch._dynamo.reset()
        with compiler.capture() as cap:
            torch.compile(scale, backend="aot_eager", dynamic=dynamic)(x)
        out.append(cap)
    return out


@pytest.fixture(scope="module")
def static_vs_dynamic(captures):
    return diff(*captures, labels=("static", "dynamic"))


def test_the_diff_covers_every_stage_a_compile_has(static_vs_dynamic):
    """Read from the Compile type itself, not from the list the diff is built from: a stage added to
    Compile and forgotten by the diff fails here."""
    stage_fields = [f.name for f in dataclasses.fields(Compile)
                    if isinstance(f.default_factory, type) and issubclass(f.default_factory, Stage)]
    assert stage_fields and set(stage_fields) <= set(static_vs_dynamic.stages)
    for name in stage_fields:
        stage = static_vs_dynamic.stage(name)
        assert stage.reason != "not compared in this diff" and (stage.available or stage.reason), name


def test_dynamic_changes_graph_guards_and_shapes(static_vs_dynamic):
    d = static_vs_dynamic
    assert list(d.stages) == list(DIFF_STAGES)
    assert {"graph", "guards", "aot", "shapes"} <= set(d.changed_stages)
    assert "source" not in d.changed_stages  # the same function on both sides
    # the dynamic frame passes its sizes to the graph; Dynamo's per-run names (counter, uuid) are no change
    changed = [line for line in d.stage("bytecode").items[0].unified.splitlines()[2:] if line[:1] in "+-"]
    assert any("call_size" in line for line in changed) and not any("__compiled_fn" in line for line in changed)
    graph = d.stage("graph").items[0]
    assert graph.status == "changed" and "Sym(s" in graph.b and "Sym(s" not in graph.a
    assert any(r["tag"] != "equal" for r in side_by_side(graph))
    assert any("size()" in g.condition for g in d.stage("guards").added)
    assert not d.stage("inductor").available  # aot_eager: no Inductor, and the reason says so
    text = d.as_text()
    assert text.startswith("tcompile diff: static → dynamic") and "== Dynamo graph ==" in text
    assert "--- static: 0/0 scale" in text and "+++ dynamic: 0/0 scale" in text


def test_same_capture_has_no_changes(captures):
    assert diff(captures[0], captures[0]).changed_stages == []


def test_save_load_and_files(static_vs_dynamic, captures, tmp_path):
    d = static_vs_dynamic
    loaded = CaptureDiff.load(d.save(tmp_path / "d.json"))
    assert loaded.data == d.data and loaded.as_text() == d.as_text()
    paths = [c.save(tmp_path / f"{i}.json") for i, c in enumerate(captures)]
    assert diff(*paths, labels=("static", "dynamic")).data == d.data


@pytest.mark.parametrize("mutate, where", [
    (lambda d: d["stages"].__setitem__("guards", 5), "stages.guards: expected an object"),
    (lambda d: d["stages"]["graph"]["items"][0].__setitem__("status", 3), "stages.graph.items[0].status"),
    (lambda d: d["stages"]["graph"]["items"][0].__setitem__("status", "moved"), "stages.graph.items[0].status"),
    (lambda d: d["stages"]["graph"]["items"][0]["opcodes"].__setitem__(0, ["equal", 0]),
     "stages.graph.items[0].opcodes[0]"),
    (lambda d: d["stages"]["summary"]["rows"][0].pop("label"), "stages.summary.rows[0].label: missing"),
    (lambda d: d["stages"]["timings"].pop("available"), "stages.timings.available: missing"),
    (lambda d: d.__setitem__("labels", ["only one"]), "labels: expected two labels"),
    (lambda d: d.__setitem__("version", [1, 0]), "version"),
    (lambda d: d.__setitem__("format", "tcompile-capture"), "not a tcompile diff"),
])
def test_wrongly_shaped_diff_file_names_the_path(static_vs_dynamic, tmp_path, mutate, where):
    data = json.loads(static_vs_dynamic.to_json())
    mutate(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(CaptureFormatError, match=where.replace("[", r"\[").replace("]", r"\]")):
        CaptureDiff.load(path)


def test_missing_stage_and_unknown_keys_load(static_vs_dynamic):
    data = json.loads(static_vs_dynamic.to_json())
    del data["stages"]["shapes"]
    data["stages"]["graph"]["from_a_newer_tcompile"] = 1
    loaded = CaptureDiff.from_data(data)
    assert not loaded.stage("shapes").available and loaded.to_data()["stages"]["graph"]["from_a_newer_tcompile"] == 1


def test_views_render_every_stage(static_vs_dynamic):
    from explorer.views.diff import render_diff, render_stage

    for stage in DIFF_STAGES:
        assert render_stage(static_vs_dynamic, stage)  # raises if a stage's data does not fit the view
    html = render_diff(static_vs_dynamic)
    assert "Dynamic shapes: changed" in html and "Source: same" in html


def test_normalize_per_run_names():
    a = "LOAD_GLOBAL (NULL + __compiled_fn_1_0a19f1e6_f6e5_4e6d_9426_d1de010680b5) at 0x7f00aabbccdd"
    b = "LOAD_GLOBAL (NULL + __compiled_fn_7_72950496_36b3_490e_982a_f2a32fae3b90) at 0x7f11aabbccee"
    assert normalize(a) == normalize(b)
