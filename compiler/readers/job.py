"""A distributed job: one Capture per rank (from TORCH_TRACE logs or from tcompile captures saved
with ``capture(job_dir=...)``), and what the ranks did differently (``Job.divergences``).

A rank that compiles differently from the others (other graphs, another recompile, a different
collective schedule) can hang or slow the whole job; each finding says which ranks did what, in
plain words, with the reasons and user lines torch logged.
"""
from __future__ import annotations

import json
import os
import re
import stat
import statistics
import warnings
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from compiler.stages.records import number
from compiler.drawing import draw
from compiler.stages.files import shown_path
from compiler.readers.trace import TraceError, TraceProblem, TraceWarning, version_tuple
from compiler.readers.job_processes import read_rank, read_ranks, worker_count
from compiler.readers.trace_capture import load_trace_file
from compiler.readers.divergences import EVENT_KINDS, Divergence, job_divergences, plain_reason, ranks_text
from compiler.readers.watch_log import WATCH_PREFIX, WATCH_SUFFIX, read_watch_file
from compiler.stages.schema import paused_gc

_RANK_IN_NAME = re.compile(r"rank_(\d+)")
TRACE_PREFIX = "dedicated_log_torch_trace"
CAPTURE_PREFIX = "tcompile_capture_rank_"
CAPTURE_SUFFIXES = (".json", ".json.gz")  # a saved capture, plain or gzip-compressed (JsonFile.save)
# Compile time spread worth a finding: the slowest rank over the fastest, and at least this much.
SLOW_RATIO, SLOW_MIN_S = 1.5, 0.5


@dataclass
class Job:
    """The ranks of one job: ``captures`` (rank → Capture), the file each came from, what was
    skipped or suspicious while reading (``problems``), and ``divergences``."""

    path: str
    captures: dict[int, object]
    files: dict[int, str]
    problems: list[TraceProblem] = field(default_factory=list)
    divergences: list[Divergence] = field(default_factory=list)
    source: str = "torch_trace"  # or "tcompile_capture"
    watches: dict = field(default_factory=dict)  # rank → its watch file (``compiler.readers.watch_log.RankWatch``)

    @property
    def ranks(self) -> list[int]:
        return sorted(self.captures)

    def __getitem__(self, rank: int):
        return self.captures[rank]

    def compile_times(self) -> dict[int, float]:
        return {rank: _compile_time(cap) for rank, cap in sorted(self.captures.items())}

    def as_text(self) -> str:
        lines = [f"job {self.path}: {len(self.captures)} ranks ({self.source}), "
                 f"{len(self.divergences) or 'no'} divergence{'s' if len(self.divergences) != 1 else ''}"]
        lines += [d.as_text() for d in self.divergences]
        lines += [f"skipped/warning: {p}" for p in self.problems]
        for rank, cap in sorted(self.captures.items()):
            lines.append(f"rank {rank}: {self.files[rank]} — {len(cap.compiles)} compiles, "
                         f"{cap.summary.graph_breaks} graph breaks, {cap.summary.recompiles} recompiles, "
                         f"compile time {_compile_time(cap):.3g} s")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"<Job {len(self.captures)} ranks {self.ranks}, "
                f"{len(self.divergences)} divergences: {[d.kind for d in self.divergences]}>")

    def _repr_html_(self) -> str:
        return draw("job", self, self.as_text)


# --- loading -------------------------------------------------------------------------------------

def load_trace(path, strict: bool = False, sources: str = "trace"):
    """Read what a torch.compile job left behind:

    - a TORCH_TRACE log file → a ``Capture`` (assembled like a live one);
    - a directory of per-rank logs, or of captures saved with ``capture(job_dir=...)`` → a ``Job``;
    - a tcompile capture JSON file (``.json``, or gzip-compressed ``.json.gz``) → that ``Capture``.

    ``strict=True`` turns a corrupted line or a payload md5 mismatch into a ``TraceError``.
    ``sources="local"`` reads the source files a log names from this machine (regular ``.py`` files
    only, size-capped); by default a log's sources are not read (``compiler.source_files``)."""
    if not str(path).strip():
        raise TraceError("no path given: name a TORCH_TRACE log, a job directory or a tcompile capture (.json)")
    path = Path(path)
    if not path.exists():
        raise TraceError(f"{shown_path(path)}: no such file or directory")
    with paused_gc():
        if path.is_dir():
            return load_job(path, strict=strict, sources=sources)
        if path.name.endswith(CAPTURE_SUFFIXES):
            from compiler.stages.capture import Capture

            return Capture.load(path)
        return load_trace_file(path, strict=strict, sources=sources)


