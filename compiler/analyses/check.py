"""The cross-check: a capture's figures against torch's own answers and against their bounds
(``python -m compiler check FILE``; CI runs it over the shipped captures and recorded traces).

One rule a function, each returning ``Violation``s (one line each) and adding what it compared to ``Checked``:

- ``graph_nodes``: every graph's nodes against its own code (one node per statement of the graph code that computes
  something: calls, operators, in-place updates ``x += y``, ``getitem``; not aliases, ``= None`` or the
  placeholders), and Dynamo's graph against torch's ``graph_op_count`` / ``graph_node_count``
  (compilation metrics) where recorded;
- ``counters``: the capture's counts against ``torch._dynamo.utils.counters`` recorded with a live capture — graph
  breaks like with like (torch's ``counters['graph_break']`` counts only the breaks it resumed from after an
  instruction, ``compiler.stages.breaks.break_kind``; message by message where they differ),
  graphs (``stats.unique_graphs``), failed compiles no more than torch's frames not ok (``frames``: it also counts
  frames that raised before making a compile record) — and against ``torch._dynamo.explain()``
  where a capture records its result (``"explain"``, ``explain_record``), difference by difference;
- ``time_bounds``: shares of a whole at most 1 (a skipped frame's share of the call, the GPU time split inside /
  outside the graphs, kernel time per source line, the launch overhead), per-call times no larger than the call,
  a kernel's share of the DRAM peak at most 1 and its verdict naming a bound only near it;
- ``kernel_lines``: every kernel's source lines among its origins' lines — the post-grad nodes Inductor made it
  from (``KernelProvenance.post_grad_nodes``) and the lines their stack traces name (``ProvenanceNode.lines``);
  a kernel whose origins name no line is counted, not a violation.

Checking a saved capture (JSON) imports no torch (a TORCH_TRACE log is read by ``compiler.readers``).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from compiler.stages.fx_graph import _split_top

EPS = 1e-6  # a sum of shares may exceed 1 by rounding


@dataclass
class Violation:
    rule: str
    where: str  # the compile, kernel or item
    message: str

    def line(self) -> str:
        return f"{self.rule}: {self.where}: {self.message}"


@dataclass
class Checked:
    """What the rules compared (the GPU script's table): compiles; Dynamo ops here vs torch's; kernels whose lines
    were compared with their origins' lines, and how many of them lie among them."""

    compiles: int = 0
    graphs: int = 0
    ops: int = 0  # Dynamo graphs' ops counted here …
    torch_ops: int = 0  # … and by torch (graph_op_count), over the compiles torch recorded it for
    kernels: int = 0
    kernels_with_origin_lines: int = 0
    kernels_lines_in_origins: int = 0
    kernels_without_origin: int = 0
    violations: list[Violation] = field(default_factory=list)
    unread: str | None = None  # why this rank's (or file's) figures could not be checked: it could not be read


# --- graph nodes ---------------------------------------------------------------------------------

_AUGMENTED = re.compile(r"^[A-Za-z_][\w\.]*(?:\[[^\]]*\])?\s*(?:\+|-|\*|/|//|%|@|&|\||\^|<<|>>|\*\*)=\s*\S")
_ASSIGN = re.compile(r"^(?P<names>[A-Za-z_][\w]*(?:\s*,\s*[A-Za-z_]\w*)*\s*,?)\s*(?::\s*\"[^\"]*\"|:\s*[^=]+?)?"
                     r"\s*=\s*(?P<expr>.+)$")
_SETITEM = re.compile(r"^[A-Za-z_]\w*\[.+\]\s*=\s*\S")  # boxes_exp[(slice(None), 0)] = sub_2: operator.setitem
_NAME = re.compile(r"^[A-Za-z_]\w*$")
_ATTRIBUTE = re.compile(r"^self(?:\.[A-Za-z_]\w*)+$")


def code_ops(code: str) -> int:
    """The statements of a printed FX graph's ``forward`` that compute something, counted from the code alone
    (what ``Graph.op_count`` must equal): a call or operator assigned to a name, an in-place update (``x += y``,
    ``x[i] = y``), a ``getitem``;
    not a placeholder, an alias (``l_x_ = L_x_``, ``x_12 = x_11`` after an in-place update), a module attribute
    (``self.w``: a get_attr node), ``x = None`` (freeing a value), the output."""
    from compiler.stages.fx_graph import _logical_lines, split_subgraphs

    own, _ = split_subgraphs(code)
    count, in_signature, in_forward = 0, False, False
    for line in _logical_lines(own):
        if line.startswith("def forward("):
            in_forward, in_signature = True, not line.endswith("):")
            continue
        if in_signature:
            in_signature = not line.startswith("):")
            continue
        if not in_forward or not line or line.startswith(("#", "class ", "def ", "return")):
            continue
        for statement in _split_top(line.split("  #")[0], ";"):  # FX writes `x_11 += input_2;  x_12 = x_11`
            if _AUGMENTED.match(statement) or _SETITEM.match(statement):
                count += 1
                continue
            match = _ASSIGN.match(statement)
            if not match:
                continue
            expr = match["expr"].strip()
            if (_NAME.match(expr) or _ATTRIBUTE.match(expr) or expr == "None" or expr.endswith("= None")
                    or "tree_flatten_spec" in expr):
                continue
            count += 1
    return count


_DEFINED = re.compile(r"^(?P<names>[A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*(?::[^=]+)?=(?!=)")


def node_difference(graph) -> dict:
    """The names the graph code defines (the signature's parameters, each statement's target, ``output``) against
    the parsed graph's nodes (aliases left out), both ways, each missing name with the code that defines it — what
    ``scripts/gpu_check_models.py`` dumps for a compile whose node count differs from torch's."""
    from compiler.stages.fx_graph import _logical_lines, _signature_closed, split_subgraphs

    own, _ = split_subgraphs(graph.code or "")
    defined: dict[str, str] = {}
    signature = None
    for line in _logical_lines(own):
        if signature is None:
            signature = line if line.startswith("def forward(") else None
            continue
        if not _signature_closed(signature):
            signature += " " + line
            continue
        if line.startswith("return"):
            defined["output"] = line
            continue
        if line.startswith(("#", "class ", "def ")):
            continue
        for statement in _split_top(line.split("  #")[0], ";"):
            match = _DEFINED.match(statement)
            if match:
                for name in match["names"].split(","):
                    defined.setdefault(name.strip(), statement)
    params = (signature or "")[(signature or "").find("(") + 1:].split("#")[0].rsplit(")", 1)[0]
    for param in _split_top(params, ","):
        name = re.match(r"\**(?P<name>\w+)", param.strip())
        if name and name["name"] != "self":
            defined.setdefault(name["name"], f"def forward(…, {param.strip()}, …)")
    parsed = {n.name: n.op for n in graph.nodes}
    return {"in_code_not_parsed": {name: text for name, text in defined.items() if name not in parsed},
            "parsed_not_in_code": {name: op for name, op in parsed.items() if name not in defined},
            "parsed_by_op": {op: sum(o == op for o in parsed.values()) for op in sorted(set(parsed.values()))}}


def _graphs_of(compile) -> list[tuple[str, object]]:
    out = [("dynamo", compile.graph)]
    out += [(f"aot {role}", g) for role, g in compile.aot.graphs.items()] if compile.aot.available else []
    if compile.inductor.available:
        for run in compile.inductor.runs:
            role = run.role or "run"
            out += [(f"inductor {role} pre-grad", run.pre_grad), (f"inductor {role} post-grad", run.post_grad)]
    return out


def graph_nodes(cap, checked: Checked) -> list[Violation]:
    out = []
    for c in cap.compiles:
        seen = set()
        for level, graph in _graphs_of(c):
            if not graph.available or not graph.code or graph.not_parsed or id(graph) in seen:
                continue
            seen.add(id(graph))
            pending = [(level, graph)]
            while pending:
                name, g = pending.pop()
                if not g.available or not g.code or g.not_parsed:
                    continue
                checked.graphs += 1
                in_code = code_ops(g.code)
                if g.op_count != in_code:
                    out.append(Violation("graph_nodes", f"{c.compile_id} {name}",
                                         f"{g.op_count} ops parsed, {in_code} statements in the graph code"))
                pending += [(f"{name} / {sub}", body) for sub, body in g.subgraphs.items()]
        graph, metrics = c.graph, c.metrics
        if c.origin == "dynamo" and graph.available and not graph.not_parsed and graph.code:
            nodes = sum(n.op != "alias" for n in graph.nodes)
            torch_ops, torch_nodes = metrics.get("graph_op_count"), metrics.get("graph_node_count")
            if isinstance(torch_ops, int):
                checked.ops += graph.op_count
                checked.torch_ops += torch_ops
                if graph.op_count != torch_ops:
                    out.append(Violation("graph_nodes", f"{c.compile_id} dynamo",
                                         f"{graph.op_count} ops here, torch's graph_op_count is {torch_ops}"))
            if isinstance(torch_nodes, int) and nodes != torch_nodes:
                missing = node_difference(graph)["in_code_not_parsed"]
                shown = "; ".join(f"{name}: {text[:80]}" for name, text in list(missing.items())[:3])
                out.append(Violation("graph_nodes", f"{c.compile_id} dynamo",
                                     f"{nodes} nodes here, torch's graph_node_count is {torch_nodes}"
                                     + (f" (in the code, not parsed: {shown})" if missing else "")))
    return out


# --- counts --------------------------------------------------------------------------------------

def counters(cap, checked: Checked, explain: dict | None = None) -> list[Violation]:
    """The counts against torch's counters (a live capture's, unless another capture overlapped it: they are
    process-wide) and against a recorded ``explain()``."""
    out = []
    s, counted = cap.summary, cap.counters or {}
    kinds = cap.breaks.kinds()
    if s.graph_breaks != sum(kinds.values()):
        out.append(Violation("counters", "graph breaks", f"the summary says {s.graph_breaks}, "
                                                         f"{sum(kinds.values())} are listed"))
    if counted and not (cap.options or {}).get("overlapping_captures"):
        out += _graph_break_counter(cap, kinds, counted.get("graph_break") or {})
        unique = (counted.get("stats") or {}).get("unique_graphs")
        if isinstance(unique, int) and s.graphs != unique:
            out.append(Violation("counters", "graphs", f"{s.graphs} here, torch's stats['unique_graphs'] is {unique}"))
        frames = counted.get("frames") or {}
        if isinstance(frames.get("total"), int) and isinstance(frames.get("ok"), int):
            not_ok = frames["total"] - frames["ok"]  # also frames that raised before making a compile record
            if s.failed_compiles > not_ok:
                out.append(Violation("counters", "failed compiles",
                                     f"{s.failed_compiles} here, more than torch's frames total − ok ({not_ok})"))
    for what, summary, listed in (("skipped frames", s.skipped_frames, len(cap.skipped_frames)),
                                  ("recompile limits", s.recompile_limits, len(cap.recompile_limits)),
                                  ("recompiles", s.recompiles, len(cap.recompiles)),
                                  ("compiles", s.compiles, len(cap.compiles))):
        if summary != listed:
            out.append(Violation("counters", what, f"the summary says {summary}, {listed} are listed"))
    if explain:
        out += [Violation("counters", "explain()", text) for text in reconcile_explain(cap, explain)]
    return out


def _graph_break_counter(cap, kinds: dict, torch_counter: dict) -> list[Violation]:
    """Like with like: torch's counters['graph_break'] (keyed by the break's message: ``len()`` distinct messages,
    ``sum()`` breaks) counts only the breaks it resumed from after an instruction (``break_kind`` "resumed"); the
    breaks it could not resume from and data-dependent branches are logged as graph breaks too and counted in
    counters['unimplemented']. Where the counts differ, each message whose count differs is listed."""
    from compiler.stages.breaks import KINDS

    resumed, torch_breaks = kinds.get("resumed", 0), sum(torch_counter.values())
    if resumed == torch_breaks:
        return []
    apart = "; ".join(f"{n} {KINDS[kind].split(' (')[0]}" for kind, n in kinds.items() if kind != "resumed")
    out = [Violation("counters", "graph breaks",
                     f"{resumed} resumed from here (of {sum(kinds.values())}{': ' + apart if apart else ''}), "
                     f"torch's counters['graph_break'] sum to {torch_breaks} over {len(torch_counter)} messages")]
    by_type: dict[str, int] = {}  # torch's messages by their first line (the break's type; its context follows)
    for message, n in torch_counter.items():
        first = (message.strip().splitlines() or [message])[0]
        by_type[first] = by_type.get(first, 0) + n
    listed = [i for i in cap.breaks.items if i.kind == "resumed"]
    for first, n in sorted(by_type.items(), key=lambda kv: -kv[1]):
        here = sum(i.count for i in listed if first in (i.reason or ""))
        if here != n:
            out.append(Violation("counters", "graph breaks", f"{here} here, {n} in torch's counter: {first[:120]}"))
    out += [Violation("counters", "graph breaks", f"{i.count} here at {(i.file or '?').rsplit('/', 1)[-1]}:{i.line}, "
                      f"of no message in torch's counter: {i.headline[:120]}")
            for i in listed if not any(first in (i.reason or "") for first in by_type)]
    return out


_FIRST_LINE = re.compile(r"# File: (?P<file>\S+):(?P<line>\d+) in (?P<fn>[\w<>]+)")


def graph_key(code: str) -> str:
    """A Dynamo graph told apart from others by the function and file of the first source line its code names (FX
    writes ``# File: …:N in fn`` above each statement, the same way for explain()'s graphs and a capture's; the
    line itself can differ between a graph with a float specialised and one with it dynamic)."""
    match = _FIRST_LINE.search(code or "")
    if not match:
        return "a graph with no source line"
    return f"{match['fn']} ({match['file'].rsplit('/', 1)[-1]})"


def explain_record(explained) -> dict:
    """``torch._dynamo.explain(fn)(*args)``'s result as plain data, to save with a capture (key ``"explain"``):
    its counts, each graph by its first source line (``graph_key``) and each graph-break reason."""
    graphs = []
    for gm in explained.graphs:
        try:  # printed as a capture holds Dynamo's graph: with torch's "# File: …" comments
            code = gm.print_readable(print_output=False)
        except Exception:  # noqa: BLE001 — a graph that cannot print is still a graph
            code = ""
        graphs.append({"key": graph_key(code)})
    return {"graph_count": explained.graph_count, "graph_break_count": explained.graph_break_count,
            "op_count": explained.op_count, "graphs": graphs,
            "break_reasons": [str(r.reason).splitlines()[0][:200] for r in explained.break_reasons]}


def reconcile_explain(cap, explain: dict) -> list[str]:
    """Each difference between the capture's Dynamo graphs and explain()'s, item by item: per function, how
    many graphs each has (explain() compiles again with its own backend: a float specialised here may stay dynamic
    there, one graph for every value; and it runs one call on the objects as they are then, so graphs of code that
    runs on a first call only are not among its own when it runs after the capture), after the counts and what
    explain()'s graph_break_count is (its graphs − 1). The capture's graphs are the ones compiled: record
    explain() on a model built again (``scripts/gpu_check_models.py`` does)."""
    graph_count = explain.get("graph_count")
    if not isinstance(graph_count, int):
        return [f"no graph_count in the recorded explain() result: {sorted(explain)[:5]}"]
    if graph_count == cap.summary.graphs:
        return []
    here: dict = {}
    for c in cap.compiles:
        if c.graph.available and c.origin == "dynamo":
            key = graph_key(c.graph.code)
            here[key] = here.get(key, 0) + 1
    there: dict = {}
    for g in explain.get("graphs") or []:
        key = g.get("key") or "?"
        there[key] = there.get(key, 0) + 1
    out = [f"{cap.summary.graphs} graphs here, {graph_count} in explain() (its graph_break_count "
           f"{explain.get('graph_break_count')} is its graphs − 1; it compiles one call of its own, on the objects "
           "as they are then: code that runs on a first call only — a module caching what it computed, as "
           "torchvision's MultiScaleRoIAlign does its scales in _setup_scales — compiles graphs here that an "
           "explain() run after the capture's calls never sees)"]
    for key in sorted(set(here) | set(there)):
        if here.get(key, 0) != there.get(key, 0):
            out.append(f"{key}: {here.get(key, 0)} graphs here, {there.get(key, 0)} in explain()")
    return out


# --- figures inside their bounds ----------------------------------------------------------------

def time_bounds(cap, checked: Checked) -> list[Violation]:
    out = []

    def bad(where: str, message: str):
        out.append(Violation("time_bounds", where, message))

    for item in cap.skipped_frames:
        where = f"skipped frame {item.function} ({item.compile_id})"
        if item.share is not None and not 0 <= item.share <= 1 + EPS:
            bad(where, f"share of the call {item.share:.3f} is outside 0…1")
        if item.seconds is not None and item.call_seconds is not None and item.seconds > item.call_seconds * (1 + EPS):
            bad(where, f"{item.seconds * 1e3:.3g} ms per call in a call of {item.call_seconds * 1e3:.3g} ms")
    profile = cap.gpu_profile
    if profile is not None and profile.available and profile.gpu_time_us_per_call:
        total = profile.gpu_time_us_per_call
        if profile.launch_overhead_share is not None and not 0 <= profile.launch_overhead_share <= 1 + EPS:
            bad("gpu profile", f"launch overhead share {profile.launch_overhead_share:.3f} is outside 0…1")
        rows = sum(r.gpu_time_us_per_call for r in profile.kernels)
        if rows > total * (1 + EPS) + 1e-3:
            bad("gpu profile", f"the profiler's kernel rows sum to {rows:.1f} µs of a {total:.1f} µs whole")
        from compiler.stages.kernel_costs import gpu_time_accounted

        found = gpu_time_accounted(cap)
        if found is not None and found.by_graph:
            parts = (found.kernels_us + sum(r.gpu_time_us_per_call for r in found.unclaimed_in_graphs)
                     + sum(r.gpu_time_us_per_call for r in found.rest))
            if parts > total * (1 + EPS) + 1e-3:
                bad("gpu profile", f"the GPU-time breakdown's parts sum to {parts / total:.0%} of the profiled time")
    for c in cap.compiles:
        prov = c.provenance
        if prov.available:
            shares = sum(row.time_share or 0.0 for row in prov.lines)
            if shares > 1 + 1e-3:
                bad(f"{c.compile_id} provenance", f"time shares of its source lines sum to {shares:.0%}")
        for k in c.kernels.kernels if c.kernels.available else ():
            cost = k.cost
            if cost is None or cost.share is None:
                continue
            where = f"{c.compile_id} kernel {k.name}"
            if cost.served_from == "DRAM" and cost.share > 1 + EPS:
                bad(where, f"{cost.share:.0%} of the DRAM peak")
            from compiler.stages.roofline import FAR_BELOW

            if cost.share < FAR_BELOW and (cost.verdict or "").startswith(("memory-bound at", "compute-bound at")):
                bad(where, f"verdict names a bound it is far from: {cost.verdict}")
    return out


# --- kernel lines among their origins' --------------------------------------------------------

def kernel_lines(cap, checked: Checked) -> list[Violation]:
    """Every kernel's lines (``KernelProvenance.places``, else ``lines`` in its ``file``) among its origins' lines:
    those of the nodes torch names as its origins (``origin_places``, where ``origin`` says torch named them),
    else of the post-grad nodes it was made from (``post_grad_nodes``; their ``ProvenanceNode.lines``). A kernel
    torch named no origin for (``no_origin``) is counted apart, never passed."""
    from compiler.stages.schema import key_of

    out = []
    for c in cap.compiles:
        prov = c.provenance
        if not prov.available:
            continue
        post = {key_of(n.role, n.name): n for n in prov.nodes if n.level == "post_grad"}
        for k in prov.kernels:
            places = [(p.file, p.line) for p in k.places] or [(k.file, line) for line in k.lines]
            if not places:
                continue
            checked.kernels += 1
            named = getattr(k, "origin_places", None)  # the lines of the nodes torch names as its origins (issue 33)
            if getattr(k, "origin", None) and named:
                origins, allowed = named, {(p.file, p.line) for p in named}
            else:
                origins = [post[key_of(k.role, name)] for name in k.post_grad_nodes if key_of(k.role, name) in post]
                allowed = {(n.file, line) for n in origins for line in n.lines}
            if not origins or (hasattr(k, "origin") and k.origin is None and getattr(k, "no_origin", None)):
                checked.kernels_without_origin += 1
                continue
            if not allowed:
                continue  # its origins name no line (no stack trace): nothing to compare
            checked.kernels_with_origin_lines += 1
            lines_only = {line for _, line in allowed}
            outside = [(f, line) for f, line in places
                       if (f, line) not in allowed and not (f is None and line in lines_only)
                       and not (line in lines_only and any(af is None for af, al in allowed if al == line))]
            if outside:
                shown = ", ".join(f"{(f or '?').rsplit('/', 1)[-1]}:{line}" for f, line in outside[:4])
                own = ", ".join(f"{(f or '?').rsplit('/', 1)[-1]}:{line}" for f, line in sorted(
                    allowed, key=lambda p: (p[0] or "", p[1]))[:6])
                out.append(Violation("kernel_lines", f"{c.compile_id} {k.key}",
                                     f"lines {shown} are not among its origins' lines ({own})"))
            else:
                checked.kernels_lines_in_origins += 1
    return out


RULES = {"graph_nodes": graph_nodes, "counters": counters, "time_bounds": time_bounds, "kernel_lines": kernel_lines}


def check(cap, explain: dict | None = None, rules=None) -> Checked:
    """Run the rules (``rules``: names, all by default) on a capture; ``explain``: a recorded explain() result."""
    checked = Checked(compiles=len(cap.compiles))
    for name, rule in RULES.items():
        if rules and name not in rules:
            continue
        try:
            found = rule(cap, checked, explain) if name == "counters" else rule(cap, checked)
        except Exception as exc:  # noqa: BLE001 — a rule that cannot read a capture says so, as a violation
            found = [Violation(name, "rule", f"could not check: {type(exc).__name__}: {exc}")]
        checked.violations += found
    return checked


def check_path(path) -> list[tuple[str, Checked]]:
    """Check a capture JSON (``.json``/``.json.gz``), a TORCH_TRACE log or a directory (a job: each rank): one
    (name, result) per capture, and for a job one per file that could not be read (``Checked.unread`` says why:
    a rank that was not checked is never a rank without violations). A capture's ``"explain"`` key, where
    present, is an ``explain_record``."""
    from compiler.readers.job import CAPTURE_SUFFIXES, Job, load_trace

    loaded = load_trace(path)
    explain = None
    if str(path).endswith(CAPTURE_SUFFIXES):
        try:
            explain = _read_raw(path).get("explain")
        except (OSError, ValueError, AttributeError):
            explain = None
    if isinstance(loaded, Job):
        return ([(f"rank {rank}", check(cap)) for rank, cap in sorted(loaded.captures.items())]
                + [(problem.file, Checked(unread=problem.message)) for problem in _unread(loaded)])
    return [(str(path), check(loaded, explain if isinstance(explain, dict) else None))]


def _unread(job) -> list:
    """The job's files that could not be read as a rank: unreadable, empty, or refused (a symlink out of the
    directory, a FIFO) where the file is named as a rank's log, capture or watch file."""
    from compiler.readers.job import _RANK_IN_NAME, CAPTURE_PREFIX, TRACE_PREFIX, UNREAD_KINDS
    from compiler.readers.watch_log import WATCH_PREFIX

    def a_rank(name: str) -> bool:
        return (name.startswith((TRACE_PREFIX, CAPTURE_PREFIX, WATCH_PREFIX)) or name.endswith(".log")
                or _RANK_IN_NAME.search(name) is not None)

    return [p for p in job.problems if p.kind in ("unreadable_file", "empty_file")
            or (p.kind in UNREAD_KINDS and a_rank(p.file.rsplit("/", 1)[-1]))]


def _read_raw(path) -> dict:
    import gzip

    raw = open(path, "rb").read()
    if str(path).endswith(".gz"):
        raw = gzip.decompress(raw)
    return json.loads(raw)
