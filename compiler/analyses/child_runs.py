"""One analysis in a child Python process, bounded in time, with its progress as it goes and a Stop.

``minify`` and ``bisect_drift`` compile the captured function many times over, under torch settings
(``repro_after``, the bisector's state) that must not touch the user's process: each runs in a child
(``python -m MODULE WORK``) that reads its function and calls from ``WORK/payload.pkl`` (``dill``, as the fix
workers and cache runs do) and its settings from ``WORK/spec.json``, prints progress lines, and writes
``WORK/result.json``. ``run_child`` starts it in a session of its own, hands each line it prints to
``progress``, and stops the whole process group (SIGTERM, then SIGKILL) once ``timeout`` seconds are spent,
``should_stop()`` says so, or Ctrl-C interrupts — nothing is left running on any way out.
"""
from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

GRACE_S = 5.0  # after SIGTERM, before SIGKILL


@dataclass
class ChildOutcome:
    returncode: int | None
    result: dict | None  # WORK/result.json, when the child wrote it
    lines: list[str] = field(default_factory=list)  # what it printed (stdout)
    stderr_tail: str = ""
    stopped: str | None = None  # why it was stopped: the time budget, Stop
    seconds: float = 0.0


def child_env(work: str, own_cache: bool = True) -> dict:
    """The child's environment: this tcompile importable, an Inductor cache of its own (``own_cache``; else this
    process's, whose compiled kernels it reuses), no TORCH_TRACE / TORCH_LOGS of the parent."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCH_TRACE", "TORCH_LOGS", "TORCH_COMPILE_DEBUG",
                                                                    "TORCH_BISECT", "TORCHDYNAMO_REPRO"))}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(p for p in [root, os.getcwd(), *sys.path] if p and os.path.isdir(p)))
    if own_cache:
        env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(work, "inductor-cache")
        env["TRITON_CACHE_DIR"] = os.path.join(work, "inductor-cache", "triton")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def write_payload(work: str, fn, calls, compile_kwargs: dict, no_grad: bool, spec: dict) -> str | None:
    """Write the function, its calls and the child's settings into ``work``; → why not (dill failed) or None.
    With ``spec["build"]`` (``"module:function"``, returning ``(fn, calls)``), the child builds them itself: no dill."""
    with open(os.path.join(work, "spec.json"), "w", encoding="utf-8") as f:
        json.dump({**spec, "compile_kwargs": compile_kwargs if spec.get("build") else None, "no_grad": no_grad}, f)
    if spec.get("build"):
        return None
    try:
        import dill
    except ImportError:
        return ("dill is not installed: the function cannot be sent to a child process (pip install dill, or pass "
                "build='module:function' returning (fn, calls))")
    try:
        with open(os.path.join(work, "payload.pkl"), "wb") as f:
            dill.dump({"fn": fn, "calls": calls, "compile_kwargs": compile_kwargs, "no_grad": no_grad}, f, recurse=True)
    except Exception as exc:  # noqa: BLE001 — what dill cannot pickle makes the analysis unavailable
        return (f"the function or its arguments could not be sent to a child process (dill: {type(exc).__name__}: "
                f"{str(exc)[:300]})")
    return None


def read_payload(work: str) -> tuple[dict, dict]:
    """(payload, spec): the function, calls, compile options and grad mode — unpickled, or built by ``spec["build"]``."""
    with open(os.path.join(work, "spec.json"), encoding="utf-8") as f:
        spec = json.load(f)
    if spec.get("build"):
        import importlib

        module, _, name = spec["build"].partition(":")
        fn, calls = getattr(importlib.import_module(module), name)()
        return {"fn": fn, "calls": [(tuple(a), dict(k)) for a, k in calls], "compile_kwargs": spec["compile_kwargs"],
                "no_grad": spec["no_grad"]}, spec
    import dill

    with open(os.path.join(work, "payload.pkl"), "rb") as f:
        return dill.load(f), spec


def run_prepare(code: str | None) -> None:
    """The spec's ``prepare`` code (what the user's process had set up: a registered backend, a patched pass),
    run in the child before anything compiles — text the user passed, never text read from a capture file."""
    if code:
        exec(compile(code, "<prepare>", "exec"), {"__name__": "__prepare__"})  # noqa: S102


def run_child(module: str, work: str, timeout: float, progress=None, should_stop=None,
              own_cache: bool = True) -> ChildOutcome:
    """Run ``python -m module work`` (see the module doc); → what it printed, its result and why it stopped."""
    start = time.monotonic()
    lines: "queue.Queue[str | None]" = queue.Queue()
    with tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen([sys.executable, "-m", module, work], stdout=subprocess.PIPE, stderr=stderr,
                                   env=child_env(work, own_cache), cwd=work, text=True, start_new_session=True)

        def read():
            for line in process.stdout:
                lines.put(line.rstrip("\n"))
            lines.put(None)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        seen: list[str] = []
        stopped = None
        try:
            while True:
                try:
                    line = lines.get(timeout=0.2)
                except queue.Empty:
                    line = ""
                if line is None:
                    break
                if line:
                    seen.append(line)
                    if progress is not None:
                        progress(line)
                if time.monotonic() - start > timeout:
                    stopped = f"stopped after its time budget of {timeout:.0f} s"
                elif should_stop is not None and should_stop():
                    stopped = "stopped (Stop)"
                if stopped:
                    _kill(process)
                    break
            process.wait()
        except BaseException:
            _kill(process)
            raise
        finally:
            if process.poll() is None:
                _kill(process)
            reader.join(timeout=2)
        stderr.seek(0)
        tail = stderr.read().decode("utf-8", "replace")[-3000:]
    result = None
    path = os.path.join(work, "result.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            result = json.load(f)
    return ChildOutcome(returncode=process.returncode, result=result, lines=seen[-400:], stderr_tail=tail,
                        stopped=stopped, seconds=round(time.monotonic() - start, 3))


def _kill(process) -> None:
    """Stop the child's whole process group (its own subprocesses too): SIGTERM, then SIGKILL."""
    for sig, wait in ((signal.SIGTERM, GRACE_S), (signal.SIGKILL, GRACE_S)):
        if process.poll() is not None:
            return
        try:
            os.killpg(process.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def write_result(work: str, result: dict) -> None:
    tmp = os.path.join(work, "result.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(result, f, default=str)
    os.replace(tmp, os.path.join(work, "result.json"))
