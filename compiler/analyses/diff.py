"""Two captures, stage by stage: what changed between two configurations (or two runs, or two saved files).

    d = compiler.analyses.diff.diff(cap_a, cap_b)          # Captures, capture dicts, or paths to saved captures
    d.changed_stages                              # ['graph', 'guards', 'kernels', ...]
    print(d.as_text())                            # unified diffs
    d.stage("kernels").items                   # one item per kernel: status, unified diff, opcodes

The stages are ``summary`` (capture-wide counts and options) and then every per-compile stage of
``compiler.stages.schema.STAGES``, in that order: guards are compared as sets, AOT graphs per role, Inductor
IR per run before and after fusion, kernels matched by name or ops, timings as numbers; any other
stage by its ``as_text()``.

A diff is a versioned JSON document (``CaptureDiff.save`` / ``CaptureDiff.load``) whose shape is
declared below (``DiffDocument``) and checked on load: a wrongly shaped file raises
``CaptureFormatError`` naming the JSON path. Every text diff item is plain data: ``status`` (same /
changed / added / removed / unavailable), both texts, ``unified`` (difflib), ``opcodes``
(difflib.SequenceMatcher, for a side-by-side view) and line counts. Texts are normalized first
(object ids, addresses and Inductor cache paths differ between any two runs and are not a change);
``normalize=False`` keeps them verbatim.
"""
from __future__ import annotations

import difflib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler.stages.capture import METHODS
from compiler.stages.schema import CaptureData, CaptureFormatError, JsonFile, check_document_header
from compiler.stages.schema import STAGES, Data

FORMAT = "tcompile-diff"
VERSION = [2, 0]  # 2.0: one diff stage per compiler.stages.schema stage (Inductor's IR is the "inductor" stage)
DIFF_STAGES = ("summary", *STAGES)  # what a diff compares, in order: the schema's stages after the summary
_TITLES = {"summary": "Summary", "graph": "Dynamo graph", "recompile": "Recompile reasons", "aot": "AOT graphs",
           "inductor": "Inductor IR", "kernels": "Generated kernels", "shapes": "Dynamic shapes"}


def stage_title(name: str) -> str:
    """How a diff stage is titled (``graph`` → ``Dynamo graph``)."""
    return _TITLES.get(name, name.replace("_", " ").capitalize())


STAGE_TITLES = {name: stage_title(name) for name in DIFF_STAGES}

_NORMALIZE = [
    (re.compile(r"(?:/[^\s'\"]*)?/torchinductor_[^/\s'\"]+(?:/[^\s'\"]+)?"), "<inductor-cache>"),
    (re.compile(r"0x[0-9a-fA-F]{6,}"), "0x…"),
    # Dynamo's names for the compiled graph in the transformed bytecode: a counter and a uuid per run
    (re.compile(r"[0-9a-f]{8}([-_])[0-9a-f]{4}\1[0-9a-f]{4}\1[0-9a-f]{4}\1[0-9a-f]{12}"), "<uuid>"),
    (re.compile(r"(__compiled_fn)_\d+"), r"\1_<n>"),
    # globals Dynamo installs, numbered per process: ``__builtins_dict___2``, ``__resume_at_30_5``,
    # ``___context_manager_0_3`` (torch._dynamo's unique_id), ``…_<id(obj)>_c<compile>`` (install_global_by_id)
    (re.compile(r"(?<![\w.])(__\w+?)_\d{6,}_c\d+(?!\w)"), r"\1_<id>_c<n>"),
    (re.compile(r"(?<![\w.])(__\w+?)_\d+(?!\w)"), r"\1_<n>"),
    (re.compile(r"(?<![\w.])\d{10,}(?![\w.])"), "<id>"),
]


def normalize(text: str | None) -> str | None:
    """Object ids, addresses and Inductor cache paths replaced by placeholders."""
    if text is None:
        return None
    for pattern, replacement in _NORMALIZE:
        text = pattern.sub(replacement, text)
    return text


# --- text diffs ------------------------------------------------------------------------------------

