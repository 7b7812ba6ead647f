"""Generated code: Inductor's output module (``inductor_output_code``), split per kernel.

C++ kernels on CPU (``async_compile.cpp_pybinding``), Triton kernels on CUDA
(``async_compile.triton``), and extern calls (``extern_kernels.mm`` …) from ``call()``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from compiler.stages.base import unavailable
from compiler.stages.code_text import DEF as _DEF, body as _body, leading_comments as _leading_comments
from compiler.stages.kernel_costs import call_section as _call_section, triton_costs
from compiler.stages.data import Data, Stage, _table
from compiler.stages.fx_graph import Graph
from compiler.stages.inductor_ir import InductorIR, IrText, MissingIr


# --- declared here, built below (``compiler.stages.schema`` ties the stages into a ``Compile``) ---

def kernels_of(inductor: Inductor) -> Kernels:
    """The Kernels stage of a compile: a view of its Inductor runs' generated kernels — the runs' own ``Kernel``
    objects, each named by its run's role and holding what the GPU measured of it — and the runs' modules as one
    text (never saved: ``Compile.to_data``)."""
    if not inductor.available:
        return Kernels(available=False, reason=inductor.reason)
    runs = [r for r in inductor.runs if r.code.available]
    if not runs:
        return Kernels(available=False, reason=inductor.cache or "Inductor produced no output code")
    module = "\n\n".join(f"# ===== {r.role or 'module'} =====\n{r.code.module}" if len(runs) > 1 else r.code.module
                         for r in runs)
    return Kernels(available=True, module=module, kernels=[k for r in runs for k in r.code.kernels],
                   languages=sorted({lang for r in runs for lang in r.code.languages}))


@dataclass(repr=False, eq=False)
class KernelGpu(Data):
    """GPU depth of one Triton kernel (``compiler.capturing.gpu``): what its compiled binary uses (from the launcher
    Inductor runs), its launch configuration, the bytes it moves per launch (``compiler.stages.kernels.
    triton_bytes``) and the bandwidth that achieves against the GPU's peak; Triton's kept IR levels."""

    registers: int | None = None  # per thread
    spills: int | None = None
    shared_bytes: int | None = None
    num_warps: int | None = None
    num_stages: int | None = None
    config: dict[str, Any] = field(default_factory=dict)  # block sizes of the launched config
    configs_compiled: int | None = None
    bytes_read: int | None = None  # per launch
    bytes_written: int | None = None
    bytes_per_call: int | None = None  # read + written, per launch
    bytes_method: str | None = None
    bytes_reason: str | None = None  # why the bytes are unknown
    bytes_args_per_call: int | None = None  # Inductor's estimate: every pointer argument's whole buffer
    accesses: list[dict[str, Any]] = field(default_factory=list)  # per pointer: kind, elements, bytes, how
    working_set_bytes: int | None = None  # distinct bytes touched per launch (an in-out buffer once)
    flops: float | None = None  # per launch (compiler.stages.kernel_costs.triton_costs)
    flops_method: str | None = None
    flops_dtype: str | None = None  # the peak FLOP/s it is read against (templates: their tensor-core dtype)
    time_us_per_launch: float | None = None
    achieved_bytes_per_s: float | None = None  # bytes ÷ time: effective bandwidth where served from L2
    peak_bytes_per_s: float | None = None
    bandwidth_share: float | None = None  # achieved ÷ DRAM peak, only where served from DRAM (≤ 1)
    served_from: str | None = None  # "DRAM", "L2" (above the DRAM peak, working set ≤ L2), None: unexplained
    l2_bytes: int | None = None
    measured_dram_bytes_read: float | None = None  # Nsight Compute, per launch (opt-in: compiler.capturing.ncu)
    measured_dram_bytes_written: float | None = None  # only what left L2 while the kernel ran
    measured_l2_bytes_written: float | None = None  # Nsight Compute: sectors written into L2 × 32 B, per launch
    ir: dict[str, str] = field(default_factory=dict)  # ttir, ttgir, llir, ptx
    ir_source: str | None = None
    notes: list[str] = field(default_factory=list)


@dataclass(repr=False, eq=False)
class KernelCost(Data):
    """FLOPs, bytes and the roofline of one kernel per call of its module (``compiler.stages.kernel_costs``);
    every number says its method."""

    reason: str | None = None  # why FLOPs are unknown (an op tcompile does not count)
    flops: float | None = None
    flops_method: str | None = None
    bytes: float | None = None
    bytes_method: str | None = None
    dtype: str | None = None  # the peak it is read against: fp32 (CUDA cores), tf32, bf16, fp16 …
    sites: int | None = None  # extern: calls in call()
    time_s: float | None = None  # GPU time per call of the module
    time_method: str | None = None
    intensity: float | None = None  # FLOPs per byte
    peak_flops_per_s: float | None = None
    peak_bytes_per_s: float | None = None
    peak_source: str | None = None
    ridge: float | None = None  # peak FLOP/s ÷ peak bytes/s
    l2_bytes: int | None = None
    working_set_bytes: float | None = None  # distinct bytes per launch, compared with the L2
    achieved_flops_per_s: float | None = None
    achieved_bytes_per_s: float | None = None
    bound: str | None = None  # "memory" or "compute"
    share: float | None = None  # of the DRAM peak (memory-bound, from DRAM) or of the peak FLOP/s
    served_from: str | None = None  # "DRAM", "L2"
    verdict: str | None = None
    measured_dram_bytes: float | None = None  # Nsight Compute, per call (opt-in)
    measured_method: str | None = None

    def __post_init__(self):
        from compiler.stages.roofline import out_of_bounds, reread

        if self.verdict and out_of_bounds(self):  # saved by an older version: read again with today's rules
            fresh = reread(self)
            self.__dict__["_as_saved"] = {name: getattr(self, name) for name in fresh}  # written back as it came
            for name, value in fresh.items():
                setattr(self, name, value)

    def to_data(self) -> dict:
        out = super().to_data()
        out.update(self.__dict__.get("_as_saved") or {})  # a file is saved as it was read: re-read again on load
        return out


@dataclass(repr=False, eq=False)
class Kernel(Data):
    name: str = ""
    language: str = ""  # cpp, triton, extern
    kind: str | None = None
    source: str | None = None
    comments: str | None = None
    call_args: list[str] = field(default_factory=list)
    aten_ops: list[str] = field(default_factory=list)
    source_nodes: list[str] = field(default_factory=list)
    ops_from_name: list[str] = field(default_factory=list)
    ir_node: str | None = None
    ir_nodes: list[str] = field(default_factory=list)
    ir_members: list[str] = field(default_factory=list)
    ir_ops: list[str] = field(default_factory=list)
    kernel_path: str | None = None
    kernel_info: dict[str, Any] | None = None  # triton_kernel_info (GPU)
    triton: dict[str, Any] | None = None  # @triton_heuristics metadata (GPU)
    role: str | None = None
    gpu_time_us_per_call: float | None = None
    profiled_calls: int | None = None
    gpu: KernelGpu | None = None  # Triton kernels: registers, spills, bandwidth, IR levels
    cost: KernelCost | None = None  # GPU: FLOPs, bytes, roofline (Triton and extern)

    def as_text(self) -> str:
        return self.source or ""

    def reproducer(self, launch: int = 0):
        """A standalone script that rebuilds this kernel's arguments from its run's generated module, launches it
        as Inductor did, checks its outputs and times it (``compiler.analyses.repro``)."""
        from compiler.stages.base import METHODS

        return METHODS["kernel_reproducer"](self, None, launch)


@dataclass(repr=False, eq=False)
class GeneratedCode(Stage):
    NAME: ClassVar[str] = "code"
    module: str = ""
    kernels: list[Kernel] = field(default_factory=list)
    languages: list[str] = field(default_factory=list)
    aot_id: str | None = None
    texts_from_module: bool = False  # saved without the kernels' source and comments: the module holds them

    def __post_init__(self):
        if self.texts_from_module:
            from compiler.stages.code_text import kernel_texts

            texts = kernel_texts(self.module)
            for k in self.kernels:
                if k.name in texts and k.language != "extern":
                    k.source, k.comments = texts[k.name]
            self.texts_from_module = False

    def to_data(self) -> dict:
        """Saved without each generated kernel's source and comments when they are the module's own text again."""
        from compiler.stages.code_text import kernel_texts

        out = super().to_data()
        out.pop("texts_from_module")
        texts = kernel_texts(self.module) if self.module else {}
        generated = [k for k in out["kernels"] if k.get("language") != "extern"]
        if generated and all(texts.get(k["name"]) == (k.get("source"), k.get("comments")) for k in generated):
            for k in generated:
                del k["source"], k["comments"]
            out["texts_from_module"] = True
        return out

    def _text(self):
        return self.module

    def _summary(self):
        return f"{len(self.kernels)} kernels ({', '.join(self.languages)})"


@dataclass(repr=False, eq=False)
class InductorRun(Data):
    """One Inductor compile: inference, or the forward or backward of a training graph."""

    role: str | None = None
    pre_grad: Graph = field(default_factory=Graph)
    post_grad: Graph = field(default_factory=Graph)
    ir: InductorIR = field(default_factory=InductorIR)
    code: GeneratedCode = field(default_factory=GeneratedCode)

    def __post_init__(self):
        for kernel in self.code.kernels:  # a run's kernels are named by its role (provenance keys, the Kernels rows)
            kernel.role = self.role
            kernel.__dict__["_run"] = self  # its module, for a reproducer (never saved)

    def to_data(self) -> dict:
        """Saved without each kernel's role: it is the run's."""
        out = super().to_data()
        for kernel in out["code"]["kernels"]:
            kernel.pop("role")
        return out

    @property
    def ir_before(self) -> IrText:
        """Inductor's IR before fusion (where there is none, a ``MissingIr`` saying why)."""
        return self.ir.pre_fusion or self._missing_ir()

    @property
    def ir_after(self) -> IrText:
        """Inductor's IR after fusion (where there is none, a ``MissingIr`` saying why)."""
        return self.ir.post_fusion or self._missing_ir()

    def _missing_ir(self) -> "MissingIr":
        return MissingIr(self.ir.reason or ("Inductor logged no IR for this run" if self.ir.available
                                            else "no reason recorded"))


