"""Everything a capture installs, patches or could leave behind in torch and Python, as one comparable
snapshot: ``snapshot()`` before, ``assert_restored(before)`` after (it names what differs).

Covered: handlers, level and propagate of the ``torch.__trace`` logger and the artifact loggers
(``compiler.capturing.records.ARTIFACT_LOGGERS``); the level, propagate flag and handlers of every ``torch``
logger that existed before (and its filters); torch._logging's own state (``set_logs``); Dynamo's bytecode hooks;
the compile stance; Inductor's autotune feedback hooks; Inductor, Dynamo and functorch config;
the profile and trace hooks; grad mode, the default dtype and the float32 matmul precision; the SIGINT handler; Dynamo's compile
start/end callbacks, the garbage collector's callbacks and tcompile's own threads (the compile sampler).
"""
from __future__ import annotations

import gc
import logging
import signal
import sys
import threading

from compiler.capturing.records import ARTIFACT_LOGGERS


def _logger(logger: logging.Logger) -> tuple:
    from torch._logging._internal import _is_torch_handler

    # torch's lazy trace handler removes itself on the first record when TORCH_TRACE is unset: torch's business
    return (logger.level, logger.propagate, logger.disabled, [h for h in logger.handlers if not _is_torch_handler(h)],
            list(logger.filters))


def load_torch_modules() -> None:
    """Import what a first Inductor compile imports: some torch modules configure their loggers on import
    (the IR artifact loggers stop propagating), which is torch's doing, not a capture's."""
    import torch._inductor.debug  # noqa: F401
    import torch._inductor.select_algorithm  # noqa: F401


def snapshot() -> dict:
    import torch
    import torch._functorch.config as functorch_config
    from torch._dynamo.callback import callback_handler
    from torch._dynamo.convert_frame import _bytecode_hooks
    from torch._dynamo.eval_frame import _stance
    from torch._logging._internal import log_state, trace_log

    watched = [trace_log] + [logging.getLogger(name) for name in ARTIFACT_LOGGERS.values()]
    torch_loggers = {name: _logger(lg) for name, lg in logging.root.manager.loggerDict.items()
                     if isinstance(lg, logging.Logger) and name.split(".")[0] == "torch"}
    selector = sys.modules.get("torch._inductor.select_algorithm")
    cache = getattr(selector, "_ALGORITHM_SELECTOR_CACHE", None)  # made by Inductor's first lowering
    feedback = list(cache.feedback_saver_fns) if cache is not None else []
    return {
        "watched loggers": {lg.name: _logger(lg) for lg in watched},
        "torch loggers": torch_loggers,
        "root logger": _logger(logging.root),
        "set_logs state": (dict(log_state.log_qname_to_level), sorted(log_state.artifact_names)),
        "bytecode hooks": list(_bytecode_hooks.values()),
        "stance": (_stance.stance, _stance.skip_guard_eval_unsafe, _stance.backend),
        "autotune feedback hooks": feedback,
        "inductor config": torch._inductor.config.get_config_copy(),
        "dynamo config": torch._dynamo.config.get_config_copy(),
        "functorch config": functorch_config.get_config_copy(),
        "profile/trace hooks": (sys.getprofile(), sys.gettrace(), threading.getprofile(), threading.gettrace()),
        "grad mode, default dtype": (torch.is_grad_enabled(), torch.get_default_dtype()),
        "float32 matmul precision": torch.get_float32_matmul_precision(),
        "SIGINT handler": signal.getsignal(signal.SIGINT),
        "compile callbacks": (list(callback_handler.start_callbacks), list(callback_handler.end_callbacks)),
        "tcompile threads": sorted(t.name for t in threading.enumerate() if t.name.startswith("tcompile")),
        "gc callbacks": list(gc.callbacks),
    }


def differences(before: dict, after: dict) -> list[str]:
    """What changed; torch loggers created since ``before`` count only if they got handlers or a level."""
    out = []
    for key, value in before.items():
        if key == "torch loggers":
            for name, state in value.items():
                if after[key].get(name) != state:
                    out.append(f"logger {name}: {state} → {after[key].get(name)}")
            for name in after[key].keys() - value.keys():
                level, _, _, handlers, filters = after[key][name]
                handlers = handlers + filters
                if handlers or level != logging.NOTSET:
                    out.append(f"new logger {name}: level {level}, handlers {handlers}")
        elif after[key] != value:
            out.append(f"{key}: {value!r:.300} → {after[key]!r:.300}")
    return out


def assert_restored(before: dict) -> None:
    changed = differences(before, snapshot())
    assert not changed, "torch state not restored:\n" + "\n".join(changed)
