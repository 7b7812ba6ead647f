"""Failing compile → minimal repro: torch's own minifier, run on the captured calls in a child process.

``minify(cap)`` (``cap.minify()``, ``python -m compiler minify``) replays the captured calls in a child
(``compiler.analyses.child_runs``: bounded in time, progress as it goes, Stop) that:

1. compiles the function with ``torch._dynamo.config.repro_after`` = ``"aot"`` (Inductor: the failure is in
   lowering or codegen, after AOTAutograd — the graph saved with every parameter lifted to an input) or
   ``"dynamo"`` (another backend, by its registered name) and ``repro_level = 2``: when the compile fails,
   torch writes ``minifier_launcher.py`` (``torch._dynamo.repro.after_aot.dump_to_minify``) and re-raises;
2. runs that launcher as torch documents (``python minifier_launcher.py`` → ``run_repro(..., command="minify")``):
   delta debugging over the graph's nodes, each candidate compiled again, keeping the smallest graph that still
   fails with the same kind of error; torch writes it as ``repro.py`` (and one checkpoint per smaller graph).
   The candidates are compiled in separate processes (torch's ``--isolate``, its default), or in the child itself
   when ``prepare`` is given (what it set up — a registered lowering, a backend — lives only there);
3. hands back the minimal graph (its forward), the ops in it, the node counts before and after, the failure, and
   both scripts — saved with the capture (``cap.minified``, ``compiler.stages.repro_results.Minified``).
"""
from __future__ import annotations

import glob
import os
import re
import sys
import tempfile

DEFAULT_TIMEOUT_S = 300.0
SHOWN = ("Strategy:", "SUCCESS", "FAIL", "Made ", "Wrote ", "Started off", "tcompile:", "Input graph")
_FORWARD = re.compile(r"^    def forward\(self.*?\n(?P<body>(?:        .*\n|\s*\n)*)", re.M)
_CALL = re.compile(r"^        \w+ = (?P<target>[\w.]+)\(", re.M)


def minify(cap, fn=None, calls=None, prepare: str | None = None, timeout: float = DEFAULT_TIMEOUT_S,
           progress=None, should_stop=None):
    """Minify the captured calls' failing compile (see the module); → a ``Minified``, kept as ``cap.minified``.
    Needs the live function (or ``fn`` and ``calls``)."""
    from compiler.analyses.child_runs import run_child, write_payload
    from compiler.analyses.fix_experiments import replay_of
    from compiler.stages.repro_results import Minified

    replay = replay_of(cap, fn, calls)

    def shown(line: str) -> None:
        if progress is not None and line.startswith(SHOWN):
            progress(line)

    with tempfile.TemporaryDirectory(prefix="tcompile-minify-") as work:
        why = write_payload(work, replay.fn, replay.calls, replay.compile_kwargs, replay.no_grad, {"prepare": prepare})
        if why:
            result = Minified(available=False, reason=why)
        else:
            outcome = run_child("compiler.analyses.minify", work, timeout, shown, should_stop)
            data = outcome.result or {}
            if not data or outcome.stopped:
                data = {**data, "available": bool(data.get("graph")),
                        "reason": outcome.stopped or f"the minifier process failed (exit {outcome.returncode}): "
                                                     + " ".join(outcome.stderr_tail.strip().splitlines()[-1:])[:500]}
            data.update(seconds=outcome.seconds, stopped=outcome.stopped,
                        log=[line for line in outcome.lines if line.startswith(SHOWN)][-40:])
            result = Minified.from_data(data)
    cap.minified = result
    return result


def forward_of(script: str) -> str | None:
    """The ``forward`` of the ``Repro`` module in a script torch's minifier wrote."""
    found = _FORWARD.search(script or "")
    return found.group(0).rstrip() if found else None


def ops_of(forward: str | None) -> list[str]:
    """The call targets in a forward, in order, once each (``torch.ops.aten.cos.default``)."""
    return list(dict.fromkeys(m["target"] for m in _CALL.finditer((forward or "") + "\n")))


