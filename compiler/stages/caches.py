"""Every cache a compile consulted, explained: ``c.caches`` (``Caches``).

Read from what torch logs per compile, nothing guessed:

- **FX graph cache** (Inductor's compiled graph, ``torch/_inductor/codecache.py`` ``FxGraphCache``): the
  ``fx_graph_cache_{hit,miss,bypass}`` artifact of each graph (forward, backward) with torch's
  ``cache_state``, ``cache_status_detailed``, ``cache_bypass_reason``, the ``key`` and its inputs
  (``components``: one ``[hash] name: value`` line per input of the key), ``time_taken_ns`` on a miss (what
  a hit would skip, torch's figure) and ``time_saved_ns`` on a hit.
- **AOTAutograd cache** (``torch/_functorch/_aot_autograd/autograd_cache.py``): ``aotautograd_cache_*``
  the same way, with ``time_saved_ms`` on a hit.
- **Kernel cache** (C++ / Triton binaries on disk): torch logs no hit or miss; a ``compile_file`` span is a
  C++ compiler run (a miss), code generation without one means every kernel binary was found on disk; a
  Triton hit is named in the FX graph entry's ``triton_bundler_meta``.
- **Autotuning**: a ``*_template_autotuning`` span (select_algorithm benchmarked choices) or the
  capture's autotune choices; torch logs no autotune-cache hit or miss.
- **Dynamo PGO profile** (``torch/_dynamo/pgo.py``): the ``get_{local,remote}_code_state`` artifacts (a
  profile read: hit) and ``put_local_code_state`` (written); PGO runs only under
  ``torch.compiler.config.job_id``. **Automatic dynamic**: the ``automatic_dynamic`` events (a dimension
  or scalar that changed and became dynamic: the state Dynamo keeps per code object in this process).

A cache torch did not consult says why (caches disabled, a backend without Inductor, not logged).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from compiler.stages.data import Data, Stage, _table, _text_table, as_declared
from compiler.stages.timings import LineCompileTime, Phase


# --- declared here, built below (``compiler.stages.schema`` ties the stages into a ``Compile``) ---

@dataclass(repr=False, eq=False)
class CacheKeyInput(Data):
    """One input of a cache key as torch logs it (``[hash] name: value``)."""

    hash: str | None = None
    name: str = ""
    value: str = ""


@dataclass(repr=False, eq=False)
class CacheEntry(Data):
    """One cache one compile consulted (``compiler.stages.caches``): ``state`` hit, miss, bypass, disabled,
    not used, not logged, ran (autotuning), off/updated/unchanged (PGO, automatic dynamic)."""

    cache: str = ""
    state: str = ""
    graph: str | None = None  # forward / backward, where a compile looked up one entry per graph
    detail: str | None = None  # torch's cache_status_detailed, or what happened
    reason: str | None = None  # torch's bypass reason, or why the cache was not consulted
    key: str | None = None
    key_inputs: list[CacheKeyInput] = field(default_factory=list)
    saved_s: float | None = None  # a hit: the compile time torch stored with the entry (what the hit saved)
    would_save_s: float | None = None  # a miss: what torch measured this compile took (what a hit would skip)
    seconds: float | None = None  # time spent in it (C++ compiler runs, autotuning)


@dataclass(repr=False, eq=False)
class Caches(Stage):
    """Every cache of one compile, hit / miss / bypass with torch's reason (``compiler.stages.caches``)."""

    NAME: ClassVar[str] = "caches"
    entries: list[CacheEntry] = field(default_factory=list)

    def state(self, cache: str) -> str | None:
        """The state of ``cache`` (e.g. ``"FX graph"``); several entries (forward, backward) joined by ``/``."""
        states = [e.state for e in self.entries if e.cache == cache]
        return "/".join(states) if states else None

    def _text(self):
        return _text_table(self.entries, ["cache", "graph", "state", "detail", "reason", "saved_s", "would_save_s"])

    def _summary(self):
        return ", ".join(f"{e.cache} {e.state}" for e in self.entries[:2])

    @property
    def table(self):
        return _table([{k: v for k, v in e.to_data().items() if k != "key_inputs"} for e in self.entries])


@dataclass(repr=False, eq=False)
class CacheRunCompile(Data):
    compile_id: str = ""
    compile_s: float | None = None
    entries: list[CacheEntry] = field(default_factory=list)
    phases: list[Phase] = field(default_factory=list)  # torch's timed phases of this compile in that run
    top_lines: list[LineCompileTime] = field(default_factory=list)  # where the sampler saw most of its time


