"""Recompiles: torch's ``recompile_reasons`` artifact ("0/0: tensor 'x' size mismatch …")."""
from __future__ import annotations

import json
import re
import textwrap

_REASON = re.compile(r"^(?P<against>\d+/\d+): (?P<text>.*)$")


def parse_reasons(payload: str | None) -> list[dict]:
    """One reason per rejected compile. torch writes one reason as plain text and several as a JSON list;
    a reason whose failing guard recorded where it was made ends with "User stack trace:" and that stack."""
    if not payload:
        return []
    try:
        value = json.loads(payload)
        entries = value if isinstance(value, list) else [str(value)]
    except (json.JSONDecodeError, TypeError):
        entries = [payload]
    reasons = []
    for entry in entries:
        head, _, stack = str(entry).partition("User stack trace:")
        stack = textwrap.dedent(stack.strip("\n")).strip() or None
        for line in (l.strip() for l in head.splitlines() if l.strip()):
            match = _REASON.match(line)
            text = match["text"] if match else line
            text, note = (re.split(r"\s{2,}#\s*", text, maxsplit=1) + [""])[:2]
            guard, _, detail = text.partition(". ")
            reasons.append({"against": match["against"] if match else None, "guard": guard.strip(),
                            "detail": detail.strip() or None, "text": text.strip(),
                            "note": note.strip(" #") or None, "user_stack": stack})
    return reasons


def recompile_stage(payload: str | None, metrics: dict) -> dict:
    reasons = parse_reasons(payload)
    if not reasons and metrics.get("recompile_reason"):
        reasons = parse_reasons(metrics["recompile_reason"])
    if not reasons:
        return {"available": False, "reason": "not a recompile: first compile of this frame"}
    return {"available": True, "reasons": reasons}
