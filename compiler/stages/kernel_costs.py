"""What each generated kernel costs on the GPU: bytes it moves, FLOPs it does, and where it sits on
the device's roofline (issue 26).

- **Bytes** of a Triton kernel come from its own ``tl.load``/``tl.store`` calls: each access touches
  the distinct elements its index expression can reach — the product of the ranges of the index
  variables it uses (``xindex`` over ``xnumel``, ``x0 = xindex % 768`` over 768, ``x1 = xindex // 768``
  over ``xnumel / 768`` …), so a broadcast read (an index that leaves a variable out) counts once, and a
  gather (an index built from a loaded value) counts the indices it was given × the row it reads, not
  the table. Each pointer is counted once per launch (a second pass over the same elements is a cache
  hit) and never more than its buffer holds. Kernels the reader cannot follow (templates, block
  pointers, symbolic sizes) keep Inductor's estimate — every pointer argument's whole buffer — and say so.
- **FLOPs**: extern kernels from their shapes (mm, addmm, bmm, baddbmm: 2·M·N·K; convolution: 2 × output
  elements × input channels per group × kernel window; scaled-dot-product attention: 4·B·H·Lq·Lk·D, half
  when causal); Triton pointwise/reduction kernels by counting the arithmetic in the kernel body (one per
  ``+ − × ÷``, math call or reduction step) × the elements each line runs over.
- **Roofline**: arithmetic intensity (FLOPs ÷ bytes), the ridge point (peak FLOP/s for the kernel's dtype
  ÷ peak DRAM bytes/s) and a verdict: memory-bound at X % of the DRAM peak, or compute-bound at Y % of
  the peak FLOP/s — or, under ``FAR_BELOW`` of its roof, near neither (launch, latency, occupancy). A kernel
  whose bytes ÷ time beats the DRAM peak is read against the L2 cache: with a working set that fits L2 its figure
  is an effective bandwidth "served from L2", never a share of DRAM peak above 100 % (``compiler.stages.roofline``).
"""
from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field

from compiler.stages.roofline import FAR_BELOW, _reads, above_dram_peak, roofline  # noqa: F401 (read from here too)


# --- declared here, built below (``compiler.stages.schema`` ties the stages into a ``Compile``) ---

def kernel_rows(compile: dict) -> list[dict]:
    """A compile's kernels in its data (``compiler.stages.data.plain_data``: roles kept): its Inductor runs' kernels,
    as ``kernels_of`` gives them — where code that reads and writes kernels as data finds them."""
    return [k for r in (compile.get("inductor") or {}).get("runs") or [] if (r.get("code") or {}).get("available")
            for k in r["code"].get("kernels") or []]


# --- the device --------------------------------------------------------------------------------

# Dense peak FLOP/s (vendor data sheets, no sparsity) and L2 size by device name; the first key found in
# the name wins. "fp32" is the CUDA cores' rate (Triton pointwise math, fp32 matmuls without TF32);
# "tf32"/"bf16"/"fp16"/"fp8" are tensor cores.
DEVICES = (
    ("H100 PCIe", {"fp64": 51e12, "fp32": 51e12, "tf32": 378e12, "bf16": 756e12, "fp16": 756e12, "fp8": 1513e12,
                   "l2_bytes": 50 * 2**20}),
    ("H100", {"fp64": 67e12, "fp32": 67e12, "tf32": 495e12, "bf16": 989e12, "fp16": 989e12, "fp8": 1979e12,
              "l2_bytes": 50 * 2**20}),
    ("H200", {"fp64": 67e12, "fp32": 67e12, "tf32": 495e12, "bf16": 989e12, "fp16": 989e12, "fp8": 1979e12,
              "l2_bytes": 50 * 2**20}),
    ("A100", {"fp64": 19.5e12, "fp32": 19.5e12, "tf32": 156e12, "bf16": 312e12, "fp16": 312e12,
              "l2_bytes": 40 * 2**20}),
)


def device_peaks(device_name: str | None) -> dict | None:
    """The device's peak FLOP/s per dtype and L2 bytes (``DEVICES``), or None for a device not listed."""
    for key, peaks in DEVICES:
        if device_name and key in device_name:
            return {**peaks, "source": f"data sheet of the {key} (dense, no sparsity)"}
    return None


# --- Triton kernels: bytes and FLOPs from the kernel's own source -------------------------------------

_ELEMENT_BYTES = {"fp64": 8, "i64": 8, "u64": 8, "fp32": 4, "i32": 4, "u32": 4, "tf32": 4, "fp16": 2, "bf16": 2,
                  "i16": 2, "u16": 2, "i8": 1, "u8": 1, "i1": 1, "u1": 1, "fp8e4nv": 1, "fp8e5": 1}
_SIGNATURE = re.compile(r"'signature': \{(?P<body>[^{}]*)\}")
_SIGNATURE_ITEM = re.compile(r"'(?P<arg>\w+)': '(?P<type>[^']+)'")
_NUMEL = re.compile(r"^\s*(?P<var>[a-z0-9_]*numel) = (?P<value>\d+)\s*$", re.M)
_REDUCTIONS = {"sum", "max", "min", "max2", "min2", "prod", "argmax", "argmin", "welford", "welford_reduce",
               "cumsum", "cumprod", "xor_sum", "any", "all"}
_NO_FLOP_CALLS = {"load", "full", "broadcast_to", "where", "zeros", "arange", "full_like", "store", "device_assert",
                  "reshape", "view", "expand_dims", "to", "program_id", "cast", "randint", "rand", "randn",
                  "bucketize", "trans", "promote_to_tensor"}
_FLOP_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)


def signature(source: str) -> list[tuple[str, str]]:
    """``[(argument, type)]`` of the kernel's ``triton_meta`` signature, in order."""
    match = _SIGNATURE.search(source or "")
    return [(m["arg"], m["type"]) for m in _SIGNATURE_ITEM.finditer(match["body"])] if match else []


def _jit_body(source: str) -> list[str]:
    """The lines of the ``@triton.jit`` function (after its ``def`` line)."""
    start = source.find("@triton.jit")
    if start < 0:
        return []
    lines = source[start:].splitlines()
    first = next((i for i, line in enumerate(lines) if line.startswith("def ")), None)
    return lines[first + 1:] if first is not None else []


