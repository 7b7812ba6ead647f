"""The views of an AOTInductor compile loaded from a TORCH_TRACE log (no Dynamo frame), and op counts that
agree between a graph's title and its ops line. Reads tlparse's fixture logs from ../shared/tlparse_inputs;
one small live compile (backend aot_eager)."""
from __future__ import annotations

import re
import warnings
from collections import Counter

import pytest
import torch

from tlparse_fixtures import INPUTS, needs_inputs

import compiler
from compiler.readers.trace import TraceWarning
from explorer.views.common import op_counts
from explorer.views.fx_graph import render_graph
from explorer.views.inductor import render_inductor
from explorer.views.overview import render_overview

AOT_LOGS = ["inductor_provenance_aot_log.txt", "inductor_provenance_aot_cuda_log.txt",
            "inductor_provenance_aot_debug_handle_log.txt", "inductor_provenance_aot_log_old.txt"]
CALLS = ("call_function", "call_method", "call_module")


def load(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceWarning)
        return compiler.load_trace(INPUTS / name)


def card(html: str, label: str) -> str:
    """The value of the overview card labelled ``label``."""
    found = re.search(r'<div class="tc-card-value">([^<]*)</div><div class="tc-card-label">' + re.escape(label) + "<",
                      html)
    assert found, f"no card {label!r}"
    return found.group(1)


@needs_inputs
@pytest.mark.parametrize("name", AOT_LOGS)
def test_aot_compile_time_is_the_traced_compile_fx_aot_span(name):
    """torch logs no entire_frame_compile_time_s for AOTInductor: the compile time is its compile_fx_aot
    span, which agrees with the start/end times of torch's compilation_metrics record for it."""
    cap = load(name)
    c = cap.compiles[0]
    assert c.origin == "aot_inductor" and c.metrics.get("entire_frame_compile_time_s") is None
    span = [e.seconds for e in c.timings.events if e.name == "compile_fx_aot"]
    assert len(span) == 1 and c.compile_seconds == span[0]
    recorded = (c.metrics["end_time_us"] - c.metrics["start_time_us"]) / 1e6
    assert abs(c.compile_seconds - recorded) < 0.1 and c.compile_seconds > 1
    assert cap.summary.compile_time_s == round(span[0], 4)
    overview = render_overview(cap, c)
    assert card(overview, "compile time") == f"{span[0]:.3g} s" and " ns" not in card(overview, "compile time")


@needs_inputs
def test_aot_compile_counts_its_graph_and_says_no_frame():
    """The exported program is one graph compiled (as a Dynamo graph is); there is no frame, and the
    Inductor tab says AOTInductor, not 'for this frame'."""
    cap = load("inductor_provenance_aot_log.txt")
    c = cap.compiles[0]
    assert (cap.summary.frames, cap.summary.compiles, cap.summary.graphs) == (0, 1, 1)
    overview = render_overview(cap, c)
    assert (card(overview, "frames"), card(overview, "graphs")) == ("0", "1")
    inductor = render_inductor(cap, c)
    assert "for this frame" not in inductor
    assert "1 Inductor compile of the exported program (AOTInductor, no Dynamo frame)" in inductor


def _agree(graph):
    """The title's count, the ops line's count and the call nodes of the graph are one number."""
    calls = sum(n.op in CALLS for n in graph.nodes)
    assert graph.op_count == sum(op_counts(graph.nodes).values()) == calls, Counter(n.op for n in graph.nodes)
    return calls


@needs_inputs
def test_pre_grad_graph_title_and_ops_line_agree():
    """The pre-grad graph has 6 aten calls and 2 get_attr nodes (fc1.weight, fc1.bias): 6 ops, in its
    title and in its ops line."""
    c = load("inductor_provenance_aot_log.txt").compiles[0]
    pre = c.inductor.runs[0].pre_grad
    assert Counter(n.op for n in pre.nodes)["get_attr"] == 2 and _agree(pre) == 6
    inductor = render_inductor(None, c)
    assert "Pre-grad graph (6 ops)" in inductor and "8 ops" not in inductor
    assert '<p class="tc-ops">6 ops: ' in inductor


def test_live_graphs_title_and_ops_line_agree():
    """A tensor made in the function is a get_attr constant in AOTAutograd's graph: not an op."""
    def f(x):
        return x * torch.tensor([1.0, 2.0]) + 1

    with compiler.capture() as cap:
        torch.compile(f, backend="aot_eager")(torch.randn(2))
    c = cap.compiles[0]
    inference = c.aot.graphs["inference"]
    assert any(n.op == "get_attr" for n in inference.nodes)
    for graph in (c.graph, *c.aot.graphs.values()):
        _agree(graph)
    shown = render_graph(cap, c, drawing=False)
    assert f"{c.graph.op_count} ops, " in shown and f'<p class="tc-ops">{c.graph.op_count} ops: ' in shown


@needs_inputs
def test_aot_compile_time_unknown_is_a_dash_not_zero(tmp_path):
    """The log without its chromium events and compilation_metrics holds no compile time: "–", not 0."""
    kept, skipping = [], False
    for line in (INPUTS / "inductor_provenance_aot_log.txt").read_text().splitlines(keepends=True):
        if not line.startswith("\t"):
            skipping = '{"chromium_event"' in line or '{"compilation_metrics"' in line
        if not skipping:
            kept.append(line)
    trimmed = tmp_path / "aot_no_times.log"
    trimmed.write_text("".join(kept))
    cap = load(trimmed)
    c = cap.compiles[0]
    assert c.origin == "aot_inductor" and not c.timings.available and c.compile_seconds is None
    overview = render_overview(cap, c)
    assert card(overview, "compile time") == "–"


@needs_inputs
def test_aot_timings_and_compiles_table():
    """Timings names the AOTInductor compile and its compile_fx_aot span (no frame, no backward); the
    Compiles table gives the exported program's ops (its pre-grad graph)."""
    from explorer.views.timings import compile_time_section

    cap = load("inductor_provenance_aot_log.txt")
    c = cap.compiles[0]
    timings = compile_time_section(c)
    assert "Compile time of this AOTInductor compile (compile_fx_aot, 15.9 s)" in timings
    assert "this frame" not in timings and "backward" not in timings  # C++ compile ×4 is no forward/backward
    row = re.search(r"<tr[^>]*>\s*<td><code>-_-_-_-</code></td>(.*?)</tr>", render_overview(cap, c), re.S).group(1)
    assert [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)][2:5] == \
        ["6", "–", "2"]
