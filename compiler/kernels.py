"""Generated code: Inductor's output module (``inductor_output_code``), split per kernel.

C++ kernels on CPU (``async_compile.cpp_pybinding``), Triton kernels on CUDA
(``async_compile.triton``), and extern calls (``extern_kernels.mm`` …) from ``call()``.
"""
from __future__ import annotations

import re

_DEF = re.compile(r"^(?P<var>\w+) = async_compile\.(?P<how>\w+)\((?P<head>.*?)(?P<quote>r?''')", re.M)
_AOT_ID = re.compile(r"^# AOT ID: \['(?P<id>[^']+)'\]", re.M)
_COMMENT_FIELDS = {
    "kernel_path": re.compile(r"^# kernel path: (.*)$", re.M),
    "source_nodes": re.compile(r"^# Topologically Sorted Source Nodes: \[(.*?)\]", re.M),
    "aten_ops": re.compile(r"Original ATen: \[(.*?)\]", re.M),
}
_EXTERN_CALL = re.compile(r"^\s*(?:\w+ = )?(?P<fn>extern_kernels\.\w+|torch\.ops\.[\w.]+|aten\.[\w.]+)\(", re.M)
_TRITON_KIND = {"poi": "pointwise", "red": "reduction", "per": "persistent reduction", "tem": "template",
                "for": "foreach", "unk": "user-defined"}


def _language(how: str) -> str:
    return {"cpp_pybinding": "C++", "cpp": "C++", "triton": "Triton", "cuda": "CUDA C++",
            "rocm": "ROCm"}.get(how, how)


def _kind(name: str, language: str) -> str:
    if language == "Triton":
        parts = name.split("_")
        return _TRITON_KIND.get(parts[1], "triton") if len(parts) > 1 else "triton"
    return "cpp"


def _ops_from_name(name: str) -> list[str]:
    """``cpp_fused__softmax_sum_1`` → ``['_softmax', 'sum']`` (Inductor names kernels after the ops)."""
    core = re.sub(r"^(cpp|triton_\w{3})_fused_", "", name)
    core = re.sub(r"_\d+$", "", core)
    return [op for op in re.split(r"_(?=[a-z])", core) if op] if core != name else []


def _leading_comments(code: str, start: int) -> str:
    lines = code[:start].rstrip("\n").split("\n")
    block = []
    for line in reversed(lines):
        if line.startswith("#") or not line.strip():
            block.append(line)
            if not line.strip() and len(block) > 2 and not block[-2].strip():
                break
        else:
            break
    return "\n".join(reversed(block)).strip()


def _body(code: str, start: int) -> str:
    """The kernel source between ``'''`` quotes, from ``start`` (just after the opening quotes)."""
    return code[start:code.find("'''", start)]


def parse_kernels(code: str) -> list[dict]:
    kernels = []
    call_section = code[code.find("def call("):] if "def call(" in code else ""
    for match in _DEF.finditer(code):
        name = match["var"]
        language = _language(match["how"])
        source = _body(code, match.end())
        comments = _leading_comments(code, match.start())
        fields = {k: (rx.search(comments).group(1) if rx.search(comments) else None) for k, rx in _COMMENT_FIELDS.items()}
        kernels.append({
            "name": name, "language": language, "kind": _kind(name, language), "source": source.strip("\n"),
            "comments": comments, "kernel_path": fields["kernel_path"],
            "source_nodes": _split_list(fields["source_nodes"]), "aten_ops": _split_list(fields["aten_ops"]),
            "ops_from_name": _ops_from_name(name), "call_args": _call_args(call_section, name),
            **({"triton": triton_metadata(source)} if language == "Triton" else {}),
        })
    for fn in dict.fromkeys(m["fn"] for m in _EXTERN_CALL.finditer(call_section)):
        kernels.append({"name": fn, "language": "extern", "kind": "extern", "source": "",
                        "comments": "", "kernel_path": None, "source_nodes": [], "aten_ops": [],
                        "ops_from_name": [fn.rsplit(".", 1)[-1]], "call_args": _call_args(call_section, fn)})
    return kernels