def _statements(body: list[str]):
    """Each simple statement of the body, parsed; a call over several lines (``welford_reduce(…)``) is joined
    first, and block headers (``for …:``) are skipped — the lines inside them are read as they come."""
    pending = ""
    for line in body:
        if not line.strip() or line.strip().startswith("#"):
            continue
        pending += " " + line.strip()
        if pending.count("(") > pending.count(")"):
            continue
        text, pending = pending.strip(), ""
        if text.endswith(":"):
            continue
        try:
            yield ast.parse(text).body[0]
        except SyntaxError:
            continue


def _names(node) -> list[str]:
    return list(dict.fromkeys(n.id for n in ast.walk(node) if isinstance(n, ast.Name)))


class _Ranges:
    """How many distinct values each variable of a kernel takes in one launch, whether it varies over the
    reduction dimension, and whether it was loaded (an index built from it is a gather)."""

    def __init__(self, numels: dict[str, int]):
        self.count: dict[str, float] = {}
        self.over_r: dict[str, bool] = {}
        self.loaded: dict[str, bool] = {}
        for var, n in numels.items():
            prefix = var[:-len("numel")]  # x, y, r0_, r1_
            self.count[f"{prefix}index"] = n
            self.over_r[f"{prefix}index"] = prefix.startswith("r")
        self.count.setdefault("rindex", numels.get("r0_numel", numels.get("rnumel", 1)))
        self.over_r["rindex"] = True
        self.seeded = set(self.count)
        self.root: dict[str, str] = {}  # tmp → what it was computed from (two passes' copies compare equal)

    def canonical(self, node):
        """``node`` with each tmp replaced by what it was computed from."""
        class Rename(ast.NodeTransformer):
            def visit_Name(inner, name):  # noqa: N805
                return ast.Name(f"({self.root[name.id]})") if name.id in self.root else name
        return Rename().visit(ast.parse(ast.unparse(node), mode="eval").body)

    def of(self, node) -> float:
        """Distinct values ``node`` takes: ``a % c`` ≤ c, ``a // c`` ≈ range(a) / c, otherwise the product of
        its variables' ranges (each variable once)."""
        if isinstance(node, ast.BinOp) and isinstance(node.right, ast.Constant) and isinstance(node.right.value, int) \
                and node.right.value > 0 and not _names(node.right):
            if isinstance(node.op, ast.Mod):
                return min(self.of(node.left), node.right.value)
            if isinstance(node.op, ast.FloorDiv):
                return max(1, math.ceil(self.of(node.left) / node.right.value))
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)) \
                and not set(_names(node.left)) & set(_names(node.right)):
            return self.of(node.left) * self.of(node.right)  # x0 + 64*(x1 // 2): independent parts multiply
        if isinstance(node, ast.UnaryOp):
            return self.of(node.operand)
        total = 1.0
        for name in _names(node):
            total *= self.count.get(name, 1)
        return total

    def varies_over_r(self, node) -> bool:
        return any(self.over_r.get(n, False) for n in _names(node))

    def is_loaded(self, node) -> bool:
        return any(self.loaded.get(n, False) for n in _names(node))


def _access(call: ast.Call) -> tuple[str, ast.AST] | None:
    """``tl.load(in_ptr1 + (idx), …)`` → ("in_ptr1", idx); ``tl.load(in_ptr0)`` → ("in_ptr0", 0)."""
    if not call.args:
        return None
    pointer = call.args[0]
    if isinstance(pointer, ast.Name):
        return pointer.id, ast.Constant(0)
    if isinstance(pointer, ast.BinOp) and isinstance(pointer.op, ast.Add) and isinstance(pointer.left, ast.Name):
        return pointer.left.id, pointer.right
    return None


def _call_name(node) -> str | None:
    if isinstance(node, ast.Call):
        return node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
    return None


def triton_costs(source: str, buffer_numels: dict[str, int | None] | None = None) -> dict:
    """Bytes read and written per launch and FLOPs of one Triton kernel, from its source.

    ``buffer_numels``: each pointer argument's buffer size in elements (from the wrapper's ``call()``),
    the most an access can touch. → ``{"bytes_read", "bytes_written", "bytes_method", "accesses": [{"pointer",
    "kind" (load/store), "elements", "bytes", "how" (direct/broadcast/gather)}], "flops", "flops_method"}``,
    or ``{"reason"}`` where the kernel cannot be followed."""
    params = signature(source)
    types = {arg: kind for arg, kind in params if kind.startswith("*")}
    if not types:
        return {"reason": "no pointer arguments in the kernel's signature"}
    branches = _combo_branches(source)
    if branches:
        return _combo_costs(branches, buffer_numels)
    numels = {m["var"]: int(m["value"]) for m in _NUMEL.finditer(source or "")}
    if "tl.dot(" in source:
        return template_costs(source, types)
    if "tl.make_block_ptr" in source:
        return {"reason": "a block-pointer kernel: its pointers are not read per element"}
    if "xnumel" not in numels:
        return {"reason": "no static xnumel in the kernel (symbolic sizes)"}
    ranges = _Ranges(numels)
    domain_x = math.prod(v for k, v in numels.items() if not k.startswith("r"))
    domain_r = math.prod(v for k, v in numels.items() if k.startswith("r") and k != "rnumel")
    touched: dict[tuple[str, str], dict] = {}  # (pointer, kind) → {index text: access}
    flops = 0.0
    for statement in _statements(_jit_body(source)):
        value = getattr(statement, "value", None)
        targets = [t for t in getattr(statement, "targets", []) for t in (t.elts if isinstance(t, ast.Tuple) else [t])]
        if isinstance(statement, ast.Expr) and _call_name(value) == "store":
            _record(touched, "store", value, ranges, domain_x * domain_r)
            continue
        if value is None or not targets:
            continue
        calls = [_call_name(n) for n in ast.walk(value) if isinstance(n, ast.Call)]
        load = next((n for n in ast.walk(value) if _call_name(n) == "load"), None)  # also tl.load(…).to(…)
        if load is not None:
            count = _record(touched, "load", load, ranges, domain_x * domain_r)
            over_r = ranges.varies_over_r(load.args[0])
            for t in targets:
                if isinstance(t, ast.Name):
                    ranges.count[t.id], ranges.over_r[t.id], ranges.loaded[t.id] = count or 1, over_r, True
                    ranges.root[t.id] = ast.unparse(ranges.canonical(load.args[0]))
            continue
        if any(isinstance(t, ast.Name) and t.id in ranges.seeded for t in targets):
            continue  # xindex = xoffset + tl.arange(…): the ranges were seeded from the numels
        reduced = any(c in _REDUCTIONS for c in calls)
        over_r = ranges.varies_over_r(value) and not reduced
        # the work of this line: its arithmetic, over the elements it runs on
        ops = sum(isinstance(n, ast.BinOp) and isinstance(n.op, _FLOP_OPS) for n in ast.walk(value)) \
            + sum(isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub) for n in ast.walk(value)) \
            + sum(1 for c in calls if c and c not in _NO_FLOP_CALLS and c not in _REDUCTIONS)
        if reduced:  # one step per element reduced (Welford: a mean and a variance update, ~4)
            ops += 4 if any(c and c.startswith("welford") for c in calls) else 1
        elements = domain_x * (domain_r if ranges.varies_over_r(value) else 1)
        if any(isinstance(t, ast.Name) and t.id.startswith("tmp") for t in targets):  # not index arithmetic
            flops += ops * elements
        for t in targets:
            if isinstance(t, ast.Name):
                ranges.count[t.id] = ranges.of(value)
                ranges.over_r[t.id] = over_r
                ranges.loaded[t.id] = ranges.is_loaded(value)
                ranges.root[t.id] = ast.unparse(ranges.canonical(value))
    if not touched:
        return {"reason": "no tl.load or tl.store read from the kernel"}
    read = written = 0
    accesses = []
    for (pointer, kind), by_index in touched.items():
        size = _ELEMENT_BYTES.get(types.get(pointer, "").lstrip("*"))
        if size is None:
            return {"reason": f"element size of {pointer} ({types.get(pointer)}) unknown"}
        elements = sum(a["elements"] for a in by_index.values())
        limit = (buffer_numels or {}).get(pointer)
        capped = limit is not None and elements > limit
        elements = min(elements, limit) if limit is not None else elements
        how = sorted({a["how"] for a in by_index.values()})
        accesses.append({"pointer": pointer, "kind": kind, "elements": int(elements), "bytes": int(elements * size),
                         "how": "+".join(how) + (" (capped at the buffer)" if capped else "")})
        if kind == "load":
            read += int(elements * size)
        else:
            written += int(elements * size)
    gathers = [a["pointer"] for a in accesses if "gather" in a["how"]]
    per_pointer: dict[str, int] = {}
    for a in accesses:  # an in-out buffer is one working set, read and written
        per_pointer[a["pointer"]] = max(per_pointer.get(a["pointer"], 0), a["bytes"])
    return {"bytes_read": read, "bytes_written": written, "accesses": accesses,
            "working_set_bytes": sum(per_pointer.values()),
            "bytes_method": "the kernel's tl.load/tl.store index expressions: distinct elements each reaches "
                            "(ranges of its index variables; broadcast reads once; gathers = indices × row)"
                            + (f" — gathers through {', '.join(gathers)}" if gathers else "")
                            + "; each pointer once per launch, at most its buffer",
            "flops": flops,
            "flops_method": "arithmetic in the Triton kernel body (+ − × ÷, math calls, reduction steps) × the "
                            f"elements each line runs over ({domain_x:,} × {domain_r:,})"}


