"""Timed fix experiments in worker processes: compiles side by side, timings one at a time, interleaved.

Two compiles of the same function cannot live side by side in one process (Dynamo keeps its caches, skip
marks and frame counters on the code objects, and ``torch._dynamo.reset()`` drops them all), so a timed
``try_fixes`` runs each experiment — and the baseline, the compile without any fix — in a worker process
(``python -m compiler.analyses.fix_workers``), each with an empty Inductor cache directory of its own (every
compile in the same cache state: cold). A worker compiles and calls the captured calls with its change
(``fix_experiments.compiled_run``, the same code as an experiment in this process), sends back its counts,
capture and outputs, and then stays, its compiled function alive, to be timed.

The coordinator (this module's ``Pool``) keeps up to ``concurrency`` workers compiling at once and times one
experiment at a time: the baseline worker's compiled call (before), the experiment's (after) and the baseline
worker's eager call take turns, round after round (the order rotating), after the same warm-up and with the same
number of calls per sample (the timer's own loop: ``compiler.capturing.runtime``'s ``warm_up``,
``calls_per_sample``, ``sample``), so machine drift moves all three alike (``fix_verdicts.ratio_of`` reads the
ratio and its interval). An experiment whose compile runs past ``STOP_FACTOR`` × the baseline's compile (at least
``MIN_STOP_S``), or past its own budget (``budgets``), is stopped, with what it had compiled; once the pool's
``deadline_s`` is spent, nothing more starts, compiles still running are stopped and compiled experiments not yet
timed keep their counts, untimed — each one saying so. Each experiment is handed to ``on_done`` as soon as it
finishes (and the baseline is in), so a caller can report as it goes.

The function and its calls travel by ``dill`` (a file in a temporary directory), as in ``compile_fixes``.
"""
from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time

from compiler.analyses.fix_experiments import WORKERS

STOP_FACTOR = 5.0  # an experiment's compile is stopped past this many times the baseline's
MIN_STOP_S = 30.0  # … but never before this (a small function compiles in well under a second)
ROUNDS = 20  # interleaved timing rounds per experiment
PROGRESS_EVERY_S = 1.0


# --- the worker process ------------------------------------------------------------------------------

def _worker(work: str, name: str) -> None:
    proto = os.fdopen(os.dup(1), "w", buffering=1)  # the protocol's own pipe: what the code prints goes to stderr
    os.dup2(2, 1)

    def send(**event):
        proto.write(json.dumps(event, default=str) + "\n")

    import dill
    import torch
    from torch._dynamo.utils import counters

    from compiler.analyses.fix_experiments import Change, Replay, compiled_run
    from compiler.capturing.runtime import calls_per_sample, copy_arguments, device_of, sample, warm_up
    from compiler.stages.fix_schema import DynamicMark

    with open(os.path.join(work, "payload.pkl"), "rb") as f:
        payload = dill.load(f)
    with open(os.path.join(work, f"{name}.spec.json"), encoding="utf-8") as f:
        spec = json.load(f)
    replay = Replay(payload["fn"], payload["calls"], payload["compile_kwargs"], from_capture=False,
                    no_grad=payload["no_grad"])
    change = Change(config=spec["config"], compile_kwargs=spec["compile_kwargs"],
                    marks=[DynamicMark.from_data(m) for m in spec["marks"]], inductor_config=spec["inductor_config"],
                    matmul_precision=spec["matmul_precision"], tolerance=spec["tolerance"])
    done = threading.Event()

    def tell_progress():
        while not done.wait(PROGRESS_EVERY_S):
            send(event="progress", frames=counters["frames"]["ok"], tried=counters["frames"]["total"],
                 graphs=counters["stats"]["unique_graphs"])

    managers = _keep_guard_managers()
    send(event="started", t=time.time())
    threading.Thread(target=tell_progress, daemon=True).start()
    start = time.perf_counter()
    try:
        with compiled_run(replay, change) as run:
            done.set()
            wall = time.perf_counter() - start
            outputs = os.path.join(work, f"{name}.outputs.pt")
            torch.save(run.outputs, outputs)
            capture = os.path.join(work, f"{name}.capture.json")
            run.cap.save(capture)
            send(event="compiled", measure=run.measure().to_data(), error=run.error, outputs=outputs,
                 capture=capture, wall_s=wall, guards=len(managers))
            device = device_of(run.args, run.kwargs)
            eager_args, eager_kwargs = copy_arguments(*replay.calls[-1])

            def check_guards():
                for manager, scope in managers:
                    manager.check(scope)

            targets = {"compiled": (run.compiled, run.args, run.kwargs), "eager": (replay.fn, eager_args, eager_kwargs),
                       "guards": (check_guards, (), {})}
            for line in sys.stdin:
                command = json.loads(line)
                if command["cmd"] == "quit":
                    break
                fn, args, kwargs = targets[command["what"]]
                try:
                    with contextlib.redirect_stdout(sys.stderr):
                        if command["cmd"] == "warm":
                            warm_up(fn, args, kwargs, device)
                            send(event="ok")
                        elif command["cmd"] == "calibrate":
                            send(event="ok", number=calls_per_sample(fn, args, kwargs, device))
                        elif command["cmd"] == "sample":
                            send(event="ok", s=sample(fn, args, kwargs, command["number"], device))
                except Exception as exc:  # noqa: BLE001 — the coordinator says the timing failed, and why
                    send(event="error", error=f"{type(exc).__name__}: {exc}"[:500])
    finally:
        done.set()


