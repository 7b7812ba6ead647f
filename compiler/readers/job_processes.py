"""A many-rank job's logs read side by side, in worker processes (``load_job(path, processes=N)``).

Each worker runs the one per-rank step ``read_rank`` (here) — the step ``load_job`` runs in-process —
on one log and sends back JSON text: a header line (the rank's ``TraceInfo`` with its problems,
its string table and record count, or why it was skipped), then the capture's own JSON (``Capture.to_json``).
The parent rebuilds the capture from that with the capture loader (``Capture.from_data``, every field
checked), so the job is the same as one read in-process: same ranks, compiles, problems, order. No object of
ours is pickled; only file names go out and text comes back.

Workers are started with ``spawn`` (never ``fork``: the parent may hold torch and its threads) and import
no torch: an audit hook refuses it. A rank a worker could not read without torch (a tcompile bug) is
read again in-process, with a warning. An error in a worker (``strict``, a worker that died) shuts the
pool down and is raised as a one-line ``TraceError`` naming the rank file; Ctrl-C in the parent ends the
workers and is raised as itself. A worker dies with its parent, even a parent killed with ``kill -9``
(``PR_SET_PDEATHSIG`` on Linux, else a thread watching the parent), and with the workers gone the
multiprocessing resource tracker sees its pipe close and ends too: nothing is left running.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
import warnings
from collections import Counter
from dataclasses import asdict, fields
from pathlib import Path

from compiler.readers.trace import StoredRecords, TraceError, TraceInfo, TraceProblem, TraceWarning
from compiler.readers.trace_capture import load_trace_file
from compiler.stages.files import shown_path

# The automatic choice (``processes=None``): workers pay for their start (~0.5 s each, the reader's
# imports) and the parent's rebuild from JSON (~15 % of a rank's read) only on many, big logs and cores.
AUTO_MIN_CPUS, AUTO_MIN_LOGS, AUTO_MIN_BYTES, AUTO_MAX_WORKERS = 4, 16, 32 * 2 ** 20, 8
_REFUSED: list[str] = []  # in a worker: the torch modules something tried to import (refused)


def cpu_count() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    if hasattr(os, "process_cpu_count"):  # Python 3.13
        return os.process_cpu_count() or 1
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def worker_count(processes: int | None, logs: list[Path]) -> int:
    """How many worker processes read ``logs``: 0 means in this process. ``processes=None`` chooses:
    workers only with at least 4 CPUs, 16 logs and 32 MB of logs, and only where starting a worker does not
    run the main script again (``spawn`` imports ``__main__`` of a ``python script.py`` in each worker)."""
    if processes is not None:
        if isinstance(processes, bool) or not isinstance(processes, int) or processes < 0:
            raise ValueError(f"processes = {processes!r}: 0 (read in this process), a number of worker "
                             "processes, or None (chosen from the CPUs and the logs)")
        return min(processes, len(logs))
    cpus = cpu_count()
    if cpus < AUTO_MIN_CPUS or len(logs) < AUTO_MIN_LOGS or _reruns_main_script():
        return 0
    size = 0
    for log in logs:
        try:
            size += log.stat().st_size
        except OSError:
            pass
    return min(cpus, len(logs), AUTO_MAX_WORKERS) if size >= AUTO_MIN_BYTES else 0


def _reruns_main_script() -> bool:
    """Whether a spawned worker would import this process's main script again (a ``python script.py``, not
    Jupyter, ``python -c`` or ``python -m pkg``): its top-level code would run in every worker; and in
    a worker itself (no pools of workers from a worker)."""
    import multiprocessing

    if multiprocessing.parent_process() is not None:
        return True
    main = sys.modules.get("__main__")
    name = getattr(getattr(main, "__spec__", None), "name", None)
    if name is not None:
        return not (name == "__main__" or name.endswith(".__main__"))
    return getattr(main, "__file__", None) is not None


# --- one rank: the step run in-process or in a worker ---------------------------------------------

def read_rank(log: Path, strict: bool = False, sources: str = "trace"):
    """One rank's TORCH_TRACE log → its ``Capture`` (what it found wrong in ``cap.trace.problems``), or, where
    it cannot be read, the ``TraceProblem`` saying why it is skipped (``strict``: the error is raised). The one
    per-rank step of a job: ``load_job`` runs it in-process, or in worker processes (``read_ranks``), which
    send back what it made as JSON."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TraceWarning)  # collected into job.problems instead
            return load_trace_file(log, strict=strict, sources=sources)
    except Exception as exc:  # noqa: BLE001 — one bad rank is listed with its reason; the others still load
        if strict:
            raise
        why = _strip_path(exc, log) if isinstance(exc, TraceError) else f"{type(exc).__name__}: {exc}"
        if isinstance(exc, OSError):
            why = f"cannot be read ({exc.strerror or exc})"
        return TraceProblem(shown_path(log), None, "unreadable_file", f"{why}; skipped")


def _strip_path(exc: Exception, path: Path) -> str:
    return str(exc).removeprefix(f"{shown_path(path)}: ").removeprefix(f"{path}: ")


# --- in the worker -------------------------------------------------------------------------------

def _refuse_torch(event, args) -> None:
    if event == "import" and args and isinstance(args[0], str) and (args[0] == "torch" or args[0].startswith("torch.")):
        _REFUSED.append(args[0])
        raise ImportError(f"{args[0]}: a worker reading a job's logs imports no torch")


PR_SET_PDEATHSIG = 1  # linux/prctl.h: the signal this process gets when its parent dies