_COMBO_BRANCH = re.compile(r"^(?P<indent> *)(if|elif) pid < num_xblocks_\d+:\s*$")


def _combo_branches(source: str) -> list[str]:
    """A combo (foreach) kernel — ``if pid < num_xblocks_0: … elif pid < num_xblocks_1: …``, one sub-kernel per
    branch with its own ``xnumel`` — as one source per branch (the header, then the branch's body as the
    kernel's); [] for any other kernel."""
    start = source.find("@triton.jit")
    body = _jit_body(source)
    heads = [i for i, line in enumerate(body) if _COMBO_BRANCH.match(line)]
    if start < 0 or len(heads) < 2:
        return []
    indent = len(_COMBO_BRANCH.match(body[heads[0]])["indent"])
    out = []
    for n, head in enumerate(heads):
        end = heads[n + 1] if n + 1 < len(heads) else next(
            (i for i in range(head + 1, len(body)) if body[i].strip() and len(body[i]) - len(body[i].lstrip()) <= indent),
            len(body))
        lines = [line[4:] if line.startswith(" " * (indent + 4)) else line.strip() for line in body[head + 1:end]]
        out.append(source[:start] + "@triton.jit\ndef combo_branch():\n" + "\n".join(lines) + "\n")
    return out


def _combo_costs(branches: list[str], buffer_numels) -> dict:
    """The costs of a combo kernel: each branch read as a kernel of its own, summed."""
    parts = [triton_costs(branch, buffer_numels) for branch in branches]
    failed = next((p for p in parts if "reason" in p), None)
    if failed:
        return {"reason": f"a combo kernel whose sub-kernel cannot be followed: {failed['reason']}"}
    return {"bytes_read": sum(p["bytes_read"] for p in parts), "bytes_written": sum(p["bytes_written"] for p in parts),
            "accesses": [a for p in parts for a in p["accesses"]],
            "working_set_bytes": sum(p["working_set_bytes"] for p in parts),
            "bytes_method": f"a combo (foreach) kernel of {len(parts)} sub-kernels, each read on its own: "
                            + parts[0]["bytes_method"],
            "flops": sum(p["flops"] for p in parts),
            "flops_method": f"a combo (foreach) kernel of {len(parts)} sub-kernels, summed: arithmetic in each "
                            "body × the elements it runs over"}


_MNK = re.compile(r"^\s*(?P<dim>[MNK]) = (?P<value>\d+)\s*$", re.M)


def template_costs(source: str, types: dict[str, str]) -> dict:
    """A matmul template (``tl.dot``): 2·M·N·K FLOPs from its static ``M``/``N``/``K`` (the epilogue's few
    FLOPs per output left out), on the tensor cores of its ``arg_A`` dtype; its bytes are left to Inductor's
    estimate (each operand once: what an ideal tiling reads)."""
    dims = {m["dim"]: int(m["value"]) for m in _MNK.finditer(source)}
    out = {"reason": "a matmul template: its tiles are not read per element"}
    if len(dims) == 3:
        dtype = (types.get("arg_A") or "*fp32").lstrip("*")
        if dtype == "fp32" and "ALLOW_TF32 : tl.constexpr = True" in source:
            dtype = "tf32"
        out.update(flops=2.0 * dims["M"] * dims["N"] * dims["K"], flops_dtype=dtype,
                   flops_method=f"2·M·N·K of the template (M={dims['M']}, N={dims['N']}, K={dims['K']}; "
                                "epilogue not counted)")
    return out