@dataclass(repr=False, eq=False)
class Inductor(Stage):
    NAME: ClassVar[str] = "inductor"
    runs: list[InductorRun] = field(default_factory=list)
    cache: str | None = None  # why lowering and fusion were not seen (a cache hit)

    def __post_init__(self):
        for run in self.runs:  # a kernel's reproducer finds its compile through its run (never saved)
            run.__dict__["_inductor"] = self

    def _text(self):
        return "\n\n".join(f"# ===== {run.role or 'inference'}: IR after fusion =====\n{run.ir_after.text}"
                           for run in self.runs)

    def _summary(self):
        return f"{len(self.runs)} Inductor compiles ({', '.join(r.role or 'inference' for r in self.runs)})"


@dataclass(repr=False, eq=False)
class Kernels(Stage):
    """Every kernel of the compile's generated code (all Inductor runs)."""

    NAME: ClassVar[str] = "kernels"
    module: str = ""
    kernels: list[Kernel] = field(default_factory=list)
    languages: list[str] = field(default_factory=list)

    def _text(self):
        return self.module

    def _summary(self):
        return f"{len(self.kernels)} kernels"

    @property
    def table(self):
        return _table(self.kernels)


@dataclass(repr=False, eq=False)
class AutotuneChoice(Data):
    name: str = ""
    description: str | None = None
    time_ms: float | None = None
    chosen: bool = False
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(repr=False, eq=False)
class Autotune(Data):
    op: str | None = None
    compile_id: str | None = None
    input_sizes: list[Any] = field(default_factory=list)
    choices: list[AutotuneChoice] = field(default_factory=list)


