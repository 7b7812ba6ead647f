"""The views and the static HTML, on real captures: every assertion names a fact taken from the
capture itself (a graph-break reason, a guard condition, a kernel name), never a canned string."""
import ast
import html
import re
from pathlib import Path

import pytest
import torch

import compiler
import explorer
from compiler.stages.fx_graph import same_code
from explorer.page import render_static, summary_text
from explorer.views import VIEWS, dataframes, render_view
from explorer.views.breaks import with_code_spans
from explorer.views.common import op_counts
from explorer.views.graph_layout import LEVEL_LIMIT
from explorer.views.graph_svg import module_of, render_graph_svg

INJECTED = "<script>alert(1)</script>"
EXPLORER = Path(explorer.__file__).parent


BLOCK = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


def forward_with_break(x):
    y = BLOCK(x)
    print("tcompile-views")
    return y.softmax(-1)


def pointwise(x):
    return (x.sin() + 1).relu().sum(-1)


def injected(x):
    y = x + len("<script>alert(1)</script>")
    print("<script>alert(1)</script>")
    return y * 2


def long_loop(x):
    for _ in range(500):
        x = x.sin()
        x = x * 2
    return x


def full_graph_break(x):
    print("breaks under fullgraph")
    return x + 1


@pytest.fixture(scope="module")
def module_cap():
    """aot_eager, an nn.Module, a graph break and a recompile (size change): 4 compiles."""
    torch._dynamo.reset()
    with compiler.capture() as cap:
        compiled = torch.compile(forward_with_break, backend="aot_eager")
        compiled(torch.randn(4, 8))
        compiled(torch.randn(6, 8))
    return cap


@pytest.fixture(scope="module")
def inductor_cap():
    return compiler.explore(pointwise, torch.randn(32, 16), fresh=True, repeat=5)


@pytest.fixture(scope="module")
def long_cap():
    return compiler.explore(long_loop, torch.randn(8), backend="eager", timing=False)


def without_ids(markup: str) -> str:
    """Markup without the element ids that are unique per rendering (graph drawings' zoom boxes, the
    provenance pickers' radios)."""
    markup = re.sub(r"tc-gv-zoom-\d+", "", markup)
    return re.sub(r"\b[0-9a-f]{8}(?=-L|-K|\b)", "", re.sub(r"tc-pick-[0-9a-f]{8}|tc-prov-[0-9a-f]{8}", "", markup))


def views_of(cap, compile):
    return {v.key: render_view(v.key, cap, compile) for v in VIEWS}


def test_every_view_renders_for_every_compile(module_cap):
    for compile in module_cap.compiles:
        for key, markup in views_of(module_cap, compile).items():
            assert "view failed" not in markup, (compile.compile_id, key, markup[:2000])
            assert markup.startswith('<div class="tcompile tc-view">') and len(markup) > 60, key


def test_overview_answers_clean_and_faster(module_cap, inductor_cap):
    broken = render_view("overview", module_cap, module_cap.compiles[0])
    summary = module_cap.summary
    assert f"{summary.graph_breaks} graph breaks" in broken and f"{summary.recompiles} recompiles" in broken
    assert 'class="tc-finding tc-warn"' in broken
    for compile in module_cap.compiles:
        assert f"<code>{compile.compile_id}</code>" in broken
    clean = render_view("overview", inductor_cap, inductor_cap.compiles[0])
    assert "Compiled cleanly into 1 graph" in clean
    speedup = inductor_cap.runtime.speedup
    verdict = "faster than eager" if speedup >= 1 else "slower than eager"
    assert f"{speedup:.2f}×" in clean and verdict in clean


def test_source_marks_graph_break_and_guard_lines(module_cap):
    compile = module_cap.compiles[0]
    item = module_cap.breaks[0]
    markup = render_view("source", module_cap, compile)
    break_row = re.split(r'<tr class="tc-break"[^>]*>', markup)[1].split("</tr>")[0]
    assert f'<td class="tc-lineno">{item.line}</td>' in break_row
    assert html.escape(item.registry.type[:60]) in break_row
    source = compile.source
    shown = range(source.firstlineno, source.firstlineno + len(source.text.splitlines()))
    guard_lines = {row.line for row in compile.guards.rows if row.user_line and row.line in shown} - {item.line}
    assert guard_lines
    for line in guard_lines:
        assert re.search(f'<tr class="tc-guarded"[^>]*><td class="tc-lineno">{line}</td>', markup)


def test_resume_function_source_shows_the_parent_function(module_cap):
    resume = next(c for c in module_cap.compiles if c.name.startswith("torch_dynamo_resume_in_"))
    markup = render_view("source", module_cap, resume)
    assert '<span class="nf">forward_with_break</span>' in markup
    assert "this compile resumes here" in markup