def _record(touched: dict, kind: str, call: ast.Call, ranges: _Ranges, domain: float) -> float | None:
    found = _access(call)
    if found is None:
        return None
    pointer, index = found
    elements = min(ranges.of(index), domain)
    if kind == "store":
        how = "scatter" if ranges.is_loaded(index) else "direct"
    else:
        how = "gather" if ranges.is_loaded(index) else (
            "broadcast" if elements < domain and not isinstance(index, ast.Constant) else "direct")
    touched.setdefault((pointer, kind), {})[ast.unparse(ranges.canonical(index))] = {"elements": elements, "how": how}
    return elements


# --- extern kernels: FLOPs and bytes from the shapes in the wrapper's call() ---------------------------

_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64", "int64": "i64",
           "int32": "i32", "int8": "i8", "uint8": "u8", "bool": "i1", "float8_e4m3fn": "fp8e4nv"}
_BUFFER = re.compile(r"^\s*(?P<var>\w+) = empty_strided_\w+\(\((?P<size>[^()]*)\), \([^()]*\), torch\.(?P<dtype>\w+)\)", re.M)
_ASSERTED = re.compile(r"^\s*assert_size_stride\((?P<var>\w+), \((?P<size>[^()]*)\), ", re.M)
_ALIAS = re.compile(r"^\s*(?P<var>\w+) = (?P<base>\w+); del (?P=base)\s*# reuse", re.M)
_REINTERPRETED = re.compile(r"^\s*(?P<var>\w+) = reinterpret_tensor\((?P<base>\w+), \((?P<size>[^()]*)\), ", re.M)
_COMMENT_DTYPE = re.compile(r"%(?P<var>\w+) : Tensor \"(?P<dtype>[a-z0-9]+)\[")
_SHORT_DTYPES = {"f32": "fp32", "f16": "fp16", "bf16": "bf16", "f64": "fp64", "i64": "i64", "i32": "i32", "b8": "i1"}


def call_section(code: str) -> str:
    """The wrapper's code that launches kernels: call(), and the CUDA-graph partitions it calls."""
    starts = [i for i in (code.find("def call("), code.find("\ndef partition_")) if i >= 0]
    return code[min(starts):] if starts else ""


def _sizes(text: str) -> tuple[int, ...] | None:
    dims = [d.strip() for d in text.split(",") if d.strip()]
    return tuple(int(d) for d in dims) if all(d.isdigit() for d in dims) else None


def tensors_of(module: str) -> dict[str, dict]:
    """Each tensor the wrapper's ``call()`` names → ``{"sizes", "dtype"}`` (sizes from buffer definitions and
    ``assert_size_stride``; dtypes from the definitions, else the graph comments' ``f32[…]``)."""
    call = call_section(module) or module
    out: dict[str, dict] = {}
    for m in _COMMENT_DTYPE.finditer(module):
        out.setdefault(m["var"], {})["dtype"] = _SHORT_DTYPES.get(m["dtype"], m["dtype"])
    for m in _ASSERTED.finditer(call):
        out.setdefault(m["var"], {})["sizes"] = _sizes(m["size"])
    for m in _BUFFER.finditer(call):
        out.setdefault(m["var"], {}).update(sizes=_sizes(m["size"]), dtype=_DTYPES.get(m["dtype"], m["dtype"]))
    for m in _ALIAS.finditer(call):  # buf7 = buf3; del buf3  # reuse
        out.setdefault(m["var"], {}).update({k: v for k, v in out.get(m["base"], {}).items() if k not in out[m["var"]]})
    for m in _REINTERPRETED.finditer(call):
        out.setdefault(m["var"], {}).setdefault("sizes", _sizes(m["size"]))
        out[m["var"]].setdefault("dtype", out.get(m["base"], {}).get("dtype"))
    return out


def _shape(arg, tensors: dict) -> tuple[tuple[int, ...] | None, str | None]:
    if isinstance(arg, ast.Name):
        t = tensors.get(arg.id, {})
        return t.get("sizes"), t.get("dtype")
    if isinstance(arg, ast.Call) and getattr(arg.func, "id", "") == "reinterpret_tensor" and len(arg.args) > 1:
        return _sizes(ast.unparse(arg.args[1]).strip("()")), tensors.get(getattr(arg.args[0], "id", ""), {}).get("dtype")
    return None, None


_ATTENTION = re.compile(r"_scaled_dot_product_(flash|efficient|cudnn)_attention")
_CAUSAL_INDEX = {"flash": 4, "efficient": 6, "cudnn": 6}


