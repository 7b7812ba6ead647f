"""A job's divergences between ranks, one event each: the one module the follower (``compiler.readers.follow``,
as lines arrive) and the loader (``compiler.readers.job.load_job``, at the end) both use, so one directory gives
the same divergences live and loaded.

Each rank's watch file (``compiler.watch(job_dir=...)``) holds its compiles and alerts with the step they
happened in. At each step, what a rank did there — recompiled a frame because a guard failed, compiled a new
frame, skipped or failed a frame, broke a graph at a new place — is compared with what the other ranks did
there; the things done by one set of ranks and not by the others make one divergence: its step, the ranks
that did it and those that did not, the guard that differs (one the other ranks had not all failed too, up to
that step — a guard every rank failed is never named), and the fix the rank's own alert carries. Two causes at
two steps are two divergences, in the order they began. Compile time one rank spent at a step while the
others waited is said with the event that caused it, or is a ``compile_time`` divergence of its own.

A step is judged once every rank is past it (its file counts more steps, or it stopped): what is named never
changes as more lines arrive, so following a job step by step and loading it at the end agree. Ranks followed
from TORCH_TRACE logs carry no steps: each of their alerts is compared on its own, and the step is said to be
unknown. ``Divergence`` (what the loader's other comparisons, ``compiler.readers.job``, give too) and the
words for a guard failure (``plain_reason``, ``size_change_fix``) are here. Imports no torch.
"""
from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass


EVENT_KINDS = ("recompiles", "compile_ids", "graph_breaks", "compile_time")  # the kinds named here
SKEW_MIN_S, SKEW_RATIO = 1.0, 1.5  # compile time one rank spent more than another in a step (and × it)
COMPILE_ALERTS = ("recompile", "recompile_limit", "frame_skipped", "compile_failed", "new_compile")
# a compile line's ``what`` (or a graph break) → what the ranks that did it did
DID = {"recompile": "recompiled", "first": "compiled a new frame", "recompile limit": "reached the recompile limit",
       "skipped": "skipped a frame to eager", "failed": "failed a compile", "graph_break": "broke the graph at a new place"}
ALERT_WHAT = {"recompile": "recompile", "new_compile": "first", "recompile_limit": "recompile limit",
              "frame_skipped": "skipped", "compile_failed": "failed", "graph_break": "graph_break"}
_OBJECT_ID = re.compile(r"\b\d{9,}\b")  # id() of a Python object: differs per process
_NOTE = re.compile(r"\s{2,}#")  # torch's note after a guard ("  # if DEBUG:  # file.py:48 in forward")
UNKNOWN_STEP = "at a step unknown here (a TORCH_TRACE log carries no steps)"


@dataclass(frozen=True)
class Item:
    """One thing one rank did at one step: ``key`` is what is compared between ranks."""

    step: int | None
    key: tuple
    what: str  # a ``DID`` key
    frame: str | None
    alert: object | None  # the rank's alert about it (``compiler.readers.watch_log.Alert``)
    seconds: float = 0.0


def _int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _norm(text) -> str:
    return _OBJECT_ID.sub("<id>", str(text or "")).strip()


def guard_of(text) -> str:
    """A guard failure's guard, without the values it saw: ``tensor 'x' size mismatch at index 0``."""
    return _norm(_NOTE.split(str(text or "").partition(". ")[0], maxsplit=1)[0])


def _guards(alert) -> list[str]:
    """Every guard a recompile alert's frames failed (its ``guards``: torch's reasons against each earlier
    compile), the first one where only that is known."""
    return list(getattr(alert, "guards", None) or ([alert.guard] if alert.guard else []))


