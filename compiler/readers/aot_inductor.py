"""An AOTInductor compile from records that carry no Dynamo compile id.

``torch._inductor.aoti_compile_and_package(exported_program)`` runs Inductor on a program exported
with ``torch.export``, outside any Dynamo frame: its TORCH_TRACE records (pre/post-grad graphs, the
AOT inference graph, the C++ wrapper and kernel code as ``graph_dump`` records, Inductor's provenance
record) have no compile id, and tlparse files them under ``-_-_-_-``. ``aot_inductor_compile`` builds
one ``Compile`` (``origin="aot_inductor"``, compile id ``-_-_-_-``) from them with the stages those
records hold; the stages a Dynamo frame would have (source, bytecode, Dynamo graph, guards,
recompiles) say why they are absent.
"""
from __future__ import annotations

import dataclasses
import re
import textwrap

from compiler.stages.source_files import SourceFiles
from compiler.stages.assemble import (INDUCTOR_ARTIFACTS, KIND_ALIASES, CompileInput, NoCompileId, _guarded,
                                      aot_stage, build_stages, compile_error, compile_metrics, inductor_stage)
from compiler.stages.kernels import _kind, _language, _ops_from_name, triton_metadata
from compiler.stages.base import unavailable
from compiler.stages.data import as_declared
from compiler.stages.schema import Amortization, Compile, GeneratedCode, Inductor
from compiler.stages.shapes import shapes_stage
from compiler.stages.timings import fold_events, timings_stage

COMPILE_ID = "-_-_-_-"  # how tlparse names the records with no compile id
NAME = "AOTInductor export, no Dynamo frame"
WRAPPER, KERNEL_CODE = "inductor_aot_wrapper_code", "inductor_aot_kernel_code"
_NO_FRAME = "AOTInductor compiled an exported program outside any Dynamo frame (its records carry no compile id)"
NO_FRAME = {
    "source": f"{_NO_FRAME}: no Python function was compiled",
    "bytecode": f"{_NO_FRAME}: Dynamo transformed no bytecode",
    "graph": f"{_NO_FRAME}: there is no Dynamo graph; the exported program's graph is Inductor's pre-grad "
             "graph (Inductor tab)",
    "guards": f"{_NO_FRAME}: Dynamo installed no guards",
    "recompile": f"{_NO_FRAME}: no frame, so no recompiles",
    "amortization": "AOTInductor compiles ahead of time into a package that is loaded and run elsewhere; "
                    "a TORCH_TRACE log holds no runtime measurement to weigh the compile time against",
}
_CPP_DEF = re.compile(r'^extern "C"\s+void\s+(?P<name>\w+)\(', re.M)
_TRITON_DEF = re.compile(r"async_compile\.triton\('(?P<name>\w+)', '''(?P<source>.*?)'''", re.S)
_TRITON_LAUNCH = re.compile(r"\bcall_(?P<name>triton_\w+)\(")
_EXTERN_CALL = re.compile(r"\b(?P<name>aoti_torch_(?:cpu|cuda|xpu|mps)_\w+)\(")
_ARGS = re.compile(r"\b(buf\d+|arg\d+_\d+|primals_\d+|tangents_\d+)\b")


def _dump_name(record) -> str | None:
    return str((record.metadata.get("graph_dump") or {}).get("name")) if record.kind == "graph_dump" else None


def is_aot_inductor(records) -> bool:
    """Records with no compile id that are an AOTInductor compile: the C++ wrapper AOTInductor logs,
    or Inductor's graphs logged under ``compile_fx_aot``."""
    if any(_dump_name(r) == WRAPPER for r in records):
        return True
    inductor = [r for r in records if KIND_ALIASES.get(r.kind, r.kind) in INDUCTOR_ARTIFACTS]
    return any(frame.get("name") == "compile_fx_aot" for r in inductor for frame in r.metadata.get("stack") or [])


def _body(code: str, start: int) -> str:
    """A C function from ``start`` to its closing brace (or to the ``;`` of a declaration)."""
    depth, i = 0, code.find("{", start)
    semicolon = code.find(";", start)
    if i < 0 or 0 <= semicolon < i:
        return code[start:semicolon + 1] if semicolon >= 0 else code[start:]
    for j in range(i, len(code)):
        depth += {"{": 1, "}": -1}.get(code[j], 0)
        if depth == 0:
            return code[start:j + 1]
    return code[start:]


def _call_args(run: str, pattern: str) -> list[str]:
    return list(dict.fromkeys(a for m in re.finditer(pattern + r"\((.*)\)", run) for a in _ARGS.findall(m.group(1))))