_AOT_ID = re.compile(r"^# AOT ID: \['(?P<id>[^']+)'\]", re.M)
_COMMENT_FIELDS = {
    "kernel_path": re.compile(r"^# kernel path: (.*)$", re.M),
    "source_nodes": re.compile(r"^# Topologically Sorted Source Nodes: \[(.*?)\]", re.M),
    "aten_ops": re.compile(r"Original ATen: \[(.*?)\]", re.M),
}
_EXTERN_CALL = re.compile(r"^\s*(?:\w+ = )?(?P<fn>extern_kernels\.\w+|torch\.ops\.[\w.]+|aten\.[\w.]+)\(", re.M)
_TRITON_KIND = {"poi": "pointwise", "red": "reduction", "per": "persistent reduction", "tem": "template",
                "for": "foreach", "unk": "user-defined"}


def _language(how: str) -> str:
    return {"cpp_pybinding": "C++", "cpp": "C++", "triton": "Triton", "cuda": "CUDA C++",
            "rocm": "ROCm"}.get(how, how)


def _kind(name: str, language: str) -> str:
    if language == "Triton":
        parts = name.split("_")
        return _TRITON_KIND.get(parts[1], "triton") if len(parts) > 1 else "triton"
    return "cpp"


def _ops_from_name(name: str) -> list[str]:
    """``cpp_fused__softmax_sum_1`` → ``['_softmax', 'sum']`` (Inductor names kernels after the ops)."""
    core = re.sub(r"^(cpp|triton_\w{3})_fused_", "", name)
    core = re.sub(r"_\d+$", "", core)
    return [op for op in re.split(r"_(?=[a-z])", core) if op] if core != name else []


