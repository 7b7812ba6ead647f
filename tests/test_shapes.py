"""Dynamic shapes from real compiles: symbols and their sources, ranges and origins; shape guards
as torch's sympy expressions; specializations; what-if on shapes."""
import re

import torch

import compiler


def add(a, b):
    return a + b


def branchy(a):
    if a.shape[0] * 2 < 16:
        return a + 1
    return a * 2


def test_dynamic_true_duck_sizing_symbols_and_what_if():
    cap = compiler.explore(add, torch.ones(8, 3), torch.ones(8, 3), backend="eager", dynamic=True, timing=False)
    shapes = cap.compiles[0].shapes
    symbols = {s.source: s for s in shapes.symbols}
    a0 = symbols["L['a'].size()[0]"]
    assert a0.hint == "8" and a0.range.startswith("[2,") and a0.origin == "dynamic=True"
    # duck sizing: b's dims reuse a's symbols, so b has none of its own, and torch says why
    assert "L['b'].size()[0]" not in symbols
    duck = [s for s in shapes.specializations if "duck sizing" in (s.reason or "")]
    assert duck and duck[0].sources == ["L['b'].size()[0] == L['a'].size()[0]"]
    verdict = cap.what_if(add, torch.ones(16, 3), torch.ones(8, 3))
    assert verdict.recompiles
    assert "L['b'].size()[0] == L['a'].size()[0]" in verdict.as_text() and "8 ≠ 16" in verdict.as_text()
    assert not cap.what_if(add, torch.ones(16, 3), torch.ones(16, 3)).recompiles


def test_branch_on_shape_guard_is_torchs_sympy_expression():
    cap = compiler.explore(branchy, torch.ones(8, 3), backend="eager", dynamic=True, timing=False)
    guards = cap.compiles[0].shapes.guards
    guard = next(g for g in guards if "16" in g.expr)
    assert re.fullmatch(r"2\*s\d+ >= 16", guard.expr), guard.expr  # as torch wrote it, e.g. "2*s97 >= 16"
    assert guard.line == branchy.__code__.co_firstlineno + 1
    assert "\\geq" in guard.latex


def test_automatic_dynamic_after_a_second_shape_and_size_one_specialization():
    def g(x):
        return x.sum() + x.shape[0]

    cg = torch.compile(g, backend="eager")
    with compiler.capture() as cap:
        cg(torch.ones(4))
        cg(torch.ones(6))
        cg(torch.ones(1))
    first, second, third = cap.compiles
    assert not first.shapes.available and "static" in first.shapes.reason
    (symbol,) = second.shapes.symbols
    assert symbol.source == "L['x'].size()[0]" and symbol.hint == "6"
    assert symbol.origin.startswith("automatic dynamic")
    assert any(s.reason.startswith("0/1 specialization") for s in third.shapes.specializations)


def test_mark_dynamic_range_and_unbacked_symbol():
    def h(x):
        return x * 2

    x = torch.ones(10)
    torch._dynamo.mark_dynamic(x, 0, min=2, max=64)
    with compiler.capture() as cap:
        torch.compile(h, backend="eager")(x)
    (symbol,) = cap.compiles[0].shapes.symbols
    assert symbol.range == "[2, 64]" and symbol.origin == "torch._dynamo.mark_dynamic"

    def u(t):
        n = t.sum().item()
        return torch.ones(3) * n

    with torch._dynamo.config.patch(capture_scalar_outputs=True), compiler.capture() as cap:
        out = torch.compile(u, backend="eager")(torch.ones(4))
    assert torch.equal(out, torch.ones(3) * 4)
    unbacked = [s for s in cap.compiles[0].shapes.symbols if s.kind == "unbacked"]
    assert unbacked and unbacked[0].symbol.startswith(("u", "zuf"))


def test_inductor_index_expressions_resolve_symbols(tmp_path):
    def f(x):
        return (x * 2).sum(1)

    cap = compiler.explore(f, torch.ones(6, 5), dynamic=True, fresh=True, timing=False)
    shapes = cap.compiles[0].shapes
    exprs = shapes.index_expressions
    assert exprs, "dynamic Inductor IR should index with shape symbols"
    sources = set().union(*(e.symbols.values() for e in exprs))
    assert sources <= {"L['x'].size()[0]", "L['x'].size()[1]"}
    loaded = compiler.load(cap.save(tmp_path / "dyn.json"))
    assert loaded.compiles[0].shapes.to_data() == shapes.to_data()


def test_recompile_view_links_the_dimension_that_became_dynamic():
    from explorer.views import render_view

    def g(x):
        return x.sum() * 2

    cg = torch.compile(g, backend="eager")
    with compiler.capture() as cap:
        cg(torch.ones(4))
        cg(torch.ones(6))
    html = render_view("recompiles", cap, cap.compiles[1])
    symbol = cap.compiles[1].shapes.symbols[0].symbol
    assert "became dynamic" in html and f"{symbol} = L[&#x27;x&#x27;].size()[0]" in html
