"""torch.compile's knobs as data: backends, modes, Inductor and Dynamo options, stances, guard filters,
and small experiments that show what a knob does (guards removed, graph breaks changed, the
recompile limit hit).

    from compiler import knobs
    knobs.backends()                       # every backend, whether it works here, which package is missing
    knobs.mode_options("max-autotune")     # {'max_autotune': True, 'triton.cudagraphs': True, ...}
    knobs.inductor_options("fusion")      # options whose name or doc mentions "fusion", with value and doc
    knobs.stances()                        # valid torch.compiler.set_stance names, with torch's description
    knobs.guard_filter_effects(model, x)   # which guards each torch.compiler.*_unsafe filter removes
    knobs.graph_break_effects(f, x, target="helper")   # disable / allow_in_graph on a helper f calls
    knobs.recompile_limit_effect(f, [(x1,), (x2,), (x3,)], limit=1)

Everything here reads torch at call time (the option lists and docs change between versions) and
returns plain dicts and lists.
"""
from __future__ import annotations

import ast
import contextlib
import functools
import io
import re
from pathlib import Path

# import name → the package to install, where they differ (what torch's own error messages say)
PACKAGES = {"tvm": "apache-tvm", "torch_xla": "torch_xla", "torch_tensorrt": "torch-tensorrt",
            "onnxruntime": "onnxruntime", "onnxscript": "onnxscript"}
GUARD_FILTERS = ("skip_guard_on_inbuilt_nn_modules_unsafe", "skip_guard_on_all_nn_modules_unsafe",
                 "keep_tensor_guards_unsafe", "skip_guard_on_globals_unsafe")
_IGNORED_MARKER = re.compile(r"\[?@compile_ignored[^\]\n]*\]?:?")
_PLEASE_INSTALL = re.compile(r"[Pp]lease (?:install|follow the instruction in \S+ to install) (?P<package>[\w.-]+)")
_MISSING_MODULE = re.compile(r"No module named '(?P<name>[\w.]+)'")


# --- backends -----------------------------------------------------------------------------------

def missing_package(text: str | None) -> dict | None:
    """``No module named 'tvm'`` (or torch's "Please install apache-tvm") in an error text →
    ``{"module": "tvm", "package": "apache-tvm"}``."""
    match = _MISSING_MODULE.search(text or "")
    if match:
        module = match["name"].split(".")[0]
        return {"module": module, "package": PACKAGES.get(module, module)}
    match = _PLEASE_INSTALL.search(text or "")
    if match:
        package = match["package"].rstrip(".")
        module = next((m for m, p in PACKAGES.items() if p == package), package.replace("-", "_"))
        return {"module": module, "package": package}
    return None


def _probe(name: str) -> dict:
    """Compile and run ``sin(x) + 1`` with backend ``name``: does it work here, and if not, why."""
    import torch

    def probe_fn(x):
        return x.sin() + 1

    torch._dynamo.reset()
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()), _quiet_logs():
            out = torch.compile(probe_fn, backend=name)(torch.ones(4))
        ok = torch.allclose(out, torch.ones(4).sin() + 1)
        return {"works": bool(ok), "error": None if ok else "wrong result", "missing": None}
    except Exception as exc:  # noqa: BLE001 — the point is to find out
        chain = _exception_chain(exc)
        missing = next(({"module": e.name.split(".")[0], "package": PACKAGES.get(e.name.split(".")[0], e.name)}
                        for e in chain if isinstance(e, ModuleNotFoundError) and e.name), None)
        root = chain[-1]
        return {"works": False, "error": f"{type(root).__name__}: {str(root).strip().splitlines()[0] if str(root).strip() else ''}",
                "missing": missing or missing_package("\n".join(map(str, chain)))}
    finally:
        torch._dynamo.reset()


def _exception_chain(exc: BaseException) -> list[BaseException]:
    chain, seen = [], set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        chain.append(exc)
        exc = exc.__cause__ or getattr(exc, "inner_exception", None) or exc.__context__
    return chain