def aot_code_stage(wrapper: str | None, kernel_code: str | None) -> dict:
    """The generated code of an AOTInductor compile: the C++ wrapper (leading blank lines dropped, so
    that its line numbers are tlparse's ``cppCode`` lines), split per kernel — C++ kernels (defined in
    the kernel code, else declared in the wrapper), Triton kernels (their source embedded in the
    wrapper) and the ATen fallbacks the wrapper calls (``aoti_torch_cpu_addmm_out``)."""
    if not wrapper:
        return unavailable("AOTInductor logged no C++ wrapper code (graph_dump inductor_aot_wrapper_code)")
    module = wrapper.lstrip("\n")
    start = module.find("::run_impl(")
    run = module[start:] if start >= 0 else module
    kernels: dict[str, dict] = {}

    def add(name, language, source, call_pattern, **extra):
        if name not in kernels:
            kernels[name] = {"name": name, "language": language, "kind": "extern" if language == "extern" else
                             _kind(name, language), "source": source.strip("\n"), "comments": "",
                             "kernel_path": None, "source_nodes": [], "aten_ops": [],
                             "ops_from_name": _ops_from_name(name) if language != "extern" else
                             [re.sub(r"^aoti_torch_\w+?_(?=\w+_out$)|_out$", "", name)],
                             "call_args": _call_args(run, call_pattern), **extra}

    for text in (kernel_code or "", module):
        for match in _CPP_DEF.finditer(text):
            add(match["name"], _language("cpp"), _body(text, match.start()), rf"(?<![\w.]){match['name']}")
    for match in _TRITON_DEF.finditer(module):  # the wrapper keeps each Triton kernel's source in a comment
        source = textwrap.dedent(match["source"])
        add(match["name"], _language("triton"), source, rf"\bcall_{match['name']}", triton=triton_metadata(source))
    for match in _TRITON_LAUNCH.finditer(run):
        add(match["name"], _language("triton"), "", rf"\bcall_{match['name']}")
    for match in _EXTERN_CALL.finditer(run):
        add(match["name"], "extern", "", rf"\b{match['name']}")
    listed = list(kernels.values())
    return {"available": True, "module": module, "aot_id": None, "kernels": listed,
            "languages": sorted({k["language"] for k in listed if k["language"] != "extern"})}


def _events(events: list[dict]) -> list[dict]:
    """The compile's timing events: the chromium events logged with no compile id."""
    loose = [dict(e, args={**(e.get("args") or {}), "compile_id": COMPILE_ID}) for e in events
             if (e.get("args") or {}).get("compile_id") in (None, "None")]
    return fold_events(loose).get(COMPILE_ID, [])



def _status(metrics: dict, code: GeneratedCode) -> str:
    if metrics.get("fail_type"):
        return "failed"
    return "compiled" if code.available else "incomplete"


def aot_inductor_compile(records, strings: dict, options: dict, events: list[dict],
                         absent: dict | None = None) -> Compile | None:
    """The records with no compile id → one AOTInductor ``Compile``, made once, or None if they are not one.
    ``absent``: why the stages a trace cannot hold are missing (``compiler.stages.assemble.assemble``)."""
    loose = [r for r in records if not r.compile_id and r.kind != "chromium_event"]
    if not is_aot_inductor(loose):
        return None
    metrics = next((r.metadata["compilation_metrics"] for r in reversed(loose) if r.kind == "compilation_metrics"), {})
    dumps = {}
    for record in loose:
        if _dump_name(record) and record.payload:
            dumps.setdefault(_dump_name(record), record.payload)
    code = _guarded(GeneratedCode, lambda: as_declared(GeneratedCode, aot_code_stage(dumps.get(WRAPPER),
                                                                               dumps.get(KERNEL_CODE))))

    def aot_inductor_stage(c: CompileInput) -> Inductor:
        """Inductor's stage as for a Dynamo compile, with the generated code AOTInductor wrote as its C++
        wrapper (one inference graph into one wrapper); the wrapper is one of the texts provenance reads."""
        inductor = inductor_stage(c.records, "inductor", None, None, c.tracking, c.absent.get("ir"))
        if inductor.available:
            inductor = dataclasses.replace(inductor, runs=[dataclasses.replace(run, code=code, role="inference")
                                                           for run in inductor.runs])
        if dumps.get(WRAPPER):
            c.tracking[:] = [dict(texts, **{WRAPPER: dumps[WRAPPER]}) if texts else texts for texts in c.tracking]
        return inductor

    inputs = CompileInput(loose, strings, options, _events(events), SourceFiles("trace"), compile_id=COMPILE_ID,
                          backend="inductor", origin="aot_inductor", metrics=metrics, absent=absent or {})
    stages = build_stages(inputs, overrides={
        "inductor": aot_inductor_stage,
        "aot": lambda c: aot_stage(c.records, "inductor", None),
        "timings": lambda c: timings_stage(c.events, c.metrics, []),
        "shapes": lambda c: shapes_stage(c.records, c.options, c.built["recompile"], [], [])}, no_frame=NO_FRAME)
    return Compile(compile_id=COMPILE_ID, origin="aot_inductor", name=NAME, status=_status(metrics, code),
                   metrics=compile_metrics(metrics), error=compile_error(metrics), **stages,
                   amortization=Amortization(available=False, reason=NO_FRAME["amortization"]))


def consumed(record) -> bool:
    """A record of an unknown kind to tcompile's table that the AOTInductor compile read."""
    return _dump_name(record) in (WRAPPER, KERNEL_CODE)


# what ``assemble`` reads the records with no compile id with
READER = NoCompileId(build=aot_inductor_compile, consumed=consumed)