def _stepped_items(watch) -> dict[int, list[Item]]:
    """A watch file's compiles (with the alert that named each) and graph breaks, by step."""
    alert_of = {}
    for alert in watch.alerts:
        if alert.kind in COMPILE_ALERTS:
            for cid in alert.compile_ids or [alert.compile_id]:
                alert_of.setdefault(cid, alert)
    by_step: dict[int, list[Item]] = defaultdict(list)
    count: dict = defaultdict(int)

    def add(step, key, what, frame, alert, seconds=0.0):
        index = count[(step, key)]
        count[(step, key)] += 1
        by_step[step].append(Item(step, key + (index,), what, frame, alert, seconds))

    for c in watch.compiles:
        if not isinstance(c, dict) or not _int(c.get("step")) or c.get("what") not in DID:
            continue
        alert = alert_of.get(c.get("compile_id"))
        guard = guard_of(alert.guard) if alert is not None and c["what"] == "recompile" and alert.guard else None
        frame = c.get("frame") if isinstance(c.get("frame"), str) else None
        add(c["step"], (c["what"], frame, guard), c["what"], frame, alert,
            c["seconds"] if _number(c.get("seconds")) else 0.0)
    for alert in watch.alerts:
        if alert.kind == "graph_break" and _int(alert.step):
            add(alert.step, ("graph_break", None, _norm(alert.sentence)), "graph_break", None, alert)
    return by_step


def _alert_items(watch) -> list[Item]:
    """A rank's alerts about compiles and graph breaks, each on its own (ranks without steps)."""
    items, count = [], defaultdict(int)
    for alert in watch.alerts:
        what = ALERT_WHAT.get(alert.kind)
        if what is None:
            continue
        key = ((what, None, _norm(alert.sentence)) if what == "graph_break" else
               (what, alert.frame, guard_of(alert.guard) if what == "recompile" and alert.guard else None))
        index = count[key]
        count[key] += 1
        items.append(Item(alert.step if _int(alert.step) else None, key + (index,), what, alert.frame, alert,
                          alert.seconds if what != "graph_break" and _number(alert.seconds) else 0.0))
    return items


def _horizon(watch) -> float:
    """The steps this rank is past: every step below this (all, once it stopped)."""
    return math.inf if watch.stop is not None else watch.steps


class Divergences:
    """The divergences of a job, found as its ranks' files grow: ``update(watches)`` judges what every rank is
    past and returns the divergences new since the last call; ``found`` holds every one, in the order they
    began. ``job_divergences`` is the same for a finished (loaded) job."""

    def __init__(self):
        self.found: list[Divergence] = []
        self._judged = -1  # steps up to this one were judged
        self._named: set = set()  # items of ranks without steps, judged

    def update(self, watches: dict, stepless=(), past=None, complete: bool = False) -> list[Divergence]:
        """``watches``: rank → its ``RankWatch`` so far. ``stepless``: ranks whose alerts carry no steps (read from
        TORCH_TRACE logs); with any, each alert is judged on its own once ``past(rank, alert)`` says every other
        rank is past it. ``complete``: every rank there will be is here (a loaded job); else, ranks named in a
        start line's world size and not yet seen are waited for."""
        world = max([w.start.get("world_size") for w in watches.values() if _int(w.start.get("world_size"))],
                    default=0)
        if len(watches) < 2 or (not complete and len(watches) < world):
            return []
        new = self._by_alert(watches, past) if stepless else self._by_step(watches)
        self.found += new
        return new

    # --- ranks with steps (watch files) -------------------------------------------------------------

    def _by_step(self, watches: dict) -> list[Divergence]:
        limit = min(_horizon(w) for w in watches.values())
        if limit <= self._judged + 1:
            return []  # no rank moved past a step not judged yet
        items = {rank: _stepped_items(w) for rank, w in sorted(watches.items())}
        steps = sorted({s for per in items.values() for s in per if self._judged < s < limit})
        found = []
        for step in steps:
            found += self._step(step, items, watches)
        if steps:
            self._judged = steps[-1]
        if limit != math.inf:
            self._judged = max(self._judged, int(limit) - 1)
        return found

    def _step(self, step: int, items: dict, watches: dict) -> list[Divergence]:
        ranks = sorted(items)
        owners: dict[tuple, set] = defaultdict(set)
        for rank in ranks:
            for item in items[rank].get(step, []):
                owners[item.key].add(rank)
        events: dict[frozenset, list[tuple]] = defaultdict(list)
        for key, did in owners.items():
            if len(did) < len(ranks):
                events[frozenset(did)].append(key)
        found = []
        for did in sorted(events, key=sorted):
            keys = set(events[did])
            lead = sorted(did)[0]
            mine = [i for i in items[lead].get(step, []) if i.key in keys]
            found.append(_event(step, sorted(did), [r for r in ranks if r not in did], mine, watches))
        seconds = {r: sum(i.seconds for i in items[r].get(step, []) if i.what != "graph_break") for r in ranks}
        skew = _skew(seconds)
        if skew is not None:
            slow, fast = skew
            cause = next((d for d in found if set(slow) <= set(d.groups[0]) and d.kind != "graph_breaks"), None)
            if cause is not None:
                _fold_skew(cause, step, slow, fast, seconds)
            else:
                alerts = [i.alert for r in slow for i in items[r].get(step, []) if i.alert is not None]
                found.append(_compile_time(step, slow, fast, seconds, _fix(alerts, None)))
        return found

    # --- ranks without steps (TORCH_TRACE logs) -----------------------------------------------------

    def _by_alert(self, watches: dict, past) -> list[Divergence]:
        items = {rank: _alert_items(w) for rank, w in sorted(watches.items())}
        keys = {rank: {i.key for i in its} for rank, its in items.items()}
        found = []
        for rank, its in items.items():
            for item in its:
                if item.key in self._named:
                    continue
                others = [r for r in items if r != rank]
                if past is not None and not all(past(r, item.alert) for r in others):
                    continue  # some rank has not got there yet
                self._named.add(item.key)
                did = sorted([rank] + [r for r in others if item.key in keys[r]])
                if len(did) == len(items):
                    continue
                found.append(_event(item.step, did, [r for r in items if r not in did], [item], watches))
        return found