def calls_in(forward: str | None) -> int:
    return len(_CALL.findall((forward or "") + "\n"))


# --- the child process ----------------------------------------------------------------------------

def _child(work: str) -> None:
    import contextlib
    import runpy

    from compiler.analyses.child_runs import read_payload, run_prepare, write_result

    payload, spec = read_payload(work)
    run_prepare(spec.get("prepare"))
    import torch
    import torch._dynamo.config as dynamo_config

    from compiler.capturing.runtime import copy_arguments

    fn, calls, compile_kwargs = payload["fn"], payload["calls"], dict(payload["compile_kwargs"])
    backend = compile_kwargs.get("backend", "inductor")
    base = {"torch_version": torch.__version__}
    if not isinstance(backend, str):
        write_result(work, {**base, "available": False, "reason": "the minifier finds a backend by its registered name; "
                                                                  f"this capture's backend is {type(backend).__name__} "
                                                                  "(register it with torch._dynamo.register_backend)"})
        return
    after = "aot" if backend == "inductor" else "dynamo"
    debug = os.path.join(work, "debug")
    grad = torch.no_grad if payload["no_grad"] else contextlib.nullcontext
    print(f"tcompile: compiling with repro_after={after!r}, repro_level=2 to reproduce the failure", flush=True)
    error = None
    with dynamo_config.patch(repro_after=after, repro_level=2, debug_dir_root=debug), grad():
        try:
            compiled = torch.compile(fn, **compile_kwargs)
            for args, kwargs in calls:
                args, kwargs = copy_arguments(args, kwargs)
                compiled(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 — the failure to minify
            error = f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:300]
    base.update(after=after, error=error)
    if error is None:
        write_result(work, {**base, "available": False,
                            "reason": "the compile did not fail when replayed in a fresh process: nothing to minify"})
        return
    launchers = sorted(glob.glob(os.path.join(debug, "**", "minifier_launcher.py"), recursive=True), key=os.path.getmtime)
    if not launchers:
        write_result(work, {**base, "available": False,
                            "reason": f"torch wrote no minifier_launcher.py: the failure is not inside the "
                                      f"{'Inductor compile' if after == 'aot' else 'backend'} ({error[:200]})"})
        return
    launcher = launchers[-1]
    with open(launcher, encoding="utf-8") as f:
        launcher_text = f.read()
    base.update(launcher=launcher_text, nodes_before=calls_in(forward_of(launcher_text)))
    print(f"tcompile: minifying a graph of {base['nodes_before']} nodes", flush=True)
    torch._dynamo.reset()
    argv = sys.argv
    sys.argv = [launcher, "minify"] + (["--no-isolate"] if spec.get("prepare") else [])
    try:
        runpy.run_path(launcher, run_name="__main__")
    except SystemExit:
        pass
    except Exception as exc:  # noqa: BLE001 — the minifier's own failure: said, with the launcher kept
        base["reason"] = f"torch's minifier failed: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
    finally:
        sys.argv = argv
    repro_path = os.path.join(work, "repro.py")
    if not os.path.exists(repro_path):
        write_result(work, {**base, "available": False, "command": "python minifier_launcher.py",
                            "reason": base.get("reason") or "torch's minifier wrote no repro.py"})
        return
    with open(repro_path, encoding="utf-8") as f:
        repro = f.read()
    graph = forward_of(repro)
    write_result(work, {**base, "available": True, "reason": None, "repro": repro, "graph": graph,
                        "ops": ops_of(graph), "nodes_after": calls_in(graph),
                        "command": "python repro.py" + ("  (after the same prepare code: the failure it sets up lives "
                                                        "there)" if spec.get("prepare") else "")})


def _minify_method(cap, fn=None, calls=None, **kwargs):
    return minify(cap, fn=fn, calls=calls, **kwargs)


from compiler.stages.capture import METHODS  # noqa: E402

METHODS["minify"] = _minify_method  # Capture.minify (compiler.stages.capture)


if __name__ == "__main__":
    _child(sys.argv[1])
