"""torch.compile's knobs as reference data: backends, modes, Inductor and Dynamo options, stances,
guard filters (the experiments that show what a knob does are in ``compiler.analyses.experiments``).

    from compiler import knobs
    knobs.backends()                       # every backend, whether it works here, which package is missing
    knobs.mode_options("max-autotune")     # {'max_autotune': True, 'triton.cudagraphs': True, ...}
    knobs.inductor_options("fusion")      # options whose name or doc mentions "fusion", with value and doc
    knobs.stances()                        # valid torch.compiler.set_stance names, with torch's description

Everything here reads torch at call time (the option lists and docs change between versions) and
returns plain dicts and lists; only ``backends(probe=…)`` compiles (a tiny probe per backend, after
which Dynamo is reset).
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


def backend_tags(name: str) -> list[str]:
    """A registered backend's tags (``debug``, ``experimental``…): torch 2.14 keeps them in
    ``registry._BACKEND_TAGS`` by name; up to 2.13 they were an attribute ``_tags`` of the compiler
    function (torch/_dynamo/backends/registry.py, ``register_backend``)."""
    from torch._dynamo.backends import registry

    by_name = getattr(registry, "_BACKEND_TAGS", None)
    if isinstance(by_name, dict) and name in by_name:
        return list(by_name[name] or ())
    return list(getattr(registry._COMPILER_FNS.get(name), "_tags", ()) or ())


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

    shown = set(torch._dynamo.list_backends())
    rows = []
    for name in torch._dynamo.list_backends(exclude_tags=()):
        row = {"name": name, "tags": backend_tags(name),
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


def knob_reference() -> dict:
    """Everything here that needs no compile, in one dict (backends not probed)."""
    return {"backends": backends(probe=False), "modes": mode_options(), "stances": stances(),
            "guard_filters": list(GUARD_FILTERS), "inductor_options": inductor_options()}
