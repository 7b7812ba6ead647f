"""Inductor's own provenance record of a run, read from a TORCH_TRACE log written with
``trace.provenance_tracking_level`` on (``InductorTracking``): its node maps (pre-grad ↔ post-grad ↔ kernel)
and the same links as line numbers of the logged texts, counted as tlparse's provenance highlighter counts them
(``tlparse_line_mappings``; tests/test_trace_provenance.py compares with tlparse). ``compiler.stages.provenance``
links kernels to post-grad nodes by it first."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from compiler.stages.data import Data


@dataclass(repr=False, eq=False)
class InductorTracking(Data):
    """Inductor's own provenance record of one Inductor run, as a TORCH_TRACE log holds it when torch
    ran with ``trace.provenance_tracking_level`` on (artifact ``inductor_provenance_tracking_node_mappings``;
    older logs: ``inductor_post_to_pre_grad_nodes``, ``inductor_triton_kernel_to_post_grad_nodes``), and
    the same links as line numbers of the logged graph and code texts, counted as tlparse counts them."""

    role: str | None = None
    version: float | None = None
    pre_to_post: dict[str, list[str]] = field(default_factory=dict)  # pre-grad node → post-grad nodes
    post_to_pre: dict[str, list[str]] = field(default_factory=dict)
    kernel_to_post: dict[str, list[str]] = field(default_factory=dict)  # "kernel[:debug handle]" → post-grad nodes
    post_to_kernel: dict[str, list[str]] = field(default_factory=dict)
    kernel_stack_traces: dict[str, list[str]] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)  # pre_grad/post_grad/code/aot_code → the artifact counted
    # tlparse's lineMappings: preToPost, postToPre, pyCodeToPost, postToPyCode, cppCodeToPost, postToCppCode,
    # each str(line) → lines (1-based, in the texts named above)
    line_mappings: dict[str, dict[str, list[int]]] = field(default_factory=dict)


_HANDLE = re.compile(r":\d+$")  # "triton_poi_fused_mul_1:2": the kernel's debug handle (one launch)


def _json_object(text: str | None, what: str, notes: list[str]) -> dict:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        notes.append(f"{what}: not JSON ({exc}); ignored")
        return {}
    if not isinstance(value, dict):
        notes.append(f"{what}: not a JSON object; ignored")
        return {}
    return value


def _name_lists(value, what: str, notes: list[str]) -> dict[str, list[str]]:
    """``{name: [name, …]}`` from the log, every name a string (anything else is dropped, with a note)."""
    if not isinstance(value, dict):
        return {}
    out = {str(k): [v for v in names if isinstance(v, str)] for k, names in value.items() if isinstance(names, list)}
    if len(out) != len(value) or any(len(out[str(k)]) != len(v) for k, v in value.items() if str(k) in out):
        notes.append(f"{what}: entries that are not lists of names were dropped")
    return out


def inductor_tracking_of(texts: dict, role: str | None, notes: list[str]) -> dict:
    """One Inductor run's provenance-tracking artifacts (raw texts by artifact name) → ``InductorTracking``
    data. The newer ``inductor_provenance_tracking_node_mappings`` holds all four maps; older logs held
    ``inductor_post_to_pre_grad_nodes`` (post-grad node → pre-grad node records) and
    ``inductor_triton_kernel_to_post_grad_nodes`` instead."""
    mappings = _json_object(texts.get("inductor_provenance_tracking_node_mappings"),
                            "inductor_provenance_tracking_node_mappings", notes)
    out = {"role": role, "version": None, "pre_to_post": {}, "post_to_pre": {}, "kernel_to_post": {},
           "post_to_kernel": {}, "kernel_stack_traces": {}, "texts": {}, "line_mappings": {}}
    if mappings:
        version = mappings.get("version")
        out["version"] = float(version) if isinstance(version, (int, float)) and not isinstance(version, bool) else None
        for key, attribute in (("preToPost", "pre_to_post"), ("postToPre", "post_to_pre"),
                           ("cppCodeToPost", "kernel_to_post"), ("postToCppCode", "post_to_kernel")):
            out[attribute] = _name_lists(mappings.get(key), f"node mappings {key}", notes)
    else:
        old = _json_object(texts.get("inductor_post_to_pre_grad_nodes"), "inductor_post_to_pre_grad_nodes", notes)
        out["post_to_pre"] = {post: [r["name"] for r in records if isinstance(r, dict) and isinstance(r.get("name"), str)]
                              for post, records in old.items() if isinstance(records, list)}
        for post, pres in out["post_to_pre"].items():
            for pre in pres:
                out["pre_to_post"].setdefault(pre, []).append(post)
        out["kernel_to_post"] = _name_lists(_json_object(texts.get("inductor_triton_kernel_to_post_grad_nodes"),
                                                         "inductor_triton_kernel_to_post_grad_nodes", notes),
                                            "inductor_triton_kernel_to_post_grad_nodes", notes)
        for kernel, posts in out["kernel_to_post"].items():
            for post in posts:
                out["post_to_kernel"].setdefault(post, []).append(kernel)
    out["kernel_stack_traces"] = _name_lists(_json_object(
        texts.get("inductor_provenance_tracking_kernel_stack_traces"),
        "inductor_provenance_tracking_kernel_stack_traces", notes), "kernel stack traces", notes)
    pre_name = next((n for n in ("before_pre_grad_graph",) if texts.get(n)), None)
    post_name = next((n for n in ("after_post_grad_graph", "inductor_post_grad_graph") if texts.get(n)), None)
    counted = {"pre_grad": pre_name, "post_grad": post_name,
               "code": "inductor_output_code" if texts.get("inductor_output_code") else None,
               "aot_code": "inductor_aot_wrapper_code" if texts.get("inductor_aot_wrapper_code") else None}
    out["texts"] = {k: v for k, v in counted.items() if v}
    out["line_mappings"] = tlparse_line_mappings(out, *(texts.get(counted[k]) or "" if counted[k] else ""
                                                        for k in ("pre_grad", "post_grad", "code", "aot_code")))
    return out


def tracking_from_records(records, notes: list[str] | None = None) -> dict:
    """``inductor_tracking_of`` over a run of raw trace records (the first payload of each artifact or
    graph dump, by name) — e.g. an AOTInductor log, whose records carry no compile id, so that
    ``load_trace`` builds no compile from them."""
    texts: dict[str, str] = {}
    for record in records:
        name = record.kind.split(":", 1)[-1]
        if name == "graph_dump":
            name = str((record.metadata.get("graph_dump") or {}).get("name"))
        if record.payload and name not in texts:
            texts[name] = record.payload
    return inductor_tracking_of(texts, None, notes if notes is not None else [])


def _kernel_to_post(tracking: InductorTracking, post_names: set[str]) -> dict[str, list[str]]:
    """Kernel name (debug handles dropped: one kernel, several launches) → its post-grad nodes."""
    out: dict[str, list[str]] = {}
    for kernel, posts in tracking.kernel_to_post.items():
        entry = out.setdefault(_HANDLE.sub("", kernel), [])
        entry += [p for p in posts if p in post_names and p not in entry]
    return out


def _graph_node_lines(text: str) -> dict[str, int]:
    """tlparse's node → line of a graph text: each line not blank and not a comment, cut at the first
    '=' then the first ':', names the node; a later line of the same name wins."""
    out = {}
    for i, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            name = stripped.split("=", 1)[0].split(":", 1)[0].strip()
            if name:
                out[name] = i
    return out


def _python_kernel_lines(text: str, kernels) -> dict[str, list[int]]:
    """tlparse's kernel → lines of the generated Python module: the lines from ``def call(args)`` on
    that name it (a kernel with a debug handle: the line after the handle's comment), counted from the
    ``# AOT ID`` line, leading blank lines dropped."""
    lines = text.splitlines()
    while lines and not lines[0]:
        lines.pop(0)
    start = next((i for i, line in enumerate(lines) if "def" in line and "call" in line and "(args)" in line), 0)
    first = next((i for i, line in enumerate(lines) if "# AOT ID:" in line), 0)
    out: dict[str, list[int]] = {}
    for kernel in kernels:
        pure = kernel.split(":", 1)[0]
        found = False
        if ":" in kernel:
            i = next((i for i in range(start, len(lines)) if kernel in lines[i]), None)
            if i is not None:
                j = next((j for j in range(i + 1, len(lines)) if pure in lines[j]), None)
                if j is not None:
                    out.setdefault(kernel, []).append(j + 1 - first)
                    found = True
        if not found:
            for i in range(start, len(lines)):
                if pure in lines[i]:
                    out.setdefault(kernel, []).append(i + 1 - first)
    return out


def _cpp_kernel_lines(text: str, kernels) -> dict[str, list[int]]:
    """tlparse's kernel → lines of an AOTInductor C++ wrapper, from ``::run_impl(`` on."""
    lines = text.splitlines()
    while lines and not lines[0]:
        lines.pop(0)
    start = next((i for i, line in enumerate(lines) if "::run_impl(" in line), 0)

    def valid(line, prefix):
        return bool(line.strip()) and not line.strip().startswith(prefix)

    out: dict[str, list[int]] = {}
    for kernel in kernels:
        pure = kernel.split(":", 1)[0]
        found = False
        if ":" in kernel:
            for i in range(start, len(lines)):
                if valid(lines[i], "def") and valid(lines[i], "static inline void") and kernel in lines[i]:
                    j = next((j for j in range(i + 1, len(lines)) if pure in lines[j]), None)
                    if j is not None:
                        out.setdefault(kernel, []).append(j + 1)
                        found = True
                        break
        if not found:
            for i in range(start, len(lines)):
                if pure in lines[i]:
                    out.setdefault(kernel, []).append(i + 1)
    return out


def tlparse_line_mappings(tracking: dict, pre_text: str, post_text: str, code_text: str, aot_text: str) -> dict:
    """The node maps as line numbers of the texts, as tlparse's provenance highlighter computes them
    (its ``lineMappings``: ``preToPost``, ``postToPre``, ``pyCodeToPost``, ``postToPyCode``,
    ``cppCodeToPost``, ``postToCppCode``; keys are str(line))."""
    pre, post = _graph_node_lines(pre_text), _graph_node_lines(post_text)
    kernels = list(tracking["kernel_to_post"])
    py, cpp = _python_kernel_lines(code_text, kernels), _cpp_kernel_lines(aot_text, kernels)

    def nodes(source, source_lines, target_lines):
        out = {}
        for name, targets in source.items():
            found = [target_lines[t] for t in targets if t in target_lines]
            if name in source_lines and found:
                out[str(source_lines[name])] = found
        return out

    def kernel_to_post(kernel_lines):
        out = {}
        for kernel, posts in tracking["kernel_to_post"].items():
            found = [post[p] for p in posts if p in post]
            for line in kernel_lines.get(kernel, []) if found else []:
                out[str(line)] = found
        return out

    def post_to_kernel(kernel_lines):
        out = {}
        for name, kernel_names in tracking["post_to_kernel"].items():
            found = [line for k in kernel_names for line in kernel_lines.get(k, [])]
            if name in post and found:
                out[str(post[name])] = found
        return out

    return {"preToPost": nodes(tracking["pre_to_post"], pre, post),
            "postToPre": nodes(tracking["post_to_pre"], post, pre),
            "pyCodeToPost": kernel_to_post(py), "postToPyCode": post_to_kernel(py),
            "cppCodeToPost": kernel_to_post(cpp), "postToCppCode": post_to_kernel(cpp)}