def extern_costs(fn: str, module: str, per_site: bool = False) -> dict:
    """FLOPs and bytes of every call of one extern kernel (``extern_kernels.mm``, ``…convolution``,
    ``torch.ops.aten._scaled_dot_product_*_attention``) in the wrapper's ``call()``, summed per call of the
    module; ``{"reason"}`` for an op whose FLOPs tcompile does not know. ``per_site``: also each call's FLOPs
    (``site_flops``, in call order: provenance shares an extern op's time over its calls by them)."""
    call = call_section(module) or module
    tensors = tensors_of(module)
    op = fn.rsplit(".", 1)[-1] if not fn.endswith(".default") else fn.rsplit(".", 2)[-2]
    flops = moved = largest = 0.0
    dtype, sites = None, 0
    site_flops = []
    for line in call.splitlines():
        before, flops_before = moved, flops
        text = line.strip()
        if fn + "(" not in text:
            continue
        try:
            statement = ast.parse(text).body[0]
        except SyntaxError:
            continue
        node = statement.value if isinstance(statement, (ast.Expr, ast.Assign)) else None
        if not isinstance(node, ast.Call):
            continue
        target = statement.targets[0].id if isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Name) else None
        kwargs = {k.arg: k.value for k in node.keywords}
        shapes = [_shape(a, tensors) for a in node.args]
        out_name = getattr(kwargs.get("out"), "id", None) or target
        out_sizes, out_dtype = _shape(ast.Name(out_name), tensors) if out_name else (None, None)
        if op in ("mm", "addmm", "bmm", "baddbmm"):
            a, b = (shapes[0], shapes[1]) if op in ("mm", "bmm") else (shapes[1], shapes[2])
            if not a[0] or not b[0]:
                return {"reason": f"shapes of {op}'s operands not in the wrapper code"}
            *batch, m, k = a[0]
            n = b[0][-1]
            flops += 2 * math.prod(batch) * m * n * k
            dtype = dtype or a[1] or out_dtype
            moved += (math.prod(a[0]) + math.prod(b[0]) + math.prod(batch) * m * n) * _ELEMENT_BYTES.get(dtype or "fp32", 4)
        elif op == "convolution":
            (x, x_dtype), (w, _) = shapes[0], shapes[1]
            dtype = dtype or x_dtype or out_dtype
            if not x or not w or not out_sizes:
                return {"reason": "shapes of the convolution's input, weight or output not in the wrapper code"}
            flops += 2 * math.prod(out_sizes) * math.prod(w[1:])
            moved += (math.prod(x) + math.prod(w) + math.prod(out_sizes)) * _ELEMENT_BYTES.get(dtype or "fp32", 4)
        elif _ATTENTION.search(fn):
            (q, q_dtype), (k, _) = shapes[0], shapes[1]
            dtype = dtype or q_dtype
            if not q or not k:
                return {"reason": "shapes of the attention's query and key not in the wrapper code"}
            *bh, lq, d = q
            lk = k[-2]
            causal_arg = kwargs.get("is_causal")
            index = _CAUSAL_INDEX[_ATTENTION.search(fn).group(1)]
            if causal_arg is None and len(node.args) > index:
                causal_arg = node.args[index]
            causal = isinstance(causal_arg, ast.Constant) and causal_arg.value is True
            flops += 4 * math.prod(bh) * lq * lk * d / (2 if causal else 1)
            moved += (2 * math.prod(q) + 2 * math.prod(k)) * _ELEMENT_BYTES.get(dtype or "fp32", 4)  # q, out, k, v
        else:
            return {"reason": f"FLOPs of {op} not known to tcompile"}
        sites += 1
        site_flops.append(flops - flops_before)
        largest = max(largest, moved - before)
    if not sites:
        return {"reason": "no call of it read from the wrapper code"}
    formula = {"convolution": "2 × output elements × input channels per group × kernel window"}.get(
        op, "4·B·H·Lq·Lk·D (half when causal)" if _ATTENTION.search(fn) else "2·M·N·K")
    # the calls run one after another: what must fit the L2 is the largest one's operands
    return {"flops": flops, "bytes": int(moved), "dtype": dtype, "sites": sites,
            **({"site_flops": site_flops} if per_site else {}), "working_set_bytes": int(largest),
            "flops_method": f"{formula}, from the operands' shapes in call() ({sites} call{'s' * (sites > 1)})",
            "bytes_method": "each operand and the output once (ideal reuse, from their shapes)"}


# --- measured time → roofline --------------------------------------------------------------------

# profiler kernel names → the extern op that launches them (checked in this order)
_EXTERN_FAMILIES = (("attention", ("attention", "fmha", "flash", "sdpa")),
                    ("convolution", ("fprop", "conv", "dgrad", "wgrad", "convertTensor", "nchw", "nhwc")),
                    ("matmul", ("gemm", "nvjet", "cutlass", "xmma", "cublas", "splitk", "gemv", "scal_kernel")))


def library_family(profiled_name: str) -> str | None:
    """The extern family (attention, convolution, matmul) of a kernel the profiler saw, by its name."""
    lower = profiled_name.lower()
    return next((f for f, words in _EXTERN_FAMILIES if any(w.lower() in lower for w in words)), None)


def extern_family(fn: str) -> str | None:
    if _ATTENTION.search(fn):
        return "attention"
    op = fn.rsplit(".", 1)[-1]
    return "convolution" if op == "convolution" else "matmul" if op in ("mm", "addmm", "bmm", "baddbmm") else None