def _keep_guard_managers() -> list:
    """Every compile's guard manager with the frame locals it was built on (torch's
    ``guard_manager_testing_hook_fn``, called once per compile; a worker process only): checking each once is
    what one call pays for guards where every frame's first cache entry matches."""
    import torch._dynamo.guards as guards

    managers: list = []
    if hasattr(guards, "guard_manager_testing_hook_fn"):
        guards.guard_manager_testing_hook_fn = lambda manager, scope, builder: managers.append((manager, scope))
    return managers


# --- the coordinator -----------------------------------------------------------------------------------

class Worker:
    """One worker process and the events it sent (a reader thread puts them on a queue)."""

    def __init__(self, work: str, name: str, spec: dict, env: dict):
        self.name, self.spec = name, spec
        with open(os.path.join(work, f"{name}.spec.json"), "w", encoding="utf-8") as f:
            json.dump(spec, f)
        self.log = open(os.path.join(work, f"{name}.log"), "w+", encoding="utf-8")  # noqa: SIM115 — closed in kill
        # a session (process group) of its own: stopping the worker stops what it started with it (Inductor's
        # compile workers, their process pool), never an orphan left compiling into a directory being removed
        self.process = subprocess.Popen([sys.executable, "-m", "compiler.analyses.fix_workers", work, name],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, env=env,
                                        text=True, bufsize=1, start_new_session=os.name == "posix")
        self.events: queue.Queue = queue.Queue()
        self.began = time.perf_counter()
        self.compile_began: float | None = None
        self.compiled: dict | None = None
        self.progress: dict = {}
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            try:
                self.events.put(json.loads(line))
            except ValueError:
                continue
        self.events.put({"event": "exit"})

    def poll(self) -> dict | None:
        """The newest state change (started, compiled, exit), progress events taken in passing."""
        while True:
            try:
                event = self.events.get_nowait()
            except queue.Empty:
                return None
            if event["event"] == "progress":
                self.progress = event
                continue
            if event["event"] == "started":  # the worker's wall clock: the event may be read late (while timing)
                self.compile_began = event["t"]
                continue
            if event["event"] == "compiled":
                self.compiled = event
            return event

    def compiling_s(self) -> float:
        return time.time() - self.compile_began if self.compile_began is not None else 0.0

    def request(self, timeout: float = 600.0, **command) -> dict:
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        while True:
            try:
                event = self.events.get(timeout=timeout)
            except queue.Empty:
                raise TimeoutError(f"worker {self.name} did not answer {command['cmd']} in {timeout:.0f} s") from None
            if event["event"] == "progress":
                continue
            if event["event"] == "exit":
                raise RuntimeError(f"worker {self.name} exited while timing: {self.stderr_tail()}")
            if event["event"] == "error":
                raise RuntimeError(event["error"])
            return event

    def stderr_tail(self) -> str:
        self.log.flush()
        self.log.seek(0)
        lines = [line for line in self.log.read().strip().splitlines() if line.strip()]
        return lines[-1][:500] if lines else "no output"

    def quit(self):
        """Asked to end (a compiled worker waits for commands); one still compiling reads none: killed."""
        if self.process.poll() is None and self.compiled is not None:
            with contextlib.suppress(Exception):
                self.process.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
                self.process.stdin.flush()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        self.kill()  # what is left of its process group (a compile worker pool that outlived it)

    def kill(self):
        """The worker and its whole process group (Inductor's compile workers with it), waited for."""
        kill_group(self.process)
        for stream in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(Exception):
                stream.close()
        if not self.log.closed:
            self.log.close()