def parse_kernels(code: str) -> list[dict]:
    kernels = []
    call_section = _call_section(code)
    for match in _DEF.finditer(code):
        name = match["var"]
        language = _language(match["how"])
        source = _body(code, match.end())
        comments = _leading_comments(code, match.start())
        fields = {k: (rx.search(comments).group(1) if rx.search(comments) else None) for k, rx in _COMMENT_FIELDS.items()}
        kernels.append({
            "name": name, "language": language, "kind": _kind(name, language), "source": source.strip("\n"),
            "comments": comments, "kernel_path": fields["kernel_path"],
            "source_nodes": _split_list(fields["source_nodes"]), "aten_ops": _split_list(fields["aten_ops"]),
            "ops_from_name": _ops_from_name(name), "call_args": _call_args(call_section, name),
            **({"triton": triton_metadata(source), "gpu": {**triton_bytes(name, source, call_section), "notes": []}}
               if language == "Triton" else {}),
        })
    for fn in dict.fromkeys(m["fn"] for m in _EXTERN_CALL.finditer(call_section)):
        kernels.append({"name": fn, "language": "extern", "kind": "extern", "source": "",
                        "comments": "", "kernel_path": None, "source_nodes": [], "aten_ops": [],
                        "ops_from_name": [fn.rsplit(".", 1)[-1]], "call_args": _call_args(call_section, fn)})
    return kernels


def _split_list(text: str | None) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()] if text else []


def _call_args(call_section: str, name: str) -> list[str]:
    """Buffers passed at the call site(s): ``cpp_fused_relu_0(buf1)``, ``triton_x.run(buf0, …)``."""
    args = []
    for match in re.finditer(rf"(?<![\w.]){re.escape(name)}(?:\.run)?\((.*)\)", call_section):
        args += re.findall(r"\b(buf\d+|primals_\d+|arg\d+_\d+|tangents_\d+)\b", match.group(1))
    return list(dict.fromkeys(args))


_HEURISTIC = re.compile(r"@triton_heuristics\.(?P<kind>\w+)\(")
_META_FIELD = re.compile(r"'(?P<key>size_hints|num_load|num_reduction|num_store|kernel_num_gb|grid_type|"
                         r"mutated_arg_names|tiling_scores|kernel_name|backend_hash)': (?P<value>\{[^{}]*\}|\[[^\]]*\]|[^,}]+)")
_LAUNCH_FIELD = re.compile(r"\b(?P<key>num_warps|num_stages|XBLOCK|YBLOCK|RBLOCK|R0_BLOCK|BLOCK_M|BLOCK_N|BLOCK_K|GROUP_M)\s*[=:]\s*(?P<value>\d+)")


def triton_metadata(source: str) -> dict:
    """What Inductor wrote about a Triton kernel: heuristic, size hints, loads/stores, block sizes."""
    meta = {}
    heuristic = _HEURISTIC.search(source)
    if heuristic:
        meta["heuristic"] = heuristic["kind"]
    for match in _META_FIELD.finditer(source):
        meta.setdefault(match["key"], match["value"].strip().strip("'"))
    launch = {}
    for match in _LAUNCH_FIELD.finditer(source):
        launch.setdefault(match["key"], int(match["value"]))
    if launch:
        meta["launch"] = launch
    return meta


def attach_kernel_info(kernels: list[dict], payload: str) -> None:
    """torch's ``triton_kernel_info`` artifact (compile time, autotune cache info) per kernel."""
    import json

    try:
        info = json.loads(payload)
    except (TypeError, json.JSONDecodeError):
        return
    for kernel in kernels:
        if kernel["name"] in info:
            kernel["kernel_info"] = info[kernel["name"]]