@dataclass(repr=False, eq=False)
class CacheRun(Data):
    """One fresh process compiling the captured calls (``compiler.analyses.cache_runs``): cold, warm or mega-cache."""

    name: str = ""
    compile_s: float | None = None  # torch's compile seconds, summed over the run's compiles
    saved_s: float | None = None  # the cold run's compile seconds minus this run's
    calls_s: float | None = None  # compiling and calling, as the child timed it
    process_s: float | None = None  # the whole child process (interpreter start and imports included)
    compiles: list[CacheRunCompile] = field(default_factory=list)
    counters: dict[str, Any] = field(default_factory=dict)  # torch's inductor and aot_autograd counters
    loaded_artifacts: dict[str, int] | None = None  # mega-cache: artifacts load_cache_artifacts put back, by kind
    outputs_equal: bool | None = None
    output_note: str | None = None
    error: str | None = None


@dataclass(repr=False, eq=False)
class CacheRuns(Stage):
    """What a cache hit saves, measured in fresh processes: cold, warm, mega-cache (``cap.measure_caches()``)."""

    NAME: ClassVar[str] = "cache_runs"
    runs: list[CacheRun] = field(default_factory=list)
    artifacts_bytes: int | None = None  # size of torch.compiler.save_cache_artifacts()'s bytes
    method: str | None = None
    compile_kwargs: dict[str, Any] = field(default_factory=dict)

    def run(self, name: str) -> CacheRun | None:
        return next((r for r in self.runs if r.name == name), None)

    def _text(self):
        lines = [f"{'run':<11} {'compile s':>9} {'saved s':>8}  caches"]
        for r in self.runs:
            states = "; ".join(f"{c.compile_id}: " + ", ".join(f"{e.cache} {e.state}" for e in c.entries[:2])
                               for c in r.compiles)
            lines.append(f"{r.name:<11} {r.compile_s if r.compile_s is not None else '-':>9} "
                         f"{r.saved_s if r.saved_s is not None else '-':>8}  {r.error or states}")
        return "\n".join(lines)

    def _summary(self):
        warm = self.run("warm")
        return f"warm rerun saves {warm.saved_s:.3g} s" if warm and warm.saved_s is not None else "measured"

    @property
    def table(self):
        return _table([{k: v for k, v in r.to_data().items() if k not in ("compiles",)} for r in self.runs])


FX, AOT, KERNELS, AUTOTUNE, PGO, AUTO_DYNAMIC = ("FX graph", "AOTAutograd", "kernels (C++/Triton)", "autotuning",
                                                 "Dynamo PGO profile", "automatic dynamic")
CACHES = (FX, AOT, KERNELS, AUTOTUNE, PGO, AUTO_DYNAMIC)
KEY_INPUT_LIMIT = 4000  # characters of one key input's value kept (the FX graph's code can be long)
_COMPONENT = re.compile(r"^\[(?P<hash>[0-9a-z]+)\] (?P<name>[^:]+?): (?P<value>.*)$", re.S)
PGO_KINDS = {"artifact:get_local_code_state": "read a local profile", "artifact:get_remote_code_state": "read a remote profile",
             "artifact:get_extra_remote_code_state": "read a remote profile (extra key)"}
PGO_PUT_KINDS = ("artifact:put_local_code_state", "artifact:put_remote_code_state")
RECORD_KINDS = (*PGO_KINDS, *PGO_PUT_KINDS)


def key_inputs(components) -> list[dict]:
    """torch's ``components`` (``[hash] name: value`` lines) as rows."""
    rows = []
    for line in components if isinstance(components, list) else []:
        if not isinstance(line, str):
            continue
        match = _COMPONENT.match(line)
        if match:
            rows.append({"hash": match["hash"], "name": match["name"].strip(),
                         "value": match["value"][:KEY_INPUT_LIMIT]})
        else:
            rows.append({"hash": None, "name": line[:200], "value": ""})
    return rows


def payload_object(record, report) -> dict:
    """A record's JSON payload as a dict; anything else is reported and read as {}."""
    try:
        payload = json.loads(record.payload or "{}")
    except (ValueError, RecursionError):
        payload = None
    if not isinstance(payload, dict):
        report(record, f"{record.kind} payload", record.payload, "not a JSON object; read as {}")
        return {}
    return payload


def _seconds(value, scale: float) -> float | None:
    return round(value * scale, 6) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _text(value) -> str | None:
    return value if isinstance(value, str) and value else None