@contextlib.contextmanager
def _quiet_logs():
    """Silence torch's warnings (``skipping cudagraphs due to cpu device``) while probing."""
    import logging

    logger = logging.getLogger("torch")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def backends(probe: bool | list[str] = True) -> list[dict]:
    """Every backend ``torch._dynamo.list_backends(exclude_tags=())`` lists here.

    Each row: name, tags (``debug``/``experimental`` are hidden from ``list_backends()``), whether
    ``list_backends()`` shows it by default, and — when probed — whether a tiny compile works here,
    the error otherwise and the missing package (``{"module", "package"}``) where the error is a
    missing import. ``probe`` is True (all), False (none) or the names to probe. Resolving a
    backend never imports its package (torch imports it on first compile), so only a probe says
    whether it works.
    """
    import torch._dynamo
    from torch._dynamo.backends.registry import _COMPILER_FNS

    shown = set(torch._dynamo.list_backends())
    rows = []
    for name in torch._dynamo.list_backends(exclude_tags=()):
        row = {"name": name, "tags": list(getattr(_COMPILER_FNS.get(name), "_tags", ()) or ()),
               "listed_by_default": name in shown, "testing_only": "TESTING_ONLY" in name,
               "works": None, "error": None, "missing": None}
        try:
            compiler_fn = torch._dynamo.lookup_backend(name)
            row["kind"] = type(compiler_fn).__name__
        except (ImportError, ModuleNotFoundError) as exc:  # an entry-point backend whose package is gone
            row.update(works=False, error=f"{type(exc).__name__}: {exc}", missing=missing_package(str(exc)))
            rows.append(row)
            continue
        if probe is True or (probe and name in probe):
            row.update(_probe(name))
        rows.append(row)
    return rows


# --- modes, options, stances ----------------------------------------------------------------------

def mode_options(mode: str | None = None) -> dict:
    """The Inductor options a ``mode`` turns on (``torch._inductor.list_mode_options``); every mode
    when ``mode`` is None. ``None``/"default" → ``{}``."""
    import torch._inductor

    if mode is None:
        return {m: dict(torch._inductor.list_mode_options(m)) for m in torch._inductor.list_mode_options()}
    return dict(torch._inductor.list_mode_options(mode))


@functools.lru_cache(maxsize=4)
def config_docs(path: str) -> dict[str, str]:
    """Comments and docstrings of a torch config module, read from its source: for each option, the
    ``#`` lines right above its assignment, a trailing ``# comment`` and a string right after it.
    Names inside classes are dotted (``triton.cudagraphs``)."""
    text = Path(path).read_text(encoding="utf-8")
    lines = text.splitlines()
    docs: dict[str, str] = {}

    def comment_above(lineno: int) -> list[str]:
        block, i = [], lineno - 2
        while i >= 0 and lines[i].strip().startswith("#"):
            block.append(lines[i].strip().lstrip("#").strip())
            i -= 1
        return list(reversed(block))

    def walk(body, prefix: str):
        for index, stmt in enumerate(body):
            if isinstance(stmt, ast.ClassDef):
                walk(stmt.body, f"{prefix}{stmt.name}.")
                continue
            if isinstance(stmt, (ast.If, ast.Try)):
                walk(stmt.body + getattr(stmt, "orelse", []), prefix)
                continue
            targets = (stmt.targets if isinstance(stmt, ast.Assign) else
                       [stmt.target] if isinstance(stmt, ast.AnnAssign) else [])
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            if not names:
                continue
            parts = comment_above(stmt.lineno)
            trailing = lines[stmt.end_lineno - 1].split("#", 1)
            if len(trailing) == 2 and "'" not in trailing[1] and '"' not in trailing[1]:
                parts.append(trailing[1].strip())
            following = body[index + 1] if index + 1 < len(body) else None
            if (isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
                    and isinstance(following.value.value, str)):
                parts.append(following.value.value.strip())
            parts = [_IGNORED_MARKER.sub("", p).strip() for p in parts]
            doc = "\n".join(p for p in parts if p and not p.startswith(("type:", "noqa", "pyre", "pyrefly")))
            for name in names:
                if doc:
                    docs[prefix + name] = doc

    walk(ast.parse(text).body, "")
    return docs