def link_to_ir(kernels: list[dict], post_fusion_nodes: list[dict]) -> None:
    """Best effort: a generated kernel covers the (non-extern) post-fusion nodes whose output buffers
    it is passed. One kernel can cover several nodes: the C++ backend also fuses while generating code."""
    computed = [n for n in post_fusion_nodes if "Extern" not in n["kind"]]
    for kernel in (k for k in kernels if k["language"] != "extern"):
        args = set(kernel["call_args"])
        nodes = [n for n in computed if args & set(n["writes"])]
        if nodes:
            kernel["ir_nodes"] = [n["name"] for n in nodes]
            kernel["ir_node"] = nodes[0]["name"]
            kernel["ir_members"] = list(dict.fromkeys(m for n in nodes for m in n["members"]))
            kernel["ir_ops"] = list(dict.fromkeys(op for n in nodes for op in n["ops"]))


def kernel_of_nodes(kernels: list[dict], fusion: list[dict]) -> None:
    """Complete the fusion mapping: which kernel each post-fusion node ended up in."""
    for entry in fusion:
        entry["kernel"] = next((k["name"] for k in kernels if entry["fused"] in k.get("ir_nodes", [])), None)


def code_stage(code: str | None, reason_if_missing: str) -> dict:
    if not code:
        return {"available": False, "reason": reason_if_missing}
    aot_id = _AOT_ID.search(code)
    kernels = parse_kernels(code)
    return {"available": True, "module": code, "aot_id": aot_id.group("id") if aot_id else None,
            "kernels": kernels, "languages": sorted({k["language"] for k in kernels if k["language"] != "extern"})}


# --- bytes a Triton kernel reads and writes per launch (from the wrapper code) ---------------------

_SIGNATURE = re.compile(r"'signature': \{(?P<body>[^{}]*)\}")
_SIGNATURE_ITEM = re.compile(r"'(?P<arg>\w+)': '(?P<type>[^']+)'")
_ELEMENT_BYTES = {"fp64": 8, "i64": 8, "u64": 8, "fp32": 4, "i32": 4, "u32": 4, "tf32": 4, "fp16": 2, "bf16": 2,
                  "i16": 2, "u16": 2, "i8": 1, "u8": 1, "i1": 1, "u1": 1}
_BUFFER_DEF = re.compile(r"^\s*(?P<var>\w+) = empty_strided_\w+\(\((?P<size>[^()]*)\), \([^()]*\), torch\.\w+\)", re.M)
_ASSERT_SIZE = re.compile(r"^\s*assert_size_stride\((?P<var>\w+), \((?P<size>[^()]*)\), ", re.M)
_REINTERPRET_DEF = re.compile(r"^\s*(?P<var>\w+) = reinterpret_tensor\((?P<base>\w+), \((?P<size>[^()]*)\), ", re.M)
_ALIAS_DEF = re.compile(r"^\s*(?P<var>\w+) = (?P<base>\w+); del (?P=base)\s*# reuse", re.M)


def _numel(size: str) -> int | None:
    """``"4096, 1024"`` → 4194304; ``""`` (a 0-d tensor) → 1; symbolic sizes → None."""
    total = 1
    for dim in (d.strip() for d in size.split(",")):
        if not dim:
            continue
        if not dim.isdigit():
            return None
        total *= int(dim)
    return total


def _buffer_numels(call_section: str) -> dict[str, int | None]:
    """Elements of each tensor the wrapper's ``call()`` names: inputs (``assert_size_stride``), new
    buffers (``empty_strided_*``), reinterpreted views and reused buffers, in code order."""
    events = sorted([(m.start(), m["var"], _numel(m["size"]), None) for rx in (_BUFFER_DEF, _ASSERT_SIZE,
                                                                             _REINTERPRET_DEF)
                     for m in rx.finditer(call_section)]
                    + [(m.start(), m["var"], None, m["base"]) for m in _ALIAS_DEF.finditer(call_section)])
    numels: dict[str, int | None] = {}
    for _, var, numel, base in events:
        numels[var] = numels.get(base) if base else numel
    return numels