def text_diff(key: str, a: str | None, b: str | None, *, labels=("A", "B"), normalized: bool = True,
              reasons: tuple = (None, None), context: int = 3) -> dict:
    """One item: two texts (None = the stage is missing on that side) and how they differ."""
    if normalized:
        a, b = normalize(a), normalize(b)
    item = {"key": key, "a": a, "b": b, "reason_a": reasons[0], "reason_b": reasons[1],
            "unified": "", "opcodes": [], "added": 0, "removed": 0}
    if a is None and b is None:
        return {**item, "status": "unavailable"}
    a_lines, b_lines = (a or "").splitlines(), (b or "").splitlines()
    matcher = difflib.SequenceMatcher(None, a_lines, b_lines, autojunk=False)
    item["opcodes"] = [list(op) for op in matcher.get_opcodes()]
    item["removed"] = sum(i2 - i1 for tag, i1, i2, _, _ in item["opcodes"] if tag in ("replace", "delete"))
    item["added"] = sum(j2 - j1 for tag, _, _, j1, j2 in item["opcodes"] if tag in ("replace", "insert"))
    item["unified"] = "\n".join(difflib.unified_diff(a_lines, b_lines, f"{labels[0]}: {key}", f"{labels[1]}: {key}",
                                                     n=context, lineterm=""))
    item["status"] = ("added" if a is None else "removed" if b is None
                      else "same" if a_lines == b_lines else "changed")
    return item


def side_by_side(item: DiffItem) -> list[dict]:
    """Rows for a two-column view: ``{"tag", "a_no", "a", "b_no", "b"}`` (tag: equal, replace, delete,
    insert; line numbers from 1; None where a side has no line)."""
    a_lines, b_lines = (item.a or "").splitlines(), (item.b or "").splitlines()

    def line(lines, index):  # None past the end: a hand-edited file's opcodes may not fit its texts
        return lines[index] if 0 <= index < len(lines) else None

    rows = []
    for tag, i1, i2, j1, j2 in item.opcodes:
        if tag == "equal":
            rows += [{"tag": tag, "a_no": i + 1, "a": line(a_lines, i), "b_no": j + 1, "b": line(b_lines, j)}
                     for i, j in zip(range(i1, i2), range(j1, j2))]
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            i, j = i1 + k, j1 + k
            rows.append({"tag": tag, "a_no": i + 1 if i < i2 else None, "a": line(a_lines, i) if i < i2 else None,
                         "b_no": j + 1 if j < j2 else None, "b": line(b_lines, j) if j < j2 else None})
    return rows


def inline_changes(a: str, b: str) -> tuple[list, list]:
    """Character spans that differ between two versions of one line: ``[(start, end)…]`` per side."""
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    spans_a, spans_b = [], []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            if i2 > i1:
                spans_a.append((i1, i2))
            if j2 > j1:
                spans_b.append((j1, j2))
    return spans_a, spans_b


# --- inputs ------------------------------------------------------------------------------------------

def _capture(value) -> CaptureData:
    if isinstance(value, CaptureData):
        return value
    if isinstance(value, (str, Path)):
        return CaptureData.load(value)
    if isinstance(value, dict):
        return CaptureData.from_data(value)
    raise TypeError(f"diff() compares Captures, capture dicts or capture files, not {type(value).__name__}")


def _pairs(a: CaptureData, b: CaptureData):
    """Compiles of both captures paired by compile id (``0/0`` with ``0/0``); unmatched ones alone."""
    by_a = {c.compile_id: c for c in a.compiles}
    by_b = {c.compile_id: c for c in b.compiles}
    for cid in list(by_a) + [cid for cid in by_b if cid not in by_a]:
        ca, cb = by_a.get(cid), by_b.get(cid)
        names = list(dict.fromkeys(c.name or "?" for c in (ca, cb) if c))
        yield f"{cid} {' / '.join(names)}", ca, cb


_NO_COMPILE = "no such compile on this side"


def _reason(compile, stage: str) -> str:
    """Why a stage of one side has nothing to compare."""
    if compile is None:
        return _NO_COMPILE
    return getattr(compile, stage).reason or "not recorded"


def _stage_text(compile, stage: str, text=lambda s: s.as_text()) -> tuple[str | None, str | None]:
    """(text, reason when missing) of one stage of one compile."""
    if compile is None or not getattr(compile, stage).available:
        return None, _reason(compile, stage)
    return text(getattr(compile, stage)), None


# --- stages ------------------------------------------------------------------------------------------