def _jsonable(value):
    if isinstance(value, (bool, int, float, str, type(None))):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, (bool, int, float, str, type(None))) for v in value):
        return list(value)
    if isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, (bool, int, float, str, type(None)))
                                       for k, v in value.items()):
        return dict(value)
    return repr(value)


def _options(module, search: str | None) -> list[dict]:
    docs = config_docs(module.__file__)
    current = module.get_config_copy()
    rows = []
    for name in sorted(current):
        if name == "TYPE_CHECKING":
            continue
        entry = module._config.get(name)
        doc = docs.get(name) or next((d for k, d in docs.items() if k.endswith("." + name.rsplit(".", 1)[-1])
                                      and "." in name), None)
        default = getattr(entry, "default", None)
        row = {"name": name, "value": _jsonable(current[name]), "default": _jsonable(default),
               "type": getattr(getattr(entry, "value_type", None), "__name__", None),
               "changed": current[name] != default, "doc": doc,
               "deprecated": bool(getattr(entry, "deprecated", False))}
        if search is None or search.lower() in name.lower() or search.lower() in (doc or "").lower():
            rows.append(row)
    return rows


def inductor_options(search: str | None = None) -> list[dict]:
    """Every ``torch._inductor.list_options()`` option: current value, default, type, whether it was
    changed, and its documentation (torch has no API for it: the comments in ``torch/_inductor/config.py``).
    ``search`` keeps options whose name or doc contains it (case-insensitive)."""
    import torch._inductor
    import torch._inductor.config as inductor_config

    known = set(torch._inductor.list_options())
    return [row for row in _options(inductor_config, search) if row["name"] in known]


def dynamo_options(search: str | None = None) -> list[dict]:
    """``torch._dynamo.config`` the same way (``recompile_limit``, ``automatic_dynamic_shapes`` …)."""
    import torch._dynamo.config as dynamo_config

    return _options(dynamo_config, search)


_STANCE_LINE = re.compile(r'^\s*-\s*"(?P<name>\w+)":\s*(?P<text>.*)$')


def stances() -> list[dict]:
    """Valid ``torch.compiler.set_stance`` names with torch's description (parsed from its docstring,
    since torch does not validate or list them)."""
    import torch

    doc = torch.compiler.set_stance.__doc__ or ""
    rows: list[dict] = []
    section = doc.split("Valid values are:", 1)[-1].split("skip_guard_eval_unsafe", 1)[0]
    for line in section.splitlines():
        match = _STANCE_LINE.match(line)
        if match:
            rows.append({"name": match["name"], "description": match["text"].strip()})
        elif rows and line.strip() and not line.strip().startswith("-"):
            rows[-1]["description"] += " " + line.strip()
    return rows or [{"name": n, "description": ""} for n in ("default", "force_eager", "eager_on_recompile",
                                                             "fail_on_recompile", "eager_then_compile",
                                                             "aot_eager_then_compile")]


# --- experiments: what a knob does ------------------------------------------------------------------