def load_job(path, strict: bool = False, sources: str = "trace", processes: int | None = None) -> Job:
    """A directory of TORCH_TRACE logs (``dedicated_log_torch_trace_rank_N_*.log``) or of tcompile
    captures saved with ``capture(job_dir=...)`` → a ``Job``. Files that are empty, unreadable or
    not logs are reported in ``job.problems`` and skipped; every other rank still loads.

    ``processes``: how the logs are read — ``0`` one after another in this process, ``N`` side by side
    in N worker processes (``compiler.readers.job_processes``; the same job either way), ``None``
    (default) in worker processes only where they pay: at least 4 CPUs, 16 logs and 32 MB of them.
    As with any process pool, a script that calls it at top level needs ``if __name__ == "__main__":``."""
    path = Path(path)
    shown = shown_path(path)
    if not path.exists():
        raise TraceError(f"{shown}: no such file or directory")
    if not path.is_dir():
        raise TraceError(f"{shown}: not a directory")
    try:
        entries = sorted(path.iterdir())
    except OSError as exc:
        raise TraceError(f"{shown}: cannot list the directory ({exc.strerror or exc})") from None
    files, problems = _regular_files(path, entries)
    captures = [p for p in files if p.name.startswith(CAPTURE_PREFIX) and p.name.endswith(CAPTURE_SUFFIXES)]
    logs = [p for p in files if p.name.startswith(TRACE_PREFIX) or p.suffix == ".log"]
    watches, watch_problems = watch_ranks([p for p in files if is_watch_name(p.name)])
    files = [p for p in files if not is_watch_name(p.name)]
    if not logs and not captures:
        raise TraceError(f"{shown}: no TORCH_TRACE logs (dedicated_log_torch_trace_*.log) and no tcompile "
                         f"captures ({CAPTURE_PREFIX}N.json or .json.gz) in this directory")
    problems += [TraceProblem(shown_path(p), None, "skipped_file",
                              "a tcompile capture next to TORCH_TRACE logs: the job is read from the logs; skipped"
                              if p in captures and logs else "not a TORCH_TRACE log or a tcompile capture; skipped")
                 for p in files if p not in logs and (p not in captures or logs)]
    job = Job(path=shown, captures={}, files={}, problems=problems,
              source="torch_trace" if logs else "tcompile_capture")
    if logs:
        _load_logs(job, logs, strict, sources, worker_count(processes, logs))
    else:
        _load_captures(job, captures)
    if not job.captures:
        raise TraceError(f"{shown}: none of its {len(entries)} entries could be read as a rank: "
                         + "; ".join(str(p) for p in job.problems))
    _check_versions(job)
    unread = _unread_ranks(job)
    job.watches = {rank: read_watch_file(p, rank) for rank, p in watches.items()}
    job.problems += watch_problems + [p for w in job.watches.values() for p in w.problems]
    job.divergences = ([unread] if unread else []) + _divergences(job)
    for found in job.problems:
        warnings.warn(TraceWarning(str(found)), stacklevel=3)
    return job


def is_watch_name(name: str) -> bool:
    return name.startswith(WATCH_PREFIX) and name.endswith(WATCH_SUFFIX)


_WATCH_RANK = re.compile(r"[0-9]{1,9}")


def watch_ranks(paths: list[Path], known: dict[int, str] | None = None) -> tuple[dict[int, Path], list[TraceProblem]]:
    """Watch files (``tcompile_watch_rank_N.jsonl``) by rank — what the loader and the follower read alike. A name
    whose N is no rank number (``rank_-1``, ``rank_x``) and a second file of one rank (``rank_1`` and ``rank_01``;
    ``known``: rank → file already read) are said and kept apart: not read into that rank."""
    known = dict(known or {})
    out, problems = {}, []
    for path in sorted(paths, key=lambda p: (len(p.name), p.name)):  # rank_1 before rank_01
        middle = path.name[len(WATCH_PREFIX):-len(WATCH_SUFFIX)]
        if not _WATCH_RANK.fullmatch(middle):
            problems.append(TraceProblem(shown_path(path), None, "bad_rank", f"the rank in its name ({middle[:40]!r}) "
                                         "is not a rank number (0, 1, …); not read"))
            continue
        rank = int(middle)
        if rank in known:
            problems.append(TraceProblem(shown_path(path), None, "duplicate_rank",
                                         f"rank {rank} again (also {known[rank]}): kept apart, not read into rank {rank}"))
            continue
        known[rank], out[rank] = shown_path(path), path
    return out, problems


