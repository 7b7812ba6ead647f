"""Kernel → script: a standalone Python file that rebuilds one generated kernel's launch and times it.

``kernel_reproducer(kernel)`` (``kernel.reproducer()``, ``python -m compiler repro CAPTURE KERNEL -o FILE``, the
Generated code view's button) writes a script from what the capture saved of the kernel's Inductor run — its
generated module (``inductor_output_code``) — and nothing else, so it works from a saved capture:

- **the kernel** is Inductor's own definition in that module (``async_compile.cpp_pybinding`` / ``.triton``),
  compiled the way Inductor loads it (``torch._inductor.codecache.PyCodeCache.load`` of the module text: the same
  ``AsyncCompile`` that built it, its C++ compile or Triton autotuner);
- **its arguments** are built by the module's own ``get_args()`` (random values with the graph inputs' captured
  shapes, strides, dtypes and devices) and its own ``call()``, run up to the kernel's launch: the buffers, views,
  sizes and scalars it passes are Inductor's, exactly (a proxy in the module's globals snapshots them at the
  launch and lets the call go on);
- **the launch** is repeated alone on a copy of those arguments (aliasing kept: one copy per storage) — a C++
  kernel called as ``call()`` calls it, a Triton kernel through its launcher's ``.run`` with the same scalars and
  stream, so its grid and the config the autotuner chose are Inductor's — and its written buffers are compared
  with what the compiled function's own launch wrote (``torch.equal``, else ``assert_close``);
- **the time** per launch is measured (CUDA: Inductor's ``benchmarker.benchmark_gpu``; CPU: median of repeated
  ``perf_counter`` samples) and set beside the time the capture measured (``CAPTURED``), with both methods named.

What the script cannot rebuild it says at its top (``NOTES``) and when it runs (exit status 2): a module without
``get_args()``/``call()`` (a cache hit that kept no code, AOTInductor), frozen parameters the module loads from
outside, a kernel ``call()`` never launches on these inputs, a device this machine lacks. Values are random, not
the captured ones (a capture keeps shapes, not tensors).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field

from compiler.stages.kernel_costs import call_section

SCRIPT_VERSION = 1


@dataclass
class Reproducer:
    """A kernel's standalone script (``text``), what it cannot rebuild (``notes``) and, once ``run()``, what its
    run printed as data (``result``: ran, matched, µs per launch, the captured figure, …)."""

    kernel: str
    role: str | None
    language: str
    text: str
    notes: list[str] = field(default_factory=list)
    captured_us: float | None = None
    captured_method: str | None = None
    result: dict | None = None

    def save(self, path) -> str:
        from compiler.stages.files import write_atomic

        return str(write_atomic(path, self.text))

    def run(self, timeout: float = 600.0, save: str | None = None, python: str | None = None) -> dict:
        """Run the script in a fresh Python process (this interpreter), → its result (``REPRO_RESULT`` line)."""
        import tempfile

        with tempfile.TemporaryDirectory(prefix="tcompile-repro-") as work:
            path = os.path.join(work, "repro.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write(self.text)
            argv = [python or sys.executable, path] + (["--save", save] if save else [])
            try:
                done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=work)
            except subprocess.TimeoutExpired:
                self.result = {"ran": False, "error": f"the reproducer took longer than {timeout:.0f} s and was stopped"}
                return self.result
        self.result = parse_result(done.stdout) or {
            "ran": False, "error": f"the reproducer printed no result (exit {done.returncode}): "
                                   + " ".join((done.stderr or done.stdout).strip().splitlines()[-1:])[:500]}
        self.result["output"] = done.stdout[-4000:]
        return self.result

    def as_text(self) -> str:
        return self.text

    def shown_text(self) -> str:
        """The script without its embedded module (shown beside the module itself)."""
        head, sep, _ = self.text.partition("\nMODULE = ")
        return head + sep + "...  # Inductor's generated module, as captured (whole in the saved script)\n" if sep else self.text

    def __str__(self) -> str:
        return self.text


def parse_result(stdout: str) -> dict | None:
    """The reproducer's result: its last ``REPRO_RESULT {json}`` line."""
    for line in reversed(stdout.splitlines()):
        if line.startswith("REPRO_RESULT "):
            try:
                return json.loads(line[len("REPRO_RESULT "):])
            except ValueError:
                return None
    return None


