"""The labs as an nbgrader course (instructor side: never shipped to students).

``build_labs.py --course DIR`` writes ``DIR/source/labNN/NN_name.ipynb`` and ``DIR/nbgrader_config.py``:
each exercise becomes two cells, nbgrader's way:

- the student's cell (``solution: true``): the solution between ``### BEGIN SOLUTION`` / ``### END
  SOLUTION``; ``nbgrader generate_assignment`` replaces it with the exercise's starting code (``StarterCode``,
  a ``ClearSolutions`` that takes the stub from the cell's ``tcompile.starter`` metadata);
- a locked test cell (``grade: true``, ``POINTS``): the exercise's checker calls (the feedback a student sees;
  an answer checker of ``labs/answers.py`` — which computes the answer, so its code would give it away — shows
  as ``check_answered(answer)``), then ``### BEGIN HIDDEN TESTS``: every call on freshly loaded copies of the
  checkers and of the instructor's ``answers.py`` (patching or catching the student's copy changes nothing) and the exercise's own test from ``HIDDEN`` — code that
  recomputes the answer from torch, with the lab's reference definitions written in it (a student who
  redefines a lab function does not change them). ``nbgrader autograde`` restores these cells from the source.

Every other code cell is locked (restored from the source at grading). A grade cell that raises scores 0.
"""
from __future__ import annotations

import ast
import re
import textwrap

from nbgrader.preprocessors import ClearSolutions

CHECK_LINE = re.compile(r"^\s*(?:assert\s+)?check_\w+\(.*$")

# points per exercise: 1, or 2 where the exercise is to write or rewrite code that compiles differently
POINTS = {ex: 2 for ex in ("1.2", "1.6", "2.1", "2.2", "2.4", "2.6", "3.3", "3.6", "3.8", "4.1", "4.3", "4.4", "6.4",
                          "7.2", "8.2", "8.4", "9.2")}

# the exercise's own hidden test: plain torch, run after the visible checks. ``_gc`` is a fresh copy of the
# checkers, loaded from the installed package's file (found by the import system's path finder, not from the
# student's module object: ``__file__`` or a patched function would change nothing); ``_ans`` the instructor's
# answer checkers, loaded with ``_gc`` as the checks they import, from ``tcompile_answers.py`` — which
# ``build_labs.py --course`` writes at the course's root, found by walking up from the notebook's folder's parent
# (grading works wherever the course is copied; the student's own folder is not searched) — or, in the
# repository, ``notebooks/labs/answers.py`` next to the notebook.
FRESH_CHECKS = """\
import importlib.machinery as _ilm, importlib.util as _ilu, pathlib as _pl, sys as _sys
def _load(_name, _path, _checks=None):
    _s = _ilu.spec_from_file_location(_name, str(_path)); _m = _ilu.module_from_spec(_s)
    _saved = _sys.modules.get("tcompile_labs.checks")
    if _checks is not None:
        _sys.modules["tcompile_labs.checks"] = _checks
    try:
        _s.loader.exec_module(_m)
    finally:
        if _checks is not None:
            _sys.modules["tcompile_labs.checks"] = _saved
    return _m
_gc = _load("_graded_checks", _pl.Path(_ilm.PathFinder.find_spec("tcompile_labs").origin).parent / "checks.py")
_here = _pl.Path.cwd().resolve()
_answers = next((d / "tcompile_answers.py" for d in _here.parents if (d / "tcompile_answers.py").is_file()),
                _here / "labs" / "answers.py")
_ans = _load("_graded_answers", _answers, _gc)"""
ANSWERS_COPY = "tcompile_answers.py"  # the instructor's answers.py, at the course's root (build_labs.write_course)
SETUP_IMPORT = re.compile(r"^from labs\.answers import \*.*\n", re.M)

# which arguments of an answer checker are the student's answers (the first, unless named here)
ANSWER_ARGS = {"check_reduction_kernel_answer": (0, 1), "check_epilogue_answer": (0, 1),
               "check_recompiled_rank_answer": (0, 1), "check_costliest_line": (1,),
               "check_problem_counts_answer": (0, 1)}