def job_divergences(watches: dict) -> list[Divergence]:
    """A loaded job's divergences from its ranks' watch files (rank → ``RankWatch``), in the order they began."""
    return Divergences().update(watches, complete=True)


# --- one divergence --------------------------------------------------------------------------------

def _event(step, did: list[int], did_not: list[int], items: list[Item], watches: dict) -> Divergence:
    """The divergence of ``items`` (what the first of ``did`` did at ``step``; the others in ``did`` did the same)."""
    whats = [i.what for i in items]
    kind = ("recompiles" if "recompile" in whats else "graph_breaks" if set(whats) == {"graph_break"}
            else "compile_ids")
    where = f"at step {step}" if step is not None else UNKNOWN_STEP
    guard, reason = _differing_guard(step, did_not, items, watches) if kind == "recompiles" else (None, None)
    alerts = [i.alert for i in items if i.alert is not None]
    fix = _fix(alerts, reason)
    said = list(dict.fromkeys(a.sentence for a in alerts))
    said += [f"compiled {i.frame or '?'} ({i.what})" for i in items if i.alert is None and i.what != "graph_break"]
    behaviour = "; ".join(said)[:800] or DID[items[0].what]
    first = next(w for w in whats if w != "graph_break") if kind != "graph_breaks" else "graph_break"
    text = f"{where[0].upper()}{where[1:]} {ranks_text(did)} {DID[first]} and {ranks_text(did_not)} did not"
    if kind == "recompiles" and guard:
        shown = plain_reason(reason)
        text += f": the guard `{guard}` failed on {ranks_text(did)} only" + (f" ({shown})" if shown != reason else "")
    elif kind == "recompiles":
        text += ": every guard it failed, the other ranks had failed too (they differ in when, not which)"
    text += "."
    if "graph_break" in whats and kind != "graph_breaks":
        text += " It also broke the graph at a new place."
    if kind == "graph_breaks":
        text += (" They traced different code (a rank-dependent branch, a flag), so they run different graphs"
                 " and may issue different collectives.")
    else:
        text += (" While it compiles, the other ranks wait at the next collective (a long compile can trip the "
                 "collective timeout).")
    if fix and fix.get("kind") == "mark_dynamic":
        text += (" Those ranks saw an input of another shape: mark that dimension dynamic or give every rank the "
                 "same shapes.")
    return Divergence(kind, [did, did_not], [behaviour, f"did not, {where}"], text,
                      severity="warning" if kind == "graph_breaks" else "error", step=step, fix=fix, guard=guard)


