"""Identical compiles diff as identical: torch's per-process numbering (``__builtins_dict___N``,
``__compiled_fn_N_<uuid>``, ``__resume_at_…_N``, object ids) is not a change; a real change still is."""
from __future__ import annotations

import linecache

import torch

import compiler
from compiler.analyses.diff import normalize

SOURCE = '''
def body(x):
    y = (x.sin() * 2).relu()
    print("break")  # a graph break: a resume function, numbered per process
    return y.sum() + len(str(x.shape))
'''


def twin():
    """A new function object from the same source, as a re-run notebook cell makes one."""
    filename = "<tcompile-test-twin>"
    linecache.cache[filename] = (len(SOURCE), None, SOURCE.splitlines(True), filename)
    namespace = {}
    exec(compile(SOURCE, filename, "exec"), namespace)
    return namespace["body"]


def captured(fn, x, backend="aot_eager", **kwargs):
    torch._dynamo.reset()
    with compiler.capture(**kwargs) as cap:
        torch.compile(fn, backend=backend)(x)
    return cap


def test_same_function_twice_in_one_process_is_no_change(capsys):
    fn, x = twin(), torch.randn(8)
    a, b = captured(fn, x), captured(fn, x)
    raw = [r.source for c in (a, b) for r in c.compiles[0].guards.rows if "__builtins_dict__" in r.source]
    assert len(set(raw)) == 2  # torch did number them differently: the noise is real
    diff = compiler.diff_captures(a, b)
    assert diff.changed_stages == [], diff.as_text()
    assert len(a.compiles) == 2  # the resume function after the break was compared too


def test_two_functions_with_identical_bodies_are_no_change():
    x = torch.randn(8)
    a, b = captured(twin(), x), captured(twin(), x)
    assert compiler.diff_captures(a, b).changed_stages == []


def test_identical_inductor_compiles_are_no_change():
    def f(x):
        return (x.sin() * 2).relu().sum() + len(str(x.shape))

    x = torch.randn(8)
    # fresh=True leaves the on-disk C++ kernel cache on: the first compile of f in a process that has not
    # built its kernel misses it and the next hits (a real difference, in the caches stage); warmed first,
    # both captures see the same cache, as they do after any earlier test built the same kernel
    captured(f, x, backend="inductor", fresh=True)
    a, b = captured(f, x, backend="inductor", fresh=True), captured(f, x, backend="inductor", fresh=True)
    diff = compiler.diff_captures(a, b)
    assert diff.changed_stages == [], diff.as_text()


def test_a_real_change_is_still_reported():
    fn = twin()
    a, b = captured(fn, torch.randn(8)), captured(fn, torch.randn(8, dtype=torch.float64))
    changed = compiler.diff_captures(a, b).changed_stages
    assert {"graph", "guards", "aot"} <= set(changed)


def test_normalize_keeps_user_names():
    assert normalize("G['__builtins_dict___12']['len']") == "G['__builtins_dict___<n>']['len']"
    assert normalize("__resume_at_30_2") == "__resume_at_30_<n>"
    assert normalize("___check_metadata_139874595935136_c4") == "___check_metadata_<id>_c<n>"
    for name in ("l__self___layers_0", "__init__", "x__1", "torch_dynamo_resume_in_f_at_3", "layer_12"):
        assert normalize(name) == name