def _text_stage(a, b, labels, normalized, getter) -> dict:
    items = []
    for title, ca, cb in _pairs(a, b):
        for suffix, (text_a, reason_a), (text_b, reason_b) in getter(ca, cb):
            key = f"{title}{' ' + suffix if suffix else ''}"
            items.append(text_diff(key, text_a, text_b, labels=labels, normalized=normalized,
                                   reasons=(reason_a, reason_b)))
    return _finish(items)


def _finish(items: list[dict], **extra) -> dict:
    counts = Counter(item["status"] for item in items)
    available = any(item["status"] != "unavailable" for item in items)
    reason = None
    if not available:
        reasons = {r for item in items for r in (item["reason_a"], item["reason_b"]) if r}
        reason = "; ".join(sorted(reasons)) or "nothing was compiled"
    return {"available": available, "reason": reason, "items": items, "counts": dict(counts),
            "changed": any(s in counts for s in ("changed", "added", "removed")), **extra}


def _as_text(stage: str):
    """Any stage compared by the text it reads as (``Stage.as_text()``)."""
    def getter(ca, cb):
        yield "", _stage_text(ca, stage), _stage_text(cb, stage)
    return getter


def _graph(ca, cb):
    code = lambda graph: graph.code  # noqa: E731
    yield "", _stage_text(ca, "graph", code), _stage_text(cb, "graph", code)


def _aot(ca, cb):
    roles_a = ca.aot.graphs if ca is not None and ca.aot.available else {}
    roles_b = cb.aot.graphs if cb is not None and cb.aot.available else {}
    if not roles_a and not roles_b:
        yield "", (None, _reason(ca, "aot")), (None, _reason(cb, "aot"))
        return
    for role in list(roles_a) + [r for r in roles_b if r not in roles_a]:
        ga, gb = roles_a.get(role), roles_b.get(role)
        yield (role, (ga.code, None) if ga else (None, f"no {role} graph"),
               (gb.code, None) if gb else (None, f"no {role} graph"))


_IR = (("before fusion", "ir_before"), ("after fusion", "ir_after"))


def _inductor(ca, cb):
    """Inductor's scheduler IR, run by run (inference, or forward and backward), before and after fusion."""
    runs_a = ca.inductor.runs if ca is not None and ca.inductor.available else []
    runs_b = cb.inductor.runs if cb is not None and cb.inductor.available else []
    if not runs_a and not runs_b:
        yield "", (None, _reason(ca, "inductor")), (None, _reason(cb, "inductor"))
        return
    for index in range(max(len(runs_a), len(runs_b))):
        ra = runs_a[index] if index < len(runs_a) else None
        rb = runs_b[index] if index < len(runs_b) else None
        role = (ra or rb).role or f"run {index}"
        for phase, which in _IR:
            yield f"{role} IR {phase}", _ir_text(ra, which), _ir_text(rb, which)


def _ir_text(run, which: str):
    if run is None:
        return None, "no such Inductor run on this side"
    if not run.ir.available:
        return None, run.ir.reason or "no IR"
    return getattr(run, which).text, None


def _kernel_ops(kernel) -> tuple:
    return tuple(sorted(kernel.aten_ops or kernel.ops_from_name))


def match_kernels(kernels_a: list, kernels_b: list) -> list[tuple]:
    """Pairs of kernels (``compiler.stages.schema.Kernel``): same name first, then the same name without its
    index (``cpp_fused_relu_0`` / ``cpp_fused_relu_1``), then the same ops; the rest alone."""
    left, right = list(kernels_a), list(kernels_b)
    pairs = []
    for key in (lambda k: (k.role, k.name),
                lambda k: (k.role, re.sub(r"_\d+$", "", k.name)),
                lambda k: (k.role, k.language, _kernel_ops(k))):
        for ka in list(left):
            kb = next((k for k in right if key(k) == key(ka)), None)
            if kb is not None:
                pairs.append((ka, kb))
                left.remove(ka)
                right.remove(kb)
    return pairs + [(ka, None) for ka in left] + [(None, kb) for kb in right]


