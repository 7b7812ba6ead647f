"""torch.compile's options, checked once for every caller (``explore``/``run``, ``%%tcompile``,
``compare`` specs): backend names, modes, stances, ``dynamic``, Inductor option names — each
unknown value raises ``OptionError`` naming the option, with close matches suggested.

    >>> from compiler.reference.options import OptionError, check_mode
    >>> try:
    ...     check_mode("max-autotun")
    ... except OptionError as exc:
    ...     print(exc.option, "|", exc.message.split("?")[0])
    mode | unknown mode 'max-autotun'; did you mean 'max-autotune'
"""
from __future__ import annotations

import ast
import copy
import difflib
import json

# the keyword arguments torch.compile takes
COMPILE_KWARGS = ("backend", "mode", "dynamic", "fullgraph", "options", "disable", "recompile_limit", "name",
                  "isolate_recompiles", "shapes_spec")
# torch.compiler.set_stance names (torch does not validate or list them; compiler.reference.knobs.stances()
# reads their descriptions from its docstring)
STANCES = ("default", "force_eager", "eager_on_recompile", "fail_on_recompile", "eager_then_compile",
           "aot_eager_then_compile")
DYNAMIC = {"true": True, "false": False, "auto": None}


class OptionError(ValueError):
    """A torch.compile option with a value torch would reject (or silently ignore): ``option``
    names it, the message says what is wrong, on one line."""

    def __init__(self, option: str, message: str):
        self.option, self.message = option, message
        super().__init__(f"{option}: {message}")


def suggest(word: str, choices) -> str:
    """``"; did you mean 'inductor'?"`` for close matches of ``word`` among ``choices``, else ``""``."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=3)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def check_compile_kwargs(kwargs: dict) -> None:
    """torch.compile's keyword names, and the values torch would reject with an unclear error (a bare
    AssertionError for ``dynamic="maybe"``, every option name for one unknown Inductor option)."""
    unknown = sorted(set(kwargs) - set(COMPILE_KWARGS))
    if unknown:
        raise TypeError(f"unknown torch.compile option(s) {unknown}; torch.compile takes {list(COMPILE_KWARGS)}")
    if isinstance(kwargs.get("backend"), str):
        check_backend(kwargs["backend"])
    check_mode(kwargs.get("mode"))
    if kwargs.get("dynamic") not in (None, True, False):
        raise OptionError("dynamic", f"takes True, False or None, got {kwargs['dynamic']!r}")
    options = kwargs.get("options")
    if options is not None:
        if not isinstance(options, dict):
            raise OptionError("options", f"must be a dict of Inductor options, got {type(options).__name__}")
        check_inductor_options(options)
    check_mode_and_options(kwargs.get("mode"), options)


def check_backend(name, namespace: dict | None = None):
    """A registered backend name (``torch._dynamo.list_backends(exclude_tags=())``) → the name; a name
    bound to a callable in ``namespace`` (a custom backend in the notebook) → that callable; a
    callable → itself."""
    import torch._dynamo

    if callable(name):
        return name
    if name in torch._dynamo.list_backends(exclude_tags=()):
        return name
    if namespace is not None and callable(namespace.get(name)):
        return namespace[name]
    known = sorted(set(torch._dynamo.list_backends()) | {"eager", "aot_eager"})
    raise OptionError("backend", f"unknown backend {name!r}{suggest(name, known)} "
                                 f"(e.g. {', '.join(known)}; or a callable)")


def check_mode(name: str | None) -> str | None:
    import torch._inductor

    if name is None:
        return None
    modes = list(torch._inductor.list_mode_options())
    if name not in modes:
        raise OptionError("mode", f"unknown mode {name!r}{suggest(name, modes)} (modes: {', '.join(modes)})")
    return name


def check_stance(name: str | None) -> str | None:
    if name is not None and name not in STANCES:
        raise OptionError("stance", f"unknown stance {name!r}{suggest(name, STANCES)} (stances: {', '.join(STANCES)})")
    return name


def check_dynamic(value):
    """``"true"``/``"false"``/``"auto"`` (or True/False/None) → True/False/None."""
    if value is None or isinstance(value, bool):
        return value
    if str(value).lower() in DYNAMIC:
        return DYNAMIC[str(value).lower()]
    raise OptionError("dynamic", f"takes true, false or auto, got {value!r}")


def parse_dict(text: str, option: str = "options") -> dict:
    """A JSON or Python dict literal (``{"max_autotune": true}`` or ``{'max_autotune': True}``)."""
    try:
        value = json.loads(text)
    except ValueError:
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            raise OptionError(option, f"not a JSON or Python dict: {text!r} "
                                      "(e.g. '{\"max_autotune\": True}')") from None
    if not isinstance(value, dict):
        raise OptionError(option, f"must be a dict, got {type(value).__name__}: {text!r}")
    return value


def check_inductor_options(options: dict) -> dict:
    """Every key must be a ``torch._inductor.list_options()`` name (``guard_filter_fn`` too:
    torch.compile takes it from ``options``)."""
    import torch._inductor

    known = torch._inductor.list_options()
    for key in options:
        if key not in known and key != "guard_filter_fn":
            raise OptionError("options", f"unknown Inductor option {key!r}{suggest(str(key), known)} "
                                         "(see torch._inductor.list_options())")
    return options


def check_mode_and_options(mode: str | None, options: dict | None) -> None:
    if mode is not None and options:
        raise OptionError("mode", "cannot be used together with options (torch.compile takes one or the other)")


def jsonable(value):
    """Options as JSON-able data: callables (custom backends, guard filters) by their qualified name,
    other non-JSON values by ``repr``."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool, type(None))):
        return copy.copy(value)
    module = getattr(value, "__module__", None)
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    return f"{module}.{name}" if module and name else repr(value)