def _differing_guard(step, did_not: list[int], items: list[Item], watches: dict) -> tuple[str | None, str | None]:
    """The first guard the ranks that recompiled failed that not every other rank had failed too (up to
    ``step``; all of a rank's alerts where steps are unknown): (the guard, torch's whole reason)."""
    failed = []
    for rank in did_not:
        failed.append({guard_of(g) for a in watches[rank].alerts if a.kind == "recompile"
                       and (step is None or not _int(a.step) or a.step <= step) for g in _guards(a)})
    common = set.intersection(*failed) if failed else set()
    for item in items:
        if item.what != "recompile" or item.alert is None:
            continue
        for text in _guards(item.alert):
            if guard_of(text) not in common:
                return guard_of(text), text
    return None, None


def _fix(alerts: list, reason: str | None) -> dict | None:
    """The fix the rank's own alerts carry for this event: its recompile's where the guard named is the one that
    fix was made for (the alert's first), else the size change the guard names, else a graph break's, else any."""
    fix = None
    recompile = next((a for a in alerts if a.kind == "recompile"), None)
    if recompile is not None and reason is not None and guard_of(reason) == guard_of(recompile.guard):
        fix = recompile.fix
    fix = fix or (size_change_fix(reason) if reason else None)
    fix = fix or next((a.fix for a in alerts if a.kind == "graph_break" and a.fix), None)
    fix = fix or next((a.fix for a in alerts if a.kind != "recompile" and a.fix), None)
    if not isinstance(fix, dict):
        return None
    fix = dict(fix)
    if fix.get("kind") == "mark_dynamic" and "pad" not in str(fix.get("title")):
        fix["title"] = f"{fix.get('title')} — or pad that input to one size on every rank"
    return fix


def _skew(seconds: dict[int, float]) -> tuple[list[int], list[int]] | None:
    """The ranks that spent ``SKEW_MIN_S`` and ``SKEW_RATIO`` × more compiling in a step than the fastest."""
    fast = min(seconds.values())
    slow = sorted(r for r, s in seconds.items() if s - fast >= SKEW_MIN_S and s >= SKEW_RATIO * fast)
    return (slow, sorted(r for r in seconds if r not in slow)) if slow else None


def _fold_skew(divergence: Divergence, step: int, slow, fast, seconds) -> None:
    waited = ", ".join(f"rank {r} {seconds[r]:.3g} s" for r in fast)
    divergence.explanation += (f" At step {step} {ranks_text(slow)} spent "
                               f"{' / '.join(f'{seconds[r]:.3g} s' for r in slow)} compiling ({waited}).")
    divergence.behaviours[0] += f" ({' / '.join(f'{seconds[r]:.3g} s' for r in slow)} compiling)"


def _compile_time(step: int, slow, fast, seconds, fix) -> Divergence:
    top, low = max(slow, key=seconds.get), min(fast, key=seconds.get)
    return Divergence(
        "compile_time", [slow, fast], [" / ".join(f"{seconds[r]:.3g} s compiling" for r in slow),
                                       " / ".join(f"{seconds[r]:.3g} s compiling" for r in fast)],
        f"At step {step} rank {top} spent {seconds[top]:.3g} s compiling, rank {low} {seconds[low]:.3g} s: "
        f"{ranks_text(fast)} waited for it at the next collective.", severity="info", step=step, fix=fix)


# --- the divergence, and the words for a guard (the loader's other comparisons use them too) ---------

