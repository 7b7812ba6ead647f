"""Inductor's output module cut into its kernels' texts: where each ``async_compile`` definition is, the
kernel's source between its quotes and the comments above it. Read by the code stage's parser
(``compiler.stages.kernels``) and by ``GeneratedCode`` (declared there too), which saves a kernel's
source and comments only where they are not the module's own text again."""
from __future__ import annotations

import re

DEF = re.compile(r"^(?P<var>\w+) = async_compile\.(?P<how>\w+)\((?P<head>.*?)(?P<quote>r?''')", re.M)


def leading_comments(code: str, start: int) -> str:
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


def body(code: str, start: int) -> str:
    """The kernel source between ``'''`` quotes, from ``start`` (just after the opening quotes)."""
    return code[start:code.find("'''", start)]


def kernel_texts(code: str) -> dict[str, tuple[str, str]]:
    """Each generated kernel's ``(source, comments)`` as ``parse_kernels`` cuts them from the module: what a saved
    ``GeneratedCode`` leaves out of its kernels (the module holds them) and loading puts back."""
    return {m["var"]: (body(code, m.end()).strip("\n"), leading_comments(code, m.start())) for m in DEF.finditer(code)}