def op_family(op: str) -> str | None:
    """The extern family of the aten op that launched a library kernel (``compiler.capturing.gpu._launch_context``)."""
    name = op.removeprefix("aten::")
    if "scaled_dot_product" in name or name.endswith(("flash_attention", "efficient_attention")):
        return "attention"
    if "conv" in name:
        return "convolution"
    return "matmul" if name in ("mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "_addmm_activation") else None


def family_times(name: str, us_per_call: float, launched_by: dict | None, by_op: bool) -> dict[str, float]:
    """A profiled library kernel's µs per call by extern family: by the aten ops that launched it (``by_op``: the
    profile has launching ops), else by its name."""
    if not by_op:
        family = library_family(name)
        return {family: us_per_call} if family else {}
    out: dict[str, float] = {}
    for op, us in (launched_by or {}).items():
        family = op_family(op)
        if family:
            out[family] = out.get(family, 0.0) + us
    return out


def _where(profile: dict) -> str:
    """Which launches a compile's profile holds (``compiler.stages.gpu_profile.compile_profile``)."""
    return " inside this compile's graphs" if profile.get("graphs") else ""


def extern_times(kernels: list[dict], profile: dict) -> None:
    """GPU time per call for extern kernels: the profiler's kernels that no generated kernel claimed, put in
    families by the aten op that launched them (``launched_by``: aten::convolution → convolution, aten::mm /
    addmm / bmm → matmul, scaled-dot-product ops → attention), or, in a profile without it, by their names
    (cuBLAS/CUTLASS gemms → matmul, cuDNN fprop → convolution, flash/fmha → attention); each family's time is
    split over its extern kernels by their FLOPs."""
    claimed = {k["name"] for k in kernels if k.get("language") != "extern"}
    rows = [r for r in profile.get("kernels", []) if not any(name in r["name"] for name in claimed)]
    groups: dict[str, dict[str, float]] = {}  # family → kernel name → µs per call
    by_op = any(r.get("launched_by") for r in rows)
    for row in rows:
        for family, us in family_times(row["name"], row["gpu_time_us_per_call"], row.get("launched_by"), by_op).items():
            found = groups.setdefault(family, {})
            found[row["name"]] = found.get(row["name"], 0.0) + us
    how = "launched by a {family} aten op" if by_op else "named like a {family}"
    externs = [k for k in kernels if k.get("language") == "extern" and k.get("cost")]
    for family, found in groups.items():
        members = [k for k in externs if extern_family(k["name"]) == family]
        flops = sum(k["cost"].get("flops") or 0 for k in members)
        for k in members:
            share = (k["cost"].get("flops") or 0) / flops if flops else 1 / len(members)
            k["gpu_time_us_per_call"] = share * sum(found.values())
            k["cost"]["time_method"] = (f"profiler kernels {how.format(family=family)}{_where(profile)} ({len(found)}: "
                                        f"{', '.join(sorted(name[:40] for name in found)[:3])}…)"
                                        + (f", split over {len(members)} extern ops by FLOPs" if len(members) > 1 else ""))
            if any("tf32" in name.lower() for name in found) and k["cost"].get("dtype") == "fp32":
                k["cost"]["dtype"] = "tf32"  # the library ran it on TF32 tensor cores


def add_roofline(data: dict) -> None:
    """Every kernel of every compile of a capture (dict, after the GPU profile was matched): its cost
    (Triton: from its gpu bytes and FLOPs; extern: from its shapes), extern GPU times, and the roofline.
    A failure costs only that compile's costs, and says so on its kernels."""
    profile = data.get("gpu_profile") or {}
    if not profile.get("available"):
        return
    from compiler.stages.gpu_profile import compile_profile, graphs_of_compile, rematch_times
    from compiler.stages.caches import graph_keys
    from compiler.stages.caches import Caches

    peaks = device_peaks((data.get("environment") or {}).get("device_name"))
    for c in data.get("compiles", []):
        modules = {r.get("role"): r["code"]["module"] for r in (c.get("inductor") or {}).get("runs", [])
                   if (r.get("code") or {}).get("available")}
        rows = kernel_rows(c)
        keys = graph_keys(Caches.from_data(c.get("caches") or {}, "caches"))
        own = compile_profile(profile, graphs_of_compile(c["compile_id"], keys))
        if own is not profile:  # a profile split by compiled graph: each compile's own launches
            rematch_times(rows, own)
        kernel_costs(rows, modules, own, peaks)


def kernel_costs(kernels: list[dict], modules: dict, profile: dict, peaks: dict | None) -> None:
    """One compile's kernel rows (as data, the GPU profile matched to them; ``modules``: its generated
    module by role): each kernel's cost, extern GPU times and the roofline. Built into the Inductor runs'
    kernels (``compiler.stages.assemble``); ``add_roofline`` redoes it on a saved capture's data. A failure
    costs only the compile's costs, and says so on its kernels."""
    try:
        _compile_roofline(modules, kernels, profile, peaks)
    except Exception as exc:  # noqa: BLE001 — a cost bug costs only the costs
        for k in kernels:
            k["cost"] = {"reason": f"costs not computed ({type(exc).__name__}: {exc})"}


def _compile_roofline(modules: dict, kernels: list[dict], profile: dict, peaks: dict | None) -> None:
    peak_bytes = profile.get("peak_bytes_per_s")
    for k in kernels:
        measured = {key: k["cost"][key] for key in ("measured_dram_bytes", "measured_method")
                    if (k.get("cost") or {}).get(key) is not None}  # ncu's, kept when the costs are redone
        if k.get("language") == "Triton":
            g = k.get("gpu") or {}
            launches = (k.get("profiled_calls") or 0) / (profile.get("iters") or 1) or 1
            k["cost"] = {"flops": g["flops"] * launches if g.get("flops") is not None else None,
                         "flops_method": g.get("flops_method") or "not counted: " + (g.get("bytes_method") or "?"),
                         "bytes": g["bytes_per_call"] * launches if g.get("bytes_per_call") else None,
                         "bytes_method": g.get("bytes_method"), "dtype": g.get("flops_dtype") or "fp32",
                         "working_set_bytes": g.get("working_set_bytes"),
                         "time_method": "GPU profiler (torch.profiler), this kernel's launches" + _where(profile)}
        elif k.get("language") == "extern" and k.get("role") in modules:
            k["cost"] = extern_costs(k["name"], modules[k["role"]])
        if measured and k.get("cost"):
            k["cost"].update(measured)
    extern_times(kernels, profile)
    for k in kernels:
        if k.get("cost") and "reason" not in k["cost"]:
            t = k.get("gpu_time_us_per_call")
            roofline(k["cost"], t * 1e-6 if t else None, peaks, peak_bytes, k.get("gpu"))  # gpu: Triton kernels only
        _bandwidth(k.get("gpu"), peaks, peak_bytes)


_ABOVE_PEAK_NOTES = ("bytes ÷ time is above the DRAM peak", "above the DRAM peak with a working set over L2")


def _bandwidth(gpu: dict | None, peaks: dict | None, peak_bytes: float | None) -> None:
    """A Triton kernel's achieved bandwidth read against the DRAM peak, or, above it, against the L2:
    ``bandwidth_share`` only where it is a share of DRAM peak that can be true."""
    if not gpu or not gpu.get("achieved_bytes_per_s") or not peak_bytes:
        return
    gpu.pop("bandwidth_share", None)
    # this reading's notes, from a reading before (a saved capture's costs redone), go
    gpu["notes"] = [n for n in gpu.get("notes") or [] if not n.startswith(_ABOVE_PEAK_NOTES)]
    achieved, l2 = gpu["achieved_bytes_per_s"], (peaks or {}).get("l2_bytes")
    if achieved <= peak_bytes:
        gpu["served_from"], gpu["bandwidth_share"] = "DRAM", achieved / peak_bytes
    elif (reading := above_dram_peak(achieved, peak_bytes, l2, gpu.get("working_set_bytes") or gpu.get("bytes_per_call"),
                                     **_reads(gpu)))[0] == "L2":
        gpu["served_from"], gpu["l2_bytes"] = "L2", l2
        if reading[1]:
            gpu["notes"] = [*gpu["notes"], reading[1]]
    else:
        gpu["served_from"] = None
        gpu["notes"] = [*gpu["notes"], "bytes ÷ time is above the DRAM peak with a working set larger "
                        "than L2: part of its data was still in L2 from the kernels before it, or the byte estimate "
                        "is too high"]


OLDER_READING = ("re-read on load with today's rule: saved by an older version (format 2.x), which gave every "
                 "bandwidth as a share of the DRAM peak, here {share:.0%}")


def reread_bandwidths(compiles, device_name: str | None) -> int:
    """The Triton kernels of a capture saved by an older version with a share of the DRAM peak above 100 % (format
    2.x read every bandwidth against DRAM; no rule of today gives one) read again with today's rule (``_bandwidth``:
    against the device's L2, else said to be unexplained), as a recorded capture is; each says so in its notes. The
    file is written back as it came (``KernelGpu.to_data``). How many were read again."""
    peaks, count = None, 0
    for c in compiles:
        for run in c.inductor.runs if c.inductor.available else []:
            for kernel in run.code.kernels:
                gpu = kernel.gpu
                if gpu is None or not gpu.bandwidth_share or gpu.bandwidth_share <= 1 or not gpu.achieved_bytes_per_s:
                    continue
                peaks = peaks if peaks is not None else device_peaks(device_name) or {}
                fresh = {"achieved_bytes_per_s": gpu.achieved_bytes_per_s, "working_set_bytes": gpu.working_set_bytes,
                         "bytes_per_call": gpu.bytes_per_call, "bytes_read": gpu.bytes_read,
                         "bytes_written": gpu.bytes_written, "notes": list(gpu.notes)}
                peak = gpu.peak_bytes_per_s or gpu.achieved_bytes_per_s / gpu.bandwidth_share
                _bandwidth(fresh, {"l2_bytes": gpu.l2_bytes or peaks.get("l2_bytes")}, peak)
                gpu.__dict__["_as_saved"] = {name: getattr(gpu, name) for name in
                                             ("bandwidth_share", "served_from", "l2_bytes", "notes")}
                fresh["notes"].append(OLDER_READING.format(share=gpu.bandwidth_share))
                gpu.bandwidth_share, gpu.served_from = fresh.get("bandwidth_share"), fresh.get("served_from")
                gpu.l2_bytes, gpu.notes = fresh.get("l2_bytes", gpu.l2_bytes), fresh["notes"]
                count += 1
    return count


# --- the roofline per source line ----------------------------------------------------------------

def _mixed_compute_share(cost: dict, flops_by_dtype: dict, seconds: float, peaks: dict) -> None:
    """A line whose FLOPs ran in several dtypes (a TF32 convolution and its float32 batch norm): its share of
    peak is the time those FLOPs take at each dtype's own peak over the time measured — never above 100 %
    unless a kernel is."""
    at_peak = sum(f / (peaks.get(d) or peaks["fp32"]) for d, f in flops_by_dtype.items() if f)
    cost["share"] = at_peak / seconds
    split = ", ".join(f"{d} {f / cost['flops']:.0%}" for d, f in sorted(flops_by_dtype.items(), key=lambda x: -x[1]) if f)
    cost["verdict"] = f"compute-bound at {cost['share']:.0%} of peak FLOP/s for its dtypes (FLOPs: {split})"
    if cost["share"] > 1:
        cost["verdict"] += " — above peak: the FLOP count is too high"


def line_roofline(compile, device_name: str | None, peak_bytes_per_s: float | None) -> list[dict]:
    """The roofline of each source line of one compile (typed ``Compile``): the FLOPs, bytes and GPU time of
    the kernels its work went to, each kernel's numbers split over its lines by the shares provenance gives
    it (``KernelProvenance.places``, the same shares that spread its time), then read as one kernel would be
    (``roofline``: intensity, ridge, memory- or compute-bound, served from L2). Only kernels with a GPU time,
    FLOPs and bytes count; ``kernels_costed`` of ``kernels`` says how many. Sorted by time, largest first."""
    if not compile.provenance.available or not compile.kernels.available:
        return []
    from compiler.stages.base import key_of

    costs = {key_of(k.role, k.name): k.cost for k in compile.kernels.kernels}
    peaks = device_peaks(device_name)
    rows: dict[tuple, dict] = {}
    for entry in compile.provenance.kernels:
        cost = costs.get(entry.key) or costs.get(entry.name)
        places = [(p.file, p.line, p.share) for p in entry.places] or [
            (entry.file, int(line), share) for line, share in entry.line_weights.items()]
        usable = bool(cost and cost.time_s and cost.flops is not None and cost.bytes)
        for file, line, share in places:
            row = rows.setdefault((file, line), {"file": file, "line": line, "kernels": [], "kernels_costed": 0,
                                                 "seconds": 0.0, "flops": 0.0, "bytes": 0.0, "_dtypes": {},
                                                 "_working_set": 0.0})
            row["kernels"].append(entry.key)
            if not usable or not share:
                continue
            row["kernels_costed"] += 1
            row["seconds"] += cost.time_s * share
            row["flops"] += cost.flops * share
            row["bytes"] += cost.bytes * share
            dtype = cost.dtype or "fp32"
            row["_dtypes"][dtype] = row["_dtypes"].get(dtype, 0.0) + cost.flops * share
            row["_working_set"] = max(row["_working_set"], cost.working_set_bytes or cost.bytes)
    code = {(r.file, r.line): r.code for r in compile.provenance.lines}
    out = []
    for (file, line), row in rows.items():
        dtypes, working_set = row.pop("_dtypes"), row.pop("_working_set")
        row["code"] = code.get((file, line)) or code.get((None, line))
        if not row["seconds"]:
            row["verdict"] = "no kernel of this line has a GPU time, FLOPs and bytes"
            out.append(row)
            continue
        # drawn against the roof of the dtype that did most of the line's FLOPs; its kernels run one after
        # another, so what must fit the L2 is the largest working set of one of them
        cost = {"flops": row["flops"], "bytes": row["bytes"], "dtype": max(dtypes, key=dtypes.get),
                "working_set_bytes": working_set}
        roofline(cost, row["seconds"], peaks, peak_bytes_per_s)
        if cost.get("bound") == "compute" and len([d for d, f in dtypes.items() if f]) > 1 and peaks:
            _mixed_compute_share(cost, dtypes, row["seconds"], peaks)
        row.update({k: cost.get(k) for k in ("dtype", "intensity", "ridge", "achieved_flops_per_s",
                                             "achieved_bytes_per_s", "bound", "share", "served_from", "verdict",
                                             "peak_flops_per_s", "peak_bytes_per_s")})
        out.append(row)
    return sorted(out, key=lambda r: -(r["seconds"] or 0))


@dataclass(frozen=True)
class GpuTimeAccount:
    """How a capture's profiled GPU time per call divides (``gpu_time_accounted``).

    ``kernels_us``: what the compiles' kernel rows account for, each profiler row (or, with ``by_graph``, each
    row's launches inside one compiled graph) counted once; ``in_graphs_us``: launched inside the compiled
    graphs' calls (``by_graph`` only, else None); ``rest``: the profiler's rows (their part outside the compiled
    graphs with ``by_graph``) that no compile accounts for, costliest first; ``repeated``: kernel names found in
    several compiles whose launches the profile could not tell apart."""

    kernels_us: float
    in_graphs_us: float | None
    rest: list
    repeated: list
    by_graph: bool
    unclaimed_in_graphs: list = ()  # (by_graph) rows launched inside the graphs that no kernel row claims
    # (by_graph) graphs that ran in the profiled calls but are no compile of the capture (compiled after it,
    # e.g. a recompile during the profiler's warm-up calls) → µs per call launched inside them
    uncaptured_graphs: dict = field(default_factory=dict)
    rows_us: float | None = None  # (by_graph) the compiles' kernel rows summed: a launch in each compile naming it


def gpu_time_accounted(capture) -> GpuTimeAccount | None:
    """How much of the profiled GPU time per call the compiles' kernels account for, and what the rest is. None
    without a GPU profile or any timed kernel.

    A profile that recorded which compiled graph launched each kernel (Inductor's ``## Call CompiledFxGraph``
    range; ``compiler.stages.gpu_profile.compile_profile``) gave each compile only its own launches: the rest is what
    ran outside the graphs. In an older profile Inductor's per-graph kernel names can repeat across compiles and
    the profiler sums launches by name, so each profiler row is counted once, and each compile's extern calls
    took their family's rows."""
    profile = capture.gpu_profile
    compiles = [c for c in capture.compiles if c.kernels.available]
    kernels = [k for c in compiles for k in c.kernels.kernels]
    if profile is None or not profile.gpu_time_us_per_call or not any(k.gpu_time_us_per_call for k in kernels):
        return None
    if any(r.graphs for r in profile.kernels):
        return _by_graph(profile, compiles, kernels)
    rest = _unclaimed(profile.kernels, kernels)
    accounted = max(0.0, profile.gpu_time_us_per_call - sum(r.gpu_time_us_per_call for r in rest))
    return GpuTimeAccount(kernels_us=accounted, in_graphs_us=None, rest=rest,
                          repeated=_repeated(compiles), by_graph=False)


def _unclaimed(rows: list, kernels: list) -> list:
    """The profiler's rows no kernel row claims: not named like a generated kernel, and not of an extern family
    the kernels took time from (``extern_times``: the kernels their aten op launched, or, in a profile without
    launching ops, those named like the family); costliest first."""
    generated = [k.name for k in kernels if k.language != "extern"]
    families = {extern_family(k.name) for k in kernels if k.language == "extern" and k.gpu_time_us_per_call}
    by_op = any(r.launched_by for r in rows)
    return sorted((r for r in rows if not any(name in r.name for name in generated)
                   and not set(family_times(r.name, r.gpu_time_us_per_call, r.launched_by, by_op)) & families),
                  key=lambda r: -r.gpu_time_us_per_call)


def _by_graph(profile, compiles, kernels) -> GpuTimeAccount:
    """``gpu_time_accounted`` for a profile that split each row's launches by compiled graph: every row's time is
    put in exactly one of three parts, so the parts add up to the rows' sum (the profiled time) by construction —
    outside the graphs; inside, claimed by a kernel row of a compile whose graph it is; inside, claimed by none.
    A graph several compiles hold (a backward graph compiled without the FX graph cache is ``graph None`` in every
    compile's set; two compiles with one cache key) is one graph: its launches are counted once, claimed if any of
    its compiles' kernel rows names them. A row's graph shares never count for more than the row."""
    from compiler.stages.caches import graph_keys
    from compiler.stages.gpu_profile import ProfiledKernel, graphs_of_compile

    mine = [graphs_of_compile(c.compile_id, graph_keys(c.caches)) for c in compiles]  # each compile's graphs
    by_op = any(r.launched_by or any(s.launched_by for s in r.graphs.values()) for r in profile.kernels)
    claims = [_claims(c.kernels.kernels) for c in compiles]
    claimed, rest, unclaimed, uncaptured_graphs = 0.0, [], {}, {}
    for r in profile.kernels:
        inside = sum(share.gpu_time_us_per_call for share in r.graphs.values())
        scale = min(1.0, r.gpu_time_us_per_call / inside) if inside > 0 else 0.0
        outside = r.gpu_time_us_per_call - inside * scale
        if outside > 1e-6 * r.gpu_time_us_per_call:
            rest.append(ProfiledKernel(name=r.name, gpu_time_us_per_call=outside,
                                       calls=max(0, r.calls - sum(share.calls for share in r.graphs.values()))))
        for where, share in r.graphs.items():
            us = share.gpu_time_us_per_call * scale
            owners = [claim for claim, graphs in zip(claims, mine) if where in graphs]
            if not owners:  # a graph of no compile here (compiled during the profiler's warm-up calls)
                uncaptured_graphs[where] = uncaptured_graphs.get(where, 0.0) + us
            if any(claim(r.name, us, share.launched_by, by_op) for claim in owners):
                claimed += us
            else:
                unclaimed[r.name] = unclaimed.get(r.name, 0.0) + us
    return GpuTimeAccount(kernels_us=claimed, in_graphs_us=claimed + sum(unclaimed.values()),
                          rest=sorted(rest, key=lambda r: -r.gpu_time_us_per_call),
                          repeated=_repeated(compiles, profile, mine), by_graph=True,
                          unclaimed_in_graphs=sorted((ProfiledKernel(name=name, gpu_time_us_per_call=us)
                                                      for name, us in unclaimed.items()),
                                                     key=lambda r: -r.gpu_time_us_per_call),
                          uncaptured_graphs=uncaptured_graphs,
                          rows_us=sum(k.gpu_time_us_per_call or 0 for k in kernels))


def _claims(kernels: list):
    """Whether one compile's kernel rows claim a profiled launch (name, µs per call, launching ops → µs, whether
    the profile has launching ops): named like one of its generated kernels, or of an extern family its extern
    kernels took time from (``_unclaimed``'s test, for one launch)."""
    generated = [k.name for k in kernels if k.language != "extern"]
    families = {extern_family(k.name) for k in kernels if k.language == "extern" and k.gpu_time_us_per_call}

    def claim(name: str, us: float, launched_by: dict, by_op: bool) -> bool:
        return any(g in name for g in generated) or bool(set(family_times(name, us, launched_by, by_op)) & families)
    return claim


def _repeated(compiles, profile=None, mine: list[set] | None = None) -> list[str]:
    """Generated kernel names in several compiles whose launches the profile cannot tell apart: any two
    compiles' by name, or, where the profile split launches by compiled graph (``profile``; ``mine``: each
    compile's graphs), two compiles that both claim a graph's launches of the name (two backward graphs compiled
    without the FX graph cache)."""
    names = [{k.name for k in c.kernels.kernels if k.language != "extern"} for c in compiles]
    if profile is None:
        return sorted({n for i, found in enumerate(names) for n in found
                       if any(n in other for other in names[i + 1:])})
    repeated = set()
    for row in profile.kernels:
        for where in row.graphs:
            claimants = [found for found, graphs in zip(names, mine)
                         if where in graphs and any(n in row.name for n in found)]
            if len(claimants) > 1:
                repeated.update(n for found in claimants for n in found if n in row.name)
    return sorted(repeated)