def guard_filter_effects(fn, *args, filters=GUARD_FILTERS, backend: str = "eager", **compile_kwargs) -> dict:
    """Compile ``fn`` without a guard filter, then once per ``torch.compiler.<filter>`` passed as
    ``options={"guard_filter_fn": …}`` (torch.compile pops it from ``options``; any backend), and
    list which guards each filter removed (a diff of the guard tables of the first compile).

    → ``{"baseline": {"guards", "capture"}, "filters": [{"name", "guards", "removed", "added", "capture"}]}``
    """
    import torch

    from .diff import guard_diff
    from .session import explore

    def run(options):
        kwargs = dict(compile_kwargs, backend=backend)
        if options:
            kwargs["options"] = {**(compile_kwargs.get("options") or {}), **options}
        return explore(fn, *args, timing=False, errors="return", **kwargs)

    baseline = run(None)
    out = {"baseline": {"guards": baseline.summary.get("guards", 0), "capture": baseline}, "filters": []}
    for name in filters:
        filter_fn = getattr(torch.compiler, name) if isinstance(name, str) else name
        label = name if isinstance(name, str) else getattr(name, "__name__", repr(name))
        cap = run({"guard_filter_fn": filter_fn})
        cap.data["options"]["options"] = {"guard_filter_fn": f"torch.compiler.{label}"}
        diff = guard_diff(baseline, cap)
        out["filters"].append({"name": label, "guards": cap.summary.get("guards", 0), "removed": diff["removed"],
                               "added": diff["added"], "kept": diff["common"], "capture": cap,
                               "error": cap.error})
    return out