def _start_worker(parent: int | None = None) -> None:
    sys.addaudithook(_refuse_torch)
    die_with_parent(parent)


def die_with_parent(parent: int | None) -> None:
    """End this process when ``parent`` (the process that started it) ends, however it ends: Linux's
    ``PR_SET_PDEATHSIG`` (SIGKILL from the kernel), else a daemon thread that checks the parent each second."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0:
                if parent is not None and os.getppid() != parent:  # it died before the prctl
                    os._exit(1)
                return
        except (OSError, AttributeError):
            pass
    if parent is None:
        return

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="tcompile-parent-watch", daemon=True).start()


def worker_pool(processes: int):
    """The pool that reads ranks: ``spawn`` workers that import no torch and die with this process."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(max_workers=processes, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_start_worker, initargs=(os.getpid(),))


def read_rank_text(log: str, strict: bool, sources: str) -> str:
    """In a worker: ``read_rank`` of one log → one header line of JSON, then the capture's own JSON."""
    from compiler.stages.data import paused_gc

    _REFUSED.clear()  # what this read tried, not an earlier one in this worker
    try:
        with paused_gc():
            cap = read_rank(Path(log), strict, sources)
            if isinstance(cap, TraceProblem):
                header, body = {"problem": asdict(cap)}, ""
            else:
                header = {"trace": _trace_data(cap.trace), "strings": [[k, v] for k, v in cap.trace_strings.items()],
                          "records": [cap.trace_records.count, cap.trace_records.stamp]}
                body = cap.to_json()
    except BaseException as exc:  # noqa: BLE001 — strict's TraceError, an interrupt: sent back as text
        why = str(exc) if isinstance(exc, TraceError) else f"{shown_path(log)}: {type(exc).__name__}: {exc}"
        header, body = {"error": why or f"{shown_path(log)}: {type(exc).__name__}"}, ""
    header["torch"] = {"refused": list(_REFUSED), "loaded": "torch" in sys.modules}
    return json.dumps(header, separators=(",", ":")) + "\n" + body


def _trace_data(info: TraceInfo) -> dict:
    return {f.name: getattr(info, f.name) if f.name != "problems" else [asdict(p) for p in info.problems]
            for f in fields(TraceInfo)}


# --- in the parent -------------------------------------------------------------------------------

def _rebuild(log: Path, text: str):
    """A worker's text → the rank's Capture (the capture loader checks every field) or its TraceProblem."""
    from compiler.stages.capture import Capture
    from compiler.stages.data import paused_gc, read_json_text

    head, _, body = text.partition("\n")
    header = json.loads(head)
    if "problem" in header:
        return TraceProblem(**header["problem"])
    data = header["trace"]
    if set(data) != {f.name for f in fields(TraceInfo)}:
        raise TraceError(f"{shown_path(log)}: a worker sent back trace info with fields {sorted(data)}")
    info = TraceInfo(**{**data, "kinds": Counter(data["kinds"]),
                        "problems": [TraceProblem(**p) for p in data["problems"]]})
    count, stamp = header["records"]
    records = StoredRecords(log, count)
    records.stamp = tuple(stamp) if stamp is not None else None  # the file as the worker read it
    with paused_gc():
        return Capture.from_data(read_json_text(body, Capture.document), trace=info, trace_records=records,
                                 trace_strings={int(k): v for k, v in header["strings"]})


def read_ranks(logs: list[Path], strict: bool, sources: str, processes: int) -> list:
    """``read_rank`` of every log, in ``processes`` worker processes: the captures (or TraceProblems) in the
    order of ``logs``. An error is raised as the first log's (in their order) that failed."""
    from concurrent.futures import as_completed

    pool = worker_pool(processes)
    done, errors = {}, {}
    try:
        pending = {pool.submit(read_rank_text, str(log), strict, sources): index for index, log in enumerate(logs)}
        for future in as_completed(list(pending)):
            index = pending.pop(future)
            if future.cancelled():
                continue
            log = logs[index]
            try:
                text = future.result()
            except Exception as exc:  # noqa: BLE001 — a worker that died (BrokenProcessPool) and the like
                hint = ("; if the workers died as they started: a script that starts worker processes needs "
                        "if __name__ == '__main__': (or processes=0)" if not done and _reruns_main_script() else "")
                errors[index] = (f"{shown_path(log)}: a worker process failed before this log was read "
                                 f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}){hint}")
                text = None
            header = json.loads(text.partition("\n")[0]) if text else {}
            if header.get("error"):
                errors[index] = header["error"]
            elif header.get("torch", {}).get("refused"):
                warnings.warn(f"{shown_path(log)}: reading it in a worker process tried to import "
                              f"{', '.join(sorted(set(header['torch']['refused'])))} (refused there): read "
                              "in this process instead", RuntimeWarning, stacklevel=4)
                done[index] = read_rank(log, strict, sources)
            elif text:
                done[index] = _rebuild(log, text)
            del text
            if errors:  # the logs after the first that failed are not needed: its error is raised
                first = min(errors)
                for other, i in pending.items():
                    if i > first:
                        other.cancel()
                if all(i in done or i in errors for i in range(first)):
                    break
    except BaseException:  # Ctrl-C (or a failure rebuilding a rank): the workers are ended, then it is raised
        _end(pool)
        raise
    if errors:
        _end(pool)
        raise TraceError(errors[min(errors)].splitlines()[0])
    pool.shutdown(wait=True)
    return [done[index] for index in range(len(logs))]


def _end(pool) -> None:
    """Shut the pool down now: queued reads cancelled, running workers ended."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=5)
