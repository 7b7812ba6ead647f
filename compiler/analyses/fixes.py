"""Findings → fixes: for each graph break, recompile and skipped frame a capture holds, the concrete
change that may remove it, as data (``compiler.stages.fix_schema.Fix``), ranked by what its findings cost.

Read only from what the capture already holds — torch's GB codes and hints of each graph break,
the failing guard of each recompile, each compile's status — so proposing costs milliseconds and
works on a loaded capture. Trying a fix (measuring it) is ``compiler.fix_experiments``.

Ranking (``Fix.cost``, ``cost_method`` says it in words): frames skipped to eager first, then the
recompile limit reached, then graphs split by graph breaks (each occurrence), then recompiles.
A change that is a code rewrite (``torch.cond``, ``allow_in_graph`` on your function) is
``applicable=False``: shown with its snippet, never applied behind the user's back.

    >>> from compiler import Capture
    >>> cap = Capture.from_data({"format": "tcompile-capture", "version": [2, 0], "breaks": {"available": True,
    ...     "total": 2, "items": [{"headline": "Dynamic shape operator", "gb_code": "GB0036", "count": 2,
    ...                             "file": "m.py", "line": 3, "code": "y = x.nonzero()"}]}})
    >>> [(f.kind, f.config, f.cost_text) for f in propose(cap).items]
    [('capture_dynamic_output_shape_ops', {'capture_dynamic_output_shape_ops': True}, '2 graph breaks at 1 place')]
"""
from __future__ import annotations

import re
import sys

from compiler.stages.capture import METHODS
from compiler.stages.fix_schema import FINDINGS, GUARDS, RUNTIME, DynamicMark, Fix, Fixes

# what each finding costs in the ranking: a skipped frame runs all of its code eagerly; a frame at the
# recompile limit runs every new variant eagerly; a graph break splits a graph; a recompile compiles again
# a CUDA graph skipped runs every kernel launch of its graph from Python; a µs of guard checks is paid on every call
# TF32 outputs compared by relative norm: float32 keeps 23 mantissa bits, TF32 10 (a rounding error of 2⁻¹¹ ≈
# 4.9e-4 per input); a matmul's relative error is of that order, a deep model's a few times it
TF32_TOLERANCE = 1e-2
# (the keys are the kinds of finding a fix is credited with: ``_credit``; "guards" counts the share of all guards
# an unsafe filter drops, so a filter weighs at most one recompile: it saves µs per call and gives up safety)
WEIGHTS = {"frames_skipped": 1000.0, "recompile_limit": 500.0, "recompile_budget": 200.0, "cudagraph_skips": 50.0,
           "graph_breaks": 10.0, "recompiles": 5.0, "guards": 5.0}
FINDING_WORDS = {"frames_skipped": ("frame skipped to eager", "frames skipped to eager"),
                 "recompile_budget": ("frame at or near the recompile limit", "frames at or near the recompile limit"),
                 "cudagraph_skips": ("CUDA-graph skip", "CUDA-graph skips"), "recompiles": ("recompile", "recompiles")}
COST_METHOD = ("counted from the capture (not measured): each frame skipped to eager ×1000 (credited to the fix for the "
               "graph break that made torch skip it), recompile limit reached ×500, a frame that used its recompile budget (or is "
               "within two of it) ×200 (×100 for raising the limit, the last resort), CUDA-graph skips ×50, graph "
               "breaks ×10 (each occurrence splits a graph), recompiles ×5, the share of all guards an unsafe guard "
               "filter would drop ×5; a code rewrite ranks after a setting; a change for slow code addresses no "
               "counted finding and ranks last, until its experiment measures it; once tried, the recommended "
               "changes come first, by measured gain")

# torch.compiler's guard filters (torch.compile(options={"guard_filter_fn": ...})): what each stops checking
GUARD_FILTERS = {
    "skip_guard_on_inbuilt_nn_modules_unsafe": (
        "torch.nn's own modules (Linear, LayerNorm, …)",
        "a change to an attribute of a torch.nn module (a replaced weight tensor, a flag, a hook) is not seen: "
        "the compiled code keeps using what it saw at compile time"),
    "skip_guard_on_all_nn_modules_unsafe": (
        "every nn.Module, yours included",
        "a change to any module's attributes (training/eval, hooks, a swapped submodule, a Python attribute "
        "your forward reads) is not seen"),
    "skip_guard_on_globals_unsafe": (
        "global variables",
        "a changed global (a flag, a config value, a global tensor) is not seen: the old compile runs"),
    "keep_tensor_guards_unsafe": (
        "everything but the input tensors' dtype, device, shape and strides (parameters unchecked too)",
        "only the tensors are checked: every other Python value the code read is assumed never to change"),
}
# guard filters are proposed for a capture with at least this many guards in one compile: below, checking them
# takes a few µs per call (torch's guard tree is C++) and an unsafe filter is not worth what it gives up
GUARD_OVERHEAD_MIN = 50
_GLOBAL_SOURCE = re.compile(r"^G\[|\bG\['")
_MODULE_SOURCE = re.compile(r"_modules\[|\._parameters\[|\._buffers\[|L\['self'\]")
_FP32_MATMUL = re.compile(r"f32\[[^\]]*\][^\n]*aten\.(?:mm|addmm|bmm|baddbmm|convolution)\b")
_MUTATED = re.compile(r"\b(?P<name>[A-Za-z_]\w*)\.\w+_\(|\b(?P<target>[A-Za-z_]\w*)\[[^\]]*\]\s*[+\-*/]?=")

_SIZE = re.compile(r"tensor '(?P<name>.+?)' (?:size|stride) mismatch at index (?P<dim>\d+)")  # kwargs['ids'] too
_KEYWORD = re.compile(r"kwargs\[['\"](?P<name>[A-Za-z_]\w*)['\"]\]")  # a keyword argument of a **kwargs frame
_SCALAR = re.compile(r"^(?P<name>[\w\.\[\]'\"]+) == (?P<value>-?\d+(?:\.\d*)?(?:e-?\d+)?)$")
_CONFIG_HINT = re.compile(r"torch\._dynamo\.config\.(?P<name>\w+)\s*=\s*(?P<value>True|False)")
_BUILTIN = re.compile(r"builtin operator `(?P<name>[\w\.]+)`")
_LOGGING = re.compile(r"\b(?P<name>(?:logging|warnings)\.\w+)\s*\(")
_IDENT = re.compile(r"^[A-Za-z_]\w*$")


