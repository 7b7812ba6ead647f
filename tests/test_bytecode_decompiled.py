"""Issue 16 item 8: the transformed bytecode and each resume function decompiled to Python by depyf, at
first read (not in the compile's path: issue 22 item 5), from real compiles (backend="eager": Dynamo's bytecode is the point, not Inductor)."""
from __future__ import annotations

import ast
import html
import subprocess
import sys

import pytest
import torch

import compiler
from compiler.stages.bytecode import decompile
from explorer.views import render_view

pytest.importorskip("depyf")


def with_break(x):
    y = x.sin() + 1
    print("a graph break")
    return y.cos()


def with_match(x, n):
    y = x.sin()
    match n:
        case [a, *_]:
            print("a graph break")
            return y + a
    return y


@pytest.fixture(scope="module")
def cap():
    torch._dynamo.reset()
    with compiler.capture() as captured:
        torch.compile(with_break, backend="eager")(torch.randn(4))
    return captured


def by_role(cap):
    first = next(c for c in cap.compiles if c.name == "with_break")
    resume = next(c for c in cap.compiles if c.bytecode.is_resume)
    return first, resume


def loaded_global(listing, prefix: str) -> str:
    """The name a LOAD_GLOBAL of the transformed code loads, as dis shows it (torch's own answer)."""
    return next(i.argrepr.replace("NULL + ", "") for i in listing.instructions
                if i.opname == "LOAD_GLOBAL" and prefix in i.argrepr)


def test_transformed_code_decompiles_and_calls_the_compiled_graph(cap):
    first, _ = by_role(cap)
    transformed = first.bytecode.transformed
    assert transformed.decompiled and transformed.decompiled_reason is None
    ast.parse(transformed.decompiled)  # real Python
    assert loaded_global(transformed, "__compiled_fn") + "(x)" in transformed.decompiled
    assert loaded_global(transformed, "__resume_at_") in transformed.decompiled
    assert "print" in transformed.decompiled  # the break runs in Python, between the graph and the resume
    assert first.bytecode.original.decompiled is None  # the user's own code is in the Source stage


def test_resume_function_decompiles(cap):
    _, resume = by_role(cap)
    assert resume.name.startswith("torch_dynamo_resume_in_with_break_at_")
    own = resume.bytecode.original.decompiled
    assert own and f"def {resume.name}(" in own and "return y.cos()" in own
    ast.parse(own)
    transformed = resume.bytecode.transformed.decompiled
    assert loaded_global(resume.bytecode.transformed, "__compiled_fn") + "(y)" in transformed


def test_decompiled_text_survives_save_and_load(cap, tmp_path):
    path = tmp_path / "cap.json"
    cap.save(path)
    loaded = compiler.load(path)
    for before, after in zip(cap.compiles, loaded.compiles):
        assert after.bytecode.transformed.decompiled == before.bytecode.transformed.decompiled
        assert after.bytecode.original.decompiled == before.bytecode.original.decompiled


def test_view_shows_python_next_to_the_listings_with_generated_names_explained(cap):
    first, resume = by_role(cap)
    markup = render_view("bytecode", cap, first)
    assert "Transformed as Python (decompiled by depyf)" in markup and "Transformed by Dynamo" in markup
    compiled_fn = loaded_global(first.bytecode.transformed, "__compiled_fn")
    assert f'<abbr class="tc-generated" title="the compiled FX graph' in markup
    assert f">{compiled_fn}</abbr>" in markup
    assert "<code>__compiled_fn_N_&lt;uuid&gt;</code>" in markup  # the legend
    assert "<code>__builtins_dict___N</code>" in markup and "builtin print" in markup
    assert html.escape(first.bytecode.transformed.text.splitlines()[1]) in markup  # the dis listing stays
    resume_markup = render_view("bytecode", cap, resume)
    assert "Dynamo&#x27;s resume function, decompiled" in resume_markup
    assert "<code>___stackN</code>" in resume_markup


def test_a_failed_decompile_says_so_and_keeps_the_listing():
    """depyf 0.20 does not follow the jumps of a match statement in a resume function (a real compile)."""
    torch._dynamo.reset()
    with compiler.capture() as captured:
        torch.compile(with_match, backend="eager")(torch.randn(3), [1, 2])
    resume = next(c for c in captured.compiles if c.bytecode.is_resume)
    original = resume.bytecode.original
    assert original.decompiled is None
    assert original.decompiled_reason.startswith(f"depyf could not decompile {resume.name}: DecompilationError")
    markup = render_view("bytecode", captured, resume)
    assert html.escape(original.decompiled_reason) in markup and "the bytecode listing below is exact" in markup
    assert html.escape(original.text.splitlines()[1]) in markup
    assert resume.bytecode.transformed.decompiled  # the transformed code still decompiles


def test_without_depyf_the_reason_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "depyf", None)
    monkeypatch.setitem(sys.modules, "depyf.decompiler", None)
    result = decompile(with_break.__code__)
    assert set(result) == {"decompiled_reason"} and "depyf was not installed where this capture was made" in result["decompiled_reason"]


def test_compiler_imports_depyf_only_when_decompiling():
    code = "import sys, compiler; print('depyf' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_long_code_decompiles_untidied_and_leaves_the_environment_alone(monkeypatch):
    """Past TIDY_MAX_INSTRUCTIONS depyf's tidying of temporaries is skipped (it grows faster than the code)."""
    from compiler.stages import bytecode

    monkeypatch.delenv("DEPYF_REMOVE_TEMP", raising=False)
    namespace: dict = {}
    exec("def long(x):\n" + "".join(f"    x = x + {i}\n" for i in range(200)) + "    return x\n", namespace)
    code = namespace["long"].__code__
    assert sum(1 for _ in __import__("dis").get_instructions(code)) > bytecode.TIDY_MAX_INSTRUCTIONS
    text = decompile(code)["decompiled"]
    assert "x = (x + 199)" in text and "return x" in text
    assert "DEPYF_REMOVE_TEMP" not in __import__("os").environ


def test_decompiling_waits_for_the_first_read_and_runs_once(monkeypatch):
    import compiler.stages.bytecode as bytecode

    calls = []
    real = bytecode.decompile
    monkeypatch.setattr(bytecode, "decompile", lambda code: calls.append(code.co_name) or real(code))
    torch._dynamo.reset()
    with compiler.capture() as captured:
        torch.compile(with_break, backend="eager")(torch.randn(4))
    assert calls == []  # the capture is built without depyf
    first, resume = by_role(captured)
    text = first.bytecode.transformed.decompiled
    assert text and calls == [first.bytecode.transformed.name]
    assert first.bytecode.transformed.decompiled is text and len(calls) == 1  # once
    data = captured.to_data()  # a save decompiles what was not read yet: the resume function's two listings
    assert len(calls) == 3
    again = compiler.Capture.from_data(data)
    assert again.compile(resume.compile_id).bytecode.original.decompiled == resume.bytecode.original.decompiled