def launches_in_call(module: str, name: str) -> int:
    """How many times ``call()`` launches ``name`` (a call ``name(`` or ``name.run(``)."""
    return len(re.findall(rf"(?<![\w.]){re.escape(name)}(?:\.run)?\(", call_section(module)))


def captured_time(kernel, compile_=None) -> tuple[float | None, str | None]:
    """The capture's time per launch of ``kernel`` in µs, and how it was measured: the GPU profile's (per launch,
    or per call ÷ launches in ``call()``), else the CPU kernel timer's (``provenance``: seconds per call ÷ launches)."""
    run = kernel.__dict__.get("_run")
    launches = max(1, launches_in_call(run.code.module, kernel.name)) if run is not None else 1
    gpu = kernel.gpu
    if gpu is not None and gpu.time_us_per_launch:
        return gpu.time_us_per_launch, "GPU profile (torch.profiler), per launch"
    if kernel.gpu_time_us_per_call:
        return kernel.gpu_time_us_per_call / launches, f"GPU profile (torch.profiler), per call ÷ {launches} launch(es)"
    if compile_ is not None:
        try:
            rows = compile_.provenance.kernels if compile_.provenance.available else []
        except Exception:  # noqa: BLE001 — an old capture without provenance: no captured time
            rows = []
        for row in rows:
            if row.name == kernel.name and row.role == kernel.role and row.seconds:
                return row.seconds * 1e6 / launches, (f"CPU kernel timer (sys.setprofile over calls of the compiled "
                                                      f"function), per call ÷ {launches} launch(es)")
    return None, None


def notes_for(module: str, kernel) -> list[str]:
    """What a reproducer of ``kernel`` from ``module`` cannot rebuild, found by reading the module."""
    notes = []
    if not module:
        notes.append("the capture kept no generated module for this kernel (a cache hit, or a trace without "
                     "inductor_output_code): nothing to rebuild")
        return notes
    if "def call(" not in module or ("def get_args(" not in module and "def benchmark_compiled_module(" not in module):
        notes.append("the generated module has no call() with get_args() or benchmark_compiled_module() "
                     "(AOTInductor, or an older torch): the arguments cannot be rebuilt")
    if "_frozen_param" in module:
        notes.append("the module reads frozen parameters (freezing=True) that Inductor sets from outside the "
                     "module: call() cannot run on get_args() alone")
    if kernel.language == "extern":
        notes.append("an extern kernel is an ATen/library call (no generated source): the script times that call "
                     "on Inductor's arguments")
    elif not launches_in_call(module, kernel.name):
        notes.append(f"call() does not launch {kernel.name} by name: the script cannot find its launch")
    if "cuda" in module and ("empty_strided_cuda(" in module or "device='cuda" in module):
        notes.append("the kernel runs on CUDA: the script needs a machine with a CUDA GPU (and Triton)")
    notes.append("argument values are random (get_args()), not the captured tensors: data-dependent work "
                 "(masks, indices, NaNs) may differ")
    return notes


def kernel_reproducer(kernel, compile_=None, launch: int = 0) -> Reproducer:
    """The standalone script of ``kernel`` (a ``Kernel`` of a capture, live or loaded) at its ``launch``-th
    launch in ``call()``; see the module."""
    run = kernel.__dict__.get("_run")
    module = run.code.module if run is not None else ""
    if compile_ is None and run is not None and "_inductor" in run.__dict__:
        compile_ = run.__dict__["_inductor"].__dict__.get("_compile")
    extern = kernel.language == "extern"
    target = kernel.name
    notes = notes_for(module, kernel)
    captured_us, method = captured_time(kernel, compile_)
    where = f"compile {compile_.compile_id}, " if compile_ is not None else ""
    header = (f"Reproducer of the {kernel.language} kernel {kernel.name} ({where}"
              f"{kernel.role or 'inference'} graph), written by tcompile from the capture's generated module.")
    text = _TEMPLATE.format(
        header=header, kernel=target, extern=extern, launch=int(launch),
        captured=repr({"us_per_launch": captured_us, "method": method} if captured_us else None),
        notes=json.dumps(notes, indent=1, ensure_ascii=True), module=repr(module), version=SCRIPT_VERSION)
    return Reproducer(kernel=kernel.name, role=kernel.role, language=kernel.language, text=text, notes=notes,
                      captured_us=captured_us, captured_method=method)