def _regular_files(folder: Path, entries: list[Path]) -> tuple[list[Path], list[TraceProblem]]:
    """The regular files of a job directory; each other entry (a sub-directory, FIFO, device, socket,
    dangling or looping symlink, a symlink to a file outside the directory) is reported and skipped:
    a shared job directory is read, nothing it points to elsewhere."""
    files, problems = [], []
    inside = os.path.realpath(folder)
    for entry in entries:
        why = None
        try:
            info = entry.stat()
        except OSError as exc:  # dangling (ENOENT), a loop (ELOOP), unreadable
            why = (f"a symlink that points nowhere ({exc.strerror})" if entry.is_symlink()
                   else f"cannot be read ({exc.strerror or exc})")
        else:
            real = os.path.realpath(entry)
            if entry.is_symlink() and os.path.commonpath([inside, real]) != inside:
                why = "a symlink to a file outside the directory, not followed"
            elif stat.S_ISDIR(info.st_mode):
                why = "a directory (a job's logs are the files directly in it)"
            elif not stat.S_ISREG(info.st_mode):
                why = "not a regular file (a FIFO, socket or device), not read"
        if why:
            problems.append(TraceProblem(shown_path(entry), None, "skipped_file", f"{why}; skipped"))
        else:
            files.append(entry)
    return files, problems


def _load_logs(job: Job, logs: list[Path], strict: bool, sources: str, processes: int) -> None:
    if processes:
        read = read_ranks(logs, strict, sources, processes)
    else:
        read = (read_rank(log, strict, sources) for log in logs)
    unranked = []
    for log, cap in zip(logs, read):
        shown = shown_path(log)
        if isinstance(cap, TraceProblem):
            job.problems.append(cap)
            continue
        job.problems.extend(cap.trace.problems)
        named = _RANK_IN_NAME.search(log.name)
        rank = int(named[1]) if named else (cap.trace.ranks[0] if cap.trace.ranks else None)
        if named and cap.trace.ranks and cap.trace.ranks != [rank]:
            job.problems.append(TraceProblem(shown, None, "rank_mismatch",
                                             f"named rank {rank} but its records say rank "
                                             f"{', '.join(map(str, cap.trace.ranks))}; using the file name"))
        if rank is None or rank in job.captures:
            unranked.append((log, cap))
            continue
        job.captures[rank], job.files[rank] = cap, shown
    for log, cap in unranked:
        rank = max(job.captures, default=-1) + 1
        job.problems.append(TraceProblem(shown_path(log), None, "rank_guessed",
                                         f"no rank in the file name or records (or a duplicate); shown as rank {rank}"))
        job.captures[rank], job.files[rank] = cap, shown_path(log)


def _load_captures(job: Job, files: list[Path]) -> None:
    from compiler.stages.capture import Capture
    from compiler.stages.schema import CaptureFormatError

    for file in files:
        shown = shown_path(file)
        try:
            cap = Capture.load(file)
        except CaptureFormatError as exc:
            job.problems.append(TraceProblem(shown, None, "unreadable_file", f"{exc}; skipped"))
            continue
        except Exception as exc:  # noqa: BLE001 — one rank's file (OSError, a loader bug) never costs the others
            why = f"cannot be read ({exc.strerror or exc})" if isinstance(exc, OSError) else f"{type(exc).__name__}: {exc}"
            job.problems.append(TraceProblem(shown, None, "unreadable_file", f"{why}; skipped"))
            continue
        rank = cap.environment.get("rank")
        if not isinstance(rank, int) or isinstance(rank, bool) or rank < 0:
            if rank is not None:
                job.problems.append(TraceProblem(shown, None, "bad_field", f"environment.rank = {rank!r:.80}: not "
                                                 "a rank number; the file name or order is used", "environment.rank"))
            named = _RANK_IN_NAME.search(file.name)
            rank = int(named[1]) if named else len(job.captures)
        if rank in job.captures:
            job.problems.append(TraceProblem(shown, None, "duplicate_rank",
                                             f"rank {rank} again (also {job.files[rank]}); skipped"))
            continue
        job.captures[rank], job.files[rank] = cap, shown