def test_bytecode_side_by_side_names_the_compiled_graph(module_cap):
    stage = module_cap.compiles[0].bytecode
    markup = render_view("bytecode", module_cap, module_cap.compiles[0])
    compiled_fn = next(i.argrepr.replace("NULL + ", "") for i in stage.transformed.instructions
                       if "__compiled_fn" in i.argrepr)
    assert f"<code>{compiled_fn}</code> (the compiled graph)" in markup
    assert "Original: forward_with_break" in markup and "Transformed by Dynamo" in markup
    assert html.escape(stage.original.text.splitlines()[1]) in markup
    assert "torch_dynamo_resume_in_forward_with_break" in markup


def test_fx_graph_draws_module_clusters_with_tooltips(module_cap):
    graph = module_cap.compiles[0].graph
    markup = render_view("graph", module_cap, module_cap.compiles[0])
    assert "<svg" in markup and "collapsed" not in markup
    modules = {module_of(n) for n in graph.nodes} - {None}
    assert modules, "the nn.Module paths should be in the capture"
    for module in modules:
        members = sum(module_of(n) == module for n in graph.nodes if n.op != "alias")
        assert f">{module} ({members} node{'s' if members != 1 else ''})</text>" in markup
    linear = next(n for n in graph.nodes if (n.target or "").endswith("linear"))
    tooltip = markup.split(f"<title>name: {linear.name}\n")[1].split("</title>")[0]
    assert f"target: {linear.target}" in tooltip
    assert f"type: {linear.dtype}[{', '.join(linear.shape)}]" in tooltip
    assert f"file: {linear.file}\nline: {linear.line}\nfunction: {linear.function}" in tooltip
    assert "GraphModule.print_readable" in markup


def test_guards_view_lists_conditions_and_the_tree(module_cap):
    stage = module_cap.compiles[0].guards
    markup = render_view("guards", module_cap, module_cap.compiles[0])
    tensor_match = next(r for r in stage.rows if r.kind == "TENSOR_MATCH")
    assert html.escape(tensor_match.condition[:200]) in markup
    assert f"{stage.count} guards" in markup and "tc-datatable" in markup
    assert html.escape(stage.tree.splitlines()[1]) in markup
    assert 'class="tc-hit"' in markup  # guards from the user's lines stand out


def test_graph_breaks_view_explains_each_break(module_cap):
    item = module_cap.breaks[0]
    markup = render_view("breaks", module_cap, module_cap.compiles[0])
    assert item.gb_code in markup and f"{item.gb_code.lower()}.html" in markup
    assert html.escape(item.registry.type) in markup
    assert html.escape(f"{item.file}:{item.line}") in markup and html.escape(item.code) in markup
    assert f"×{item.count}" in markup and ", ".join(item.compile_ids) in markup


def test_graph_break_hints_are_text_with_code_spans(module_cap):
    item = module_cap.breaks[0]
    markup = render_view("breaks", module_cap, module_cap.compiles[0])
    hint = next(h for h in item.hints if "`" in h)  # torch writes `print` in backticks
    assert str(with_code_spans(hint)) in markup and "<code>print</code>" in markup
    hints = markup[markup.index("Hints"):markup.index("Your code")]
    assert "`" not in hints


def test_graph_break_shows_user_frames_and_folds_the_rest(module_cap):
    item = module_cap.breaks[0]
    frames = {(f.file, f.function): f.user for f in item.stack}
    assert frames[(__file__, "forward_with_break")] and item.stack[-1].user is False  # torch raised it
    torch_dir, pytest_dir = Path(torch.__file__).parent, Path(pytest.__file__).parent
    for f in item.stack:
        if f.file.startswith((str(torch_dir), str(pytest_dir))) or f.file.startswith("<frozen"):
            assert not f.user, f
    user = [f for f in item.stack if f.user]
    assert user[-1].line == item.line and user[-1].file == item.file
    markup = render_view("breaks", module_cap, module_cap.compiles[0])
    shown, folded = markup.split('class="tc-all-frames"')
    assert "symbolic_convert.py" not in shown and "symbolic_convert.py" in folded
    assert f"show all frames ({len(item.stack)} frames" in markup