def find_kernel(cap, name: str, compile_id: str | None = None, role: str | None = None):
    """(compile, kernel) named ``name`` in ``cap`` — ``name`` may be ``ROLE:NAME``; ``compile_id``/``role`` narrow
    it. ``LookupError`` (one line, the choices) when none or several match."""
    if ":" in name and role is None:
        role, name = name.split(":", 1)
    found = [(c, k) for c in cap.compiles if compile_id in (None, c.compile_id) and c.kernels.available
             for k in c.kernels.kernels if k.name == name and role in (None, k.role or "inference")]
    if len(found) == 1:
        return found[0]
    if not found:
        names = sorted({k.name for c in cap.compiles if c.kernels.available for k in c.kernels.kernels})
        raise LookupError(f"no kernel {name!r}" + (f" in compile {compile_id}" if compile_id else "")
                          + f"; the capture has {len(names)}: {', '.join(names[:12])}" + (" …" if len(names) > 12 else ""))
    raise LookupError(f"{len(found)} kernels are named {name!r}: "
                      + ", ".join(f"compile {c.compile_id} {k.role or 'inference'}" for c, k in found)
                      + " — pass --compile ID or ROLE:NAME")


def reproducer_of(cap, name: str, compile_id: str | None = None, role: str | None = None, launch: int = 0):
    compile_, kernel = find_kernel(cap, name, compile_id, role)
    return kernel_reproducer(kernel, compile_, launch)


