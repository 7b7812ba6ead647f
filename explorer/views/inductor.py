"""Inductor: pre-/post-grad graphs, and the scheduler IR before and after fusion, side by side."""
from __future__ import annotations

from ..html import (code, code_block, columns, details, heading, join, note, para, plural, preformatted, table,
                    unavailable)
from .common import op_summary


def _graph_details(title: str, graph: dict):
    if not graph.get("available"):
        return para(f"{title}: ", graph.get("reason") or "not logged", cls="tc-muted")
    return details(f"{title} ({plural(graph.get('op_count', 0), 'op')})", op_summary(graph.get("nodes") or []),
                   code_block(graph.get("code"), "python"))


def _codegen_fused(run: dict) -> list[dict]:
    """Kernels that cover several scheduler nodes (the C++ backend fuses while generating code)."""
    return [k for k in run.get("code", {}).get("kernels") or [] if len(k.get("ir_nodes") or []) > 1]


def fusion_table(run: dict):
    ir = run["ir"]
    ops_of = {n["name"]: n.get("ops") or [] for n in ir["post_fusion"]["nodes"]}
    shared = {name for k in _codegen_fused(run) for name in k["ir_nodes"]}
    fusion = ir.get("fusion") or []
    rows = [[code(f["fused"]), f.get("kind"), ", ".join(f.get("members") or []), ", ".join(ops_of.get(f["fused"], [])),
             code(f["kernel"]) if f.get("kernel") else ""] for f in fusion]
    marks = ["tc-hit" if f.get("is_fusion") or f["fused"] in shared else None for f in fusion]
    return table(["after fusion", "kind", "made of (before fusion)", "ops", "kernel"], rows, marks)


def ir_section(run: dict):
    ir = run["ir"]
    if not ir.get("available"):
        return para("Scheduler IR: ", ir.get("reason"), cls="tc-muted")
    fused = sum(bool(f.get("is_fusion")) for f in ir.get("fusion") or [])
    codegen = _codegen_fused(run)
    return join([
        para(f"Scheduler: {plural(ir.get('nodes_before', 0), 'node')} before fusion → "
             f"{plural(ir.get('nodes_after', 0), 'node')} after; {plural(fused, 'fused node')}"
             + (f"; {plural(len(codegen), 'kernel')} fusing several nodes while generating code"
                if codegen else "") + (" (highlighted)." if fused or codegen else ".")),
        fusion_table(run),
        details("IR before | after fusion",
                columns(join([heading("Before fusion", 5), preformatted(ir["pre_fusion"].get("text"), "tc-pre tc-ir")]),
                        join([heading("After fusion", 5), preformatted(ir["post_fusion"].get("text"), "tc-pre tc-ir")]))),
    ])


def run_section(run: dict, number: int):
    title = f"{run['role'].capitalize()} graph" if run.get("role") else f"Inductor compile {number + 1}"
    return join([heading(title, 4),
                 _graph_details("Pre-grad graph", run.get("pre_grad") or {}),
                 _graph_details("Post-grad graph", run.get("post_grad") or {}),
                 ir_section(run)])


def render_inductor(capture, compile) -> str:
    stage = compile.inductor
    if not stage.available:
        return unavailable("Inductor", stage.reason)
    runs = stage.get("runs") or []
    return join([note(stage["cache"], kind="warn") if stage.get("cache") else None,
                 para(f"{plural(len(runs), 'Inductor compile')} for this frame"
                      + (" (forward and backward)." if len(runs) > 1 else ".")),
                 *(run_section(run, i) for i, run in enumerate(runs))])