def _fresh_wrapper(fn):
    """A new function object calling ``fn``: decorators that register functions globally
    (``allow_in_graph``) mark this wrapper, never the user's own function."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    wrapper.__wrapped__ = fn
    return wrapper


@contextlib.contextmanager
def swapped_global(fn, name: str, replacement):
    """Temporarily make the global ``name`` that ``fn`` calls refer to ``replacement``."""
    namespace = fn.__globals__
    if name not in namespace:
        raise KeyError(f"{getattr(fn, '__name__', fn)} has no global {name!r} to replace")
    original = namespace[name]
    namespace[name] = replacement
    try:
        yield original
    finally:
        namespace[name] = original


def break_counts(fn, *args, backend: str = "eager", **compile_kwargs) -> dict:
    """Graph breaks and graphs of one compile, from the capture and from ``torch._dynamo.explain``."""
    import torch

    from .session import explore

    cap = explore(fn, *args, timing=False, errors="return", backend=backend, **compile_kwargs)
    torch._dynamo.reset()
    with _quiet_logs(), contextlib.redirect_stdout(io.StringIO()):
        explained = torch._dynamo.explain(fn)(*args)
    torch._dynamo.reset()
    return {"graph_breaks": cap.summary.get("graph_breaks", 0), "graphs": cap.summary.get("graphs", 0),
            "explain_graph_breaks": explained.graph_break_count, "explain_graphs": explained.graph_count,
            "reasons": [item["headline"] for item in cap.breaks.get("items") or []],
            "explain_reasons": [str(b.reason).strip().splitlines()[0] for b in explained.break_reasons],
            "capture": cap}


def graph_break_effects(fn, *args, target: str, how=("disable", "allow_in_graph"), backend: str = "eager") -> list[dict]:
    """How wrapping the helper ``target`` (a global function ``fn`` calls) changes graph breaks.

    Row "as is" compiles ``fn`` unchanged; then, for each of ``torch.compiler.disable`` /
    ``torch.compiler.allow_in_graph``, the global is swapped (for the duration of that compile only)
    for a fresh wrapper with the decorator applied. Each row has the capture's and
    ``torch._dynamo.explain``'s counts (``consistent`` when they agree).

    - ``disable``: Dynamo does not trace the helper; it graph-breaks around the call, so whatever
      broke inside the helper no longer splits its graph (fewer breaks when the helper broke many times).
    - ``allow_in_graph``: the helper is put in the graph as one opaque call, traced only through
      fake tensors: its Python side effects (print) run at graph run time, not at trace time.
    """
    import torch

    decorators = {"disable": torch.compiler.disable, "allow_in_graph": torch.compiler.allow_in_graph}
    rows = [{"variant": "as is", **break_counts(fn, *args, backend=backend)}]
    for name in how:
        helper = fn.__globals__.get(target)
        with swapped_global(fn, target, decorators[name](_fresh_wrapper(helper))):
            rows.append({"variant": f"torch.compiler.{name}({target})", **break_counts(fn, *args, backend=backend)})
    for row in rows:
        row["consistent"] = (row["graph_breaks"] == row["explain_graph_breaks"] and row["graphs"] == row["explain_graphs"])
    return rows


def substitute_effect(fn, *args, original, polyfill, backend: str = "eager", skip_signature_check: bool = False) -> list[dict]:
    """Graph breaks of ``fn`` before and after ``torch.compiler.substitute_in_graph(original)(polyfill)``.

    The registration is process-wide and cannot be undone (torch keeps one polyfill per function);
    registering a function twice is refused by torch, and the second row then says it was already
    registered.
    """
    import torch

    before = {"variant": "as is", **break_counts(fn, *args, backend=backend)}
    note = None
    try:
        torch.compiler.substitute_in_graph(original, skip_signature_check=skip_signature_check)(polyfill)
    except ValueError as exc:  # "Duplicate polyfilled object"
        note = f"already registered: {exc}"
    name = getattr(original, "__qualname__", repr(original))
    after = {"variant": f"substitute_in_graph({getattr(original, '__module__', '') or ''}.{name})".replace("(.", "("),
             **break_counts(fn, *args, backend=backend), "note": note}
    for row in (before, after):
        row["consistent"] = (row["graph_breaks"] == row["explain_graph_breaks"] and row["graphs"] == row["explain_graphs"])
    return [before, after]


def recompile_limit_effect(fn, calls: list[tuple], limit: int = 1, backend: str = "eager", **compile_kwargs) -> dict:
    """Call ``torch.compile(fn)`` on each argument tuple in ``calls`` with
    ``torch._dynamo.config.recompile_limit = limit`` and say, per call, whether it compiled, reused a
    cached compile, hit the limit, or ran eagerly because the frame gave up compiling.

    Before each call the live guards are asked which cached compile would accept the arguments
    (``what_if``), so the verdict is torch's own, not a guess from counters.
    """
    import torch
    from torch._dynamo.utils import counters

    from .session import capture
    from .whatif import LiveState, what_if

    torch._dynamo.reset()
    rows = []
    limit_hit = False
    with torch._dynamo.config.patch(recompile_limit=limit), _quiet_logs():
        with capture(suppress_errors=True, options={"backend": backend, **compile_kwargs,
                                                     "recompile_limit": limit}) as cap:
            compiled = torch.compile(fn, backend=backend, **compile_kwargs)
            for index, call_args in enumerate(calls):
                verdict = what_if(LiveState(), compiled, call_args, {})
                total, ok = counters["frames"]["total"], counters["frames"]["ok"]
                compiled(*call_args)
                new_total, new_ok = counters["frames"]["total"] - total, counters["frames"]["ok"] - ok
                if verdict.accepted_by:
                    status = f"reused compile {verdict.accepted_by}"
                elif new_ok:
                    status = "compiled" if index == 0 else "recompiled"
                elif new_total:
                    status, limit_hit = "hit the recompile limit: ran eagerly", True
                else:
                    status = "ran eagerly (the frame stopped compiling after the limit)" if limit_hit else "ran eagerly"
                rows.append({"call": index, "shapes": [list(a.shape) for a in call_args if hasattr(a, "shape")],
                             "status": status, "new_compiles": new_ok})
    torch._dynamo.reset()
    hit = next((item for item in cap.breaks.get("items") or [] if "recompile limit" in (item["headline"] or "").lower()), None)
    return {"limit": limit, "calls": rows, "compiles": cap.summary.get("compiles", 0),
            "recompiles": cap.summary.get("recompiles", 0), "limit_hit": limit_hit,
            "message": hit["reason"] if hit else None, "gb_code": hit.get("gb_code") if hit else None,
            "capture": cap}


def knob_reference() -> dict:
    """Everything above that needs no compile, in one dict (backends not probed)."""
    return {"backends": backends(probe=False), "modes": mode_options(), "stances": stances(),
            "guard_filters": list(GUARD_FILTERS), "inductor_options": inductor_options()}