# the frame compiles each rank's TORCH_TRACE log records (torch's own log: "frame_id", "frame_compile_id")
TRACE_COMPILES = """\
import re as _re
def _compile_ids(trace_dir):
    return {int(_re.search(r"rank_(\\d+)", p.name).group(1)):
            {(int(a), int(b)) for a, b in _re.findall(r'"frame_id": (\\d+), "frame_compile_id": (\\d+)', p.read_text())}
            for p in trace_dir.glob("*.log")}"""

# lab 9: the server's module loaded afresh from the file the lab wrote (its reference serve, predict and model)
LAB09_APP = """\
import importlib.util as _ilu9, torch as _t
_spec9 = _ilu9.spec_from_file_location("_lab09_app", str(APP))
_app = _ilu9.module_from_spec(_spec9)
_spec9.loader.exec_module(_app)"""

HIDDEN = {
    "0.1": """\
import re as _re, torch as _t
from torch._inductor.utils import run_and_get_code as _rgc
def _tour(x, w):
    scores = x @ w
    return _t.softmax(scores, dim=-1) * 2 + _t.sin(scores)
_t._dynamo.reset()
with _t._inductor.config.patch(force_disable_caches=True):
    _, _codes = _rgc(_t.compile(_tour), _t.randn(64, 32), _t.randn(32, 16))
_kernels = {k for c in _codes for k in _re.findall(r"^(cpp_fused_\\w+|triton_\\w+) = ", c, _re.M)}
assert answer == len(_kernels), (answer, sorted(_kernels))""",
    "1.1": """\
import torch as _t
from torch._dynamo.testing import EagerAndRecordGraphs as _R
def _steps(x):
    for i in range(3):
        x = x * (i + 1)
    return x
_t._dynamo.reset(); _r = _R(); _t.compile(_steps, backend=_r)(_t.randn(4))
_ops = [n for n in _r.graphs[0].graph.nodes if n.op not in ("placeholder", "output")]
assert answer == len(_ops), (answer, len(_ops))""",
    "1.2": """\
import torch as _t
from torch._dynamo.testing import CompileCounter as _CC
_t._dynamo.reset(); _cc = _CC(); _f = _t.compile(scale_all, backend=_cc)
_x = _t.randn(8, 4)
_args = ex12.live.args[1]
for _k in range(4):
    _vals = [0.5 + _k + 0.25 * _i for _i in range(3)]
    _s = _t.tensor(_vals) if isinstance(_args, _t.Tensor) else type(_args)(_vals)
    _want = _x * _vals[0] * _vals[1] * _vals[2]
    assert _t.allclose(_f(_x, _s), _want), "wrong result on new values"
assert _cc.frame_count <= 1 if isinstance(_args, _t.Tensor) else _cc.frame_count <= 1, _cc.frame_count""",
    "1.3": """\
import torch as _t
assert ex13.live.args[1] != 3, "compile with another n than the one checked"
for _n in (5, 7):
    _gc.check_reuses_compile(ex13, power, x, _n)""",
    "2.3": """\
assert "item" not in normalize.__code__.co_names, "normalize still calls .item()"
_gc.check_no_breaks_by_default(normalize, __import__("torch").randn(16, 8))""",
    "2.5": """\
import torch as _t
def _report(x):
    hits = x.nonzero()
    print("checked", x.shape[0], "rows")
    return hits.float().mean() + x.sum()
from torch._dynamo.utils import counters as _c
_t._dynamo.reset(); _c.clear()
with _t._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
    _t.compile(_report, backend="eager")(_t.randn(16, 8))
assert _gc.as_count(predicted_breaks_after) == sum(_c["graph_break"].values()), \
    f"predicted {predicted_breaks_after!r} graph breaks; torch counted {sum(_c['graph_break'].values())}\"""",
    "2.6": """\
import operator as _op, torch as _t
_names = ["relu", "tanh", "sin"]
for _n in _names:
    _t._dynamo.reset()
    _x = _t.randn(8, 4)
    assert _t.allclose(_t.compile(act, backend="eager", fullgraph=True)(_x, _n), _x * (_names.index(_n) + 1)), _n
from torch._dynamo import trace_rules as _tr
assert id(_op.indexOf) in _tr._polyfilled_function_ids, "no polyfill for operator.indexOf\"""",
    "3.2": """\
import torch as _t
assert my_input.dtype == _t.float32 and not my_input.requires_grad and my_input.dim() == 2, "same dtype, grad, rank"
def _f(x):
    return x * x.shape[0]
from torch._dynamo.testing import CompileCounter as _CC
_t._dynamo.reset(); _cc = _CC(); _g = _t.compile(_f, backend=_cc, dynamic=True)
_g(_t.randn(8, 4)); _g(my_input)
assert _cc.frame_count == 2, "your input does not recompile a dynamic compile\"""",
    "3.3": """\
import torch as _t
_gc.check_attribute_updates(Gain, set_gain, _t.randn(8, 4), values=(1.5, 2.5, 7.0, -3.0, 0.5))""",
    "3.4": """\
import torch as _t
def _score(batch):
    return (batch.sin() * 2).sum(dim=1)
from torch._dynamo.testing import CompileCounter as _CC
_t._dynamo.reset(); _cc = _CC(); _f = _t.compile(_score, backend=_cc)
for _n in (4, 8, 16):
    _b = _t.randn(_n, 4); _t._dynamo.mark_dynamic(_b, 0); _f(_b)
assert _gc.as_count(predicted_recompiles_after) == _cc.frame_count - 1, \
    f"predicted {predicted_recompiles_after!r} recompiles; torch counted {_cc.frame_count - 1}\"""",
    "3.6": """\
import torch as _t
_seen = []
def _rec(entries):
    out = keep_guard(entries); _seen.append((entries, out)); return out
def _sgd(w, g):
    return w - LR * g
_t._dynamo.reset()
_t.compile(_sgd, backend="eager", options={"guard_filter_fn": _rec})(_t.randn(16), _t.randn(16))
_entries, _kept = _seen[0]
for _e, _k in zip(_entries, _kept):
    assert _k == (_e.name != "G['LR']"), (_e.name, _k)""",
    "3.8": """\
import torch as _t
from torch._dynamo.utils import counters as _c
def _reference(x):
    n = x.shape[0]
    if n == 0:
        return x.sum(0)
    return x.mean(0) * n
_gc.check_runtime_assert(ex38, mean_times_rows, _reference)
_gc.check_unbacked(ex38, "x")
_backend, _compiles, _runs = _gc._counting_backend()
_t._dynamo.reset(); _c.clear()
_f = _t.compile(mean_times_rows, backend=_backend)
for _n in (8, 1, 5, 1):
    _b = _t.randn(_n, 4); _t._dynamo.decorators.mark_unbacked(_b, 0)
    assert _t.allclose(_f(_b), _reference(_b)), f"the compiled function's result differs on a batch of {_n}"
_breaks = sum(_c["graph_break"].values())
assert len(_compiles) == 1 and _breaks == 0 and len(_runs) == 4, \
    f"batches of 8, 1, 5, 1 marked unbacked: {len(_compiles)} graphs, {_breaks} graph breaks, {len(_runs)} compiled runs"
_t._dynamo.reset()""",
    "3.9": """\
import torch as _t
from torch._dynamo.testing import CompileCounter as _CC
def _topk_mean(x, k):
    return x.topk(k, dim=-1).values.mean(-1)
_calls = [((1, 8), 2), ((4, 8), 2), ((6, 8), 3), ((9, 8), 4), ((1, 8), 5), ((5, 8), 6)]
for _kw, _answer in (({}, compiles_default), ({"dynamic": True}, compiles_dynamic)):
    _t._dynamo.reset(); _cc = _CC(); _f = _t.compile(_topk_mean, backend=_cc, **_kw)
    for _shape, _k in _calls:
        _f(_t.randn(*_shape), _k)
    assert _answer == _cc.frame_count, (_kw, _answer, _cc.frame_count)""",
    "3.10": """\
import torch as _t
def _rows_mean(x):
    return x.mean(0) * x.shape[0]
def _first_eight(x):
    return x.view(8, -1).sum(0)
_gc.check_marks_dynamic_if_possible(mark, _rows_mean, _first_eight, width=3)""",
    "4.2": """\
_gc.check_training(ex41)
assert answer == len(_gc.saved_for_backward(ex41)), answer""",
    "4.3": """\
_gc.check_op(ex43, "gelu", graph="dynamo")""",
    "4.4": """\
import torch as _t
from torch._dynamo.backends.common import aot_autograd as _aot
_fw, _bw = [], []
def _keep(where):
    def compile_(gm, inputs):
        where.append(gm)
        return gm
    return compile_
_t._dynamo.reset()
_x = _t.randn(8, 16)
_loss = _t.compile(step_ck, backend=_aot(fw_compiler=_keep(_fw), bw_compiler=_keep(_bw)))(_x)
_loss.backward()
_saved = [s for g in _fw for s in next(n for n in g.graph.nodes if n.op == "output").args[0][1:]]
assert _saved and all(getattr(s, "op", None) == "placeholder" for s in _saved), ("saved", [str(s) for s in _saved])
assert any(n.target is _t.ops.aten.gelu.default for g in _bw for n in g.graph.nodes), "gelu is not recomputed"
with _t.no_grad():
    assert _t.allclose(_loss, mlp(_x).square().mean()), "step_ck computes another loss\"""",
    "5.2": """\
import torch as _t
_ops = _gc.graph_ops(ex52)
assert any("softmax" in o for o in _ops) and len(_ops) >= 2, _ops""",
    "6.4": """\
import torch as _t
from torch._dynamo.backends.common import aot_autograd as _aot
def _f(buf, x):
    buf.add_(1)
    return x * 2 + buf
_seen = []
def _fw(gm, inputs):
    _seen.append([i.mutates_data for i in _t._guards.TracingContext.try_get().fw_metadata.input_info])
    return gm
_buf, _x = _t.randn(32), _t.randn(32)
_t._dynamo.reset()
_t.compile(f_fixed, backend=_aot(fw_compiler=_fw), fullgraph=True)(_buf.clone(), _x)
assert _seen and not any(any(s) for s in _seen), ("AOTAutograd: inputs mutated", _seen)
_b0, _rb = _buf.clone(), _buf.clone()
_out, _want = f_fixed(_b0, _x), _f(_rb, _x)
assert _t.equal(_b0, _buf), "f_fixed changed its input"
assert isinstance(_out, tuple) and len(_out) == 2, "return the result and the new buffer"
assert _t.allclose(_out[0], _want) and _t.allclose(_out[1], _rb), "not f's result and updated buffer\"""",
    "7.2": """\
import torch as _t
class _Block(_t.nn.Module):
    def __init__(self, width=64):
        super().__init__()
        self.norm, self.linear = _t.nn.LayerNorm(width), _t.nn.Linear(width, width)
    def forward(self, x):
        return x + _t.nn.functional.gelu(self.linear(self.norm(x)))
from torch._dynamo.testing import EagerAndRecordGraphs as _R
_r = _R()
with _t.no_grad():
    _t.compile(_Block(), backend=_r)(_t.randn(32, 64))
_block_ops = sum(_gc._op_nodes(g) for g in _r.graphs)
_compiles, _runs = _gc.compiled_runs(model, _t.randn(32, 64))
assert len(_runs) == len(model.blocks) >= 2 and len(_compiles) == 1 and _gc._op_nodes(_compiles[0]) == _block_ops, \
    (f"model(x) ran {len(_runs)} compiled graphs for {len(model.blocks)} blocks, {len(_compiles)} compiled "
     f"({[_gc._op_nodes(g) for g in _compiles]} ops; one block: {_block_ops})")""",
    "7.4": """\
import torch as _t
def _pointwise(x):
    y = _t.nn.functional.gelu(x * 1.5 + 0.5)
    return y.sin() * x.cos() + y.tanh()
_gc.check_warm_compile(cache_settings, _pointwise, _t.randn(32, 48))""",
    "8.1": TRACE_COMPILES + """
_logs = _compile_ids(broken / "trace")
_odd = sorted(r for r, ids in _logs.items() if any(f > 0 for _, f in ids))
assert _odd == [odd_rank], ("the rank whose log has a second compile of a frame", _odd, odd_rank)
_frame, _n = min((i for i in _logs[odd_rank] if i[1] > 0))
assert str(odd_compile) == f"{_frame}/{_n}", odd_compile""",
    "8.2": TRACE_COMPILES + """
import torch as _t
_logs = _compile_ids(fixed / "trace")
assert sorted(_logs) == [0, 1], sorted(_logs)
for _r, _ids in _logs.items():
    assert _ids and all(f == 0 for _, f in _ids), ("rank", _r, "compiled", sorted(_ids))
_x = _t.randn(48, 16)
_y = prepare_batch(_x.clone())
assert isinstance(_y, _t.Tensor) and _y.shape == _x.shape and _t.equal(_y, _x), "prepare_batch changed the batch\"""",
    "8.3": """\
import json as _json
_res = [_json.loads(p.read_text()) for p in sorted(split.glob("result_rank_*.json"))]
assert len(_res) == 2 and BUCKET_CAP_MB in (1, 2, 3), "run the job with this session's bucket_cap_mb"
assert all(r["bucket_cap_mb"] == BUCKET_CAP_MB for r in _res), ("the job ran with another cap", _res)
_n = {p.name: p.read_text().count('{"optimize_ddp_split_child": ') for p in (split / "trace").glob("*.log")}
assert len(_n) == 2 and len(set(_n.values())) == 1, ("DDPOptimizer's subgraphs per rank", _n)
assert predicted_subgraphs == next(iter(_n.values())), (predicted_subgraphs, _n)""",
    "8.4": """\
import json as _json, re as _re
_logs = sorted((traced / "trace").glob("*.log"))
assert len(_logs) == 2, ("one trace log per rank", _logs)
for _log in _logs:  # the records (an envelope line, then its payload's tab-indented lines) that compiled autograd made
    _recs = _re.split(r"\\n(?=\\S)", _log.read_text())
    _bw = [r for r in _recs if '"compiled_autograd_id"' in r.split("\\n", 1)[0] and '"aot_' in r.split("\\n", 1)[0]]
    assert any("_c10d_functional.all_reduce" in r for r in _bw), ("no all_reduce in the compiled backward", _log.name)
for _p in sorted(traced.glob("result_rank_*.json")):
    _r = _json.loads(_p.read_text())
    assert _r["compiled_autograd"] and _r["max_weight_difference"] <= 1e-5, _r""",
    "9.1": LAB09_APP + """
_b, _r = _ans._breaks_and_recompiles(_app.serve, [(_app.batch_of(_n),) for _n in _app.SIZES])
assert (breaks, recompiles) == (_b, _r), ((breaks, recompiles), (_b, _r))""",
    "9.2": """\
_sizes = sorted(int(_a[0].shape[0]) for _a, _ in ex92.live.calls)
assert _sizes == [2, 4, 8], ("capture the three batch sizes of calls", _sizes)
assert not ex92.skipped_frames, ("a frame was skipped to eager", ex92.skipped_frames)
_gc.check_compiled(ex92)""",
    "9.3": LAB09_APP + """
_calls = []
for _n in _app.MARKED_SIZES:
    _bt = _app.batch_of(_n); _t._dynamo.mark_dynamic(_bt, 0); _calls.append((_bt,))
_, _r = _ans._breaks_and_recompiles(_app.predict, _calls)
assert _gc.as_count(predicted_recompiles) == _r, f"predicted {predicted_recompiles!r} recompiles; torch counted {_r}\"""",
    "9.4": LAB09_APP + """
_app.model.train()
_first, _ = _ans.first_divergent_backend(lambda b: _app.model(b).logits, _app.batch_of(4))
assert _first is not None and str(first_differing).strip().strip("'\\"").casefold() == _first, (first_differing, _first)""",
    "7.1": """\
import math as _m
assert break_even(2.0, 3e-3, 1e-3) == _m.inf or abs(break_even(2.0, 3e-3, 1e-3) - 999.5) <= 1
assert break_even(1.0, 1e-3, 2e-3) == _m.inf""",
}