UNREAD_KINDS = ("unreadable_file", "skipped_file", "empty_file")  # problems that leave a file unread


def _divergences(job: Job) -> list[Divergence]:
    """What the ranks did differently. Where every rank wrote a watch file (``compiler.watch(job_dir=...)``), its
    compiles, recompiles, graph breaks and compile time come from those files, one divergence per event with
    its step, guard and fix (``compiler.readers.divergences``: the follower's own account); the captures add
    what only they hold (collective schedules, cache, runtime estimates). Else they all come from the captures,
    with no step."""
    found = find_divergences(job.captures, job.problems, job.path)
    if len(job.captures) < 2 or not set(job.captures) <= set(job.watches):
        return found
    return job_divergences({rank: job.watches[rank] for rank in job.captures}) + \
        [d for d in found if d.kind not in EVENT_KINDS]


def _unread_ranks(job: Job) -> Divergence | None:
    """A rank whose file names it (``…rank_N…``) but could not be read: what it compiled is unknown, so no
    comparison of the others can say the ranks compiled alike — severity "error", like a diverging rank."""
    unread: dict[int, str] = {}
    for problem in job.problems:
        named = _RANK_IN_NAME.search(Path(problem.file).name)
        if problem.kind in UNREAD_KINDS and named and int(named[1]) not in job.captures:
            unread.setdefault(int(named[1]), problem.message.removesuffix("; skipped"))
    if not unread:
        return None
    groups = [sorted(job.captures), sorted(unread)]
    whys = [f"could not be read ({why})" if len(unread) == 1 else f"rank {rank}: {why}"
            for rank, why in sorted(unread.items())]
    behaviours = ["loaded", "; ".join(whys) if len(unread) == 1 else "could not be read — " + "; ".join(whys)]
    return Divergence("unread_ranks", groups, behaviours,
                      f"{ranks_text(sorted(unread)).capitalize()} could not be read, so what {'it' if len(unread) == 1 else 'they'} "
                      "compiled is unknown: every other finding compares only the ranks that loaded, and a "
                      "missing rank may be the one that diverged.", severity="error")


def _check_versions(job: Job) -> None:
    versions = {rank: cap.environment.get("torch") for rank, cap in job.captures.items()}
    known = {r: v for r, v in versions.items() if v}
    if len({version_tuple(v) or v for v in known.values()}) > 1:
        for rank, version in sorted(known.items()):
            job.problems.append(TraceProblem(job.files[rank], None, "torch_mismatch",
                                             f"rank {rank} ran torch {version}; the ranks ran different torch "
                                             "versions, so their compiles are not expected to match"))


# --- what each rank did (the few places that read capture data) ----------------------------------

def _compile_time(cap) -> float:
    return round(sum(c.compile_seconds or 0 for c in cap.compiles), 4)


def _compile_ids(cap) -> tuple[str, ...]:
    return tuple(c.compile_id for c in cap.compiles)


def _breaks(cap) -> tuple:
    return tuple(sorted({(b.file or "?", b.line or 0, b.headline or b.reason[:200]) for b in cap.breaks.items}))


_OBJECT_ID = re.compile(r"\b\d{9,}\b")  # id() of a Python object: differs per process, never a divergence


def _recompiles(cap) -> tuple:
    return tuple((r.compile_id, r.name, tuple(_OBJECT_ID.sub("<id>", reason.text) for reason in r.reasons))
                 for r in cap.recompiles)


def _cache(cap) -> tuple:
    out = []
    for c in cap.compiles:
        states = tuple(_cache_state(e.artifact) for e in c.timings.cache) if c.timings.available else ()
        if states:
            out.append((c.compile_id, states))
    return tuple(out)


def _cache_state(artifact: str) -> str:
    what = "AOTAutograd" if artifact.startswith("aotautograd") else "FX graph"
    return f"{what} cache {artifact.rsplit('_', 1)[-1]}"


def _phases(cap) -> dict[str, float]:
    totals: dict[str, float] = defaultdict(float)
    for c in cap.compiles:
        if c.timings.available:
            for phase in c.timings.phases:
                totals[phase.label] += phase.seconds
    return dict(totals)


