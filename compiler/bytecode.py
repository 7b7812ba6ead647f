"""Bytecode before and after Dynamo, from ``register_bytecode_hook`` (observe only: the hook
returns None, so torch keeps its own transformed code)."""
from __future__ import annotations

import dis
import types


def listing(code: types.CodeType) -> list[dict]:
    rows = []
    for ins in dis.get_instructions(code):
        line = ins.positions.lineno if getattr(ins, "positions", None) else ins.starts_line
        rows.append({"offset": ins.offset, "opname": ins.opname, "arg": ins.arg,
                     "argrepr": ins.argrepr, "line": line, "is_jump_target": ins.is_jump_target})
    return rows


def describe(code: types.CodeType) -> dict:
    return {"name": code.co_name, "filename": code.co_filename, "firstlineno": code.co_firstlineno,
            "text": dis.Bytecode(code).dis(), "instructions": listing(code)}


def transformation(code: types.CodeType, new_code: types.CodeType) -> dict:
    return {"original": describe(code), "transformed": describe(new_code),
            "is_resume": code.co_name.startswith("torch_dynamo_resume_in_")}


def bytecode_stage(from_hook: dict | None, artifacts: dict[str, str]) -> dict:
    """Prefer the live hook (structured listings); fall back to torch's ``*_BYTECODE`` artifacts."""
    if from_hook:
        return {"available": True, "source": "bytecode_hook", **from_hook}
    original = next((v for k, v in artifacts.items() if k.endswith("_ORIGINAL_BYTECODE")), None)
    modified = next((v for k, v in artifacts.items() if k.endswith("_MODIFIED_BYTECODE")), None)
    if original and modified:
        return {"available": True, "source": "trace_artifact", "is_resume": True,
                "original": {"text": original, "instructions": []},
                "transformed": {"text": modified, "instructions": []}}
    return {"available": False, "reason": "Dynamo produced no transformed code for this compile "
            "(it failed or fell back to running the frame eagerly)"}