def _split_list(text: str | None) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()] if text else []


def _call_args(call_section: str, name: str) -> list[str]:
    """Buffers passed at the call site(s): ``cpp_fused_relu_0(buf1)``, ``triton_x.run(buf0, …)``."""
    args = []
    for match in re.finditer(rf"(?<![\w.]){re.escape(name)}(?:\.run)?\((.*)\)", call_section):
        args += re.findall(r"\b(buf\d+|primals_\d+|arg\d+_\d+|tangents_\d+)\b", match.group(1))
    return list(dict.fromkeys(args))


_HEURISTIC = re.compile(r"@triton_heuristics\.(?P<kind>\w+)\(")
_META_FIELD = re.compile(r"'(?P<key>size_hints|num_load|num_reduction|num_store|kernel_num_gb|grid_type|"
                         r"mutated_arg_names|tiling_scores|kernel_name|backend_hash)': (?P<value>\{[^{}]*\}|\[[^\]]*\]|[^,}]+)")
_LAUNCH_FIELD = re.compile(r"\b(?P<key>num_warps|num_stages|XBLOCK|YBLOCK|RBLOCK|R0_BLOCK|BLOCK_M|BLOCK_N|BLOCK_K|GROUP_M)\s*[=:]\s*(?P<value>\d+)")


def triton_metadata(source: str) -> dict:
    """What Inductor wrote about a Triton kernel: heuristic, size hints, loads/stores, block sizes."""
    meta = {}
    heuristic = _HEURISTIC.search(source)
    if heuristic:
        meta["heuristic"] = heuristic["kind"]
    for match in _META_FIELD.finditer(source):
        meta.setdefault(match["key"], match["value"].strip().strip("'"))
    launch = {}
    for match in _LAUNCH_FIELD.finditer(source):
        launch.setdefault(match["key"], int(match["value"]))
    if launch:
        meta["launch"] = launch
    return meta


def attach_kernel_info(kernels: list[dict], payload: str) -> None:
    """torch's ``triton_kernel_info`` artifact (compile time, autotune cache info) per kernel."""
    import json

    try:
        info = json.loads(payload)
    except (TypeError, json.JSONDecodeError):
        return
    for kernel in kernels:
        if kernel["name"] in info:
            kernel["kernel_info"] = info[kernel["name"]]


def link_to_ir(kernels: list[dict], post_fusion_nodes: list[dict]) -> None:
    """Best effort: a generated kernel covers the (non-extern) post-fusion nodes whose output buffers
    it is passed. One kernel can cover several nodes: the C++ backend also fuses while generating code."""
    computed = [n for n in post_fusion_nodes if "Extern" not in n["kind"]]
    for kernel in (k for k in kernels if k["language"] != "extern"):
        args = set(kernel["call_args"])
        nodes = [n for n in computed if args & set(n["writes"])]
        if nodes:
            kernel["ir_nodes"] = [n["name"] for n in nodes]
            kernel["ir_node"] = nodes[0]["name"]
            kernel["ir_members"] = list(dict.fromkeys(m for n in nodes for m in n["members"]))
            kernel["ir_ops"] = list(dict.fromkeys(op for n in nodes for op in n["ops"]))


def kernel_of_nodes(kernels: list[dict], fusion: list[dict]) -> None:
    """Complete the fusion mapping: which kernel each post-fusion node ended up in."""
    for entry in fusion:
        entry["kernel"] = next((k["name"] for k in kernels if entry["fused"] in k.get("ir_nodes", [])), None)


def code_stage(code: str | None, reason_if_missing: str) -> dict:
    if not code:
        return {"available": False, "reason": reason_if_missing}
    aot_id = _AOT_ID.search(code)
    kernels = parse_kernels(code)
    return {"available": True, "module": code, "aot_id": aot_id.group("id") if aot_id else None,
            "kernels": kernels, "languages": sorted({k["language"] for k in kernels if k["language"] != "extern"})}
