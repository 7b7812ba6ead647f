"""The recompile budget of each frame, counted as torch counts it (``compiler.stages.recompiles`` reads the reasons;
this module needs none of the schema, so ``CaptureData`` derives ``recompile_budgets`` from it on load)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from compiler.stages.data import Data


# --- declared here, built below (``compiler.stages.schema`` ties the stages into a ``Compile``) ---

@dataclass(repr=False, eq=False)
class RecompileBudget(Data):
    """A frame that has used its recompile budget or is within two of it, counted as torch counts
    (``compiler.stages.recompiles.recompile_budgets``): at ``left == 0`` its next new variant runs eagerly;
    ``hit``: torch already refused one (``RecompileLimit``). Derived from the compiles on load, so a capture of
    any version says it; fixes that remove the failing guard are credited with it (``Fix.limit_frames``)."""

    frame_id: int = 0
    function: str | None = None
    file: str | None = None
    line: int | None = None
    compile_ids: list[str] = field(default_factory=list)  # the frame's compiles that made a cache entry
    used: int = 0  # cache entries counted against the limit after its last compile
    limit: int = 0
    limit_type: str = "recompile_limit"  # or accumulated_recompile_limit, whichever is nearer
    limit_source: str | None = None  # where ``limit`` was read
    left: int = 0  # new variants it may still compile
    hit: bool = False  # torch refused a compile of it (the limit actually bit)
    refused: list[str] = field(default_factory=list)  # the refused compiles
    guard: str | None = None  # the guard that kept failing, its value stripped: "spatial_scale =="
    values: list[str] = field(default_factory=list)  # the values it was specialised to, in order
    value_kind: str | None = None  # "float" / "int" when every value is a Python number of that kind
    note: str | None = None  # torch's note on where the guard came from

    def as_text(self) -> str:
        state = ("hit: new variants run eagerly" if self.hit else "used up: the next new variant runs eagerly"
                 if self.left == 0 else f"{self.left} left")
        guard = f"; failing guard {self.guard} {' / '.join(self.values)}" if self.guard else ""
        return f"{self.function}: {self.used} of {self.limit_type} = {self.limit} ({state}){guard}"


_VALUE_GUARD = re.compile(r"^(?P<subject>.+?)\s*(?P<op>==|!=|<=|>=|<|>)\s*(?P<value>\S+)$")
DEFAULT_LIMITS = {"recompile_limit": 8, "accumulated_recompile_limit": 256}  # torch._dynamo.config's defaults
NEAR = 2  # a frame this close to its limit (or at it) is a finding: its next new variants run eagerly


def recompile_budgets(compiles: list, options: dict, limits: dict) -> list[dict]:
    """Frames that have used their recompile budget, or are within ``NEAR`` of it, counted as torch counts
    (``torch._dynamo.cache_size``): before each compile torch records in the compile's metrics ``cache_size``, the
    cache entries of that code object made for the same ID_MATCH'd objects (an ``nn.Module``'s ``self``), and
    ``accumulated_cache_size``, all its entries; a compile is refused when the first reaches ``recompile_limit``
    (``torch.compile(recompile_limit=…)`` where given, else ``torch._dynamo.config``) or the second
    ``accumulated_recompile_limit``. So after a frame's last compile it holds ``cache_size + 1`` entries. One item
    per frame that recompiled at least once: entries used, limit, how many are left (0: the next new variant runs
    eagerly; ``hit``: torch already refused one), the guard that kept failing and the values it saw."""
    from compiler.stages.skipped import is_recompile_limit

    out = []
    frames: dict[int, list] = {}
    for c in compiles:
        if c.origin == "dynamo":
            frames.setdefault(c.frame_id, []).append(c)
    configured = options.get("recompile_limit")
    for frame_id, frame in frames.items():
        refused = [c for c in frame if is_recompile_limit(c)]
        entered = [c for c in frame if c.status == "compiled" and isinstance(c.metrics.get("cache_size"), int)]
        if not entered:
            continue
        last = max(entered, key=lambda c: c.metrics["cache_size"])
        used, accumulated = last.metrics["cache_size"] + 1, int(last.metrics.get("accumulated_cache_size") or 0) + 1
        if used < 2 and not refused:  # never recompiled: no guard kept failing
            continue
        if isinstance(configured, int):
            limit, source = configured, "torch.compile(recompile_limit=…)"
        elif isinstance(limits.get("recompile_limit"), int):
            limit, source = limits["recompile_limit"], "torch._dynamo.config at capture time"
        else:
            limit, source = DEFAULT_LIMITS["recompile_limit"], "torch's default (not recorded)"
        total = limits.get("accumulated_recompile_limit") or DEFAULT_LIMITS["accumulated_recompile_limit"]
        limit_type, left = "recompile_limit", limit - used
        if total - accumulated < left:
            limit_type, limit, left = "accumulated_recompile_limit", total, total - accumulated
            used = accumulated
        if left > NEAR and not refused:
            continue
        guard, values, note = repeated_guard([c.recompile.reasons for c in frame if c.recompile.available])
        if guard and not refused:  # the last compile's own value: its guard on the same name
            values = list(dict.fromkeys([*values, *_guarded_values(last, guard)]))
        named = next((c for c in frame if c.name), last)
        out.append({"frame_id": frame_id, "function": named.name, "file": named.source.filename,
                    "line": named.source.firstlineno, "compile_ids": [c.compile_id for c in entered],
                    "used": used, "limit": limit, "limit_type": limit_type, "limit_source": source,
                    "left": max(left, 0), "hit": bool(refused),
                    "refused": [c.compile_id for c in refused], "guard": guard, "values": values,
                    "value_kind": value_kind(values), "note": note})
    return out


_LOCAL = re.compile(r"\bL\[['\"](?P<name>\w+)['\"]\]")  # a guard's source L['x'] is the reason's x


def _guarded_values(compile, guard: str) -> list[str]:
    """The values ``compile``'s own guards hold for ``guard`` ("scale ==": ``L['scale'] == 0.5`` → 0.5)."""
    subject, _, op = guard.rpartition(" ")
    if not compile.guards.available:
        return []
    found = []
    for row in compile.guards.rows:
        match = _VALUE_GUARD.match(row.condition or "")
        if not match or match["op"] != op:
            continue
        if _LOCAL.sub(r"\g<name>", match["subject"].strip()) == subject:
            found.append(match["value"])
    return found