def _artifacts(cap, name: str) -> dict[str, object]:
    """The JSON payloads of an artifact tcompile keeps as an unknown record, by compile id."""
    out = {}
    for record in cap.extra_records:
        if isinstance(record, dict) and record.get("kind") == f"artifact:{name}":
            try:
                out[record.get("compile_id") or "-"] = json.loads(record.get("payload") or "null")
            except (ValueError, RecursionError):  # not JSON, an int of 4,300+ digits, nested too deep
                out[record.get("compile_id") or "-"] = record.get("payload")
    return out


# --- comparing -----------------------------------------------------------------------------------

def _group(signatures: dict[int, object]) -> list[list[int]]:
    """Ranks with equal signatures, largest group first (the majority behaviour leads)."""
    groups: dict = defaultdict(list)
    for rank, signature in sorted(signatures.items()):
        groups[json.dumps(signature, sort_keys=True, default=str)].append(rank)
    return sorted(groups.values(), key=lambda g: (-len(g), g))


def _short_list(items, limit: int = 6) -> str:
    items = list(items)
    text = ", ".join(items[:limit])
    return text + (f" … ({len(items)} in all)" if len(items) > limit else "")


def find_divergences(captures: dict[int, object], problems: list | None = None, where: str = "job") -> list[Divergence]:
    """Everything the ranks did differently, most likely to hang the job first. A check that cannot
    read what the ranks logged (artifacts of an unexpected form) is skipped and named in ``problems``."""
    if len(captures) < 2:
        return []
    found = []
    for check in (_diverging_compile_ids, _diverging_recompiles, _diverging_breaks, _diverging_schedules,
                  _diverging_execution_order, _diverging_tensor_meta, _diverging_runtime, _diverging_cache,
                  _diverging_compile_time):
        try:
            finding = check(captures)
        except Exception as exc:  # noqa: BLE001 — one comparison must not cost the job its other findings
            if problems is not None:
                problems.append(TraceProblem(where, None, "bad_stage", f"the {check.__name__.removeprefix('_')} "
                                             f"check is skipped: {type(exc).__name__}: {exc}"))
            continue
        if finding:
            found.append(finding)
    return found


def _diverging_compile_ids(captures) -> Divergence | None:
    ids = {rank: _compile_ids(cap) for rank, cap in captures.items()}
    groups = _group(ids)
    if len(groups) < 2:
        return None
    common = set.intersection(*(set(v) for v in ids.values()))
    behaviours = []
    for group in groups:
        mine = ids[group[0]]
        extra = [i for i in mine if i not in common]
        behaviours.append(f"{len(mine)} compile{'s' if len(mine) != 1 else ''}"
                          + (f"; only here: {_short_list(extra)}" if extra else "; nothing the others lack"))
    return Divergence(
        "compile_ids", groups, behaviours,
        f"The ranks compiled different sets of graphs ({len(common)} compile ids are on every rank). A rank "
        "that compiles graphs the others do not usually saw different inputs (shapes, dtypes) or took "
        "another code path. While it compiles, the other ranks wait at the next collective (skew; a long "
        "compile can trip the collective timeout); only collectives inside the compiled graphs (functional "
        "collectives, compiled autograd) can differ between ranks and hang the job — DDP's gradient "
        "allreduces run from autograd hooks, outside the graph.",
        severity="error")


def _diverging_recompiles(captures) -> Divergence | None:
    sig = {rank: _recompiles(cap) for rank, cap in captures.items()}
    groups = _group(sig)
    if len(groups) < 2:
        return None
    behaviours = []
    for group in groups:
        recompiles = sig[group[0]]
        if not recompiles:
            behaviours.append("no recompiles")
            continue
        parts = []
        for compile_id, name, reasons in recompiles[:4]:
            frame = compile_id.split("/")[0]
            reason = plain_reason(reasons[0]) if reasons else "unknown reason"
            parts.append(f"recompiled frame {frame} ({name}) as {compile_id} because {reason}")
        behaviours.append("; ".join(parts) + (f"; … {len(recompiles)} in all" if len(recompiles) > 4 else ""))
    first_odd = groups[-1]
    # the first guard those ranks failed that not every rank failed (one every rank failed is no difference)
    failed = [{text.partition(". ")[0] for r in recompiles for text in r[2]} for recompiles in sig.values()]
    common = set.intersection(*failed)
    raw = next((text for r in sig[first_odd[0]] for text in r[2] if text.partition(". ")[0] not in common), None)
    reason = plain_reason(raw) if raw else None
    explanation = ("The ranks recompiled differently: a guard failed on some ranks only"
                   + (f" ({ranks_text(first_odd)}: {reason})" if reason else "") + ". ")
    if reason and "changed" in reason:
        explanation += ("Those ranks saw an input of another shape (e.g. another batch size): mark that dimension "
                        "dynamic (torch._dynamo.mark_dynamic) or give every rank the same shapes.")
    else:
        explanation += "Those ranks saw inputs or state the others did not; the reasons below name the guard."
    return Divergence("recompiles", groups, behaviours, explanation, severity="error",
                      guard=raw.partition(". ")[0] if raw else None)