def _logged(records, prefix: str, cache: str, report) -> list[dict]:
    rows = []
    for record in records:
        if not record.kind.startswith(f"artifact:{prefix}_"):
            continue
        payload = payload_object(record, report)
        state = _text(payload.get("cache_state")) or record.kind.rsplit("_", 1)[-1]
        saved = (_seconds(payload.get("time_saved_ns"), 1e-9) if cache == FX
                 else _seconds(payload.get("time_saved_ms"), 1e-3))
        rows.append({"cache": cache, "state": state, "detail": _text(payload.get("cache_status_detailed")),
                     "reason": _text(payload.get("cache_bypass_reason")), "key": _text(payload.get("key")),
                     "key_inputs": key_inputs(payload.get("components")),
                     "saved_s": saved if state == "hit" else None,
                     "would_save_s": _seconds(payload.get("time_taken_ns"), 1e-9) if state == "miss" else None,
                     "triton_bundle": _text(payload.get("triton_bundler_meta"))})
    if cache == AOT and any(r["state"] == "miss" for r in rows) and _training(records) and \
            sum(r.kind.startswith("artifact:fx_graph_cache_") for r in records) < 2:
        for row in rows:
            row["detail"] = ((row["detail"] or "miss") + "; a training graph's entry is written once its backward "
                             "compiles: no backward ran here, so nothing was saved and the next run misses again")
    if len(rows) == 2:  # a training graph: the forward's entry first, then the backward's (compiled lazily)
        rows[0]["graph"], rows[1]["graph"] = "forward", "backward"
    return rows


def _training(records) -> bool:
    return any(r.kind in ("aot_forward_graph", "aot_joint_graph") for r in records)


def _not_logged(cache: str, backend: str, options: dict) -> dict:
    if options.get("fresh"):
        reason = "the capture disabled Inductor's caches (fresh=True: torch.compiler.config.force_disable_caches)"
        state = "disabled"
    elif backend not in ("inductor", "unknown") and not backend.startswith("inductor"):
        state, reason = "not used", f"the {backend!r} backend does not use Inductor's caches"
    elif cache == FX and options.get("caches_enabled") is False:
        state, reason = "disabled", "torch._inductor.config.fx_graph_cache is off"
    elif cache == AOT and options.get("autograd_cache_enabled") is False:
        state, reason = "disabled", "torch._functorch.config.enable_autograd_cache is off"
    else:
        state, reason = "not logged", "torch logged no lookup of this cache for this compile"
    return {"cache": cache, "state": state, "reason": reason}


def _kernels(fx_rows: list[dict], events: list[dict], backend: str, options: dict) -> dict:
    compiles = [e for e in events if e["name"] == "compile_file"]
    seconds = round(sum(e["seconds"] for e in compiles), 6)
    ran = (f"the C++ compiler ran {len(compiles)} time{'s' * (len(compiles) > 1)} ({seconds:.3g} s)" if compiles else "")
    codegen = any(e["name"] == "GraphLowering.codegen" for e in events)
    bundles = [r["triton_bundle"] for r in fx_rows
               if r.get("triton_bundle") and "cached_kernel_names=[]" not in r["triton_bundle"]]
    loaded = bool(fx_rows) and all(r["state"] == "hit" for r in fx_rows)
    if compiles:
        return {"cache": KERNELS, "state": "partial" if loaded else "miss", "seconds": seconds,
                "detail": (f"the FX graph entry was loaded, but {ran}: binaries it needs were not in this cache "
                           "directory (C++ kernels travel in neither the entry nor a mega-cache), or torch probed "
                           "the CPU once for this process" if loaded else
                           f"{ran}: kernel binaries not in the on-disk cache")
                + " (the first compile of a process also builds torch's CPU vector-ISA probe)"}
    if loaded:
        return {"cache": KERNELS, "state": "hit", "detail": "loaded with the FX graph cache entry"
                + (f" ({'; '.join(bundles)})" if bundles else "") + ": no kernel was generated or compiled"}
    if codegen:
        return {"cache": KERNELS, "state": "hit", "detail": "Inductor generated code, but no C++ compiler ran: every "
                "kernel binary was found in the on-disk cache (torch counts Triton compiles only process-wide: "
                "cap.counters['inductor']['async_compile_cache_*'])"}
    return {"cache": KERNELS, "state": "not used", "reason": "Inductor generated no code for this compile"
            if backend.startswith("inductor") else f"the {backend!r} backend generates no kernels"}