def split_checks(source: str) -> tuple[str, list[str]]:
    """(the cell without its checker calls, the checker calls)."""
    body, checks = [], []
    for line in source.split("\n"):
        (checks if CHECK_LINE.match(line) else body).append(line)
    return "\n".join(body).strip("\n"), [c.strip() for c in checks]


def _is_answer_check(line: str) -> bool:
    from labs import answers

    return line.split("(")[0].strip() in answers.__all__


# an answer checker whose student-side stand-in says more than "answered" without giving the answer away
VISIBLE_INSTEAD = {"check_break_even_function": "check_payback_behaves"}


def visible_checks(checks: list[str]) -> list[str]:
    """The checker calls a student sees, inside ``with graded_output():`` (a warning goes to stdout): an answer
    checker (``labs.answers``, whose code would give the answer away) becomes ``check_answered(<the answers>)``;
    the rest are kept."""
    shown = []
    for line in checks:
        if not _is_answer_check(line):
            shown.append(line)
            continue
        call = ast.parse(line.split("#")[0].strip()).body[0].value
        given = [call.args[i] for i in ANSWER_ARGS.get(call.func.id, (0,))]
        checker = VISIBLE_INSTEAD.get(call.func.id, "check_answered")
        shown.append(f"{checker}({', '.join(ast.unparse(a) for a in given)})")
    return ["with graded_output():     # torch's warnings print here, on stdout"] + ["    " + line for line in shown]