def test_notebook_cells_are_named_as_the_notebook_names_them():
    from IPython.core.interactiveshell import InteractiveShell

    from explorer.cell import compile_cell

    shell = InteractiveShell.instance()
    shell.run_cell("import torch, compiler", store_history=True)
    shell.run_cell("def tc_cell_fn(x):\n    y = x.cos()\n    print('cell break')\n    return y.sin()",
                   store_history=True)
    defined_in = shell.execution_count - 1
    shell.run_cell("torch._dynamo.reset()\nwith compiler.capture() as tc_cell_cap:\n"
                   "    torch.compile(tc_cell_fn, backend='eager')(torch.randn(3))", store_history=True)
    called_in = shell.execution_count - 1
    item = shell.user_ns["tc_cell_cap"].breaks[0]
    assert (item.cell, item.line) == (defined_in, 3)
    assert [(f.cell, f.line) for f in item.stack if f.user][-2:] == [(called_in, 3), (defined_in, 3)]
    markup = render_view("breaks", shell.user_ns["tc_cell_cap"], None)
    assert f"In [{defined_in}], line 3" in markup and f"In [{called_in}], line 3" in markup
    shell.user_ns["compile_cell"] = compile_cell  # a %%tcompile cell: named after the cell running it
    shell.run_cell("tc_compiled = compile_cell('y = x + 1', {'x': 1})", store_history=True)
    assert compiler.stages.breaks.cell_number(shell.user_ns["tc_compiled"].filename) == shell.execution_count - 1


def test_recompiles_list_each_new_symbol_once(module_cap):
    markup = render_view("recompiles", module_cap, None)
    symbols = re.findall(r"s\d+ = L\[&#x27;\w+&#x27;\]\.size\(\)\[\d\]", markup)
    assert symbols and len(symbols) == len(set(symbols)), symbols


def test_recompiles_view_lists_failing_guards_in_order(module_cap):
    markup = render_view("recompiles", module_cap, module_cap.compiles[0])
    positions = []
    for recompile in module_cap.recompiles:
        reason = recompile.reasons[0]
        assert html.escape(reason.guard) in markup and reason.detail in markup
        positions.append(markup.index(f"<code>{recompile.compile_id}</code>"))
    assert positions == sorted(positions)


def test_aot_view_shows_joint_forward_and_backward(module_cap):
    stage = module_cap.compiles[0].aot
    markup = render_view("aot", module_cap, module_cap.compiles[0])
    assert stage.training and "Training:" in markup
    sections = markup.split('<h4 class="tc-heading">')[1:]
    assert len(sections) == len(stage.graphs)
    for (role, graph), section in zip(stage.graphs.items(), sections):
        assert f"{role} graph code" in section
        most_used, times = op_counts(graph.nodes).most_common(1)[0]  # the ATen op the graph uses most
        assert f"<code>{most_used}</code>" + (f" ×{times}" if times > 1 else "") in section
    assert "Backward graph: what runs on .backward()" in markup


def test_inductor_view_shows_ir_before_and_after_fusion(inductor_cap):
    stage = inductor_cap.compiles[0].inductor
    run = stage.runs[0]
    markup = render_view("inductor", inductor_cap, inductor_cap.compiles[0])
    assert "Before fusion" in markup and "After fusion" in markup
    first_node = run.ir_before.nodes[0]
    assert f"<code>{run.ir.fusion[0].fused}</code>" in markup
    first_line = run.ir_before.text.splitlines()[first_node.lines[0]]
    assert html.escape(first_line) in markup
    assert f"{run.ir.nodes_before} nodes before fusion" in markup or "1 node before fusion" in markup
    assert "Post-grad graph" in markup
    graph = inductor_cap.compiles[0].graph  # no pre-grad pass changed this function's graph: said in one line
    assert same_code(run.pre_grad.code, graph.code)
    assert [n.name for n in run.pre_grad.nodes] == [n.name for n in graph.nodes] and run.pre_grad.op_count == graph.op_count
    assert "the Dynamo graph as is" in markup and "Pre-grad graph (" in markup


def test_generated_code_view_highlights_each_kernel(inductor_cap):
    stage = inductor_cap.compiles[0].kernels
    kernel = next(k for k in stage.kernels if k.language != "extern")
    markup = render_view("code", inductor_cap, inductor_cap.compiles[0])
    assert f"<code>{kernel.name}</code>" in markup
    assert ", ".join(kernel.ops_from_name) in markup
    assert '<span class="k' in markup  # pygments keyword tokens (C++ types and keywords)
    assert "Whole output module" in markup


def test_timings_view_charts_compile_stages_and_runtime(inductor_cap):
    compile = inductor_cap.compiles[0]
    markup = render_view("timings", inductor_cap, compile)
    assert markup.count('<svg') == 2
    for phase in compile.timings.phases:
        assert html.escape(phase.label) in markup
    runtime = inductor_cap.runtime
    assert f"speedup {runtime.speedup:.2f}×" in markup
    assert "q1–q3" in markup