def _kernels_stage(a, b, labels, normalized) -> dict:
    items = []
    for title, ca, cb in _pairs(a, b):
        stage_a = ca.kernels if ca is not None else None
        stage_b = cb.kernels if cb is not None else None
        if not (stage_a and stage_a.available) and not (stage_b and stage_b.available):
            items.append(text_diff(title, None, None, reasons=(_reason(ca, "kernels"), _reason(cb, "kernels"))))
            continue
        for ka, kb in match_kernels(stage_a.kernels if stage_a else [], stage_b.kernels if stage_b else []):
            name = ka.name if ka and kb and ka.name == kb.name else \
                f"{ka.name if ka else '∅'} → {kb.name if kb else '∅'}"
            item = text_diff(f"{title} {name}", _kernel_text(ka), _kernel_text(kb), labels=labels,
                             normalized=normalized, reasons=(None if ka else f"no such kernel in {labels[0]}",
                                                             None if kb else f"no such kernel in {labels[1]}"))
            item.update(kernel_a=ka and ka.name, kernel_b=kb and kb.name, compile=title,
                        ops=list(_kernel_ops(ka or kb)), language=(ka or kb).language)
            items.append(item)
    return _finish(items)


def _kernel_text(kernel) -> str | None:
    if kernel is None:
        return None
    if kernel.language == "extern":
        return f"{kernel.name}({', '.join(kernel.call_args)})"
    return kernel.source or ""


def _guard_key(row) -> tuple:
    return (normalize(row.source), row.kind, normalize(row.condition))


def _guard_line(row) -> str:
    _, kind, condition = _guard_key(row)
    return f"{kind}: {condition}"


def _guard_rows(compile) -> list:
    return compile.guards.rows if compile is not None and compile.guards.available else []


def guard_diff(a, b) -> dict:
    """Guards of two captures as sets of (guarded value, kind, condition), compile by compile:
    ``removed`` (only in a), ``added`` (only in b), ``common`` (count)."""
    a, b = _capture(a), _capture(b)
    removed, added, common = [], [], 0
    for title, ca, cb in _pairs(a, b):
        rows_a, rows_b = _guard_rows(ca), _guard_rows(cb)
        keys_a, keys_b = Counter(map(_guard_key, rows_a)), Counter(map(_guard_key, rows_b))
        left, right = keys_a - keys_b, keys_b - keys_a
        common += sum((keys_a & keys_b).values())
        for rows, extra, out in ((rows_a, left, removed), (rows_b, right, added)):
            for row in rows:
                key = _guard_key(row)
                if extra[key]:
                    extra[key] -= 1
                    out.append({"compile": title, "source": row.source, "kind": row.kind,
                                "condition": row.condition})
    return {"removed": removed, "added": added, "common": common}


def _guards_stage(a, b, labels, normalized) -> dict:
    def text(guards):
        return "\n".join(sorted(f"{r.source or '(global)'}  {_guard_line(r)}" for r in guards.rows))

    def getter(ca, cb):
        yield "", _stage_text(ca, "guards", text), _stage_text(cb, "guards", text)

    stage = _text_stage(a, b, labels, normalized, getter)
    sets = guard_diff(a, b)
    stage.update(removed=sets["removed"], added=sets["added"], common=sets["common"])
    stage["changed"] = stage["changed"] or bool(sets["removed"] or sets["added"])
    return stage


def _phases(compile) -> dict:
    return {p.label: p.seconds for p in compile.timings.phases} if compile is not None else {}


def _timings_stage(a, b) -> dict:
    rows = []
    for title, ca, cb in _pairs(a, b):
        phases_a, phases_b = _phases(ca), _phases(cb)
        for label in list(phases_a) + [p for p in phases_b if p not in phases_a]:
            rows.append(_number_row(title, label, phases_a.get(label), phases_b.get(label)))
    if a.runtime.available or b.runtime.available:
        for key, label in (("eager", "runtime: eager median"), ("compiled", "runtime: compiled median")):
            timing_a, timing_b = getattr(a.runtime, key), getattr(b.runtime, key)
            rows.append(_number_row("run", label, timing_a and timing_a.median_s, timing_b and timing_b.median_s))
    return {"available": bool(rows), "reason": None if rows else "no timings were recorded", "rows": rows,
            "items": [], "counts": {}, "changed": False,
            "note": "timings always differ a little between runs: compare the ratio, not the digits"}


def _number_row(group: str, label: str, value_a, value_b) -> dict:
    ratio = value_b / value_a if value_a and value_b is not None else None
    return {"group": group, "label": label, "a": value_a, "b": value_b,
            "delta": value_b - value_a if value_a is not None and value_b is not None else None, "ratio": ratio}


