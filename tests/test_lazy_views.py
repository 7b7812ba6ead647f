"""Opening a saved capture does only what its first screen needs (issue 35, items 1 and 2).

Loading parses no Inductor IR nodes or bytecode instructions until they are read (they are the saved text
parsed again); ``explorer.show`` draws big tables as their first page of HTML and makes them itables
widgets (pandas) once the explorer is on screen, with the graph viewers under the AOT and Inductor views;
the Timings tab makes its Perfetto trace (every compile's kernels) when asked. No timing here: what is
checked is what was built (``bench/fresh_kernel.py`` measures the seconds).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import compiler
from compiler.stages.data import CaptureFormatError, Deferred, read_json_text

pytestmark = pytest.mark.any_torch  # compiles nothing, reads only saved files (make test-torch leaves it out)

REPO = Path(__file__).resolve().parent.parent
CAPTURE = REPO / "assets" / "gpu" / "mlp_forward_backward.json"  # 3 compiles, forward and backward


def _listings(cap):
    return [listing for c in cap.compiles if c.bytecode.available
            for listing in (c.bytecode.original, c.bytecode.transformed) if listing is not None]


def _ir_texts(cap):
    return [ir for c in cap.compiles if c.inductor.available for run in c.inductor.runs
            for ir in (run.ir.pre_fusion, run.ir.post_fusion) if ir is not None and ir.text]


def test_loading_parses_ir_and_bytecode_on_first_read():
    from compiler.stages.bytecode import instructions_of
    from compiler.stages.inductor_ir import parse_ir

    cap = compiler.load(CAPTURE)
    listings, irs = _listings(cap), _ir_texts(cap)
    assert listings and irs
    assert all(type(listing.__dict__["instructions"]) is Deferred for listing in listings)
    assert all(type(ir.__dict__["nodes"]) is Deferred for ir in irs)
    saved = compiler.load(CAPTURE).to_json()  # saving reads them: the same file as after reading them here
    for listing in listings:  # read: the text parsed, then kept
        assert [i.to_data() for i in listing.instructions] == instructions_of(listing.text)
        assert type(listing.__dict__["instructions"]) is list
    for ir in irs:
        assert [n.name for n in ir.nodes] == [n["name"] for n in parse_ir(ir.text)] and ir.nodes
    assert cap.to_json() == saved
    assert compiler.Capture.from_json(saved).to_json() == saved


def test_json_depth_limit_counts_arrays_and_objects():
    read_json_text("[" * 200 + "]" * 200, "capture")
    with pytest.raises(CaptureFormatError, match="nested deeper than 200"):
        read_json_text('{"a": ' * 201 + "1" + "}" * 201, "capture")


def test_first_screen_defers_tables_and_viewers():
    from itables.widget import ITable

    from explorer.views import VIEWS
    from explorer.widget import Explorer

    cap = compiler.load(CAPTURE)
    ui = Explorer(cap, static_html=False, defer_tables=True)
    overview = ui.pieces[0].children
    assert overview and not any(isinstance(w, ITable) for w in overview)
    first_page = overview[0].value
    assert "tc-datatable" in first_page and all(c.compile_id in first_page for c in cap.compiles)
    ui.defer_tables = True
    inductor = next(i for i, v in enumerate(VIEWS) if v.key == "inductor")
    ui.tabs.selected_index = inductor
    assert ui.panes[inductor].value and ui.viewer_slots["inductor"].children == ()
    ui.finish_tables()
    assert [w for w in ui.pieces[0].children if isinstance(w, ITable)]
    assert ui.viewer_slots["inductor"].children  # the post-grad graph, drawn under the view's text
    ui.defer_tables = False
    guards = next(i for i, v in enumerate(VIEWS) if v.key == "guards")
    ui.tabs.selected_index = guards  # a later visit finishes its own tables
    assert [w for w in ui.pieces[guards].children if isinstance(w, ITable)]


def test_timings_tab_makes_the_perfetto_trace_when_asked():
    from explorer.views import VIEWS
    from explorer.widget import Explorer

    cap = compiler.load(CAPTURE)
    ui = Explorer(cap, static_html=False)
    timings = next(i for i, v in enumerate(VIEWS) if v.key == "timings")
    unbuilt = [c for c in cap.compiles if c is not ui.compile and type(c.__dict__.get("provenance")) is Deferred]
    assert unbuilt  # provenance maps built on first read (one of this capture's was saved whole)
    ui.tabs.selected_index = timings
    assert all(type(c.__dict__.get("provenance")) is Deferred for c in unbuilt)
    assert "data:application/json" not in ui.panes[timings].value
    row = ui.tabs.children[timings].children[0]
    button, link = row.children
    button.click()
    assert "data:application/json;base64," in link.value and button.disabled


def test_first_screen_imports_no_pandas():
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import compiler; from explorer.widget import Explorer; "
            "Explorer(compiler.load(sys.argv[2]), static_html=False, defer_tables=True); "
            "import json; print(json.dumps(sorted(m for m in ('pandas', 'itables', 'numpy', 'anywidget', 'torch') if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code, str(REPO), str(CAPTURE)], capture_output=True, text=True,
                         timeout=300, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_job_first_rank_tables_finished_after_show(tmp_path):
    import shutil

    from itables.widget import ITable

    from explorer.job_widget import JobExplorer

    log = REPO / "tests" / "assets" / "traces" / "torch_2_14_1_break_recompile.log"
    for rank in (0, 1):
        shutil.copy(log, tmp_path / f"dedicated_log_torch_trace_rank_{rank}.log")
    job = compiler.load_job(tmp_path)
    deferred = JobExplorer(job, defer_tables=True)  # what show_job displays first
    assert not any(isinstance(w, ITable) for w in deferred.explorer.pieces[0].children)
    deferred.finish_tables()
    assert any(isinstance(w, ITable) for w in deferred.explorer.pieces[0].children)
    deferred.selector.value = 1  # a rank picked later: finished at once
    assert any(isinstance(w, ITable) for w in deferred.explorer.pieces[0].children)
    assert any(isinstance(w, ITable) for w in JobExplorer(job).explorer.pieces[0].children)


def test_the_report_cli_imports_no_pandas(tmp_path):
    """The report's DataTables bundle is read from itables' folder without importing itables (its __init__
    imports pandas and numpy: a second of every report)."""
    log = REPO / "tests" / "assets" / "traces" / "torch_2_14_1_break_recompile.log"
    code = ("import runpy, sys, json; sys.path.insert(0, sys.argv[1]); sys.argv = ['compiler', 'report', sys.argv[2], "
            "'-o', sys.argv[3]]\ntry:\n    runpy.run_module('compiler', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "print(json.dumps(sorted(m for m in ('pandas', 'itables', 'numpy') if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code, str(REPO), str(log), str(tmp_path / "r.html")],
                         capture_output=True, text=True, timeout=300, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
    assert "tc-dt-bundle" in (tmp_path / "r.html").read_text()
