"""The compare spec language: ``"mode=default,reduce-overhead; dynamic=true,false"`` → configurations.

    >>> from compiler.analyses.configurations import parse_compare_spec
    >>> [c["label"] for c in parse_compare_spec("backend=eager,aot_eager; dynamic=true,false")]
    ['backend=eager, dynamic=true', 'backend=eager, dynamic=false', 'backend=aot_eager, dynamic=true', 'backend=aot_eager, dynamic=false']

A configuration is a dict of torch.compile arguments (backend, mode, dynamic, fullgraph, options,
disable) plus ``label``, ``stance`` and ``dynamo_config`` (a ``torch._dynamo.config.patch``).
Values are checked by ``compiler.reference.options`` (one place for every caller).
"""
from __future__ import annotations

import itertools
import json

from compiler.reference.options import OptionError, check_dynamic, check_mode, check_stance, jsonable, parse_dict

COMPILE_KEYS = ("backend", "mode", "dynamic", "fullgraph", "options", "disable")
CONFIG_KEYS = (*COMPILE_KEYS, "label", "stance", "dynamo_config")
SPEC_KEYS = ("mode", "backend", "dynamic", "fullgraph", "options", "stance", "recompile_limit", "guard_filter")


def _split_top(text: str, sep: str) -> list[str]:
    """Split on ``sep`` outside brackets and quotes: ``{"a": 1, "b": 2},{"a": 3}`` → two dicts."""
    parts, depth, quote, current = [], 0, None, []
    for char in text:
        if quote:
            quote = None if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "{[(":
            depth += 1
        elif char in "}])":
            depth -= 1
        elif char == sep and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    parts.append("".join(current).strip())
    return [p for p in parts if p]


def _axis(key: str, values: list[str]) -> list[dict]:
    """One ``key=v1,v2`` axis → config fragments, each with its label."""
    if key == "mode":
        return [{key: check_mode(v), "label": f"{key}={v}"} for v in values]
    if key == "stance":
        return [{key: check_stance(v), "label": f"{key}={v}"} for v in values]
    if key == "backend":
        # a backend whose package is missing is still a configuration: its failure is part of the comparison
        return [{key: v, "label": f"{key}={v}"} for v in values]
    if key == "dynamic":
        return [{key: check_dynamic(v), "label": f"{key}={v.lower()}"} for v in values]
    if key == "fullgraph":
        out = []
        for v in values:
            if v.lower() not in ("true", "false"):
                raise OptionError("fullgraph", f"takes true/false, got {v!r}")
            out.append({key: v.lower() == "true", "label": f"{key}={v.lower()}"})
        return out
    if key == "recompile_limit":
        return [{"dynamo_config": {"recompile_limit": int(v)}, "label": f"recompile_limit={int(v)}"} for v in values]
    if key == "guard_filter":
        import torch

        out = []
        for v in values:
            if v.lower() == "none":
                out.append({"label": "guard_filter=none"})
                continue
            name = v.split(".")[-1]
            if not hasattr(torch.compiler, name):
                raise OptionError("guard_filter", f"torch.compiler has no {name!r} "
                                                  f"(e.g. skip_guard_on_all_nn_modules_unsafe)")
            out.append({"options": {"guard_filter_fn": getattr(torch.compiler, name)}, "label": f"guard_filter={name}"})
        return out
    if key == "options":
        out = [{"label": "baseline (no options)"}]
        for v in values:
            value = parse_dict(v, "options")
            out.append({"options": value, "label": f"options={json.dumps(jsonable(value))}"})
        return out
    raise OptionError("compare", f"unknown compare key {key!r}; use one of {', '.join(SPEC_KEYS)}")


def parse_compare_spec(spec: str) -> list[dict]:
    """``"mode=default,reduce-overhead"`` → one config per value, each with a readable ``label``.

    Keys: mode, backend, dynamic (true/false/auto), fullgraph (true/false), stance, recompile_limit
    (a ``torch._dynamo.config`` patch), guard_filter (``torch.compiler.*_unsafe`` names, or none) and
    options (dicts; a baseline without options comes first). Several axes separated by ``;`` give
    every combination: ``"backend=eager,aot_eager; dynamic=true,false"`` → 4 configs. A bad spec
    raises ``compiler.reference.options.OptionError`` (a ValueError).
    """
    axes = []
    for part in _split_top(spec.strip(), ";"):
        key, sep, values = part.partition("=")
        if not sep or not values.strip():
            raise OptionError("compare", f"spec {part!r} must look like key=value1,value2 "
                                         "(e.g. mode=default,max-autotune)")
        axes.append(_axis(key.strip(), _split_top(values.strip(), ",")))
    if not axes:
        raise OptionError("compare", "empty spec: e.g. mode=default,reduce-overhead,max-autotune")
    configs = []
    for combination in itertools.product(*axes):
        config: dict = {}
        for fragment in combination:
            for key, value in fragment.items():
                if key in ("options", "dynamo_config") and key in config:
                    config[key] = {**config[key], **value}
                elif key != "label":
                    config[key] = value
        config["label"] = ", ".join(f["label"] for f in combination)
        configs.append(config)
    return configs


def config_label(config: dict) -> str:
    """A readable label for a config without one: ``backend=eager, dynamic=true``."""
    parts = [f"{k}={jsonable(v) if not isinstance(v, str) else v}" for k, v in config.items() if k != "label"]
    return ", ".join(parts) or "default"