def propose(cap) -> Fixes:
    """The fixes for ``cap``'s findings, highest cost first (``cap.fixes()`` keeps them on the capture)."""
    builder = _Builder(cap)
    for index, item in enumerate(cap.breaks.items):
        builder.graph_break(index, item)
    for frame in getattr(cap, "skipped_frames", None) or ():
        builder.skipped_frame(frame)
    for recompile in cap.recompiles:
        builder.recompile(recompile)
    builder.inner_recompiles()
    builder.recompile_limit()
    builder.recompile_budgets()
    builder.cudagraph_skips()
    builder.guard_overhead()
    builder.slow_code()
    fixes = builder.finish()
    note = None if fixes else "no graph breaks, recompiles, skipped frames, CUDA-graph skips or guard overhead to fix"
    return Fixes(available=True, items=fixes, note=note)


class _Builder:
    def __init__(self, cap):
        self.cap = cap
        self.by_key: dict[tuple, Fix] = {}
        self.skipped = {c.compile_id for c in cap.compiles if c.status in ("skipped", "failed")}
        self.names = {c.compile_id: c.name for c in cap.compiles}
        self.by_id = {c.compile_id: c for c in cap.compiles}
        dynamo = [c for c in cap.compiles if c.origin == "dynamo"]
        self.entry_frame = dynamo[0].frame_id if dynamo else None  # the function the user compiled and calls
        self.inner_sizes: list[tuple[str, str]] = []  # size recompiles of other frames

    def _fix(self, key: tuple, **fields) -> Fix:
        fix = self.by_key.get(key)
        if fix is None:
            fix = self.by_key[key] = Fix(id="", **fields)
        return fix

    # --- graph breaks ---------------------------------------------------------------------------

    def graph_break(self, index: int, item) -> None:
        code = (item.code or "").strip()
        gb = (item.gb_code or "").upper()
        where = f"{_short(item.file)}:{item.line}" if item.file else "unknown line"
        finding = f"graph break {gb or ''} {item.headline} at {where}".replace("  ", " ") + (
            f" ×{item.count}" if item.count > 1 else "") + (f": {code}" if code else "")
        fix = self._classify(item)
        if fix is None:
            return
        fix.breaks.append(index)
        fix.findings.append(finding)
        for compile_id in item.compile_ids or ([item.compile_id] if item.compile_id else []):
            if compile_id not in fix.compiles:
                fix.compiles.append(compile_id)
        if fix.why is None and item.hints:
            fix.why = "torch's hint: " + item.hints[0]

    def skipped_frame(self, frame) -> None:
        """A frame torch skipped to eager (``cap.skipped_frames``) is credited to the fix for the graph break that
        made torch give up on it (its ``cause``): removing that break lets the frame compile."""
        fix = self._classify(frame.cause) if frame.cause is not None else None
        if fix is None:
            return
        _credit(fix, "frames_skipped")
        if frame.compile_id and frame.compile_id not in fix.compiles:
            fix.compiles.append(frame.compile_id)
        fix.findings.append(f"frame {frame.function} skipped to eager ({frame.compile_id}): {frame.reason}, caused by "
                            f"{frame.cause.headline}" + (f" at {_short(frame.cause.file)}:{frame.cause.line}"
                                                         if frame.cause.file else ""))

    def _classify(self, item):
        """The fix for a graph break (a ``GraphBreak``: a break of the capture, or the cause of a skipped frame)."""
        text = "\n".join([item.headline or "", item.reason or "", item.explanation or "", *item.hints])
        code = (item.code or "").strip()
        gb = (item.gb_code or "").upper()
        fix = None
        if _inside_ddp(item):
            fix = self._ddp_break()
        elif gb == "GB0036" or "capture_dynamic_output_shape_ops" in text:
            fix = self._config_fix("capture_dynamic_output_shape_ops",
                                   "Capture operators whose output shape depends on data (nonzero, unique, …) "
                                   "in the graph instead of breaking it",
                                   alternatives=["torch._check / torch._check_is_size on the sizes, if the compile "
                                                 "then fails on a data-dependent guard"])
        elif gb == "GB0124" or ("capture_scalar_outputs" in text and ".item()" in text + code):
            fix = self._config_fix("capture_scalar_outputs",
                                   "Capture Tensor.item() (a scalar read from a tensor) in the graph instead of "
                                   "breaking it",
                                   alternatives=["keep the value a tensor (no .item()); with the setting on, "
                                                 "torch._check(v >= 0) tells the compiler facts it cannot see"])
        elif self._logging(item, text, code):
            name = self._logging(item, text, code)
            fix = self._fix(("logging", name), kind="reorderable_logging_functions",
                            title=f"Let Dynamo move {name}() calls out of the graph (run after it) instead of "
                                  "breaking the graph",
                            snippet=f"import torch\n{'import ' + name.split('.')[0] + chr(10) if '.' in name else ''}"
                                    f"torch._dynamo.config.reorderable_logging_functions.add({name})",
                            why=f"the break is a call to {name}()", config={"reorderable_logging_functions": [name]},
                            alternatives=[f"remove the {name}() call from the compiled code",
                                          "its output then appears after the graph ran (values printed are the same)"])
        elif gb == "GB0170" or "Data-dependent branching" in (item.headline or ""):
            fix = self._fix(("cond", item.file, item.line), kind="torch_cond",
                            title="Rewrite the data-dependent `if` as torch.cond (or branchless torch.where) — "
                                  "a code change, not applied",
                            snippet=_cond_snippet(code), applicable=False,
                            why="Dynamo cannot trace Python control flow on a tensor's value",
                            alternatives=["torch.where(cond, a, b) computes both sides and picks, with no branch"])
        elif gb == "GB0098":
            function = _disabled_name(item)
            fix = self._fix(("disabled", function), kind="remove_disable",
                            title=f"{function} is wrapped in torch.compiler.disable: remove it if it traces, or "
                                  "keep the break on purpose — a code change, not applied",
                            snippet=f"# remove @torch.compiler.disable from {function}", applicable=False,
                            why="Dynamo skips functions wrapped in torch.compiler.disable")
        elif gb == "GB0123" or "Tensor.backward()" in (item.headline or ""):
            fix = self._fix(("backward",), kind="backward_outside",
                            title="Call .backward() outside the compiled function (compile the forward and the "
                                  "loss), or enable compiled autograd — a code change, not applied",
                            snippet="loss = compiled_model(x)   # compiled: forward and loss\nloss.backward()         "
                                    "# outside the compiled function",
                            applicable=False, why="Dynamo does not trace Tensor.backward()",
                            alternatives=["torch._dynamo.config.compiled_autograd = True"])
        elif "optimizer" in text.lower() and "step" in code:
            fix = self._fix(("optimizer",), kind="compile_optimizer_step",
                            title="Compile the optimizer step on its own: torch.compile(opt.step) — a code change, "
                                  "not applied",
                            snippet="@torch.compile\ndef step():\n    opt.step()", applicable=False)
        elif gb in ("GB0007", "GB0147", "GB0148") or "marked as skipped" in text or "skip_files" in text:
            fix = self._untraceable(item, code)
        if fix is None:
            fix = self._hinted_config(text)
        return fix

    def _config_fix(self, name: str, title: str, value=True, alternatives=()) -> Fix:
        return self._fix(("config", name), kind=name, title=title,
                         snippet=f"import torch\ntorch._dynamo.config.{name} = {value!r}",
                         config={name: value}, alternatives=list(alternatives))

    def _hinted_config(self, text: str) -> Fix | None:
        """A break whose hint names a ``torch._dynamo.config`` boolean: that setting, as the hint says."""
        match = _CONFIG_HINT.search(text)
        if not match:
            return None
        torch = _loaded_torch()
        name, value = match["name"], match["value"] == "True"
        if torch is not None and not hasattr(torch._dynamo.config, name):
            return None
        return self._config_fix(name, f"Set torch._dynamo.config.{name} = {value}, as torch's hint says", value)

    @staticmethod
    def _logging(item, text: str, code: str) -> str | None:
        match = _BUILTIN.search(text)
        if match and match["name"] == "print":
            return "print"
        if "reorderable_logging_functions" in text:
            match = _LOGGING.search(code)
            if match:
                return match["name"]
            if "print(" in code:
                return "print"
        return None

    def _ddp_break(self) -> Fix:
        return self._fix(("ddp_forward",), kind="ddp_forward",
                         title="A graph break inside DistributedDataParallel's forward (torch's own code): nothing to "
                               "change in your code — torch breaks there on purpose and compiles the wrapped module "
                               "underneath, split at DDP's gradient buckets (torch._dynamo.config.optimize_ddp) — a "
                               "setting, not applied",
                         snippet="import torch\n\n# torch's documented way (the default): compile the DDP model; "
                                 "Dynamo runs DDP's forward eagerly\n# and splits the module's graph at DDP's buckets "
                                 "so communication overlaps the backward\nmodel = torch.compile(DDP(model))\n\n"
                                 "# one graph with the gradient communication traced: compiled autograd\n"
                                 "torch._dynamo.config.optimize_ddp = \"python_reducer\"\n"
                                 "torch._dynamo.config.compiled_autograd = True",
                         applicable=False,
                         why="DistributedDataParallel._inside_ddp_forward is marked skip in torch (distributed.py: "
                             "\"dynamo only kicks in for the 'module_to_run' underneath\"); the DDPOptimizer "
                             "(optimize_ddp=\"ddp_optimizer\") then splits the graph at bucket boundaries",
                         alternatives=["torch._dynamo.config.optimize_ddp = \"python_reducer\" with "
                                       "torch._dynamo.config.compiled_autograd = True (torch's DDP + compiled "
                                       "autograd: the reducer traced, no graph breaks for buckets)",
                                       "never wrap your training function in torch.compiler.disable for this break: "
                                       "it holds the whole compiled region"])

    def _untraceable(self, item, code: str) -> Fix:
        frames = _compiled_user_frames(item, self.names.get(getattr(item, "compile_id", None)))
        enclosing = frames[-1].function if frames else None
        entry = frames[0].function if frames else None
        called = re.search(r"the (?:builtin|function) `([^`]+?)\.?`", item.explanation or item.reason or "")
        called = called.group(1) if called else "the call"
        smallest = enclosing if enclosing and enclosing != entry else None
        library = _library_of(item.file)
        if library and smallest is None:  # inside torch or a library, reached straight from the compiled function
            return self._fix(("library_break", library, called), kind="library_break",
                             title=f"A graph break inside {library} ({_short(item.file)}:{item.line}), not in your "
                                   "code: nothing to change in your code; disabling the compiled function would "
                                   "switch compiling off for all of it — a note, not applied",
                             snippet=f"# the break is in {library}: {called} is not traceable there\n"
                                     "# nothing to change in your code; where the call is yours to move, move it "
                                     "out of the compiled function",
                             applicable=False, why=f"Dynamo cannot trace {called} inside {library}",
                             alternatives=[f"a newer {library} may trace it: check its release notes",
                                           "torch.compiler.substitute_in_graph(original)(a traceable Python version), "
                                           "where the library call is a small pure function"])
        snippet = ("import torch\n\n"
                   f"@torch.compiler.disable   # run {smallest}() eagerly: one break around it instead of inside\n"
                   f"def {smallest}(...):\n    ...") if smallest else (
            f"import torch\n\n# move `{code or called}` into a small function of its own, then:\n"
            "@torch.compiler.disable\ndef untraced_part(...):\n    ...")
        return self._fix(("untraceable", called), kind="untraceable_call",
                         title=f"Dynamo cannot trace {called}: wrap the smallest function around it in "
                               "torch.compiler.disable, or, if it is traceable PyTorch code, "
                               "torch.compiler.allow_in_graph — a code change, not applied",
                         snippet=snippet, applicable=False,
                         alternatives=[f"torch.compiler.allow_in_graph(fn) on a function that calls {called} and "
                                       "only takes and returns tensors (it then runs in the graph, untraced)",
                                       "torch.compiler.substitute_in_graph(original)(a traceable Python version)",
                                       "torch._dynamo.nonstrict_trace on a function whose inputs are tensors"])

    # --- recompiles -----------------------------------------------------------------------------

    def recompile(self, recompile) -> None:
        guard = recompile.failed_guard or ""
        reason = recompile.reasons[0] if recompile.reasons else None
        text = reason.text if reason else guard
        finding = f"recompile {recompile.compile_id} of {recompile.name}: {text}"
        size = _SIZE.search(text)
        scalar = _SCALAR.match(guard.strip())
        if size:
            name, dim = size["name"], int(size["dim"])
            compiled = self.by_id.get(recompile.compile_id)
            entry = compiled is None or compiled.frame_id == self.entry_frame
            if not entry:  # a frame after a graph break or a function called inside: not an argument the user passes
                self.inner_sizes.append((recompile.compile_id, finding))
                return
            keyword = _KEYWORD.fullmatch(name)
            if keyword:  # the frame takes **kwargs (DDP's forward, a module's __call__): the keyword argument
                name = keyword["name"]
            positional = re.fullmatch(r"args\[(\d+)\]", name)
            if positional:  # the frame takes *args (a decorator's wrapper): the Nth positional argument
                position = int(positional[1])
                fix = self._fix(("mark_dynamic", name, dim), kind="mark_dynamic",
                                title=f"Mark dimension {dim} of positional argument {position} dynamic before calling, "
                                      "so one compile serves every size",
                                snippet=f"arg = args[{position}]   # positional argument {position} of each call\n"
                                        f"torch._dynamo.mark_dynamic(arg, {dim})   # before each call",
                                why=f"the guard on {name}.size({dim}) failed: {text}",
                                marks=[DynamicMark(argument=name, dim=dim, position=position)],
                                alternatives=["torch.compile(..., dynamic=True): every size dynamic from the start"])
            elif _IDENT.match(name):
                fix = self._fix(("mark_dynamic", name, dim), kind="mark_dynamic",
                                title=f"Mark dimension {dim} of {name} dynamic before calling, so one compile "
                                      "serves every size",
                                snippet=f"torch._dynamo.mark_dynamic({name}, {dim})   # before each call\n"
                                        f"out = compiled({name}, ...)",
                                why=f"the guard on {name}.size({dim}) failed: {text}",
                                marks=[DynamicMark(argument=name, dim=dim)],
                                alternatives=["torch.compile(..., dynamic=True): every size dynamic from the start",
                                              f"torch._dynamo.maybe_mark_dynamic({name}, {dim}): dynamic unless the "
                                              "compile needs it fixed"])
            else:
                fix = self._dynamic_fix(f"the guard on {name}.size({dim}) failed: {text}")
        elif scalar:
            name, value = scalar["name"], scalar["value"]
            kind = "float" if any(c in value for c in ".e") else "int"
            if _specializes(kind):  # torch._dynamo.config.specialize_<kind> is on here: every value compiles again
                fix = self._fix(("specialize", kind), kind=f"specialize_{kind}",
                                title=f"torch._dynamo.config.specialize_{kind} is on: every new value of the Python "
                                      f"{kind} {name} compiles again. Turn it off so the {kind} becomes a symbol",
                                snippet=f"import torch\ntorch._dynamo.config.specialize_{kind} = False",
                                why=f"the guard {guard} failed", config={f"specialize_{kind}": False},
                                alternatives=[f"pass {name} as a 0-d tensor: torch.tensor({value})",
                                              "torch.compile(..., dynamic=True)"])
                fix.recompiles.append(recompile.compile_id)
                fix.findings.append(finding)
                return
            subject, instead = _scalar_subject(name, kind, recompile.name)
            fix = self._fix(("scalar", name), kind=f"dynamic_{kind}",
                            title=f"{subject} is baked into each compile: compile with dynamic=True "
                                  f"so it becomes a symbol (or pass it as a tensor)",
                            snippet="compiled = torch.compile(fn, dynamic=True)",
                            why=f"each new value of {subject[0].lower() + subject[1:]} compiles again "
                                f"(torch's guard: {guard})",
                            compile_kwargs={"dynamic": True},
                            alternatives=[instead or f"pass {name} as a 0-d tensor: torch.tensor({value})",
                                          f"torch._dynamo.config.specialize_{kind} = False "
                                          f"(the default: the value becomes dynamic after one recompile)"])
        else:
            return
        fix.recompiles.append(recompile.compile_id)
        fix.findings.append(finding)

    def inner_recompiles(self) -> None:
        """Size recompiles of frames the user does not call (resume functions after a graph break, functions
        compiled on their own): their sizes come from the inputs, so they go with the entry argument's
        mark_dynamic fix where there is one, else with dynamic=True."""
        if not self.inner_sizes:
            return
        marks = [f for f in self.by_key.values() if f.kind == "mark_dynamic"]
        fix = marks[0] if marks else self._dynamic_fix("sizes changed in frames inside the compiled function")
        for compile_id, finding in self.inner_sizes:
            fix.recompiles.append(compile_id)
            fix.findings.append(finding + " (a frame inside the compiled function: its size comes from the input)")

    def _dynamic_fix(self, why: str) -> Fix:
        return self._fix(("dynamic",), kind="dynamic_true",
                         title="Compile with dynamic=True so sizes are symbols from the first compile",
                         snippet="compiled = torch.compile(fn, dynamic=True)", why=why,
                         compile_kwargs={"dynamic": True})

    def recompile_limit(self) -> None:
        """Frames torch refused to compile again because they reached a recompile limit: the capture's
        ``recompile_limits`` (a compile torch refused with its recompile-limit message) and any graph break that says so.

        Never counted from compiles per frame: one code object can hold more compiles than the limit without
        reaching it — torch counts against ``recompile_limit`` only the cache entries whose ID_MATCH'd locals
        (an ``nn.Module``'s ``self``) are the frame's, and a decorator's wrapper (transformers' ``deprecate_kwarg``
        ``wrapped_func``) is one code object for every function it wraps — and a frame holding exactly as
        many compiles as the limit still compiled every variant it met."""
        hits = [i for i, item in enumerate(self.cap.breaks.items) if "recompile limit" in (item.headline or "").lower()
                or "recompile_limit" in (item.reason or "")]
        refused = list(self.cap.recompile_limits)
        if not hits and not refused:
            return
        limits = [r.limit for r in refused if isinstance(r.limit, int)]
        configured = self.cap.options.get("recompile_limit")
        limit = limits[0] if limits else configured if isinstance(configured, int) else 8
        new_limit = max(2 * limit, 16)
        fix = self._fix(("recompile_limit",), kind="recompile_limit",
                        title=f"The recompile limit ({limit}) was reached: further variants run eagerly. Fix the "
                              f"guard that keeps failing (see the fix for those recompiles), or raise the limit",
                        snippet=f"torch._dynamo.config.recompile_limit = {new_limit}",
                        config={"recompile_limit": new_limit},
                        why=f"torch._dynamo.config.recompile_limit is {limit}")
        for index in hits:
            if index not in fix.breaks:
                fix.breaks.append(index)
        for hit in refused:
            ids = [*hit.compile_ids, hit.compile_id]
            fix.compiles.extend(i for i in ids if i and i not in fix.compiles)
            guard = f", the guard {hit.guard} kept failing" if hit.guard else ""
            fix.findings.append(f"frame {hit.frame_id} ({hit.function}) reached the {hit.limit_type} ({hit.limit}) "
                                f"after {len(hit.compile_ids)} compiles: torch refused compile {hit.compile_id}{guard}")
        _credit(fix, "recompile_limit")


    def recompile_budgets(self) -> None:
        """Frames that used their recompile budget or are within two of it (``cap.recompile_budgets``, counted as
        torch counts): each is credited to the fixes that remove its failing guard — the fix proposed for the
        frame's recompiles (``dynamic=True`` / ``specialize_float=False`` for a float, ``mark_dynamic`` for a size)
        — and, as the last resort, to raising the limit (ranked after them)."""
        budgets = [b for b in getattr(self.cap, "recompile_budgets", None) or []]
        for budget in budgets:
            ids = set(budget.compile_ids) | set(budget.refused)
            state = ("reached it: torch refused a compile" if budget.hit else "used it up: the next new variant runs "
                     "eagerly" if budget.left == 0 else f"{budget.left} new variant(s) left")
            values = " / ".join(budget.values)
            finding = (f"frame {budget.frame_id} ({budget.function}) at the recompile limit: {budget.used} of "
                       f"{budget.limit_type} = {budget.limit}, {state}"
                       + (f"; the guard {budget.guard} {values} keeps failing" if budget.guard else ""))
            credited = [f for f in self.by_key.values() if f.kind != "recompile_limit" and ids & set(f.recompiles)]
            if not credited and budget.value_kind in ("float", "int"):
                name = (budget.guard or "").rpartition(" ")[0] or "the value"
                subject, instead = _scalar_subject(name, budget.value_kind, budget.function)
                credited = [self._fix(("scalar", name), kind=f"dynamic_{budget.value_kind}",
                                      title=f"{subject} is baked into each compile: compile "
                                            "with dynamic=True so it becomes a symbol (or pass it as a tensor)",
                                      snippet="compiled = torch.compile(fn, dynamic=True)",
                                      why=f"torch's guard {budget.guard} failed for each new value",
                                      compile_kwargs={"dynamic": True},
                                      alternatives=[instead] if instead else [])]
            for fix in credited:
                if budget.frame_id not in fix.limit_frames:
                    fix.limit_frames.append(budget.frame_id)
                    fix.findings.append(finding)
                if budget.value_kind == "float" and not any("Python float" in a for a in fix.alternatives):
                    fix.alternatives.append(
                        "where an op takes a Python float (a custom op's float argument, e.g. torchvision's "
                        "roi_align), Dynamo specialises the float again even so: pass it as a 0-d tensor, or raise "
                        "torch._dynamo.config.recompile_limit above the number of values it takes")
            if budget.hit:
                continue  # the refused compile's own fix (recompile_limit) is proposed already
            new_limit = max(budget.limit + len(budget.values) + 2, 2 * budget.limit)
            last = self._fix(("recompile_limit_budget",), kind="recompile_limit",
                             title="Raise the recompile limit (the last resort: every variant still compiles once; "
                                   "better remove the guard that keeps failing, see the fix for those recompiles)",
                             snippet=f"torch._dynamo.config.recompile_limit = {new_limit}",
                             config={"recompile_limit": new_limit},
                             why=f"{budget.function} used {budget.used} of {budget.limit_type} = {budget.limit}")
            if budget.frame_id not in last.limit_frames:
                last.limit_frames.append(budget.frame_id)
                last.findings.append(finding)
                last.compiles.extend(i for i in budget.compile_ids if i not in last.compiles)

    # --- CUDA graphs, guards, slow code -----------------------------------------------------------

    def cudagraph_skips(self) -> None:
        """Each CUDA-graph skip reason torch logged (``cap.cudagraphs``): mutated inputs → mark the mutated
        argument's address static (CUDA graphs then keep it) or stop mutating it; CPU tensors or an
        incompatible op → graph partitions (the GPU parts are graphed, the rest runs outside); dynamic
        shapes → one graph per size."""
        cg = getattr(self.cap, "cudagraphs", None)
        if cg is None or not cg.available or not (cg.skipped or cg.skip_reasons):
            return
        for index, reason in enumerate(cg.skip_reasons):
            lowered = reason.lower()
            location = cg.skip_locations[index] if index < len(cg.skip_locations) else (
                cg.skip_locations[0] if cg.skip_locations else None)
            where = f" at {_short(location.file)}:{location.line}: {location.code}" if location and location.file else ""
            finding = f"CUDA graphs skipped: {reason}{where}"
            if "mutated inputs" in lowered:
                match = _MUTATED.search(location.code or "") if location else None
                name = (match["name"] or match["target"]) if match else None
                if name:
                    fix = self._fix(("cudagraph_static", name), kind="cudagraph_static_input",
                                    title=f"Mark {name}'s memory address static, so CUDA graphs keep it and its "
                                          "in-place update is replayed",
                                    snippet=f"torch._dynamo.mark_static_address({name})   # once, before the first call",
                                    why=f"{name} is updated in place in the compiled code ({location.code.strip()})",
                                    marks=[DynamicMark(argument=name, static=True)], goal=RUNTIME,
                                    alternatives=[f"return the new value of {name} instead of updating it in place "
                                                  "(a code change)",
                                                  "a buffer of an nn.Module is static already: keep the state there"])
                else:
                    fix = self._fix(("cudagraph_mutation",), kind="cudagraph_input_mutation",
                                    title="An input is updated in place: return the new value instead, or mark the "
                                          "input static — a code change, not applied",
                                    snippet="torch._dynamo.mark_static_address(state)   # the mutated input",
                                    applicable=False, goal=RUNTIME)
            elif "cpu" in lowered or "non gpu" in lowered or "incompatible op" in lowered:
                fix = self._fix(("graph_partition",), kind="graph_partition",
                                title="Let Inductor split the graph into partitions: the GPU parts are CUDA-graphed, "
                                      "the CPU tensors or unsupported ops run between them",
                                snippet="import torch._inductor.config\ntorch._inductor.config.graph_partition = True",
                                inductor_config={"graph_partition": True}, goal=RUNTIME,
                                alternatives=["move the CPU tensors to the GPU once, outside the compiled function "
                                              "(a code change)"])
            elif "dynamic shape" in lowered:
                fix = self._fix(("cudagraph_dynamic",), kind="cudagraph_static_shapes",
                                title="Compile each size on its own (dynamic=False): every size gets its own CUDA graph",
                                snippet="compiled = torch.compile(fn, mode=\"reduce-overhead\", dynamic=False)",
                                compile_kwargs={"dynamic": False}, goal=RUNTIME,
                                inductor_config={"triton.cudagraph_skip_dynamic_graphs": False},
                                alternatives=["torch._inductor.config.triton.cudagraph_capture_sizes = (…): graph "
                                              "only the sizes you run most"])
            else:
                continue
            fix.findings.append(finding)
            _credit(fix, "cudagraph_skips")

    def guard_overhead(self) -> None:
        """torch.compiler's guard filters that would drop guards this capture holds — on modules, on
        globals, all but tensors — each with what it gives up, ranked by how many guards it would drop;
        only where a compile holds ``GUARD_OVERHEAD_MIN`` guards or more."""
        compiles = [c for c in self.cap.compiles if c.guards.available and c.guards.rows]
        if not compiles or max(len(c.guards.rows) for c in compiles) < GUARD_OVERHEAD_MIN:
            return
        torch = _loaded_torch()
        latency = sum(c.guards.latency_us or 0.0 for c in compiles)
        rows = [row for c in compiles for row in c.guards.rows]
        modules = sum(bool(_MODULE_SOURCE.search(row.source)) for row in rows)
        globals_ = sum(bool(_GLOBAL_SOURCE.search(row.source)) for row in rows)
        tensors = sum(row.kind == "TENSOR_MATCH" for row in rows)
        dropped = {"skip_guard_on_inbuilt_nn_modules_unsafe": modules, "skip_guard_on_all_nn_modules_unsafe": modules,
                   "skip_guard_on_globals_unsafe": globals_, "keep_tensor_guards_unsafe": len(rows) - tensors}
        timed = (f", torch timed {latency:.3g} µs to check them (one cold-cache evaluation per compile, at compile "
                 "time)") if latency else ""
        for name, (what, gives_up) in GUARD_FILTERS.items():
            if not dropped[name] or (torch is not None and not hasattr(torch.compiler, name)):
                continue
            fix = self._fix(("guard_filter", name), kind=name,
                            title=f"Skip the guards on {what} (torch.compiler.{name}): fewer checks on every call",
                            snippet=f'compiled = torch.compile(fn, options={{"guard_filter_fn": torch.compiler.{name}}})',
                            why=f"{len(rows)} guards in {len(compiles)} compiles{timed}; about {dropped[name]} of "
                                "them are of the kind this filter drops (counted from the guard sources)",
                            compile_kwargs={"options": {"guard_filter_fn": f"torch.compiler.{name}"}},
                            goal=GUARDS, gives_up=gives_up)
            fix.findings.append(f"guard overhead: {len(rows)} guards{timed}")
            fix.compiles.extend(c.compile_id for c in compiles if c.compile_id not in fix.compiles)
            fix.__dict__["_guards_dropped"] = dropped[name]
            _credit(fix, "guards", dropped[name] / len(rows))

    def slow_code(self) -> None:
        """Inductor settings that may make the generated code faster, for a capture compiled with Inductor
        that made kernels: max-autotune, coordinate-descent tuning (GPU), freezing (inference graphs only),
        TF32 matmuls (CUDA ≥ 8.0 with float32 matmuls, where torch warns). Proposed, never recommended unmeasured."""
        options = self.cap.options or {}
        compiled = [c for c in self.cap.compiles if c.kernels.available and c.kernels.kernels]
        if options.get("backend", "inductor") != "inductor" or not compiled:
            return
        env = self.cap.environment if isinstance(getattr(self.cap, "environment", None), dict) else {}
        cuda = env.get("device") == "cuda"
        mode = options.get("mode") or "default"
        kernels = sum(len(c.kernels.kernels) for c in compiled)
        finding = (f"{kernels} kernel{'s' * (kernels > 1)} in {len(compiled)} Inductor "
                   f"compile{'s' * (len(compiled) > 1)} (mode {mode})")
        proposals = []
        if "max-autotune" not in mode:
            proposals.append(self._fix(("max_autotune",), kind="max_autotune",
                                       title="Compile with mode=\"max-autotune\": Inductor benchmarks matmul and "
                                             "convolution templates (and, on GPU, CUDA graphs) and keeps the fastest",
                                       snippet='compiled = torch.compile(fn, mode="max-autotune")',
                                       compile_kwargs={"mode": "max-autotune"}, goal=RUNTIME,
                                       alternatives=['mode="max-autotune-no-cudagraphs": the tuning without CUDA graphs'],
                                       gives_up="a much longer compile (every candidate is compiled and timed)"))
        if cuda:
            proposals.append(self._fix(("coordinate_descent",), kind="coordinate_descent_tuning",
                                       title="Tune each Triton kernel's block sizes by coordinate descent",
                                       snippet="import torch._inductor.config\n"
                                               "torch._inductor.config.coordinate_descent_tuning = True",
                                       inductor_config={"coordinate_descent_tuning": True}, goal=RUNTIME,
                                       gives_up="a longer compile (each kernel is benchmarked at neighbouring configs)"))
        aot = [c.aot for c in self.cap.compiles if c.aot.available]
        if aot and not any(a.training for a in aot):
            proposals.append(self._fix(("freezing",), kind="freezing",
                                       title="Freeze the parameters for inference: Inductor folds them into the graph "
                                             "as constants (constant folding, weight layouts chosen ahead of time)",
                                       snippet="import torch._inductor.config\ntorch._inductor.config.freezing = True\n"
                                               "with torch.no_grad():\n    out = compiled(x)",
                                       inductor_config={"freezing": True}, goal=RUNTIME,
                                       why="every graph of this capture is an inference graph (no backward)",
                                       gives_up="parameters changed after the compile are not seen (the frozen "
                                                "constants are used); only under torch.no_grad()"))
        capability = env.get("device_capability") or "0"
        if cuda and _version(capability) >= (8, 0) and any(
                _FP32_MATMUL.search(g.code or "") for c in self.cap.compiles for g in c.aot.graphs.values()):
            proposals.append(self._fix(("tf32",), kind="float32_matmul_precision",
                                       title="Let float32 matmuls use TensorFloat32 tensor cores, as torch's warning "
                                             "says (torch.set_float32_matmul_precision(\"high\"))",
                                       snippet='torch.set_float32_matmul_precision("high")',
                                       matmul_precision="high", goal=RUNTIME, tolerance={"relative_norm": TF32_TOLERANCE},
                                       why=f"float32 matmuls on a device of compute capability {capability}: torch "
                                           "warns that TensorFloat32 tensor cores are available but not enabled",
                                       gives_up="matmul precision: TF32 rounds a matmul's inputs to 10 mantissa bits, "
                                                "results differ from float32 by about 1e-3 relative; the experiment "
                                                f"accepts ‖after − eager‖₂/‖eager‖₂ ≤ {TF32_TOLERANCE:g} per output "
                                                "and says the error it measured"))
        for fix in proposals:
            if finding not in fix.findings:
                fix.findings.append(f"slow code? {finding}")
            fix.compiles.extend(c.compile_id for c in compiled if c.compile_id not in fix.compiles)

    # --- ranking --------------------------------------------------------------------------------

    def merge_same_changes(self) -> None:
        """Fixes that apply the same change (``dynamic=True`` for a size and for two Python ints) become one: the
        first proposed, with every finding the others address (one experiment per change)."""
        seen: dict = {}
        for key, fix in list(self.by_key.items()):
            change = change_key(fix)
            if change is None:
                continue
            first = seen.setdefault(change, fix)
            if first is fix:
                continue
            for name in ("breaks", "recompiles", "compiles", "limit_frames", "findings", "alternatives"):
                into = getattr(first, name)
                into.extend(v for v in getattr(fix, name) if v not in into)
            counts = first.__dict__.setdefault("_counts", {})
            for kind, count in fix.__dict__.get("_counts", {}).items():
                counts[kind] = counts.get(kind, 0) + count
            if fix.why and fix.why != first.why:
                first.why = f"{first.why}; {fix.why}" if first.why else fix.why
            first.__dict__.setdefault("_merged", []).append(fix.kind)
            del self.by_key[key]
        for fix in seen.values():
            kinds = [k for k in fix.__dict__.pop("_merged", []) if k != fix.kind]
            if kinds:
                fix.title += f" (also the change for {', '.join(sorted(set(kinds)))}: one experiment)"

    def finish(self) -> list[Fix]:
        self.merge_same_changes()
        for fix in self.by_key.values():  # in the user's terms: no name only Dynamo knows
            fix.title, fix.why, fix.snippet = _user_words(fix.title), _user_words(fix.why), _user_words(fix.snippet)
            fix.findings = [_user_words(f) for f in fix.findings]
            fix.alternatives = [_user_words(a) for a in fix.alternatives]
        items = self.cap.breaks.items
        for fix in self.by_key.values():
            counts = fix.__dict__.pop("_counts", {})
            counts["graph_breaks"] = sum(items[i].count for i in fix.breaks if i < len(items))
            counts["recompiles"] = len(fix.recompiles)
            # raising the limit is the last resort: it ranks after removing the guard that keeps failing
            counts["recompile_budget"] = len(fix.limit_frames) * (0.5 if fix.kind == "recompile_limit" else 1)
            if fix.goal != FINDINGS:  # skipped frames are the fixes for findings' to remove
                counts.pop("frames_skipped", None)
            guards_dropped = fix.__dict__.pop("_guards_dropped", 0)
            fix.cost = sum(WEIGHTS.get(kind, 0.0) * count for kind, count in counts.items()) \
                - (0 if fix.applicable else 0.5)
            parts = []
            order = list(WEIGHTS)
            for kind, count in sorted(counts.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else 99):
                if not count:
                    continue
                if kind == "guards":
                    parts.append(f"about {guards_dropped} guard{'s' * (guards_dropped > 1)} checked on every call "
                                 f"({count:.0%} of them)")
                elif kind == "graph_breaks":
                    places = len(fix.breaks)
                    parts.append(f"{count} graph break{'s' * (count > 1)} at {places} place{'s' * (places > 1)}")
                elif kind == "recompile_limit":
                    parts.append("the recompile limit reached")
                elif kind == "recompile_budget":
                    near = len(fix.limit_frames)
                    parts.append(f"{near} {FINDING_WORDS[kind][0] if near == 1 else FINDING_WORDS[kind][1]}")
                else:
                    word = FINDING_WORDS.get(kind, kind.replace("_", " "))
                    parts.append(f"{count} {word[0] if count == 1 else word[1]}")
            fix.cost_text = ", ".join(parts) or ("runtime: no counted finding, measured by the experiment"
                                                 if fix.goal == RUNTIME else "no counted cost")
            fix.cost_method = COST_METHOD
        ranked = sorted(self.by_key.values(), key=lambda f: (-f.cost, f.kind))
        for number, fix in enumerate(ranked, 1):
            fix.id = f"fix{number}"
        return ranked