def kill_group(process: subprocess.Popen) -> None:
    """SIGKILL to ``process``'s process group (its own session: ``Worker``), then reaped; a group already gone
    is fine. Elsewhere (Windows) the process alone."""
    if os.name == "posix":
        import signal

        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    elif process.poll() is None:
        process.kill()
    with contextlib.suppress(Exception):
        process.wait(timeout=30)
    if os.name == "posix":  # the group's other members, reparented, go once their new parent reaps them
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline and _group_alive(process.pid):
            time.sleep(0.05)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def remove_dir(work: str, notes: list) -> None:
    """The pool's temporary directory removed (retried: a process just killed may still be closing files); what
    cannot be removed becomes a note, never an exception that hides the results."""
    import shutil

    for attempt in range(5):
        try:
            shutil.rmtree(work)
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            error = exc
            time.sleep(0.2 * (attempt + 1))
    notes.append(f"the temporary directory {work} could not be removed ({type(error).__name__}: {error}); "
                 "remove it by hand")


def spec_of(change) -> dict:
    return {"config": change.config, "compile_kwargs": change.compile_kwargs,
            "marks": [m.to_data() for m in change.marks], "inductor_config": change.inductor_config,
            "matmul_precision": change.matmul_precision, "tolerance": change.tolerance}