def _diverging_breaks(captures) -> Divergence | None:
    sig = {rank: _breaks(cap) for rank, cap in captures.items()}
    groups = _group(sig)
    if len(groups) < 2:
        return None
    behaviours = [("; ".join(f"{Path(f).name}:{line} {headline}" for f, line, headline in sig[g[0]][:4])
                   or "no graph breaks") for g in groups]
    return Divergence("graph_breaks", groups, behaviours,
                      "The ranks broke their graphs at different places: they traced different code "
                      "(a rank-dependent branch, or data-dependent control flow), so they run different graphs.")


def _diverging_schedules(captures) -> Divergence | None:
    schedules = {rank: _artifacts(cap, "inductor_collective_schedule") for rank, cap in captures.items()}
    if not any(schedules.values()):
        return None
    groups = _group(schedules)
    if len(groups) < 2:
        return None
    behaviours = []
    for group in groups:
        per_graph = schedules[group[0]]
        behaviours.append(", ".join(f"{cid}: {len(ops) if isinstance(ops, list) else '?'} collective ops"
                                    for cid, ops in sorted(per_graph.items())) or "no collectives logged")
    return Divergence("collective_schedule", groups, behaviours,
                      "Diverging collective operation sequences: Inductor scheduled different collectives "
                      "(or the same ones in another order) on these ranks. Collectives must match across "
                      "ranks, or the job hangs waiting for a collective another rank never issues.",
                      severity="error")


def _diverging_execution_order(captures) -> Divergence | None:
    orders = {rank: _artifacts(cap, "graph_execution") for rank, cap in captures.items()}
    if not any(orders.values()):
        return None
    groups = _group(orders)
    if len(groups) < 2:
        return None
    behaviours = [json.dumps(list(orders[g[0]].values())[:1])[:200] for g in groups]
    return Divergence("execution_order", groups, behaviours,
                      "Graph execution order differs across ranks: the compiled graphs ran in another order "
                      "on these ranks, so their collectives interleave differently.", severity="error")


def _tensor_meta(payload) -> list:
    ops = payload.get("ops", []) if isinstance(payload, dict) else []
    return [[op.get("name"), op.get("outputs")] for op in ops if isinstance(op, dict)]


def _runtime_ns(payload) -> float:
    ops = payload.get("ops", []) if isinstance(payload, dict) else []
    return sum(op["estimated_runtime_ns"] for op in ops
               if isinstance(op, dict) and number(op.get("estimated_runtime_ns")))


def _diverging_tensor_meta(captures) -> Divergence | None:
    metas = {rank: _artifacts(cap, "inductor_runtime_and_tensor_meta") for rank, cap in captures.items()}
    if not all(metas.values()):
        return None
    common = set.intersection(*(set(m) for m in metas.values()))
    sig = {rank: {cid: _tensor_meta(m[cid]) for cid in sorted(common)} for rank, m in metas.items()}
    groups = _group(sig)
    if not common or len(groups) < 2:
        return None
    behaviours = [f"{sum(len(v) for v in sig[g[0]].values())} ops; output shapes/strides/dtypes as the "
                  + ("majority" if i == 0 else "others do not") for i, g in enumerate(groups)]
    return Divergence("tensor_meta", groups, behaviours,
                      "Ranks exhibit divergent inductor tensor meta: the same compiled graphs "
                      f"({_short_list(sorted(common))}) produce tensors of other shapes, strides or dtypes on "
                      "these ranks, so their kernels and communication sizes differ.", severity="error")


