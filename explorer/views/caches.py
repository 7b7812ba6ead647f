"""Caches (in the Timings tab): every cache of the selected compile — hit, miss or bypass with torch's
reason and the key's inputs — and, once ``cap.measure_caches()`` ran, what a hit saves in a fresh process."""
from __future__ import annotations

from ..html import badge, details, heading, join, para, seconds, shorten, table, tag, unavailable

KINDS = {"hit": "ok", "miss": "warn", "bypass": "error", "partial": "warn", "disabled": "muted", "ran": "info",
         "updated": "info"}


def state_badge(state: str):
    return badge(state, KINDS.get(state, "muted"))


def _key_inputs(entry):
    if not entry.key_inputs:
        return None
    rows = [[tag("code", e.name), tag("code", shorten(e.value, 160), title=shorten(e.value, 2000))]
            for e in entry.key_inputs]
    return details(f"{len(entry.key_inputs)} inputs of the key {entry.key or ''}".strip(),
                   table(["input", "value"], rows))


def caches_section(compile):
    stage = compile.caches
    if not stage.available:
        return unavailable("Caches", stage.reason)
    rows, keys = [], []
    for e in stage.entries:
        torch_s = (f"saved {seconds(e.saved_s)}" if e.saved_s is not None else
                   f"a hit would skip {seconds(e.would_save_s)}" if e.would_save_s is not None else
                   seconds(e.seconds) if e.seconds is not None else "")
        rows.append([e.cache + (f" ({e.graph})" if e.graph else ""), state_badge(e.state),
                     tag("span", shorten(e.detail or "", 220), title=e.detail or ""),
                     tag("span", shorten(e.reason or "", 220), title=e.reason or ""), torch_s])
        keys.append(_key_inputs(e))
    return join([heading("Caches of this compile", 4),
                 table(["cache", "state", "what happened", "why (torch's reason)", "time (torch's figure)"], rows,
                       drop_empty=True),
                 *[k for k in keys if k is not None],
                 para("From torch's cache artifacts (fx_graph_cache_*, aotautograd_cache_*), its chromium events "
                      "(compile_file, automatic_dynamic) and PGO artifacts. Measured savings in a fresh process: "
                      "cap.measure_caches().", cls="tc-muted")])


def cache_runs_section(capture):
    runs = capture.cache_runs
    if runs is None:
        return None
    if not runs.available:
        return unavailable("Cache savings (fresh processes)", runs.reason)
    rows = []
    for r in runs.runs:
        states = "; ".join(", ".join(f"{e.cache} {e.state}" for e in c.entries[:3]) for c in r.compiles[:3])
        rows.append([r.name, seconds(r.compile_s) if r.compile_s is not None else "–",
                     seconds(r.saved_s) if r.saved_s is not None and r.name != "cold" else "",
                     seconds(r.process_s) if r.process_s is not None else "",
                     "" if r.outputs_equal is None else ("yes" if r.outputs_equal else "no"),
                     tag("span", shorten(r.error or states, 200), title=r.error or states)])
    where = []
    for r in runs.runs:
        for c in r.compiles[:2]:
            if c.top_lines:
                top = c.top_lines[0]
                where.append(f"{r.name} {c.compile_id}: most sampled time {seconds(top.seconds)} in {top.phase}, "
                             f"{top.code or ''}")
    size = f" The mega-cache (save_cache_artifacts) held {runs.artifacts_bytes:,} bytes." if runs.artifacts_bytes else ""
    return join([heading("What a cache hit saves (fresh processes)", 4),
                 table(["run", "compile", "saved vs cold", "process", "outputs equal eager", "caches"], rows),
                 tag("ul", *(tag("li", shorten(w, 200)) for w in where), cls="tc-muted") if where else None,
                 para((runs.method or "") + "." + size, cls="tc-muted")])