def _env(work: str, name: str, concurrency: int) -> dict:
    from compiler.analyses.cache_runs import _child_env

    env = _child_env(tempfile.mkdtemp(prefix=f"cache-{name}-", dir=work))
    env["TORCHINDUCTOR_COMPILE_THREADS"] = str(max(1, (os.cpu_count() or 1) // max(1, concurrency)))
    return env


class Outcome:
    """What one worker gave: its compile (``compiled``: measure, error, outputs and capture paths, wall_s),
    the interleaved samples, or why it stopped."""

    def __init__(self, key):
        self.key = key
        self.compiled: dict | None = None
        self.samples: dict[str, list[float]] = {}
        self.error: str | None = None
        self.stopped: str | None = None
        self.timing_error: str | None = None
        self.seconds = 0.0
        self.notes: list[str] = []  # the baseline's: what went wrong cleaning up (never raised)


def default_concurrency(experiments: int) -> int:
    """Compiles side by side: a quarter of the cores (Inductor's own compile workers use the rest), 1 to 6."""
    return max(1, min(6, experiments, (os.cpu_count() or 1) // 4))


def run_pool(replay, plans: list, timing: bool = True, progress=None, should_stop=None,
             concurrency: int | None = None, stop_factor: float = STOP_FACTOR, min_stop_s: float = MIN_STOP_S,
             rounds: int = ROUNDS, budgets: dict | None = None, deadline_s: float | None = None,
             on_done=None) -> tuple[Outcome, dict]:
    """The baseline and every plan (``(key, label, Change)``) in worker processes → (the baseline's Outcome,
    {key: Outcome}). ``progress(done, total, text)`` says which fix, time spent and an estimate of time left.
    ``budgets``: {key: seconds} an experiment's compile may take before it is stopped (besides the
    ``stop_factor`` × baseline stop); ``deadline_s``: the seconds the whole pool may take (see the module's
    docstring). ``on_done(key, outcome, base)``: called once per experiment as soon as it is final and the
    baseline is in (its outputs and capture loaded), in the coordinator's thread."""
    import dill

    concurrency = concurrency or default_concurrency(len(plans))
    budgets = budgets or {}
    outcomes = {key: Outcome(key) for key, _, _ in plans}
    labels = {key: label for key, label, _ in plans}
    order = {key: n for n, (key, _, _) in enumerate(plans)}
    pending = list(plans)
    started_at = time.perf_counter()
    finished: list[float] = []
    base = Outcome("baseline")
    work = tempfile.mkdtemp(prefix="tcompile-fixes-")
    try:
        with open(os.path.join(work, "payload.pkl"), "wb") as f:
            try:
                dill.dump({"fn": replay.fn, "calls": replay.calls, "compile_kwargs": replay.compile_kwargs,
                           "no_grad": replay.no_grad}, f, recurse=True)
            except Exception as exc:  # noqa: BLE001
                raise RuntimeError(f"a timed try runs each experiment in a worker process, which needs the function "
                                   f"and its calls picklable by dill: {type(exc).__name__}: {exc} — try timing=False "
                                   "(experiments in this process, untimed)") from exc
        from compiler.analyses.fix_experiments import Change

        baseline = Worker(work, "baseline", spec_of(Change()), _env(work, "baseline", concurrency))
        running: dict = {}  # key → Worker, compiling
        ready: list = []  # (key, Worker), compiled, waiting to be timed
        base_wall: float | None = None

        def tell(text):
            if progress is None:
                return
            done = len(finished)
            spent = time.perf_counter() - started_at
            left = len(plans) - done
            if done:
                eta = f"about {_duration(spent / done * left)} left"
            else:
                eta = "time left: known after the first experiment"
            progress(done, len(plans) + 1, f"{text} — {done} of {len(plans)} done, {_duration(spent)} spent, {eta}")

        done_keys: list = []  # final, not yet handed to on_done
        handed: set = set()

        def finish(key, worker):
            outcome = outcomes[key]
            outcome.seconds = time.perf_counter() - worker.began
            finished.append(outcome.seconds)
            if outcome.stopped:
                worker.kill()
            else:
                worker.quit()
            done_keys.append(key)

        def hand_over():
            if base_wall is None and base.error is None:
                return  # judged against the baseline: wait for it
            while done_keys:
                key = done_keys.pop(0)
                handed.add(key)
                _load_files(outcomes[key])
                if on_done is not None:
                    on_done(key, outcomes[key], base)

        def out_of_time() -> bool:
            return deadline_s is not None and time.perf_counter() - started_at > deadline_s

        try:
            tell("compiling the baseline (no fix) in a worker process")
            while pending or running or ready or base_wall is None:
                hand_over()
                stop = should_stop is not None and should_stop()
                if stop or out_of_time():
                    pending.clear()
                while pending and len(running) < concurrency:
                    key, label, change = pending.pop(0)
                    running[key] = Worker(work, str(key), spec_of(change), _env(work, str(key), concurrency))
                    tell(f"compiling {label}")
                if base_wall is None and out_of_time():
                    base.error = f"the baseline (no fix) did not compile within the run's time budget of {deadline_s:.0f} s"
                    for key, outcome in outcomes.items():  # nothing to judge them against: stopped, not failed
                        if key not in done_keys and key not in handed:
                            outcome.stopped = f"stopped: {base.error}"
                    break
                if base_wall is None:
                    event = baseline.poll()
                    if event is not None and event["event"] in ("compiled", "exit"):
                        if baseline.compiled is None or baseline.compiled.get("error"):
                            base.error = (baseline.compiled or {}).get("error") or \
                                f"the baseline's worker failed: {baseline.stderr_tail()}"
                            break
                        base.compiled = baseline.compiled
                        base_wall = baseline.compiled["wall_s"]
                        _load_files(base)
                        tell("baseline compiled")
                for key, worker in list(running.items()):
                    event = worker.poll()
                    outcome = outcomes[key]
                    if event is not None and event["event"] == "compiled":
                        outcome.compiled = event
                        del running[key]
                        if event.get("error") or not timing:
                            outcome.error = event.get("error")
                            finish(key, worker)
                        else:
                            ready.append((key, worker))
                        tell(f"{labels[key]} compiled")
                    elif event is not None and event["event"] == "exit":
                        outcome.error = f"the worker process failed: {worker.stderr_tail()}"
                        del running[key]
                        finish(key, worker)
                    elif worker.compile_began is not None:
                        why = _over(worker.compiling_s(), base_wall, stop_factor, min_stop_s, budgets.get(key),
                                    deadline_s if out_of_time() else None)
                        if why:
                            p = worker.progress
                            outcome.stopped = (f"stopped: {why} — it had compiled {p.get('frames', 0)} frames, "
                                               f"{p.get('graphs', 0)} graphs")
                            del running[key]
                            finish(key, worker)
                            tell(f"{labels[key]} stopped")
                if ready and out_of_time():
                    for key, worker in ready:
                        outcomes[key].timing_error = f"not timed: the run's time budget of {deadline_s:.0f} s ran out"
                        finish(key, worker)
                    ready.clear()
                if ready and base_wall is not None:  # in the plans' order: the A/A (the noise floor) first
                    ready.sort(key=lambda item: order[item[0]])
                    key, worker = ready.pop(0)
                    tell(f"timing {labels[key]} against the baseline and eager, interleaved")
                    try:
                        outcomes[key].samples = time_pair(baseline, worker, rounds)
                    except Exception as exc:  # noqa: BLE001 — the counts stand; the timing says why it is missing
                        outcomes[key].timing_error = f"{type(exc).__name__}: {exc}"[:500]
                    finish(key, worker)
                    tell(f"{labels[key]} timed")
                    continue
                time.sleep(0.05)
        finally:
            for worker in [*running.values(), *(w for _, w in ready)]:
                _quietly(worker.kill, base.notes)
            _quietly(baseline.quit, base.notes)
        if base.error:
            for outcome in outcomes.values():
                if outcome.compiled is None and outcome.stopped is None:
                    outcome.error = outcome.error or "not run: the baseline failed"
        base.seconds = time.perf_counter() - started_at
        done_keys.extend(key for key, o in outcomes.items()  # what the loop left: cut off with the baseline
                         if key not in handed and key not in done_keys and (o.compiled or o.stopped or o.error))
        hand_over()
    finally:
        remove_dir(work, base.notes)
    return base, outcomes


def _quietly(stop, notes: list) -> None:
    """A worker stopped; an error doing so is a note (the results stand)."""
    try:
        stop()
    except Exception as exc:  # noqa: BLE001
        notes.append(f"stopping a worker process: {type(exc).__name__}: {exc}")


def _over(compiling_s: float, base_wall: float | None, stop_factor: float, min_stop_s: float,
          budget_s: float | None, deadline_s: float | None) -> str | None:
    """Why a compile still running is stopped now, or None: past the pool's deadline, past its own budget, or past
    ``stop_factor`` × the baseline's compile (known once the baseline is in)."""
    if deadline_s is not None:
        return f"the run's time budget of {deadline_s:.0f} s ran out (stopped at {compiling_s:.0f} s of compiling)"
    if budget_s is not None and compiling_s > budget_s:
        return f"compile over its budget of {budget_s:.0f} s (stopped at {compiling_s:.0f} s)"
    if base_wall is not None and compiling_s > max(stop_factor * base_wall, min_stop_s):
        return f"compile over {stop_factor:g}× the baseline ({base_wall:.1f} s; stopped at {compiling_s:.0f} s)"
    return None


def _load_files(outcome: Outcome) -> None:
    """Outputs and capture read back before the temporary directory goes (outputs on the CPU)."""
    import torch

    from compiler.stages.capture import Capture

    compiled = outcome.compiled
    if not compiled or "outputs_value" in compiled:
        return
    compiled["outputs_value"] = None
    with contextlib.suppress(Exception):
        compiled["outputs_value"] = torch.load(compiled["outputs"], map_location="cpu", weights_only=False)
    with contextlib.suppress(Exception):
        compiled["capture_value"] = Capture.load(compiled["capture"])


def time_pair(baseline: Worker, worker: Worker, rounds: int = ROUNDS) -> dict[str, list[float]]:
    """before (the baseline's compiled call), after (the experiment's) and eager (the baseline's eager call), and
    where both kept their guard managers, each one's guard check: interleaved, the same warm-up, the same calls
    per sample for before and after, the order rotating every round."""
    targets = {"before": (baseline, "compiled"), "after": (worker, "compiled"), "eager": (baseline, "eager")}
    if (baseline.compiled or {}).get("guards") and (worker.compiled or {}).get("guards"):
        targets.update(guards_before=(baseline, "guards"), guards_after=(worker, "guards"))
    for who, what in targets.values():
        who.request(cmd="warm", what=what)
    numbers = {name: who.request(cmd="calibrate", what=what)["number"] for name, (who, what) in targets.items()}
    for pair in (("before", "after"), ("guards_before", "guards_after")):  # the same calls per sample
        if pair[0] in numbers:
            number = max(numbers[pair[0]], numbers[pair[1]])
            numbers.update({pair[0]: number, pair[1]: number})
    samples: dict[str, list[float]] = {name: [] for name in targets}
    order = list(targets)
    for index in range(rounds):
        turn = order[index % len(order):] + order[:index % len(order)]
        for name in turn:
            who, what = targets[name]
            samples[name].append(who.request(cmd="sample", what=what, number=numbers[name])["s"])
    return samples


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


WORKERS.update(run_pool=run_pool, default_concurrency=default_concurrency)  # fix_experiments' timed tries

if __name__ == "__main__":
    _worker(sys.argv[1], sys.argv[2])