def repeated_guard(groups: list) -> tuple[str | None, list[str], str | None]:
    """The guard that keeps failing: the one that failed against the newest cached compile in the most recompiles
    (``groups``: each recompile's ``RecompileReason``s, one per cached compile it was checked against, newest first;
    ties: the one that failed most often, then the first), with its compared value stripped (``spatial_scale ==``),
    the values it was specialised to, in the order torch reported them, and torch's note on where the guard came
    from. Mask R-CNN's roi_align: ``spatial_scale ==`` failed against the newest compile in 5 of 7 recompiles; the
    oldest compile's ``boxes`` size fails in every recompile's list, but only once against the newest."""
    keyed, newest = [], {}
    for reasons in groups:
        for number, reason in enumerate(reasons):
            match = _VALUE_GUARD.match(reason.guard or "")
            key = f"{match['subject']} {match['op']}" if match else reason.guard
            keyed.append((key, match["value"] if match else None, reason.note))
            if number == 0:  # against the newest cached compile: what changed since the last variant
                newest[key] = newest.get(key, 0) + 1
    if not keyed:
        return None, [], None
    order = list(dict.fromkeys(k for k, _, _ in keyed))
    total = {k: sum(1 for key, _, _ in keyed if key == k) for k in order}
    top = max(order, key=lambda k: (newest.get(k, 0), total[k], -order.index(k)))
    values = list(dict.fromkeys(v for k, v, _ in keyed if k == top and v is not None))
    note = next((n for k, _, n in keyed if k == top and n), None)
    return top, values, note


def value_kind(values: list[str]) -> str | None:
    """"float" / "int" when every specialised value is a Python number of that kind."""
    try:
        [float(v) for v in values]
    except ValueError:
        return None
    if not values:
        return None
    return "int" if all(v.lstrip("-").isdigit() for v in values) else "float"
