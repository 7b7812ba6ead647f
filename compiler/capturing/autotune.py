"""max-autotune choices: Inductor's algorithm-selection feedback hook (``feedback_saver_fns``).

The hook only reads the timings torch already measured; it is appended on install and removed
(by identity, leaving any of the user's own) on uninstall. The hook list is process-wide: a recorder
with a ``collector`` keeps only the autotuning of its capture's compiles (``compiler.capturing.records.receives``).
"""
from __future__ import annotations

import sys


def _choice(choice, time_ms, chosen) -> dict:
    info = {}
    try:
        info = {k: str(v) for k, v in (choice.info_dict() or {}).items()}
    except Exception:  # noqa: BLE001 — info_dict is optional per choice type
        pass
    return {"name": getattr(choice, "name", str(choice)), "description": str(getattr(choice, "description", "")),
            "time_ms": float(time_ms), "chosen": choice is chosen, "info": info}


class AutotuneRecorder:
    def __init__(self, collector=None):
        self.collector = collector
        self.results: list[dict] = []
        self._cache = None
        self._installing = False

    def feedback(self, timings, name, input_nodes, *rest):
        from torch._guards import CompileContext

        from compiler.capturing.records import receives

        compile_id = CompileContext.current_compile_id()
        if self.collector is not None and not receives(self.collector, str(compile_id) if compile_id else None):
            return
        finite = {c: t for c, t in timings.items() if t == t and t != float("inf")}
        chosen = min(finite, key=finite.__getitem__) if finite else None
        sizes = []
        for node in input_nodes:
            try:
                sizes.append([str(s) for s in node.get_size()])
            except Exception:  # noqa: BLE001
                sizes.append(None)
        self.results.append({
            "compile_id": str(compile_id), "op": name, "input_sizes": sizes,
            "choices": sorted((_choice(c, t, chosen) for c, t in timings.items()), key=lambda c: c["time_ms"]),
        })

    def install(self, record=None):
        """Attach once Inductor's algorithm selection is loaded. Importing it ourselves would cost
        ~0.6 s in a process that never runs Inductor, so this is retried on each trace record
        (Inductor loads it before it lowers, i.e. before any autotuning)."""
        module = sys.modules.get("torch._inductor.select_algorithm")
        if self._cache is not None or self._installing or module is None:
            return
        self._installing = True  # creating the selector cache may itself log a trace record
        try:
            self._cache = module.get_algorithm_selector_cache()
            self._cache.feedback_saver_fns.append(self.feedback)
        finally:
            self._installing = False

    def uninstall(self):
        if self._cache is not None:
            fns = self._cache.feedback_saver_fns
            self._cache.feedback_saver_fns = [f for f in fns if f != self.feedback]
            self._cache = None