def _autotune(fx_rows, events, autotune_choices: int, options: dict) -> dict:
    spans = [e for e in events if e["name"].endswith("_template_autotuning")]
    if spans or autotune_choices:
        seconds = round(sum(e["seconds"] for e in spans), 6)
        return {"cache": AUTOTUNE, "state": "ran", "seconds": seconds or None,
                "detail": f"select_algorithm benchmarked {len(spans) or autotune_choices} choice set(s)"
                          + (f" ({seconds:.3g} s)" if seconds else "")
                          + "; torch logs no autotune-cache hit or miss (see the Autotune choices)"}
    mode = str(options.get("mode") or "default")
    if fx_rows and all(r["state"] == "hit" for r in fx_rows) and "autotune" in mode:
        return {"cache": AUTOTUNE, "state": "not used", "reason": "the FX graph cache hit: its entry holds the "
                "choices made when it was compiled"}
    return {"cache": AUTOTUNE, "state": "not used",
            "reason": f"no autotuning ran (mode {mode!r}; max-autotune benchmarks GEMM and conv choices)"}


def _pgo(records, options: dict) -> dict:
    reads = [PGO_KINDS[r.kind] for r in records if r.kind in PGO_KINDS]
    writes = [r.kind for r in records if r.kind in PGO_PUT_KINDS]
    job = options.get("pgo_job_id")
    wrote = " and wrote it back" if writes else ""
    if reads:
        return {"cache": PGO, "state": "hit", "detail": f"{reads[0]} for job id {job!r}{wrote}: sizes it saw "
                "change before start dynamic", "key": job}
    if writes:
        return {"cache": PGO, "state": "miss", "detail": f"no profile for job id {job!r}; wrote one", "key": job}
    if "pgo_job_id" in options and not job:
        return {"cache": PGO, "state": "off", "reason": "torch.compiler.config.job_id is not set: Dynamo reads and "
                "writes PGO profiles only under a job id (automatic dynamic still works within the process)"}
    if job:
        return {"cache": PGO, "state": "miss", "key": job, "detail": f"no profile read for job id {job!r} in this compile"}
    return {"cache": PGO, "state": "not logged", "reason": "torch logged no PGO profile read or write"}


def _automatic_dynamic(instants: list[dict]) -> dict:
    changes = []
    for event in instants:
        if event.get("name") != "automatic_dynamic":
            continue
        args = event.get("args") or {}
        dim = args.get("dim_changed")
        changes.append(f"{args.get('name')}{'' if dim in ('all', 'scalar', None) else f' dim {dim}'}: "
                       f"{args.get('reason')} {args.get('cached')} → {args.get('new')}")
    if changes:
        return {"cache": AUTO_DYNAMIC, "state": "updated", "detail": "made dynamic: " + "; ".join(changes[:20])
                + (f" (+{len(changes) - 20} more)" if len(changes) > 20 else "")}
    return {"cache": AUTO_DYNAMIC, "state": "unchanged", "detail": "no size or scalar this frame saw before changed"}


def caches_stage(records, events: list[dict], instants: list[dict], options: dict, backend: str,
                 autotune_choices: int = 0, report=None, autotune: list | None = None) -> Caches:
    """``Caches`` of one compile: ``records`` its records, ``events`` its folded timed spans
    (``compiler.stages.timings.fold_events``), ``instants`` its chromium instant events, ``autotune`` the
    capture's autotune choices of this compile (``_note_autotune``)."""
    report = report or (lambda *a: None)
    if not records and not events:
        return Caches(available=False, reason="torch recorded nothing for this compile")
    fx = _logged(records, "fx_graph_cache", FX, report)
    aot = _logged(records, "aotautograd_cache", AOT, report)
    entries = [*(aot or [_not_logged(AOT, backend, options)]), *(fx or [_not_logged(FX, backend, options)]),
               _kernels(fx, events, backend, options), _autotune(fx, events, autotune_choices, options),
               _pgo(records, options), _automatic_dynamic(instants)]
    for entry in entries:
        entry.pop("triton_bundle", None)
    _note_autotune(entries, autotune or [])
    return as_declared(Caches, {"available": True, "entries": entries})  # payloads are torch's: checked as on load


def _note_autotune(entries: list[dict], autotune: list) -> None:
    """The autotuning row said from the capture's autotune choices of this compile (recorded beside the
    records: ``compiler.capturing.autotune``), as the stage is built."""
    if not autotune:
        return
    for entry in entries:
        if entry["cache"] == AUTOTUNE and entry["state"] == "not used":
            entry.update(state="ran", reason=None, detail=f"select_algorithm benchmarked {len(autotune)} choice "
                         "set(s); torch logs no autotune-cache hit or miss (see the Autotune choices)")


def graph_keys(caches) -> set[str]:
    """The FX graph cache keys of a compile's graphs (a ``Caches`` stage): the key Inductor names each compiled
    graph's profiler range with (``## Call CompiledFxGraph <key> ##``); ``"None"`` for a graph compiled without
    the cache (bypassed, disabled, not logged)."""
    return {e.key or "None" for e in caches.entries if e.cache == FX} or {"None"}