def test_unavailable_stages_show_their_reason(module_cap):
    compile = module_cap.compiles[0]
    for key, stage in (("inductor", compile.inductor), ("code", compile.kernels)):
        markup = render_view(key, module_cap, compile)
        assert "unavailable" in markup and html.escape(stage.reason) in markup
    assert html.escape(module_cap.cudagraphs.reason) in render_view("cudagraphs", module_cap, compile)
    assert html.escape(module_cap.runtime.reason) in render_view("timings", module_cap, compile)


def test_html_injection_is_escaped_everywhere():
    cap = compiler.explore(injected, torch.ones(3), backend="aot_eager", timing=False)
    assert any(INJECTED in (item.code or "") for item in cap.breaks)
    documents = [render_static(cap)] + [m for c in cap.compiles for m in views_of(cap, c).values()]
    for markup in documents:
        assert "<script" not in markup.lower()
    escaped = html.escape(INJECTED)
    static = documents[0]
    assert escaped in static or html.escape(escaped) in static
    assert escaped in render_view("breaks", cap, cap.compiles[0])
    assert "alert(1)" in render_view("graph", cap, cap.compiles[0])  # in the tooltips, escaped by dot


def test_large_graph_is_collapsed(long_cap):
    """Collapsed into few boxes (how long drawing takes is measured in bench/rendering.py)."""
    graph = long_cap.compiles[0].graph
    assert len(graph.nodes) > 1000
    svg, how = render_graph_svg(graph)
    boxes = svg.count('<g class="tc-gv-box')
    assert 2 <= boxes <= LEVEL_LIMIT and "collapsed" in how
    assert "1000 ops" in render_view("graph", long_cap, long_cap.compiles[0])


def test_small_graph_draws_every_node(inductor_cap):
    graph = inductor_cap.compiles[0].graph
    svg, how = render_graph_svg(graph)
    drawn = [n for n in graph.nodes if n.op != "alias"]
    assert how is None and svg.count('<g class="tc-gv-box') == len(drawn)


def test_static_html_holds_every_view_and_its_styles(module_cap):
    static = render_static(module_cap)
    assert static.count("/* tcompile views.") == 1 and ".tcompile {" in static
    for view in VIEWS:
        assert f"<summary>{html.escape(view.title_for(module_cap))}</summary>" in static
    for compile in module_cap.compiles:
        assert html.escape(compile.compile_id) in static
    assert "<script" not in static.lower()


def test_summary_text_and_dataframes(module_cap):
    text = summary_text(module_cap)
    assert f"{module_cap.summary.graph_breaks} graph breaks" in text
    assert module_cap.recompiles[0].reasons[0].text in text
    frames = dataframes(module_cap)
    assert len(frames["compiles"]) == len(module_cap.compiles)
    assert set(frames["guards"]["compile_id"]) == {c.compile_id for c in module_cap.compiles}
    assert list(frames["recompiles"]["guard"]) == [r.failed_guard for r in module_cap.recompiles]


def test_error_box_names_the_failing_stage():
    cap = compiler.explore(full_graph_break, torch.ones(3), backend="aot_eager", fullgraph=True,
                           errors="return", timing=False)
    assert cap.error
    static = render_static(cap)
    assert html.escape(cap.error.stage) in static and cap.error.type in static
    assert f"{cap.error.type} in {html.escape(cap.error.stage)}" in render_view("overview", cap, None)
    compile_view = render_view("guards", cap, cap.compiles[0] if cap.compiles else None)
    assert "view failed" not in compile_view


def test_loaded_capture_gives_the_same_views(module_cap):
    loaded = compiler.Capture.from_json(module_cap.to_json())
    for view in VIEWS:
        assert (without_ids(render_view(view.key, loaded, loaded.compiles[0]))
                == without_ids(render_view(view.key, module_cap, module_cap.compiles[0])))


