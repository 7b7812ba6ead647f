"""Two captures, stage by stage: what changed between two configurations (or two runs, or two saved files).

    d = compiler.diff.diff(cap_a, cap_b)          # Captures, capture dicts, or paths to saved captures
    d.changed_stages                              # ['graph', 'guards', 'kernels', ...]
    print(d.as_text())                            # unified diffs
    d.stage("kernels")["items"]                   # one item per kernel: status, unified diff, opcodes

Every text diff item is plain data: ``status`` (same / changed / added / removed / unavailable), both
texts, ``unified`` (difflib), ``opcodes`` (difflib.SequenceMatcher, for a side-by-side view) and line
counts. Texts are normalized first (object ids, addresses and Inductor cache paths differ between any
two runs and are not a change); ``normalize=False`` keeps them verbatim.
"""
from __future__ import annotations

import difflib
import json
import re
from collections import Counter
from pathlib import Path

from .model import CaptureFormatError, JsonFile

FORMAT = "tcompile-diff"
VERSION = [1, 0]
STAGES = (("summary", "Summary"), ("graph", "Dynamo graph"), ("guards", "Guards"), ("aot", "AOT graphs"),
          ("ir_pre", "IR before fusion"), ("ir_post", "IR after fusion"), ("kernels", "Generated kernels"),
          ("timings", "Timings"))
STAGE_TITLES = dict(STAGES)