def _call_nodes(call_section: str, name: str) -> list:
    import ast

    calls = []
    for match in re.finditer(rf"^\s*{re.escape(name)}\.run\(.*\)\s*$", call_section, re.M):
        try:
            node = ast.parse(match.group(0).strip(), mode="eval").body
        except SyntaxError:
            continue
        if isinstance(node, ast.Call):
            calls.append(node)
    return calls


def triton_bytes(name: str, source: str, call_section: str) -> dict:
    """Bytes a Triton kernel reads and writes per launch: what its own loads and stores touch
    (``compiler.stages.kernel_costs.triton_costs``: gathers by the rows they read, broadcast reads once,
    each pointer at most its buffer), with its FLOPs. Where the kernel cannot be followed (templates,
    symbolic sizes): Inductor's ``estimate_kernel_num_bytes`` — each pointer argument's elements × its
    element size, in-out arguments twice — an upper bound when a kernel reads a slice of a buffer or
    gathers rows, a lower bound for kernels that re-read tiles (matmul templates). Buffer sizes come from
    the wrapper's ``call()`` (buffer definitions and ``assert_size_stride``); ``bytes_args_per_call``
    keeps Inductor's figure beside the estimate."""
    import ast

    signature = _SIGNATURE.search(source or "")
    calls = _call_nodes(call_section, name)
    if not signature or not calls:
        return {"bytes_reason": "no signature in the kernel's metadata" if not signature
                else "no launch of this kernel in the wrapper's call()"}
    # launch arguments follow the signature's order (constants Triton specialized, such as a size of 1,
    # are still passed; block sizes are not; templates append their grid)
    params = [(m["arg"], m["type"]) for m in _SIGNATURE_ITEM.finditer(signature["body"])]
    args = calls[0].args
    pointers = sum(t.startswith("*") for _, t in params)
    if len(args) < pointers or not all(t.startswith("*") for _, t in params[:pointers]):
        return {"bytes_reason": f"the launch's {len(args)} arguments do not follow the signature's {pointers} pointers"}
    numels = _buffer_numels(call_section)
    read = written = 0
    pointer_numels = {}
    for (param, kind), arg in zip(params, args):
        if not kind.startswith("*"):
            continue
        if isinstance(arg, ast.Call) and getattr(arg.func, "id", "") == "reinterpret_tensor" and len(arg.args) > 1:
            numel = _numel(ast.unparse(arg.args[1]).strip("()"))
        elif isinstance(arg, ast.Name):
            numel = numels.get(arg.id)
        else:
            numel = None
        size = _ELEMENT_BYTES.get(kind.lstrip("*"))
        if numel is None or size is None:
            what = ast.unparse(arg)
            return {"bytes_reason": f"size of {what} ({param}: {kind}) not known from the wrapper code"
                                    + (" (symbolic sizes)" if numel is None and what in numels else "")}
        pointer_numels[param] = numel
        nbytes = numel * size
        if param.startswith("in_out_ptr"):
            read, written = read + nbytes, written + nbytes
        elif param.startswith("out_ptr"):
            written += nbytes
        else:
            read += nbytes
    launches = f"; {len(calls)} launches in call(), the first measured" if len(calls) > 1 else ""
    out = {"bytes_args_per_call": read + written}
    try:
        costs = triton_costs(source, pointer_numels)
    except Exception as exc:  # noqa: BLE001 — a cost bug costs only this kernel's estimate
        costs = {"reason": f"the kernel's loads and stores not read ({type(exc).__name__}: {exc})"}
    if "reason" in costs:  # Inductor's estimate: an upper bound for slices and gathers, a lower one for tiles
        out.update({k: costs[k] for k in ("flops", "flops_method", "flops_dtype") if k in costs})
        return {**out, "bytes_read": read, "bytes_written": written, "bytes_per_call": read + written,
                "bytes_method": "each pointer argument's whole buffer (wrapper's call()) × element size (kernel "
                                f"signature), in-out arguments twice — as Inductor's estimate_kernel_num_bytes "
                                f"({costs['reason']})" + launches}
    return {**out, "bytes_read": costs["bytes_read"], "bytes_written": costs["bytes_written"],
            "bytes_per_call": costs["bytes_read"] + costs["bytes_written"], "bytes_method": costs["bytes_method"] + launches,
            "accesses": costs["accesses"], "working_set_bytes": costs["working_set_bytes"],
            "flops": costs["flops"], "flops_method": costs["flops_method"]}
