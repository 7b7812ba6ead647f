"""Inductor: pre-/post-grad graphs, and the scheduler IR before and after fusion, side by side."""
from __future__ import annotations

from ..html import (code, code_block, columns, details, heading, join, note, para, plural, preformatted, table,
                    unavailable)
from compiler.stages.fx_graph import same_code

from .common import op_summary
from .source import kernel_picker


def _graph_details(title: str, graph):
    if not graph.available:
        return para(f"{title}: ", graph.reason or "not logged", cls="tc-muted")
    return details(f"{title} ({plural(graph.op_count, 'op')})", op_summary(graph.nodes),
                   code_block(graph.code, "python"))


def _codegen_fused(run) -> list:
    """Kernels that cover several scheduler nodes (the C++ backend fuses while generating code)."""
    return [k for k in run.code.kernels if len(k.ir_nodes) > 1]


def fusion_table(run, provenance=None):
    ops_of = {n.name: n.ops for n in run.ir_after.nodes}
    shared = {name for k in _codegen_fused(run) for name in k.ir_nodes}
    fusion = run.ir.fusion
    # extern calls have no kernel of their own in the IR log: the provenance map knows which call it is
    linked = {name: k.name for k in (provenance.kernels if provenance is not None and provenance.available else [])
              if k.role == run.role for name in k.fused_nodes}
    rows = [[code(f.fused), f.kind, ", ".join(f.members), ", ".join(ops_of.get(f.fused, [])),
             code(f.kernel or linked[f.fused]) if f.kernel or f.fused in linked else ""] for f in fusion]
    marks = ["tc-hit" if f.is_fusion or f.fused in shared else None for f in fusion]
    return table(["after fusion", "kind", "made of (before fusion)", "ops", "kernel"], rows, marks)


def ir_section(run, provenance=None):
    ir = run.ir
    if not ir.available:
        return para("Scheduler IR: ", ir.reason, cls="tc-muted")
    fused = sum(f.is_fusion for f in ir.fusion)
    codegen = _codegen_fused(run)
    return join([
        para(f"Scheduler: {plural(ir.nodes_before, 'node')} before fusion → "
             f"{plural(ir.nodes_after, 'node')} after; {plural(fused, 'fused node')}"
             + (f"; {plural(len(codegen), 'kernel')} fusing several nodes while generating code"
                if codegen else "") + (" (highlighted)." if fused or codegen else ".")),
        fusion_table(run, provenance),
        details("IR before | after fusion",
                columns(join([heading("Before fusion", 5), preformatted(run.ir_before.text, "tc-pre tc-ir")]),
                        join([heading("After fusion", 5), preformatted(run.ir_after.text, "tc-pre tc-ir")]))),
    ])


def tracking_section(run, provenance):
    """Inductor's own provenance record for this run, when the trace holds one: post-grad node ↔
    pre-grad nodes ↔ kernels (the links tlparse's provenance highlighter draws)."""
    found = [t for t in (provenance.inductor_tracking if provenance is not None and provenance.available else [])
             if t.role == run.role]
    if not found:
        return None
    tracking = found[0]
    names = list(dict.fromkeys([*tracking.post_to_pre, *tracking.post_to_kernel]))
    rows = [[code(name), ", ".join(tracking.post_to_pre.get(name, [])), ", ".join(tracking.post_to_kernel.get(name, []))]
            for name in names]
    counted = ", ".join(f"{what}: {artifact}" for what, artifact in tracking.texts.items())
    return details(f"Inductor's provenance record, from the trace ({plural(len(tracking.kernel_to_post), 'kernel')})",
                   para("Logged by torch with trace.provenance_tracking_level on; tcompile links kernels to "
                        "post-grad nodes with it first. Line numbers of the logged texts "
                        f"(as tlparse counts them) are in provenance.inductor_tracking ({counted}).", cls="tc-muted"),
                   table(["post-grad node", "pre-grad nodes", "kernels (:debug handle)"], rows))


def run_section(run, number: int, provenance=None, dynamo_graph=None):
    """One Inductor compile (a ``compiler.stages.schema.InductorRun``): its graphs and its IR. A pre-grad graph
    that is the Dynamo graph as is (``dynamo_graph``) is said in one line, not shown again."""
    title = f"{run.role.capitalize()} graph" if run.role else f"Inductor compile {number + 1}"
    unchanged = run.pre_grad.available and dynamo_graph is not None and same_code(run.pre_grad.code, dynamo_graph.code)
    return join([heading(title, 4),
                 para(f"Pre-grad graph ({plural(run.pre_grad.op_count, 'op')}): the Dynamo graph as is, unchanged by "
                      "the pre-grad passes (FX graph tab).", cls="tc-muted") if unchanged
                 else _graph_details("Pre-grad graph", run.pre_grad),
                 _graph_details("Post-grad graph", run.post_grad),
                 ir_section(run, provenance),
                 tracking_section(run, provenance)])


def render_inductor(capture, compile) -> str:
    stage = compile.inductor
    if not stage.available:
        return unavailable("Inductor", stage.reason)
    runs = stage.runs
    if compile.origin == "aot_inductor":
        what = f"{plural(len(runs), 'Inductor compile')} of the exported program (AOTInductor, no Dynamo frame)."
    else:
        what = f"{plural(len(runs), 'Inductor compile')} for this frame" + (" (forward and backward)." if len(runs) > 1
                                                                             else ".")
    return join([note(stage.cache, kind="warn") if stage.cache else None,
                 para(what),
                 kernel_picker(compile, "Click a kernel: the source lines and the nodes (post-grad, scheduler "
                                        "before and after fusion) it came from"),
                 *(run_section(run, i, compile.provenance, compile.graph) for i, run in enumerate(runs))])