def _summary_stage(a, b) -> dict:
    sa, sb = a.summary.to_data(), b.summary.to_data()
    rows = [{"label": key, "a": sa.get(key), "b": sb.get(key), "changed": sa.get(key) != sb.get(key)}
            for key in list(sa) + [k for k in sb if k not in sa]]
    options_a, options_b = a.options, b.options
    options = [{"label": key, "a": _show(options_a.get(key)), "b": _show(options_b.get(key)),
                "changed": options_a.get(key) != options_b.get(key)}
               for key in list(options_a) + [k for k in options_b if k not in options_a]]
    return {"available": True, "reason": None, "rows": rows, "options": options, "items": [], "counts": {},
            "changed": any(r["changed"] for r in rows if "time" not in r["label"])}


def _show(value):
    return value if isinstance(value, (str, int, float, bool, type(None))) else json.dumps(value, default=str)


def _compare(stage: str, a, b, labels, normalized) -> "DiffStage":
    """One diff stage, as its declared type (``DiffStage``, every field checked as it is built)."""
    return DiffStage.from_data(_compared(stage, a, b, labels, normalized), f"stages.{stage}")


def _compared(stage: str, a, b, labels, normalized) -> dict:
    """One diff stage's data: the summary, a stage with its own comparison, or any other by its text."""
    if stage == "summary":
        return _summary_stage(a, b)
    if stage == "timings":
        return _timings_stage(a, b)
    if stage == "guards":
        return _guards_stage(a, b, labels, normalized)
    if stage == "kernels":
        return _kernels_stage(a, b, labels, normalized)
    if stage == "amortization":  # measured seconds: two runs never agree to the digit
        return {**_text_stage(a, b, labels, normalized, _as_text(stage)), "changed": False,
                "note": "measured compile time and saving per call differ a little between runs: not a change"}
    getter = {"graph": _graph, "aot": _aot, "inductor": _inductor}.get(stage) or _as_text(stage)
    return _text_stage(a, b, labels, normalized, getter)


# --- the document ------------------------------------------------------------------------------------

@dataclass(repr=False, eq=False)
class DiffItem(Data):
    """One compared text: a graph, a kernel, one IR of one Inductor run …"""

    key: str
    status: str  # same, changed, added, removed, unavailable
    a: str | None = None
    b: str | None = None
    reason_a: str | None = None
    reason_b: str | None = None
    unified: str = ""
    opcodes: list[list[Any]] = field(default_factory=list)  # difflib opcodes: [tag, i1, i2, j1, j2]
    added: int = 0
    removed: int = 0
    compile: str | None = None  # kernels: the compile, both kernels' names, their ops and language
    kernel_a: str | None = None
    kernel_b: str | None = None
    ops: list[str] = field(default_factory=list)
    language: str | None = None


@dataclass(repr=False, eq=False)
class GuardChange(Data):
    compile: str = ""
    source: str | None = None
    kind: str | None = None
    condition: str | None = None


@dataclass(repr=False, eq=False)
class DiffRow(Data):
    """A number or value on both sides: a summary count, an option, a timing."""

    label: str
    group: str | None = None
    a: Any = None
    b: Any = None
    changed: bool = True
    delta: float | None = None
    ratio: float | None = None


@dataclass(repr=False, eq=False)
class DiffStage(Data):
    available: bool
    reason: str | None = None
    changed: bool = False
    items: list[DiffItem] = field(default_factory=list)  # text stages
    counts: dict[str, int] = field(default_factory=dict)  # items per status
    removed: list[GuardChange] = field(default_factory=list)  # guards: only in A …
    added: list[GuardChange] = field(default_factory=list)  # … only in B
    common: int = 0  # … in both
    rows: list[DiffRow] = field(default_factory=list)  # summary and timings
    options: list[DiffRow] = field(default_factory=list)  # summary: the recorded options
    note: str | None = None


@dataclass(repr=False, eq=False)
class DiffDocument(Data):
    """The shape of a saved diff (``CaptureDiff.doc``), checked when one is loaded."""

    format: str
    version: list[int]
    labels: list[str]
    stages: dict[str, DiffStage]


_OPCODE_TAGS = ("equal", "replace", "delete", "insert")
_STATUSES = ("same", "changed", "added", "removed", "unavailable")