def change_key(fix: Fix) -> str | None:
    """What an experiment applies for ``fix``, as one string (None: a code change, applied by no experiment): two
    fixes with the same key are the same experiment."""
    import json

    if not fix.applicable:
        return None
    return json.dumps([fix.config, fix.inductor_config, fix.compile_kwargs, fix.matmul_precision,
                       sorted((m.argument, m.dim, m.position, m.maybe, m.static) for m in fix.marks), fix.regions,
                       fix.region_method], sort_keys=True, default=str)


def _credit(fix: Fix, kind: str, count: float = 1) -> None:
    """Count a finding of ``kind`` (a key of ``WEIGHTS``) against ``fix``: what removing it is worth in the ranking."""
    counts = fix.__dict__.setdefault("_counts", {})
    counts[kind] = counts.get(kind, 0) + count


def _specializes(kind: str) -> bool:
    """Is ``torch._dynamo.config.specialize_<kind>`` on in this process (the config the capture ran under,
    unless it was patched only around the capture)? Not where torch is not loaded (a capture only read):
    False, torch's default."""
    torch = _loaded_torch()
    return torch is not None and bool(getattr(torch._dynamo.config, f"specialize_{kind}", False))


def _loaded_torch():
    """torch where this process has loaded it (a live capture; fixes to try), else None: proposing fixes for a
    capture only read imports no torch, and trusts what the capture's own torch logged (a hint's config name,
    a guard filter) instead of checking it against this process's torch."""
    return sys.modules.get("torch")


