"""Python and C++ highlighting in one regular-expression pass each, with pygments' CSS class names (so
explorer/static/tcompile.css colours it like pygments output).

pygments' PythonLexer takes ~0.45 ms a line: 0.85 s for the first 2,000 lines of a GPT-2 FX graph, and a
GPT-2 capture shows four such graphs plus the generated module. This pass takes a tenth of that. It knows
what FX graphs, generated wrappers and user functions contain — comments, strings (triple-quoted ones
across lines too), numbers, keywords, builtins, the name after ``def``/``class``/``@``, operators and
punctuation — and leaves anything else as escaped text. Inductor's C++ kernels (pygments' CppLexer: 0.2 s
for a GPT-2's dozen kernels) get the same treatment: comments, preprocessor lines, strings, numbers,
keywords and types. Every returned line closes its own spans.
"""
from __future__ import annotations

import builtins
import keyword
import re

_TOKEN = re.compile(r"""
    (?P<sd>[rRbBuUfF]{0,2}(?:\"\"\"[\s\S]*?(?:\"\"\"|\Z)|'''[\s\S]*?(?:'''|\Z)))
  | (?P<c1>\#[^\n]*)
  | (?P<s1>[rRbBuUfF]{0,2}'(?:[^'\\\n]|\\.)*'?)
  | (?P<s2>[rRbBuUfF]{0,2}"(?:[^"\\\n]|\\.)*"?)
  | (?P<num>(?<![\w.])(?:0[xX][0-9a-fA-F_]+|\d[\d_]*\.?\d*(?:[eE][+-]?\d+)?j?|\.\d+(?:[eE][+-]?\d+)?j?))
  | (?P<name>[^\W\d]\w*)
  | (?P<o>\*\*=?|//=?|->|:=|<<=?|>>=?|[-+*/%@&|^~<>=!]=?)
  | (?P<p>[()\[\]{},;:.])
""", re.VERBOSE)

_CONSTANTS = {"None", "True", "False"}
_WORD_OPERATORS = {"and", "or", "not", "in", "is"}
_NAMESPACE = {"import", "from"}
_KEYWORDS = set(keyword.kwlist) - _CONSTANTS - _WORD_OPERATORS - _NAMESPACE
_BUILTINS = {name for name in dir(builtins) if not name.startswith("_")}
_PSEUDO = {"self", "cls"}
_NAMED_BY = {"def": "nf", "class": "nc", "@": "nd"}


def _name_class(name: str, previous: str | None) -> str:
    if previous in _NAMED_BY:
        return _NAMED_BY[previous]
    if name in _CONSTANTS:
        return "kc"
    if name in _WORD_OPERATORS:
        return "ow"
    if name in _NAMESPACE:
        return "kn"
    if name in _KEYWORDS:
        return "k"
    if name in _PSEUDO:
        return "bp"
    if name in _BUILTINS and previous != ".":
        return "nb"
    return "n"


def _spans(cls: str, value: str) -> str:
    """``value`` in spans of class ``cls``, one per line, so no span crosses a line end."""
    if "\n" not in value:
        return f'<span class="{cls}">{_escape(value)}</span>'
    return "\n".join(f'<span class="{cls}">{_escape(part)}</span>' if part else "" for part in value.split("\n"))


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") if "&" in text or "<" in text \
        or ">" in text else text


def python_lines(text: str) -> list[str]:
    """One line of markup per line of ``text``."""
    out, last, previous = [], 0, None
    for match in _TOKEN.finditer(text):
        out.append(_escape(text[last:match.start()]))
        kind, value = match.lastgroup, match.group()
        if kind == "name":
            cls = _name_class(value, previous)
            previous = value
        else:
            cls = "mf" if kind == "num" and any(c in value for c in ".eEjJ") and not value[:2].lower() == "0x" \
                else "mh" if kind == "num" and value[:2].lower() == "0x" else "mi" if kind == "num" else kind
            decorator = value == "@" and not text[text.rfind("\n", 0, match.start()) + 1:match.start()].strip()
            previous = "." if value == "." else "@" if decorator else None
        out.append(_spans(cls, value))
        last = match.end()
    out.append(_escape(text[last:]))
    return "".join(out).split("\n")


_CPP_TOKEN = re.compile(r"""
    (?P<cm>/\*[\s\S]*?(?:\*/|\Z))
  | (?P<c1>//[^\n]*)
  | (?P<cp>^[ \t]*\#[^\n]*)
  | (?P<s>"(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?)
  | (?P<num>(?<![\w.])(?:0[xX][0-9a-fA-F]+|\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)[uUlLfF]*)
  | (?P<name>[A-Za-z_]\w*)
  | (?P<o>->|::|<<=?|>>=?|\+\+|--|&&|\|\||[-+*/%&|^~<>=!]=?|\?)
  | (?P<p>[()\[\]{},;:.])
""", re.VERBOSE | re.MULTILINE)

_CPP_KEYWORDS = {"auto", "break", "case", "catch", "class", "const", "constexpr", "continue", "default", "delete",
                 "do", "else", "enum", "extern", "for", "goto", "if", "inline", "namespace", "new", "noexcept",
                 "operator", "private", "protected", "public", "return", "sizeof", "static", "static_assert",
                 "static_cast", "reinterpret_cast", "const_cast", "dynamic_cast", "struct", "switch", "template",
                 "this", "throw", "try", "typedef", "typename", "union", "using", "virtual", "volatile", "while",
                 "nullptr", "true", "false", "restrict", "__restrict__", "alignas", "decltype"}
_CPP_TYPES = {"bool", "char", "double", "float", "int", "long", "short", "signed", "unsigned", "void", "size_t",
              "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "half",
              "bfloat16"}


def cpp_lines(text: str) -> list[str]:
    """One line of markup per line of C++ ``text``."""
    out, last = [], 0
    for match in _CPP_TOKEN.finditer(text):
        out.append(_escape(text[last:match.start()]))
        kind, value = match.lastgroup, match.group()
        if kind == "name":
            kind = "kt" if value in _CPP_TYPES else "k" if value in _CPP_KEYWORDS else "n"
        elif kind == "num":
            kind = "mh" if value[:2].lower() == "0x" else "mf" if any(c in value for c in ".eEfF") else "mi"
        out.append(_spans(kind, value))
        last = match.end()
    out.append(_escape(text[last:]))
    return "".join(out).split("\n")