def _check_values(document: DiffDocument) -> None:
    """What types alone do not say: two labels, known statuses, opcodes of five fields."""
    if len(document.labels) != 2:
        raise CaptureFormatError(f"labels: expected two labels, got {len(document.labels)}")
    for name, stage in document.stages.items():
        for i, item in enumerate(stage.items):
            where = f"stages.{name}.items[{i}]"
            if item.status not in _STATUSES:
                raise CaptureFormatError(f"{where}.status: expected one of {', '.join(_STATUSES)}, "
                                         f"got {item.status!r}")
            for j, op in enumerate(item.opcodes):
                if not (len(op) == 5 and op[0] in _OPCODE_TAGS and all(
                        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in op[1:])):
                    raise CaptureFormatError(f"{where}.opcodes[{j}]: expected [tag, i1, i2, j1, j2], "
                                             f"got {json.dumps(op, default=str)[:60]}")


def _read(data) -> DiffDocument:
    """Diff data → ``DiffDocument``, or ``CaptureFormatError`` naming what is wrong and where."""
    check_document_header(data, FORMAT, VERSION, "diff")
    document = DiffDocument.from_data(data)
    _check_values(document)
    return document


# --- the entry point --------------------------------------------------------------------------------

class CaptureDiff(JsonFile):
    """Stage-by-stage differences between capture A and capture B, typed (``doc``: a ``DiffDocument``):
    ``stage(name)`` is a ``DiffStage`` — its ``items`` (``DiffItem``: one compared text each), guard
    changes, number ``rows`` — and ``as_text()`` reads like a unified diff. Saved and loaded as
    versioned JSON (``to_data`` / ``from_data``)."""

    document = "diff"

    def __init__(self, doc: DiffDocument):
        self.doc = doc

    def to_data(self) -> dict:
        return self.doc.to_data()

    data = property(to_data)
    labels = property(lambda self: tuple(self.doc.labels))
    stages = property(lambda self: self.doc.stages)

    def stage(self, name: str) -> DiffStage:
        """One stage; a stage this diff does not hold (a newer tcompile's) reads as unavailable."""
        return self.stages.get(name) or DiffStage(available=False, reason="not compared in this diff")

    @property
    def changed_stages(self) -> list[str]:
        return [name for name, stage in self.stages.items() if stage.changed]

    def as_text(self) -> str:
        """A unified diff of every changed stage, and the summary and timing numbers that differ."""
        out = [f"tcompile diff: {self.labels[0]} → {self.labels[1]}; "
               f"changed: {', '.join(self.changed_stages) or 'nothing'}"]
        for name, stage in self.stages.items():
            if name in ("summary", "timings"):
                out.append(f"== {stage_title(name)} ==")
                out += [f"  {row.group + ' ' if row.group else ''}{row.label}: {row.a} → {row.b}"
                        for row in stage.rows if row.changed]
                continue
            changed = [i for i in stage.items if i.status in ("changed", "added", "removed")]
            if changed or stage.removed or stage.added:
                out.append(f"== {stage_title(name)} ==")
            out += [i.unified for i in changed]
            out += [f"  - {g.source} {g.kind}: {g.condition}" for g in stage.removed]
            out += [f"  + {g.source} {g.kind}: {g.condition}" for g in stage.added]
        return "\n".join(out)

    __str__ = as_text

    @classmethod
    def from_data(cls, data) -> "CaptureDiff":
        """A diff from its data, checked against ``DiffDocument`` (``CaptureFormatError`` naming the
        JSON path when it is wrongly shaped) and completed with the declared defaults."""
        return cls(_read(data))

    def __eq__(self, other) -> bool:
        return isinstance(other, CaptureDiff) and self.to_data() == other.to_data()

    def __repr__(self) -> str:
        return f"<CaptureDiff {self.labels[0]} → {self.labels[1]}: changed {self.changed_stages}>"


def diff(a, b, *, labels=("A", "B"), normalized: bool = True) -> CaptureDiff:
    """Compare two captures (Capture objects, capture dicts, or paths of saved captures) stage by stage."""
    a, b = _capture(a), _capture(b)
    labels = tuple(labels)
    document = DiffDocument(format=FORMAT, version=list(VERSION), labels=list(labels),
                            stages={name: _compare(name, a, b, labels, normalized) for name in DIFF_STAGES})
    _check_values(document)
    return CaptureDiff(document)


diff_captures = diff


METHODS["diff"] = diff  # Capture.diff (compiler.stages.capture)