_TEMPLATE = '''"""{header}

Run:  python THIS_FILE [--kernel NAME] [--launch N] [--save OUT.pt] [--repeat N]

It loads Inductor's generated module below the way Inductor does (PyCodeCache.load: the kernels compiled by
Inductor's own AsyncCompile), builds the graph's inputs with the module's own get_args() (random values, the
captured shapes/strides/dtypes/devices), runs the module's call() and snapshots the kernel's arguments at its
launch, then launches the kernel alone on a copy of them, checks that it writes what the compiled function's
launch wrote, and times it against the captured time. To try a change, edit the kernel's source in MODULE.
The last line printed is REPRO_RESULT {{json}}. Exit status: 0 ran and matched, 1 ran and differed, 2 could not
rebuild (the reason is printed).
"""
import argparse
import json
import statistics
import sys
import time

import torch

KERNEL = {kernel!r}  # the kernel's name in MODULE ("extern_kernels.mm": an extern call)
EXTERN = {extern!r}
LAUNCH = {launch}  # which launch of KERNEL in call() (0: the first)
CAPTURED = {captured}  # the capture's time per launch and how it was measured (None: not measured)
NOTES = {notes}  # what this script cannot rebuild
SCRIPT_VERSION = {version}


class CannotRebuild(Exception):
    pass


def clone_all(values):
    """Copy every tensor, one copy per storage (views of one buffer stay views of one copy)."""
    storages = {{}}
    out = []
    for v in values:
        if isinstance(v, torch.Tensor):
            key = (v.device, v.untyped_storage().data_ptr())
            if key not in storages:
                storages[key] = v.untyped_storage().clone()
            t = torch.empty(0, dtype=v.dtype, device=v.device)
            t.set_(storages[key], v.storage_offset(), v.size(), v.stride())
            out.append(t)
        else:
            out.append(v)
    return out


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Snapshot:
    """Stands for the kernel in the module's globals: at the LAUNCH-th launch it keeps copies of the arguments
    before and after the real launch (later kernels may reuse the buffers), then lets call() go on."""

    def __init__(self, real, attribute=None):
        self.real, self.attribute, self.seen = real, attribute, 0
        self.before = self.after = self.args = self.kwargs = None

    def _target(self):
        return getattr(self.real, self.attribute) if self.attribute else self.real

    def _launch(self, fn, args, kwargs):
        if self.seen != LAUNCH:
            self.seen += 1
            return fn(*args, **kwargs)
        self.seen += 1
        device = next((a.device for a in args if isinstance(a, torch.Tensor)), torch.device("cpu"))
        self.device, self.fn = device, fn
        self.before, self.kwargs = clone_all(args), dict(kwargs)
        out = fn(*args, **kwargs)
        sync(device)
        self.after, self.args = clone_all(args), args
        self.outputs = clone_all([out] if isinstance(out, torch.Tensor) else [])
        return out

    def __call__(self, *args, **kwargs):
        return self._launch(self.real, args, kwargs)

    def run(self, *args, **kwargs):  # a Triton kernel: its launcher's run(), grid and config computed inside
        return self._launch(self.real.run, args, kwargs)

    def __getattr__(self, name):
        return getattr(self.real, name)


class ExternProxy:
    def __init__(self, real, name, snapshot):
        self.real, self.name, self.snapshot = real, name, snapshot

    def __getattr__(self, name):
        value = getattr(self.real, name)
        return self.snapshot.wrap(value) if name == self.name else value


def load_module():
    from torch._inductor.codecache import PyCodeCache

    if "def call(" not in MODULE or ("def get_args(" not in MODULE and "def benchmark_compiled_module(" not in MODULE):
        raise CannotRebuild("the generated module has no call() with get_args() or benchmark_compiled_module(): "
                            "its arguments cannot be rebuilt")
    if "empty_strided_cuda(" in MODULE and not torch.cuda.is_available():
        raise CannotRebuild("the kernel runs on CUDA and this machine has no CUDA GPU")
    return PyCodeCache.load(MODULE)


def graph_inputs(mod):
    """The graph's inputs as the module builds them: get_args(), or (older torch) the lines of
    benchmark_compiled_module() before it calls call([...])."""
    if hasattr(mod, "get_args"):
        return mod.get_args()
    lines = MODULE[MODULE.index("def benchmark_compiled_module("):].splitlines()[1:]
    body, names = [], None
    for line in lines:
        if "call([" in line:
            names = line[line.index("call([") + 6:line.rindex("])")]
            break
        if line.strip() and not line.startswith("    "):
            break
        body.append(line[4:])
    if names is None:
        raise CannotRebuild("benchmark_compiled_module() does not call call([...]): the graph inputs cannot be rebuilt")
    scope = dict(vars(mod))
    exec(chr(10).join(body), scope)  # the module's own lines: rand_strided(...) per input
    return eval("[" + names + "]", scope)


def snapshot_launch(mod):
    """Run the module's call() on its get_args(), keeping the kernel's arguments at its launch."""
    if EXTERN:
        holder, _, name = KERNEL.partition(".")
        real = getattr(mod, holder)
        snap = Snapshot(getattr(real, name))
        snap.wrap = lambda fn: (lambda *a, **k: snap._launch(fn, a, k))
        setattr(mod, holder, ExternProxy(real, name, snap))
    else:
        if not hasattr(mod, KERNEL):
            raise CannotRebuild(f"the module defines no {{KERNEL}}")
        snap = Snapshot(getattr(mod, KERNEL))
        setattr(mod, KERNEL, snap)
    args = graph_inputs(mod)
    mod.call(list(args))
    if snap.before is None:
        raise CannotRebuild(f"call() launched {{KERNEL}} {{snap.seen}} time(s) on these inputs, not {{LAUNCH + 1}}")
    return snap


def compare(got, want):
    """Each tensor argument after the standalone launch against the compiled function's launch."""
    worst, exact, equal = 0.0, True, True
    for a, b in zip(got, want):
        if not isinstance(b, torch.Tensor):
            continue
        if torch.equal(a, b) or (a.is_floating_point() and torch.equal(a.isnan(), b.isnan())
                                 and torch.equal(a.nan_to_num(), b.nan_to_num())):
            continue
        exact = False
        try:
            torch.testing.assert_close(a, b, equal_nan=True)
        except AssertionError:
            equal = False
        if a.is_floating_point() or a.is_complex():
            worst = max(worst, (a.double() - b.double()).abs().nan_to_num().max().item() if a.numel() else 0.0)
    return {{"identical": exact, "matched": equal, "max_abs_diff": worst}}


def time_launch(fn, args, kwargs, device, repeat):
    if device.type == "cuda":
        from torch._inductor.runtime.benchmarking import benchmarker

        ms = benchmarker.benchmark_gpu(lambda: fn(*args, **kwargs))
        return ms * 1e3, "torch._inductor benchmarker.benchmark_gpu (CUDA events, L2 cleared), its median"
    for _ in range(3):
        fn(*args, **kwargs)
    number, start = 1, time.perf_counter()
    fn(*args, **kwargs)
    once = max(time.perf_counter() - start, 1e-7)
    number = max(1, min(100000, int(0.01 / once)))
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn(*args, **kwargs)
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples) * 1e6, f"median of {{repeat}} samples of {{number}} launches (time.perf_counter)"


def main(argv=None):
    global KERNEL, EXTERN, LAUNCH, CAPTURED
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--save", help="torch.save the arguments before, after the compiled launch, and after "
                                       "the standalone one (a .pt file)")
    parser.add_argument("--repeat", type=int, default=7, help="timing samples (CPU)")
    parser.add_argument("--kernel", default=KERNEL, help="another kernel of MODULE (default: %(default)s; its captured "
                                                          "time is then not known)")
    parser.add_argument("--launch", type=int, default=LAUNCH, help="which launch of the kernel in call()")
    options = parser.parse_args(argv)
    if options.kernel != KERNEL:
        CAPTURED = None
    KERNEL, LAUNCH = options.kernel, options.launch
    EXTERN = KERNEL.startswith("extern_kernels.")
    result = {{"kernel": KERNEL, "launch": LAUNCH, "notes": NOTES, "ran": False, "torch": torch.__version__}}
    try:
        torch.manual_seed(0)
        mod = load_module()
        snap = snapshot_launch(mod)
        work = clone_all(snap.before)
        snap.fn(*work, **snap.kwargs)
        sync(snap.device)
        result.update(ran=True, device=str(snap.device), **compare(work, snap.after))
        result["arguments"] = [{{"shape": list(a.shape), "stride": list(a.stride()), "dtype": str(a.dtype),
                                "device": str(a.device)}} if isinstance(a, torch.Tensor) else repr(a)
                               for a in snap.before]
        launchers = getattr(snap.real, "launchers", None)
        if launchers:
            config = getattr(launchers[0], "config", None)
            result["triton_config"] = {{"kwargs": dict(getattr(config, "kwargs", {{}}) or {{}}),
                                       "num_warps": getattr(config, "num_warps", None),
                                       "num_stages": getattr(config, "num_stages", None),
                                       "configs_compiled": len(launchers)}}
        us, method = time_launch(snap.fn, clone_all(snap.before), snap.kwargs, snap.device, options.repeat)
        result.update(us_per_launch=us, time_method=method)
        if CAPTURED:
            result["captured_us_per_launch"] = CAPTURED["us_per_launch"]
            result["captured_method"] = CAPTURED["method"]
            result["ratio_to_captured"] = us / CAPTURED["us_per_launch"]
        if options.save:
            torch.save({{"before": snap.before, "compiled": snap.after, "standalone": work}}, options.save)
    except CannotRebuild as exc:
        result["error"] = str(exc)
        print(f"cannot rebuild: {{exc}}")
        print("REPRO_RESULT " + json.dumps(result))
        return 2
    print(f"{{KERNEL}}: ran standalone on {{result['device']}}; outputs "
          + ("identical to" if result["identical"] else "within tolerance of" if result["matched"] else "DIFFERENT from")
          + f" the compiled function's launch (max |diff| {{result['max_abs_diff']:.3g}})")
    line = f"{{result['us_per_launch']:.2f}} µs per launch ({{result['time_method']}})"
    if CAPTURED:
        line += (f"; captured {{CAPTURED['us_per_launch']:.2f}} µs ({{CAPTURED['method']}}): "
                 f"{{result['ratio_to_captured']:.2f}}× the captured")
    else:
        line += "; the capture measured no time for this kernel"
    print(line)
    print("REPRO_RESULT " + json.dumps(result))
    return 0 if result["matched"] else 1


MODULE = {module}


if __name__ == "__main__":
    sys.exit(main())
'''


from compiler.stages.capture import METHODS  # noqa: E402

METHODS["kernel_reproducer"] = kernel_reproducer  # Kernel.reproducer (compiler.stages.kernels)
