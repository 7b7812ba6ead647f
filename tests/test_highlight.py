"""explorer.highlight: the fast Python highlighter gives back the text exactly, one line per line, and
classes its tokens as pygments' PythonLexer does (checked against pygments on a real FX graph)."""
from __future__ import annotations

import html
import re

import torch
from pygments import lex
from pygments.lexers import PythonLexer
from pygments.token import Comment, Keyword, Name, Number, String

from explorer.highlight import python_lines

SOURCE = '''@torch.compile(mode="max-autotune")
def step(self, x: int = 0x1F, y=1.5e3):
    """Docstring
    on two lines"""
    # a comment <with> & markup
    z = x @ y if x is not None else [len(x), x.sum()]  # trailing
    return f'{z}' + 'a\\'b'
'''


def text_of(lines: list[str]) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", "\n".join(lines)))


def spans(lines: list[str]) -> set[tuple[str, str]]:
    return {(cls, html.unescape(value)) for cls, value in re.findall(r'<span class="(\w+)">([^<]*)</span>', "\n".join(lines))}


def scores(x, w):
    return torch.softmax(x @ w, -1).sum(dim=0) + 1.0


def fx_graph_code() -> str:
    return torch.fx.symbolic_trace(scores).print_readable(print_output=False)


def test_text_comes_back_exactly_one_line_per_line():
    for text in (SOURCE, fx_graph_code(), "x = '''open\nstring", ""):
        lines = python_lines(text)
        assert len(lines) == len(text.split("\n")) and text_of(lines) == text
        assert all(line.count("<span") == line.count("</span>") for line in lines)  # no span crosses a line end


def test_tokens_classed_as_pygments_classes_them():
    for text in (SOURCE, fx_graph_code()):
        ours = spans(python_lines(text))
        for token, value in lex(text, PythonLexer()):
            if not value.strip() or "\n" in value:
                continue
            kind = ("k" if token in Keyword and token not in (Keyword.Constant, Keyword.Namespace) else
                    "kc" if token is Keyword.Constant else "nf" if token is Name.Function else
                    "nc" if token is Name.Class else "nb" if token is Name.Builtin else
                    "c1" if token in Comment else "mi" if token is Number.Integer else
                    "mh" if token is Number.Hex else "mf" if token is Number.Float else None)
            if kind:
                assert (kind, value) in ours, (kind, value)
            elif token in String and value not in ('"', "'", '"""', "f"):
                assert any(value in v for cls, v in ours if cls.startswith("s")), value


def test_cpp_kernels_come_back_exactly_with_pygments_keywords_and_types():
    from pygments.lexers import CppLexer
    from pygments.token import Keyword

    from explorer.highlight import cpp_lines

    kernel = ('#include <torch/csrc/inductor/cpp_prefix.h>\nextern "C" void kernel(const float* in_ptr0, float* out)\n'
              '{\n    /* a\n       block */\n    #pragma omp parallel\n    for(int64_t x0=0L; x0<16L; x0+=1L)  // loop\n'
              '    {\n        auto tmp0 = in_ptr0[x0] * 0.5f;\n        out[x0] = tmp0 > 0 ? tmp0 : 0x1F;\n    }\n}')
    lines = cpp_lines(kernel)
    assert len(lines) == len(kernel.split("\n")) and text_of(lines) == kernel
    ours = spans(lines)
    for token, value in lex(kernel, CppLexer()):
        if token is Keyword.Type:
            assert ("kt", value) in ours, value
        elif token in Keyword and value.strip():
            assert (("k", value) in ours) or (("kt", value) in ours), value
    assert ("cp", "#include <torch/csrc/inductor/cpp_prefix.h>") in ours and ("c1", "// loop") in ours