def _diverging_runtime(captures) -> Divergence | None:
    metas = {rank: _artifacts(cap, "inductor_runtime_and_tensor_meta") for rank, cap in captures.items()}
    if not any(metas.values()):
        return None
    all_ids = set().union(*(set(m) for m in metas.values()))
    missing = {rank: sorted(all_ids - set(m)) for rank, m in metas.items() if all_ids - set(m)}
    totals = {rank: round(sum(_runtime_ns(p) for p in m.values()) / 1e6, 3) for rank, m in metas.items()}
    if missing:
        groups = _group({rank: missing.get(rank, []) for rank in metas})
        behaviours = [("no estimate for " + ", ".join(missing[g[0]])) if g[0] in missing else
                      f"estimates for every graph ({totals[g[0]]} ms in all)" for g in groups]
        return Divergence("runtime_estimates", groups, behaviours,
                          "Runtime analysis not available across all ranks: some ranks lack Inductor's runtime "
                          "estimate for graphs others have (they did not compile those graphs, or hit a cache).",
                          severity="info")
    groups = _group(totals)
    if len(groups) < 2:
        return None
    fastest = min(totals.values())
    behaviours = [f"{totals[g[0]]} ms estimated ({totals[g[0]] - fastest:+.3f} ms delta)" for g in groups]
    return Divergence("runtime_estimates", groups, behaviours,
                      "Graph runtime analysis: Inductor's estimated runtime of the compiled graphs differs "
                      "across ranks; the slowest rank sets the pace of every collective.", severity="info")


def _diverging_cache(captures) -> Divergence | None:
    sig = {rank: _cache(cap) for rank, cap in captures.items()}
    if not any(sig.values()):
        return None
    groups = _group(sig)
    if len(groups) < 2:
        return None
    behaviours = []
    for group in groups:
        states = sig[group[0]]
        counts = defaultdict(int)
        for _, per_compile in states:
            for state in per_compile:
                counts[state] += 1
        behaviours.append(", ".join(f"{n} × {state}" for state, n in sorted(counts.items())) or "no cache lookups")
    return Divergence("cache", groups, behaviours,
                      "Diverging cache hit/miss patterns: some ranks loaded compiled code from Inductor's cache "
                      "while others compiled it, so their compile times (and possibly code) differ.", severity="info")


def _diverging_compile_time(captures) -> Divergence | None:
    times = {rank: _compile_time(cap) for rank, cap in captures.items()}
    slowest = max(times, key=times.get)
    fastest = min(times, key=times.get)
    if times[slowest] - times[fastest] < SLOW_MIN_S or times[slowest] < SLOW_RATIO * max(times[fastest], 1e-9):
        return None
    phases = {rank: _phases(cap) for rank, cap in captures.items()}
    others = [r for r in captures if r != slowest]
    stage, extra = None, 0.0
    for label, seconds in phases[slowest].items():
        typical = statistics.median(phases[r].get(label, 0.0) for r in others)
        if seconds - typical > extra:
            stage, extra = label, seconds - typical
    slow_group = [r for r in times if times[r] >= SLOW_RATIO * max(times[fastest], 1e-9)]
    fast_group = [r for r in sorted(times) if r not in slow_group]
    where = f", most of it in {stage} (+{extra:.2f} s over the other ranks' median)" if stage else ""
    return Divergence("compile_time", [sorted(slow_group), fast_group],
                      [", ".join(f"rank {r}: {times[r]:.2f} s" for r in sorted(slow_group)),
                       ", ".join(f"rank {r}: {times[r]:.2f} s" for r in fast_group)],
                      f"Rank {slowest} spent the longest compiling ({times[slowest]:.2f} s vs {times[fastest]:.2f} s "
                      f"on rank {fastest}){where}. The other ranks wait for it at the first collective.",
                      severity="info")


# --- saving a rank's capture ---------------------------------------------------------------------

def save_rank(capture, job_dir) -> Path:
    """Save ``capture`` as ``job_dir/tcompile_capture_rank_N.json`` (N: the rank it recorded, 0
    outside a distributed job), so ``load_trace(job_dir)`` loads the job's captures as a ``Job``."""
    job_dir = Path(job_dir)
    job_dir.mkdir(parents=True, exist_ok=True)
    rank = capture.environment.get("rank")
    if rank is None:
        from compiler.stages.environment import distributed

        rank = distributed().get("rank", 0)
    return capture.save(job_dir / f"{CAPTURE_PREFIX}{int(rank)}.json")
