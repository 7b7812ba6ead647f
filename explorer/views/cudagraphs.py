"""CUDA graphs: were they used, recorded, replayed or skipped (and why) — or why there is nothing."""
from __future__ import annotations

from ..html import code, heading, join, key_values, note, para, plural, seconds, shorten, table, tag, unavailable


def _verdict(stage):
    if stage.get("skipped"):
        return None  # the skip notes say it
    counts = [plural(stage.get("warmups", 0), "warm-up run"), plural(stage.get("recorded", 0), "recording")]
    if stage.get("replays") is not None:
        counts.append(plural(stage["replays"], "replay"))
    if stage.get("calls_under_capture") is not None:
        counts.append(f"over {plural(stage['calls_under_capture'], 'call')}")
    kind = "ok" if stage.get("used") else "muted"
    return note(tag("strong", "CUDA graphs used: " if stage.get("used") else "CUDA graphs: "), ", ".join(counts),
                kind=kind)


def _skip_notes(stage):
    reasons = stage.get("skip_reasons") or []
    user = stage.get("skip_reasons_user") or reasons
    places = stage.get("skip_locations") or [None] * len(reasons)
    return [note(tag("strong", "CUDA graphs skipped: "), said, f" (torch: {reason})" if said != reason else "",
                 para("at ", code(f"{where['file']}:{where['line']}"), f" in {where.get('function')}: ",
                      code(where.get("code"))) if where else None, kind="warn")
            for said, reason, where in zip(user, reasons, places)]


def _re_recordings(stage):
    count = stage.get("re_recordings") or 0
    if not count:
        return None
    return note(f"Re-recorded {plural(count, 'time')}: a new CUDA-graph tree for each of ",
                ", ".join(stage.get("trees") or []), " (new shapes record again; mark them dynamic or pad).",
                kind="warn")


def comparison_section(capture):
    """The same function timed with and without CUDA graphs: the launch overhead they remove."""
    comparison = capture.data.get("cudagraph_comparison")
    if not comparison:
        return None
    with_, without = comparison["with_cudagraphs"], comparison["without_cudagraphs"]
    return join([heading("With and without CUDA graphs (measured)", 4),
                 table(["compiled with", "median / call", "q1–q3"],
                       [[f"mode={comparison['mode']!r} (CUDA graphs)", seconds(with_["median_s"]),
                         f"{seconds(with_['q1_s'])}–{seconds(with_['q3_s'])}"],
                        ["the same options, triton.cudagraphs=False", seconds(without["median_s"]),
                         f"{seconds(without['q1_s'])}–{seconds(without['q3_s'])}"]]),
                 para(f"CUDA graphs: {comparison['speedup']:.2f}× the speed without them.")])


def _overwritten_output(capture):
    stage = (capture.error or {}).get("stage") or ""
    if "cudagraph_mark_step_begin" not in stage:
        return None
    return note(tag("strong", "An output was overwritten by a later replay. "),
                "CUDA graphs reuse one static memory pool: a tensor returned by one replay is overwritten when the "
                "graph runs again. Keep it across calls with ", code(".clone()"), ", or mark where a new iteration "
                "starts with ", code("torch.compiler.cudagraph_mark_step_begin()"), ".", kind="error")


def render_cudagraphs(capture, compile) -> str:
    stage = capture.cudagraphs
    if not stage.available:
        return unavailable("CUDA graphs", stage.reason)
    events = stage.get("events") or []
    memory = stage.get("memory") or {}
    return join([
        _verdict(stage), *_skip_notes(stage), _re_recordings(stage), _overwritten_output(capture),
        para(f"Memory pool: {memory['reserved_growth_bytes'] / 2**20:.1f} MiB more CUDA memory reserved while "
             "warming up and recording.") if "reserved_growth_bytes" in memory else None,
        comparison_section(capture),
        heading("What torch logged", 4) if events else None,
        table(["compile", "event", "function", "message"],
              [[code(e.get("compile_id") or "–"), e.get("kind"), e.get("function") or "", shorten(e.get("message"), 240)]
               for e in events]) if events else None,
        para("Counters: ", ", ".join(f"{k} = {v}" for k, v in sorted((stage.get("counters") or {}).items())),
             cls="tc-muted") if stage.get("counters") else None,
    ])