_NORMALIZE = [
    (re.compile(r"(?:/[^\s'\"]*)?/torchinductor_[^/\s'\"]+(?:/[^\s'\"]+)?"), "<inductor-cache>"),
    (re.compile(r"0x[0-9a-fA-F]{6,}"), "0x…"),
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


def side_by_side(item: dict) -> list[dict]:
    """Rows for a two-column view: ``{"tag", "a_no", "a", "b_no", "b"}`` (tag: equal, replace, delete,
    insert; line numbers from 1; None where a side has no line)."""
    a_lines, b_lines = (item.get("a") or "").splitlines(), (item.get("b") or "").splitlines()
    rows = []
    for tag, i1, i2, j1, j2 in item.get("opcodes") or []:
        if tag == "equal":
            rows += [{"tag": tag, "a_no": i + 1, "a": a_lines[i], "b_no": j + 1, "b": b_lines[j]}
                     for i, j in zip(range(i1, i2), range(j1, j2))]
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            i, j = i1 + k, j1 + k
            rows.append({"tag": tag, "a_no": i + 1 if i < i2 else None, "a": a_lines[i] if i < i2 else None,
                         "b_no": j + 1 if j < j2 else None, "b": b_lines[j] if j < j2 else None})
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

def _capture_data(value) -> dict:
    from .model import Capture, validate

    if isinstance(value, Capture):
        return value.data
    if isinstance(value, (str, Path)):
        return Capture.load(value).data
    if isinstance(value, dict):
        validate(value)
        return value
    raise TypeError(f"diff() compares Captures, capture dicts or capture files, not {type(value).__name__}")


def _pairs(a: dict, b: dict):
    """Compiles of both captures paired by compile id (``0/0`` with ``0/0``); unmatched ones alone."""
    by_a = {c["compile_id"]: c for c in a.get("compiles", [])}
    by_b = {c["compile_id"]: c for c in b.get("compiles", [])}
    order = list(by_a) + [cid for cid in by_b if cid not in by_a]
    for cid in order:
        ca, cb = by_a.get(cid), by_b.get(cid)
        names = list(dict.fromkeys(c.get("name") or "?" for c in (ca, cb) if c))
        yield f"{cid} {' / '.join(names)}", ca, cb


def _stage_text(compile_data: dict | None, stage: str, key: str) -> tuple[str | None, str | None]:
    """(text, reason when missing) of one stage of one compile."""
    if compile_data is None:
        return None, "no such compile on this side"
    data = compile_data.get(stage) or {}
    if not data.get("available"):
        return None, data.get("reason") or "not recorded"
    return data.get(key), None


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
        reasons = {r for item in items for r in (item.get("reason_a"), item.get("reason_b")) if r}
        reason = "; ".join(sorted(reasons)) or "nothing was compiled"
    return {"available": available, "reason": reason, "items": items, "counts": dict(counts),
            "changed": any(s in counts for s in ("changed", "added", "removed")), **extra}


def _graph(ca, cb):
    yield "", _stage_text(ca, "graph", "code"), _stage_text(cb, "graph", "code")


def _aot(ca, cb):
    roles_a = ((ca or {}).get("aot") or {}).get("graphs") or {}
    roles_b = ((cb or {}).get("aot") or {}).get("graphs") or {}
    if not roles_a and not roles_b:
        yield "", (None, _reason(ca, "aot")), (None, _reason(cb, "aot"))
        return
    for role in list(roles_a) + [r for r in roles_b if r not in roles_a]:
        ga, gb = roles_a.get(role), roles_b.get(role)
        yield (role, (ga.get("code"), None) if ga else (None, f"no {role} graph"),
               (gb.get("code"), None) if gb else (None, f"no {role} graph"))


def _reason(compile_data: dict | None, stage: str) -> str:
    if compile_data is None:
        return "no such compile on this side"
    return (compile_data.get(stage) or {}).get("reason") or "not recorded"


def _ir(which: str):
    def getter(ca, cb):
        runs_a = (((ca or {}).get("inductor") or {}).get("runs")) or []
        runs_b = (((cb or {}).get("inductor") or {}).get("runs")) or []
        if not runs_a and not runs_b:
            yield "", (None, _reason(ca, "inductor")), (None, _reason(cb, "inductor"))
            return
        for index in range(max(len(runs_a), len(runs_b))):
            ra = runs_a[index] if index < len(runs_a) else None
            rb = runs_b[index] if index < len(runs_b) else None
            role = (ra or rb).get("role") or f"run {index}"
            yield role, _ir_text(ra, which), _ir_text(rb, which)
    return getter


def _ir_text(run: dict | None, which: str):
    if run is None:
        return None, "no such Inductor run on this side"
    ir = run.get("ir") or {}
    if not ir.get("available"):
        return None, ir.get("reason") or "no IR"
    return (ir.get(which) or {}).get("text"), None


def _kernel_ops(kernel: dict) -> tuple:
    return tuple(sorted(kernel.get("aten_ops") or kernel.get("ops_from_name") or []))


def match_kernels(kernels_a: list[dict], kernels_b: list[dict]) -> list[tuple[dict | None, dict | None]]:
    """Pairs of kernels: same name first, then the same name without its index
    (``cpp_fused_relu_0`` / ``cpp_fused_relu_1``), then the same ops; the rest alone."""
    left, right = list(kernels_a), list(kernels_b)
    pairs = []
    for key in (lambda k: (k.get("role"), k["name"]),
                lambda k: (k.get("role"), re.sub(r"_\d+$", "", k["name"])),
                lambda k: (k.get("role"), k.get("language"), _kernel_ops(k))):
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
        stage_a, stage_b = (ca or {}).get("kernels") or {}, (cb or {}).get("kernels") or {}
        if not stage_a.get("available") and not stage_b.get("available"):
            items.append(text_diff(title, None, None, reasons=(stage_a.get("reason") or "no such compile",
                                                               stage_b.get("reason") or "no such compile")))
            continue
        for ka, kb in match_kernels(stage_a.get("kernels") or [], stage_b.get("kernels") or []):
            name = ka["name"] if ka and kb and ka["name"] == kb["name"] else \
                f"{ka['name'] if ka else '∅'} → {kb['name'] if kb else '∅'}"
            item = text_diff(f"{title} {name}", _kernel_text(ka), _kernel_text(kb), labels=labels,
                             normalized=normalized, reasons=(None if ka else f"no such kernel in {labels[0]}",
                                                             None if kb else f"no such kernel in {labels[1]}"))
            item.update(kernel_a=ka and ka["name"], kernel_b=kb and kb["name"], compile=title,
                        ops=list(_kernel_ops(ka or kb)), language=(ka or kb).get("language"))
            items.append(item)
    return _finish(items)


def _kernel_text(kernel: dict | None) -> str | None:
    if kernel is None:
        return None
    if kernel.get("language") == "extern":
        return f"{kernel['name']}({', '.join(kernel.get('call_args') or [])})"
    return kernel.get("source") or ""


def _guard_key(row: dict) -> tuple:
    return (row.get("source") or "", row.get("kind") or "", normalize(row.get("condition") or ""))


def _guard_line(row: dict) -> str:
    source, kind, condition = _guard_key(row)
    return f"{kind}: {condition}"


def guard_diff(a, b) -> dict:
    """Guards of two captures as sets of (guarded value, kind, condition), compile by compile:
    ``removed`` (only in a), ``added`` (only in b), ``common`` (count)."""
    a, b = _capture_data(a), _capture_data(b)
    removed, added, common = [], [], 0
    for title, ca, cb in _pairs(a, b):
        rows_a = (((ca or {}).get("guards") or {}).get("table")) or []
        rows_b = (((cb or {}).get("guards") or {}).get("table")) or []
        keys_a, keys_b = Counter(map(_guard_key, rows_a)), Counter(map(_guard_key, rows_b))
        left, right = keys_a - keys_b, keys_b - keys_a
        common += sum((keys_a & keys_b).values())
        for rows, extra, out in ((rows_a, left, removed), (rows_b, right, added)):
            for row in rows:
                key = _guard_key(row)
                if extra.get(key):
                    extra[key] -= 1
                    out.append({"compile": title, "source": row.get("source"), "kind": row.get("kind"),
                                "condition": row.get("condition")})
    return {"removed": removed, "added": added, "common": common}


def _guards_stage(a, b, labels, normalized) -> dict:
    def getter(ca, cb):
        texts = []
        for c in (ca, cb):
            guards = (c or {}).get("guards") or {}
            if c is None or not guards.get("available"):
                texts.append((None, guards.get("reason") if c else "no such compile on this side"))
            else:
                texts.append(("\n".join(sorted(f"{r.get('source') or '(global)'}  {_guard_line(r)}"
                                               for r in guards.get("table") or [])), None))
        yield "", texts[0], texts[1]

    stage = _text_stage(a, b, labels, normalized, getter)
    sets = guard_diff(a, b)
    stage.update(removed=sets["removed"], added=sets["added"], common=sets["common"])
    stage["changed"] = stage["changed"] or bool(sets["removed"] or sets["added"])
    return stage


def _timings_stage(a, b) -> dict:
    rows = []
    for title, ca, cb in _pairs(a, b):
        phases_a = {p["label"]: p["seconds"] for p in (((ca or {}).get("timings") or {}).get("phases") or [])}
        phases_b = {p["label"]: p["seconds"] for p in (((cb or {}).get("timings") or {}).get("phases") or [])}
        for label in list(phases_a) + [p for p in phases_b if p not in phases_a]:
            rows.append(_number_row(title, label, phases_a.get(label), phases_b.get(label)))
    runtime_a, runtime_b = a.get("runtime") or {}, b.get("runtime") or {}
    for key, label in (("eager", "runtime: eager median"), ("compiled", "runtime: compiled median")):
        if runtime_a.get("available") or runtime_b.get("available"):
            rows.append(_number_row("run", label, (runtime_a.get(key) or {}).get("median_s"),
                                    (runtime_b.get(key) or {}).get("median_s")))
    return {"available": bool(rows), "reason": None if rows else "no timings were recorded", "rows": rows,
            "items": [], "counts": {}, "changed": False,
            "note": "timings always differ a little between runs: compare the ratio, not the digits"}


def _number_row(group: str, label: str, value_a, value_b) -> dict:
    ratio = value_b / value_a if value_a and value_b is not None else None
    return {"group": group, "label": label, "a": value_a, "b": value_b,
            "delta": value_b - value_a if value_a is not None and value_b is not None else None, "ratio": ratio}


def _summary_stage(a, b) -> dict:
    sa, sb = a.get("summary") or {}, b.get("summary") or {}
    rows = [{"label": key, "a": sa.get(key), "b": sb.get(key), "changed": sa.get(key) != sb.get(key)}
            for key in list(sa) + [k for k in sb if k not in sa]]
    options_a, options_b = a.get("options") or {}, b.get("options") or {}
    options = [{"label": key, "a": _show(options_a.get(key)), "b": _show(options_b.get(key)),
                "changed": options_a.get(key) != options_b.get(key)}
               for key in list(options_a) + [k for k in options_b if k not in options_a]]
    return {"available": True, "reason": None, "rows": rows, "options": options, "items": [], "counts": {},
            "changed": any(r["changed"] for r in rows if "time" not in r["label"])}


def _show(value):
    return value if isinstance(value, (str, int, float, bool, type(None))) else json.dumps(value, default=str)


# --- the entry point --------------------------------------------------------------------------------

class CaptureDiff(JsonFile):
    """Stage-by-stage differences between capture A and capture B (plain data in ``.data``)."""

    def __init__(self, data: dict):
        self.data = data

    labels = property(lambda self: tuple(self.data["labels"]))
    stages = property(lambda self: self.data["stages"])

    def stage(self, name: str) -> dict:
        return self.data["stages"][name]

    @property
    def changed_stages(self) -> list[str]:
        return [name for name, stage in self.stages.items() if stage.get("changed")]

    def as_text(self) -> str:
        out = [f"tcompile diff: {self.labels[0]} → {self.labels[1]}; changed: {', '.join(self.changed_stages) or 'nothing'}"]
        for name, stage in self.stages.items():
            if name in ("summary", "timings"):
                rows = [r for r in stage.get("rows", []) if r.get("changed", True)]
                out += [f"== {STAGE_TITLES[name]} =="] + [f"  {r.get('group', '') + ' ' if r.get('group') else ''}"
                                                          f"{r['label']}: {r['a']} → {r['b']}" for r in rows]
                continue
            changed = [i for i in stage["items"] if i["status"] in ("changed", "added", "removed")]
            if changed:
                out.append(f"== {STAGE_TITLES[name]} ==")
                out += [i["unified"] for i in changed]
            if name == "guards" and (stage.get("removed") or stage.get("added")):
                out += [f"  - {g['source']} {g['kind']}: {g['condition']}" for g in stage["removed"]]
                out += [f"  + {g['source']} {g['kind']}: {g['condition']}" for g in stage["added"]]
        return "\n".join(out)

    __str__ = as_text

    document = "diff"

    @staticmethod
    def validate_data(data) -> None:
        if not isinstance(data, dict) or data.get("format") != FORMAT or (data.get("version") or [None])[0] != VERSION[0]:
            raise CaptureFormatError(f"not a tcompile diff (format {FORMAT} {VERSION[0]}.x)")

    def __repr__(self) -> str:
        return f"<CaptureDiff {self.labels[0]} → {self.labels[1]}: changed {self.changed_stages}>"


def diff(a, b, *, labels=("A", "B"), normalized: bool = True) -> CaptureDiff:
    """Compare two captures (Capture objects, capture dicts, or paths of saved captures) stage by stage."""
    a, b = _capture_data(a), _capture_data(b)
    labels = tuple(labels)
    stages = {
        "summary": _summary_stage(a, b),
        "graph": _text_stage(a, b, labels, normalized, _graph),
        "guards": _guards_stage(a, b, labels, normalized),
        "aot": _text_stage(a, b, labels, normalized, _aot),
        "ir_pre": _text_stage(a, b, labels, normalized, _ir("pre_fusion")),
        "ir_post": _text_stage(a, b, labels, normalized, _ir("post_fusion")),
        "kernels": _kernels_stage(a, b, labels, normalized),
        "timings": _timings_stage(a, b),
    }
    return CaptureDiff({"format": FORMAT, "version": list(VERSION), "labels": list(labels), "stages": stages})


diff_captures = diff