def _version(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in str(text).split(".")[:2])
    except ValueError:
        return (0,)


def _short(path: str | None) -> str:
    return (path or "").rsplit("/", 1)[-1]


def _disabled_name(item) -> str:
    match = re.search(r"<function (?P<name>[\w\.<>]+) at", item.reason or "")
    return match["name"] if match else "the function"


_STACK_NAME = re.compile(r"^_{2,}stack\d+$")  # Dynamo's name for a value on the stack at a graph break
_STACK_WORD = re.compile(r"(?:L\[['\"])?_{2,}stack\d+(?:['\"]\])?")
_RESUME = re.compile(r"^torch_dynamo_resume_in_(?P<fn>.+?)_at_(?P<line>\d+)$")
_RESUME_WORD = re.compile(r"\btorch_dynamo_resume_in_(?P<fn>\w+?)_at_(?P<line>\d+)\b")


def _user_words(text: str | None) -> str | None:
    """``___stack0`` (Dynamo's name for a value on the stack at a graph break) said as what it is."""
    if not text:
        return text
    text = _STACK_WORD.sub("the value carried across the graph break", text)
    return _RESUME_WORD.sub(r"\g<fn>() after the graph break at line \g<line>", text)


def _scalar_subject(name: str, kind: str, frame: str | None) -> tuple[str, str | None]:
    """How a fix names a Python number a guard specialised on, in the user's terms: ``"The Python int n"``; for
    a name only Dynamo knows (``___stack0``: a value on the stack where a graph break split the code), where the
    value lives and what the user can do instead (→ (subject, an alternative or None))."""
    if not _STACK_NAME.match(name) and not name.startswith("___"):
        return f"The Python {kind} {name}", None
    resume = _RESUME.match(frame or "")
    where = (f"{resume['fn']}(), after the graph break at line {resume['line']}" if resume
             else f"{frame}()" if frame else "the compiled function")
    return (f"A Python {kind} computed before a graph break and used after it, in {where}",
            "remove the graph break before it (see the fixes for graph breaks): the value then stays inside one "
            "graph; where it comes from a library's code (not yours), dynamic=True is the change you can make")


