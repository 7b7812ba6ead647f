"""Generated code: Inductor's kernels, each with the ops it came from, and the wrapper module."""
from __future__ import annotations

from ..html import badge, code, code_block, details, heading, join, para, plural, table, tag, unavailable

LEXERS = {"C++": "cpp", "CUDA C++": "cpp", "Triton": "triton"}


def _list(values) -> str:
    return ", ".join(values or [])


def _came_from(kernel: dict) -> str:
    """The most precise origin torch recorded: source nodes, else ATen ops, else the IR or the name."""
    return _list(kernel.get("source_nodes") or kernel.get("aten_ops") or kernel.get("ir_ops")
                 or kernel.get("ops_from_name"))


def kernels_table(kernels: list[dict]):
    rows = [[code(k["name"]), k.get("language"), k.get("role") or "",
             _list(k.get("source_nodes") or k.get("aten_ops")), _list(k.get("ops_from_name")),
             f"{k['ir_node']} ({_list(k.get('ir_members'))})" if k.get("ir_node") else "", _list(k.get("ir_ops"))]
            for k in kernels]
    return table(["kernel", "language", "graph", "source nodes / ATen ops", "ops in its name", "IR node (members)",
                  "IR ops"], rows, cls="tc-wrap-first", drop_empty=True)


def kernel_section(kernel: dict, open: bool):
    language = kernel.get("language")
    summary = join([code(kernel["name"]), " ", badge(language, "info"),
                    f" {kernel.get('role')}" if kernel.get("role") else "", f" — {_came_from(kernel)}"])
    return details(summary,
                   para("Called with ", tag("code", _list(kernel.get("call_args"))), cls="tc-muted")
                   if kernel.get("call_args") else None,
                   details("Inductor's comments (source nodes, ATen ops, graph fragment)",
                           code_block(kernel.get("comments"), "python")) if kernel.get("comments") else None,
                   code_block(kernel.get("source"), LEXERS.get(language, "python")),
                   open=open)


def render_code(capture, compile) -> str:
    stage = compile.kernels
    if not stage.available:
        return unavailable("Generated code", stage.reason)
    kernels = stage.get("kernels") or []
    generated = [k for k in kernels if k.get("language") != "extern" and k.get("source")]
    extern = [k for k in kernels if k.get("language") == "extern"]
    return join([
        para(f"{plural(len(generated), 'generated kernel')} ({', '.join(stage.get('languages') or []) or 'none'})"
             f" and {plural(len(extern), 'call')} to library kernels (extern)."),
        kernels_table(kernels),
        heading("Kernels", 4),
        *(kernel_section(k, open=i == 0) for i, k in enumerate(generated)),
        details("Whole output module (Python wrapper)", code_block(stage.get("module"), "python")),
    ])