def test_captures_compiles_and_stages_draw_themselves(module_cap):
    """What a notebook cell shows for ``cap``, ``cap.compiles[i]`` and a stage: its view, styled (a capture: its
    static copy, under the 1 MB a cell's value renders at most)."""
    from explorer.page import DISPLAY_BYTES

    assert (without_ids(module_cap._repr_html_())
            == without_ids(explorer.render_static(module_cap, limit=DISPLAY_BYTES)))
    compile = module_cap.compiles[0]
    page = compile._repr_html_()
    assert page.count("/* tcompile views.") == 1 and html.escape(compile.compile_id) in page
    assert [v.title for v in VIEWS if v.scope == "compile"] == [
        html.unescape(t) for t in re.findall(r'<details[^>]*class="tc-section"[^>]*><summary>(.*?)</summary>', page)]
    guards = compile.guards._repr_html_()
    assert guards.count("/* tcompile views.") == 1 and "Guards of compile 0/0" in guards
    assert html.escape(compile.guards.rows[0].condition[:200]) in guards
    assert html.escape(module_cap.breaks[0].registry.type) in module_cap.breaks._repr_html_()
    assert html.escape(module_cap.runtime.reason) in module_cap.runtime._repr_html_()
    recompiled = module_cap.compile(module_cap.recompiles[0].compile_id)
    shown = recompiled.recompile._repr_html_()  # no view of its own: its text, escaped
    assert html.escape(recompiled.recompile.reasons[0].text) in shown and shown.count("/* tcompile views.") == 1
    for markup in (page, guards, shown):
        assert "view failed" not in markup and "<script" not in markup


def _explorer_imports(path: Path) -> set[str]:
    """The explorer modules (first name under ``explorer``) a file imports, lazily or not."""
    package = ["explorer", *path.parent.relative_to(EXPLORER).parts]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            names = [".".join(base + ([node.module] if node.module else []) + [a.name]) for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found |= {n.split(".")[1] for n in names if n.startswith("explorer.")}
    return found


def test_page_sits_above_views_above_html():
    """No import cycle joins html.py, views/ and page.py: each imports only the layers below it."""
    assert not _explorer_imports(EXPLORER / "html.py") & {"views", "page", "widget"}
    for path in (EXPLORER / "views").glob("*.py"):
        assert not _explorer_imports(path) & {"page", "widget"}, path.name
    assert {"html", "views"} <= _explorer_imports(EXPLORER / "page.py")


def test_kernels_table_is_a_data_table(inductor_cap):
    from explorer.views.tables import LaterHtml, collecting_tables

    compile = inductor_cap.compiles[0]
    with collecting_tables() as found:
        render_view("code", inductor_cap, compile)
    (kernels,) = [t for t in found if not isinstance(t, LaterHtml)]  # the kernels' code is drawn later, not a table
    names = [k.name for k in compile.kernels.kernels]
    assert kernels.title == "Kernels" and len(kernels.rows) == len(names)
    assert kernels.frame()["kernel"].tolist() == [f"<code>{html.escape(n)}</code>" for n in names]


def test_big_tables_are_data_tables_split_out_for_the_widget(module_cap):
    from explorer.views.tables import DataTable, collecting_tables, split_view

    compile = module_cap.compiles[0]
    expected = {"overview": "Compiles", "guards": "Guards", "graph": "All ", "recompiles": "Recompiles"}
    for key, title in expected.items():
        static = render_view(key, module_cap, compile)
        assert 'class="tc-table-wrap tc-datatable' in static, key  # a plain table in static HTML
        with collecting_tables() as found:
            markup = render_view(key, module_cap, compile)
        pieces = split_view(markup, found)
        tables = [p for p in pieces if isinstance(p, DataTable)]
        assert tables == found and tables[0].title.startswith(title), key
        assert all(p.startswith('<div class="tcompile tc-view">') for p in pieces if isinstance(p, str)), key
        assert "tc-datatable" not in "".join(p for p in pieces if isinstance(p, str)), key
    guards = compile.guards.rows
    with collecting_tables() as found:
        render_view("guards", module_cap, compile)
    frame = found[0].frame()
    assert len(frame) == len(guards) and frame["kind"].tolist() == [r.kind for r in guards]
    hit = next(i for i, r in enumerate(guards) if r.user_line)
    assert frame.iloc[hit, 0].startswith('<span class="tc-row-hit"></span>')


@pytest.mark.parametrize("path, user", [
    ("/work/venv-214/lib/python3.11/site-packages/torch/_dynamo/symbolic_convert.py", False),
    ("/opt/conda/lib/python3.10/site-packages/ipykernel_launcher.py", False),
    ("C:\\Py\\Lib\\site-packages\\torch\\nn\\modules\\module.py", False),
    ("/usr/lib/python3.11/runpy.py", False),
    ("/x/lib/python3.11/site-packages/transformers/models/gpt2/modeling_gpt2.py", True),
    ("/home/someone/model.py", True),
])
def test_frames_of_another_machine_are_told_apart(path, user):
    """A trace recorded elsewhere names torch, Jupyter and the stdlib at that machine's paths: still not 'your code'
    (a 2.14.1 trace's break listed 9 frames of torch/_dynamo as the user's)."""
    from compiler.stages.breaks import is_user_frame

    assert is_user_frame(path) is user