def hidden_tests(ex_id: str, checks: list[str]) -> str:
    """The fresh checks and the exercise's own test, under the fresh checkers' ``graded_output`` (stdout only),
    ``pristine_torch`` (the default stance and configs: a switch in the answer does not reach them) and
    ``graded_test`` (a failure names the exercise)."""
    fresh = "\n".join(("_ans." if _is_answer_check(c) else "_gm." if is_modern_check(c) else "_gc.")
                      + c.split("#")[0].strip() for c in checks)
    body = "\n".join([fresh, HIDDEN.get(ex_id, "")]).strip("\n")
    return "\n".join([FRESH_CHECKS + (FRESH_MODERN if ex_id in HIDDEN_MODERN else ""),
                      f"with _gc.graded_output(), _gc.pristine_torch(), _gc.graded_test({ex_id!r}):",
                      textwrap.indent(body, "    ")])


from labs.grading_modern import FRESH_MODERN, HIDDEN_MODERN, POINTS_MODERN, is_modern_check  # noqa: E402 - lab 10
HIDDEN.update(HIDDEN_MODERN)
POINTS.update(POINTS_MODERN)


class StarterCode(ClearSolutions):
    """``ClearSolutions`` whose stub is the exercise's starting code (cell metadata ``tcompile.starter``)."""

    def preprocess_cell(self, cell, resources, cell_index):
        starter = cell.get("metadata", {}).get("tcompile", {}).get("starter")
        cell, resources = super().preprocess_cell(cell, resources, cell_index)
        if starter is not None and cell.cell_type == "code":
            cell.source = starter
        return cell, resources