@dataclass
class Divergence:
    """One way the ranks differ: ``kind``, the ranks grouped by behaviour (each group did the same),
    what each group did, and an explanation in plain words."""

    kind: str  # unread_ranks, compile_ids, graph_breaks, recompiles, cache, compile_time, collective_schedule,
    #            runtime_estimates, tensor_meta, execution_order, torch_version
    groups: list[list[int]]
    behaviours: list[str]  # what each group did, in the order of ``groups``
    explanation: str
    severity: str = "warning"  # "error": can stall ranks (skew, a collective timeout) or hang them; "warning"; "info"
    step: int | None = None  # the step it began in (from the ranks' watch files: ``compiler.watch(job_dir=...)``)
    fix: dict | None = None  # the change that would prevent it: {"kind", "title", "snippet"}
    guard: str | None = None  # the guard that failed on these ranks and not on every other (recompiles)

    @property
    def when(self) -> str:
        """The step it began in, first in every view: "step 5", or "step unknown" (no watch files: TORCH_TRACE
        logs carry no steps); "" for a divergence of no step (a rank that could not be read)."""
        if self.step is not None:
            return f"step {self.step}"
        return "" if self.kind == "unread_ranks" else "step unknown"

    def as_text(self) -> str:
        lines = [(f"[{self.when}] " if self.when else "") + f"{self.kind}: {self.explanation}"]
        if self.guard:
            lines.append(f"  guard that differs: {self.guard}")
        lines += [f"  {ranks_text(g)}: {b}" for g, b in zip(self.groups, self.behaviours)]
        if self.fix:
            lines.append(f"  fix: {self.fix.get('title')}")
            lines += ["    " + line for line in str(self.fix.get("snippet") or "").splitlines()]
        return "\n".join(lines)

    def to_json(self) -> dict:
        out = {"kind": self.kind, "groups": self.groups, "behaviours": self.behaviours,
               "explanation": self.explanation, "severity": self.severity}
        if self.step is not None:
            out["step"] = self.step
        if self.guard:
            out["guard"] = self.guard
        if self.fix:
            out["fix"] = self.fix
        return out


def ranks_text(ranks) -> str:
    ranks = list(ranks)
    return f"rank{'s' if len(ranks) != 1 else ''} {', '.join(map(str, ranks))}"


_SIZE_CHANGE = re.compile(r"(?:tensor )?(?:'(?P<quoted>.+?)'|(?P<bare>[^' ]+)) (?P<what>size|stride) mismatch at index "
                          r"(?P<i>\d+)\. expected (?P<old>\S+), actual (?P<new>\S+)")
_KEYWORD = re.compile(r"kwargs\[['\"](?P<name>[A-Za-z_]\w*)['\"]\]")


def plain_reason(text: str) -> str:
    """torch's guard-failure text in a user's words: ``tensor 'x' size mismatch at index 0. expected
    32, actual 48`` → ``\\`x.size()[0]\\` changed 32 → 48``."""
    match = _SIZE_CHANGE.search(text)
    if match:
        return f"`{_size_name(match)}.{match['what']}()[{match['i']}]` changed {match['old']} → {match['new']}"
    return text


def _size_name(match) -> str:
    """The tensor a size guard names: ``x``, ``args[0]``, ``kwargs['input_ids']`` → ``input_ids``."""
    name = match["quoted"] or match["bare"]
    keyword = _KEYWORD.fullmatch(name)
    return keyword["name"] if keyword else name


def size_change_fix(text: str) -> dict | None:
    """The fix for a rank that recompiled because a tensor's size changed (torch's guard text): mark that
    dimension dynamic, or pad every rank's inputs to one size; None for another guard."""
    match = _SIZE_CHANGE.search(text or "")
    if not match or match["what"] != "size":
        return None
    name, dim = _size_name(match), int(match["i"])
    positional = re.fullmatch(r"args\[(\d+)\]", name)
    shown = f"positional argument {positional[1]}" if positional else name
    variable = "arg" if positional else (name if re.fullmatch(r"[A-Za-z_]\w*", name) else "x")
    return {"kind": "mark_dynamic",
            "title": f"Mark dimension {dim} of {shown} dynamic before calling (one compile serves every size), or "
                     f"pad it to one size ({match['old']} → {match['new']} here) on every rank",
            "snippet": f"torch._dynamo.mark_dynamic({variable}, {dim})   # before each call, on every rank\n"
                       f"# or: {variable} = torch.nn.functional.pad({variable}, …)   # one size on every rank"}