def _inside_ddp(item) -> bool:
    """A break in DistributedDataParallel's forward itself (its own code, or the standard library it calls:
    contextlib, its logger) — not one in the user's module that DDP's forward runs: the innermost frame outside
    the standard library decides."""
    if "_inside_ddp_forward" in (item.explanation or "") + (item.reason or ""):
        return True
    for file in [item.file or ""] + [f.file or "" for f in reversed(item.stack)]:
        path = file.replace("\\", "/")
        if path and _library_of(path) != "the Python standard library":
            return path.endswith("torch/nn/parallel/distributed.py")
    return False


def _compiled_user_frames(item, compiled: str | None) -> list:
    """The user's frames of a break's stack from the compiled function on (the callers above it — ``<module>``,
    a ``main`` — run outside the compiled region and are no place for a fix)."""
    frames = [f for f in item.stack if f.user]
    names = [f.function for f in frames]
    if compiled and compiled in names:
        return frames[names.index(compiled):]
    return frames


def _library_of(path: str | None) -> str | None:
    """"torch", a package's name, or "the Python standard library" for a file that is not the user's; None else."""
    path = (path or "").replace("\\", "/")
    if not path:
        return None
    match = re.search(r"/(?:site|dist)-packages/(?P<name>[A-Za-z_][\w\.]*)", path)
    if match:
        return match["name"].split(".")[0]
    if re.search(r"/lib/python3\.\d+/", path):
        return "the Python standard library"
    return None


def _cond_snippet(code: str) -> str:
    condition = code[3:].rstrip(":").strip() if code.startswith("if ") else "pred"
    return ("# torch.cond traces both branches into the graph; each branch is a function of the operands\n"
            f"out = torch.cond({condition}, lambda x: true_branch(x), lambda x: false_branch(x), (x,))")


METHODS["propose_fixes"] = propose  # Capture.fixes, and every capture made (compiler.capturing.session)
