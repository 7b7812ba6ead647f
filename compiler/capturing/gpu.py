"""GPU measurements made after capture: per-kernel GPU time from torch.profiler (matched to the
kernels of the generated code), each Triton kernel's depth (registers, spills — Triton's count of
local-memory words per thread —, shared memory, launch config, achieved bandwidth against the GPU's
peak, the IR levels Triton kept), and the same function with and without CUDA graphs."""
from __future__ import annotations

import time

from compiler.stages.gpu_profile import FRAME_RANGE, GRAPH_RANGE, graph_of


def profile_kernels(fn, args, kwargs=None, *, warmup: int = 3, iters: int = 10) -> dict:
    """GPU time per kernel over ``iters`` calls, plus total GPU time vs wall time."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    kwargs = kwargs or {}
    for _ in range(warmup):
        fn(*args, **kwargs)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        start = time.perf_counter()
        for _ in range(iters):
            fn(*args, **kwargs)
        torch.cuda.synchronize()
        wall = time.perf_counter() - start
    kernels: dict[str, dict] = {}
    launched_by: dict[str, dict[str, float]] = {}  # kernel name → launching aten op → µs
    graphs: dict[str, dict[str, dict]] = {}  # kernel name → the compiled graph that launched it (graph_of) → its share
    for event in prof.events():
        if str(getattr(event, "device_type", "")).endswith("CPU"):
            if not getattr(event, "kernels", None):
                continue
            op, graph = _launch_context(event)
            for kernel in event.kernels:
                if op:
                    ops = launched_by.setdefault(kernel.name, {})
                    ops[op] = ops.get(op, 0.0) + kernel.duration
                if graph is not None:
                    share = graphs.setdefault(kernel.name, {}).setdefault(
                        graph, {"gpu_time_us_per_call": 0.0, "calls": 0, "launched_by": {}})
                    share["gpu_time_us_per_call"] += kernel.duration / iters
                    share["calls"] += 1
                    if op:
                        share["launched_by"][op] = share["launched_by"].get(op, 0.0) + kernel.duration / iters
            continue
        if _device_time(event) <= 0:
            continue
        entry = kernels.setdefault(event.name, {"name": event.name, "gpu_time_us": 0.0, "calls": 0})
        entry["gpu_time_us"] += _device_time(event)
        entry["calls"] += 1
    rows = sorted(kernels.values(), key=lambda k: -k["gpu_time_us"])
    for row in rows:
        row["gpu_time_us_per_call"] = row["gpu_time_us"] / iters
        if row["name"] in launched_by:
            row["launched_by"] = {op: us / iters for op, us in launched_by[row["name"]].items()}
        if row["name"] in graphs:
            row["graphs"] = graphs[row["name"]]
    total_gpu_us = sum(r["gpu_time_us"] for r in rows) / iters
    peak = peak_bandwidth(torch.cuda.current_device())
    return {"available": True, "iters": iters, "kernels": rows, "gpu_time_us_per_call": total_gpu_us,
            "wall_time_us_per_call": wall / iters * 1e6,
            "launch_overhead_share": max(0.0, 1 - total_gpu_us / (wall / iters * 1e6)) if wall else None,
            "peak_bytes_per_s": peak["bytes_per_s"], "peak_source": peak["source"],
            # live launcher details, matched to the capture's kernels by ``match_profile`` (not saved)
            "triton_kernels": triton_kernel_details([r["name"] for r in rows])}


def _launch_context(event) -> tuple[str | None, str | None]:
    """Above a CPU event that launched kernels: the outermost aten op (``aten::convolution`` above
    ``aten::cudnn_convolution``: which extern op a library kernel ran for, whatever its name says — cuDNN runs
    1×1 convolutions with kernels named like cuBLAS gemms), and the compiled graph it ran in — ``compile <id>``
    or ``graph <FX graph cache key>``, see ``graph_of`` — or None outside any compiled graph."""
    op = graph = region = None
    while event is not None:
        if event.name.startswith("aten::"):
            op = event.name
        elif graph is None and (found := GRAPH_RANGE.fullmatch(event.name)):
            graph = found.group(1)
        elif graph is not None and region is None and (found := FRAME_RANGE.fullmatch(event.name)):
            region = found.group(1)
        event = getattr(event, "cpu_parent", None)
    return op, graph_of(graph, region)


def _device_time(event) -> float:
    for attr in ("device_time_total", "cuda_time_total", "self_device_time_total"):
        value = getattr(event, attr, None)
        if value:
            return float(value)
    return 0.0


def cudagraph_memory() -> dict:
    import torch

    return {"reserved_bytes": torch.cuda.memory_reserved(), "allocated_bytes": torch.cuda.memory_allocated()}


def with_and_without_cudagraphs(fn, args, *, mode: str = "reduce-overhead", repeat: int = 15) -> dict:
    """Compile ``fn`` twice — with ``mode`` (CUDA graphs on) and with CUDA graphs turned off — and
    time both with the one timer (alternating samples), so the launch overhead CUDA graphs remove
    is measured, not asserted. Memory growth is what warming up and recording the graphs reserved."""
    import torch

    from compiler.capturing.runtime import interleaved

    with_graphs = torch.compile(fn, mode=mode)
    # the same mode's options, with only CUDA graphs turned off
    without_graphs = torch.compile(fn, options={**torch._inductor.list_mode_options(mode),
                                                "triton.cudagraphs": False})
    before = cudagraph_memory()
    for _ in range(3):  # warm-up, record, replay (on the run's copies of the arguments)
        with_graphs(*args)
    torch.cuda.synchronize()
    after = cudagraph_memory()
    timed_with, timed_without = interleaved([with_graphs, without_graphs], args, {}, device="cuda", repeat=repeat)
    return {"available": True, "mode": mode, "with_cudagraphs": timed_with, "without_cudagraphs": timed_without,
            "speedup": timed_without["median_s"] / timed_with["median_s"],
            "memory_reserved_growth_bytes": after["reserved_bytes"] - before["reserved_bytes"]}


# --- GPU depth per Triton kernel ------------------------------------------------------------------

IR_LEVELS = ("ttir", "ttgir", "llir", "ptx")  # the text Triton keeps of each compile, source to assembly
IR_LIMIT = 60_000  # characters kept per IR level (a big template's LLIR is larger: the rest is cut, and said so)
IR_BUDGET = 300_000  # characters of IR kept per capture, the most expensive kernels first (about 8 kernels × 4 levels)

# Peak DRAM bandwidth of known GPUs (vendor data sheets), used when the device cannot be asked.
PEAK_BANDWIDTH = (("H100 NVL", 3.9e12), ("H100 PCIe", 2.0e12), ("H100", 3.35e12), ("H200", 4.8e12),
                  ("GH200", 4.0e12), ("B200", 8.0e12), ("A100-SXM4-80GB", 2.039e12), ("A100 80GB PCIe", 1.935e12),
                  ("A100", 1.555e12), ("L40S", 0.864e12), ("L4", 0.3e12), ("A10G", 0.6e12), ("A10", 0.6e12),
                  ("V100", 0.9e12), ("T4", 0.32e12), ("RTX 4090", 1.008e12), ("RTX 3090", 0.936e12))


def peak_bandwidth(device_index: int = 0) -> dict:
    """The GPU's peak DRAM bandwidth: asked from the device (memory clock × bus width × 2 for double
    data rate, as Triton's driver reports them), else from ``PEAK_BANDWIDTH`` by the device's name."""
    import torch

    name = torch.cuda.get_device_name(device_index)
    table = next((value for key, value in PEAK_BANDWIDTH if key in name), None)
    out = {"device_name": name, "table_bytes_per_s": table}
    try:
        from triton.runtime import driver

        props = driver.active.utils.get_device_properties(device_index)
        clock_khz, bus_bits = props.get("mem_clock_rate"), props.get("mem_bus_width")
        if clock_khz and bus_bits:
            return {**out, "bytes_per_s": 2 * clock_khz * 1e3 * bus_bits / 8,
                    "source": f"device query: {clock_khz / 1e3:.0f} MHz memory clock × {bus_bits}-bit bus × 2 (DDR)"}
    except Exception:  # noqa: BLE001 — no Triton driver or no such property: use the table
        pass
    if table:
        return {**out, "bytes_per_s": table, "source": f"table of known GPUs ({name})"}
    return {**out, "bytes_per_s": None, "source": f"unknown GPU {name!r}: not in the table of known GPUs"}


def triton_kernel_details(names) -> list[dict]:
    """Registers, spills, shared memory, launch configuration and Triton's kept IR of each loaded Triton
    kernel whose name is in (or part of) one of ``names`` (the profiler's kernel names, most expensive
    first), read from the launchers Inductor runs (read only). ``src`` (the kernel's Python
    source) tells kernels of the same name apart. The IR is read for the launched kernels only, within
    ``IR_BUDGET``."""
    names = list(names)
    order = lambda name: next((i for i, n in enumerate(names) if name in n), len(names))  # noqa: E731
    candidates = sorted(_autotuners(lambda name: order(name) < len(names)), key=lambda c: order(c[0]))
    out, seen = [], set()
    for name, autotuner in candidates:
        try:
            details = _launcher_details(name, autotuner)
        except Exception as exc:  # noqa: BLE001 — a detail missing, never a failed run
            details = {"name": name, "notes": [f"launcher not read: {type(exc).__name__}: {exc}"]}
        key = (name, details.get("cache_hash"), details.get("src"))
        if key in seen:  # the same binary held twice (e.g. a benchmark module of max-autotune)
            continue
        seen.add(key)
        out.append(details)
    launched = {d["name"] for d in out if d.get("launched")}
    # a never-run kernel of a launched one's name is a benchmark or cache copy, not what ran
    out = [d for d in out if d.get("launched") or d["name"] not in launched]
    budget = IR_BUDGET
    for details in out:
        autotuner = details.pop("_autotuner", None)
        if not details.get("launched"):
            details["ir"], details["ir_source"] = {}, "not read: the kernel was never launched"
            continue
        if budget <= 0:
            details["ir"], details["ir_source"] = {}, (f"not kept: the capture's IR budget "
                                                       f"({IR_BUDGET:,} characters) went to costlier kernels")
            continue
        try:
            details["ir"], details["ir_source"] = _kept_ir(details["name"], autotuner)
        except Exception as exc:  # noqa: BLE001
            details["ir"], details["ir_source"] = {}, f"not read: {type(exc).__name__}: {exc}"
        budget -= sum(map(len, details["ir"].values()))
    for details in out:
        details.pop("_autotuner", None)
    return out


def _autotuners(wanted) -> list[tuple[str, object]]:
    """(kernel name, kernel object) of the ``wanted`` Triton kernels alive in this process: the globals of
    the generated modules Inductor loaded, and the objects the garbage collector tracks (a module dropped
    from Inductor's list — max-autotune's nested compiles clear it — still holds the kernels it runs)."""
    found: dict[int, tuple[str, object]] = {}
    try:
        from torch._inductor.codecache import PyCodeCache

        modules = [*getattr(PyCodeCache, "modules", []), *getattr(PyCodeCache, "modules_no_attr", {}).values()]
    except ImportError:
        modules = []
    for module in {id(m): m for m in modules}.values():
        for name, obj in list(vars(module).items()):
            if hasattr(obj, "launchers") and hasattr(obj, "inductor_meta") and wanted(name):
                found.setdefault(id(obj), (name, obj))
    import gc

    for obj in gc.get_objects():
        if id(obj) not in found and type(obj).__name__ in ("CachingAutotuner", "DebugAutotuner") \
                and getattr(obj, "launchers", None):
            name = (getattr(obj, "inductor_meta", None) or {}).get("kernel_name") \
                or getattr(getattr(obj, "fn", None), "__name__", None)
            if name and wanted(name):
                found[id(obj)] = (name, obj)
    return list(found.values())


def _int(value):
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _launcher_details(name: str, autotuner) -> dict:
    launchers = list(getattr(autotuner, "launchers", None) or [])
    launcher = launchers[0] if launchers else None
    config = getattr(launcher, "config", None)
    details = {"name": name, "src": getattr(getattr(autotuner, "fn", None), "src", None),
               "launched": launcher is not None, "cache_hash": getattr(launcher, "cache_hash", None),
               "_autotuner": autotuner,
               "registers": _int(getattr(launcher, "n_regs", None)),
               "spills": _int(getattr(launcher, "n_spills", None)),
               "shared_bytes": _int(getattr(launcher, "shared", None)),
               "num_warps": _int(getattr(config, "num_warps", None)),
               "num_stages": _int(getattr(config, "num_stages", None)),
               "config": {k: v for k, v in (getattr(config, "kwargs", None) or {}).items()
                          if isinstance(v, (int, float, str, bool))},
               "configs_compiled": len(getattr(autotuner, "configs", None) or []) or None, "notes": []}
    if launcher is None:
        details["notes"].append("no launcher: the kernel was never run")
    elif len(launchers) > 1:
        details["notes"].append(f"{len(launchers)} launchers (not autotuned to one yet): the first is shown")
    return details


def _kept_ir(name: str, autotuner) -> tuple[dict, str]:
    """Triton's IR levels of the launched binary. In memory where the parent process holds Triton's
    ``CompiledKernel`` (``.asm``: a ``TritonCompileResult``, or a launcher that kept its binary); else
    from the binary's folder in Triton's cache, found by its exact hash: kernels compiled in Inductor's
    worker processes come back as statically launched cubins, without their IR."""
    launcher = autotuner.launchers[0]
    config = getattr(launcher, "config", None)
    compiled = [getattr(launcher, "bin", None)] + [
        getattr(r, "kernel", None) for r in getattr(autotuner, "compile_results", None) or []
        if config is None or getattr(r, "config", None) is config or str(getattr(r, "config", None)) == str(config)]
    for kernel in compiled:
        asm = getattr(kernel, "asm", None)
        if hasattr(asm, "get") and any(isinstance(asm.get(k), str) for k in IR_LEVELS):
            return ({k: _cut(k, asm[k]) for k in IR_LEVELS if isinstance(asm.get(k), str)},
                    f"the compiled kernel in memory ({type(kernel).__name__}.asm)")
    cache_hash = getattr(launcher, "cache_hash", None)
    if not cache_hash:
        return {}, "not found: the launcher has no Triton cache hash"
    device = (getattr(autotuner, "triton_meta", None) or {}).get("device")
    device = getattr(device, "index", device) or 0
    roots = _triton_cache_roots(device, getattr(autotuner, "filename", None))
    for folder in [root / cache_hash for root in roots] + _fresh_cache_folders(cache_hash):
        ir = _read_ir(folder, name)
        if ir:
            return ir, f"Triton's cache folder of the launched binary: {folder}"
    kinds = {type(k).__name__ for k in compiled if k is not None}
    return {}, (f"not found: the binary in memory ({', '.join(sorted(kinds)) or 'none'}) keeps no IR, and no "
                f"folder {cache_hash} holds {name}.ttir under {', '.join(map(str, roots)) or 'any Triton cache'}")


def _triton_cache_roots(device: int, kernel_file: str | None) -> list:
    """Where Triton may have written the kernel's folder: the Triton cache of the Inductor cache directory the
    kernel's module was written to (``<dir>/<2 chars>/<hash>.py`` → ``<dir>/triton[/<device>]``: with caches
    off Inductor compiles into a fresh temporary directory, which it keeps), Inductor's current one, and Triton's own."""
    import os
    from pathlib import Path

    candidates = []
    if kernel_file:  # fresh_cache() sets TRITON_CACHE_DIR to <dir>/triton; the default is <dir>/triton/<device>
        folder = Path(kernel_file).parent.parent / "triton"
        candidates += [str(folder), str(folder / str(device))]
    candidates.append(os.environ.get("TRITON_CACHE_DIR"))
    try:
        from triton import knobs

        candidates.append(knobs.cache.dir)
    except (ImportError, AttributeError):
        pass
    inductor_dir = _inductor_cache_dir()
    if inductor_dir:
        candidates.append(os.path.join(inductor_dir, "triton", str(device)))
    candidates.append(os.path.join(os.path.expanduser("~"), ".triton", "cache"))
    return [Path(c) for c in dict.fromkeys(c for c in candidates if c) if Path(c).is_dir()]


def _inductor_cache_dir() -> str | None:
    """Inductor's cache directory, read without creating it (``cache_dir()`` would create it and set
    ``TORCHINDUCTOR_CACHE_DIR``)."""
    import os

    try:
        from torch._inductor.runtime.cache_dir_utils import default_cache_dir
    except ImportError:
        return os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    return os.environ.get("TORCHINDUCTOR_CACHE_DIR") or default_cache_dir()


def _fresh_cache_folders(cache_hash: str) -> list:
    """The hash's folder in the temporary Inductor cache directories made under the default one."""
    from pathlib import Path

    root = _inductor_cache_dir()
    if not root or not Path(root).is_dir():
        return []
    return sorted([*Path(root).glob(f"*/triton/{cache_hash}"), *Path(root).glob(f"*/triton/*/{cache_hash}")])


def _read_ir(folder, name: str) -> dict:
    if not folder.is_dir():
        return {}
    return {k: _cut(k, (folder / f"{name}.{k}").read_text(errors="replace"))
            for k in IR_LEVELS if (folder / f"{name}.{k}").is_file()}


def _cut(level: str, text: str) -> str:
    """At most ``IR_LIMIT`` characters of one IR level; PTX without its DWARF sections (line tables
    encoded one byte per line: most of a PTX file compiled with line info, and no use to read)."""
    note = ""
    if level == "ptx":
        debug = text.find("\t.section\t.debug_")
        if debug > 0:
            note = f"\n// [DWARF debug sections left out: {len(text) - debug:,} characters]\n"
            text = text[:debug]
    if len(text) > IR_LIMIT:
        note = f"\n… [cut: {len(text) - IR_LIMIT:,} more characters]" + note
        text = text[:IR_LIMIT]
    return text + note


        # the share of the DRAM peak (or "served from L2"): compiler.stages.kernel_costs.add_roofline


