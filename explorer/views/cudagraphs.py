"""CUDA graphs: were they used, recorded, replayed or skipped (and why) — or why there is nothing."""
from __future__ import annotations

from ..html import code, heading, join, note, para, plural, seconds, shorten, table, tag, unavailable
from .fixes import fix_for_cudagraph_skip, fix_label


def _verdict(stage):
    if stage.skipped:
        return None  # the skip notes say it
    counts = [plural(stage.warmups, "warm-up run"), plural(stage.recorded, "recording"),
              plural(stage.replays, "replay")]
    if stage.calls_under_capture is not None:
        counts.append(f"over {plural(stage.calls_under_capture, 'call')}")
    return note(tag("strong", "CUDA graphs used: " if stage.used else "CUDA graphs: "), ", ".join(counts),
                kind="ok" if stage.used else "muted")


def _skip_notes(capture, stage):
    reasons = stage.skip_reasons
    user = stage.skip_reasons_user or reasons
    places = stage.skip_locations or [None] * len(reasons)
    notes = []
    for said, reason, where in zip(user, reasons, places):
        fix = fix_for_cudagraph_skip(capture, reason)
        notes.append(note(tag("strong", "CUDA graphs skipped: "), said, f" (torch: {reason})" if said != reason else "",
                          para("at ", code(f"{where.file}:{where.line}"), f" in {where.function}: ", code(where.code))
                          if where else None, para(fix_label(fix), cls="tc-fix-link") if fix is not None else None,
                          kind="warn"))
    return notes


def _re_recordings(stage):
    if not stage.re_recordings:
        return None
    return note(f"Re-recorded {plural(stage.re_recordings, 'time')}: a new CUDA-graph tree for each of ",
                ", ".join(stage.trees), " (new shapes record again; mark them dynamic or pad).", kind="warn")


def _timing_row(label: str, timing):
    if timing is None:
        return [label, "–", "–"]
    return [label, seconds(timing.median_s), f"{seconds(timing.q1_s)}–{seconds(timing.q3_s)}"]


def comparison_section(capture):
    """The same function timed with and without CUDA graphs: the launch overhead they remove."""
    comparison = capture.cudagraph_comparison
    if comparison is None or not comparison.available:
        return None
    return join([heading("With and without CUDA graphs (measured)", 4),
                 table(["compiled with", "median / call", "q1–q3"],
                       [_timing_row(f"mode={comparison.mode!r} (CUDA graphs)", comparison.with_cudagraphs),
                        _timing_row("the same options, triton.cudagraphs=False", comparison.without_cudagraphs)]),
                 para(f"CUDA graphs: {comparison.speedup:.2f}× the speed without them.")
                 if comparison.speedup is not None else None])


def _overwritten_output(capture):
    stage = capture.error.stage if capture.error else ""
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
    events, memory = stage.events, stage.memory
    return join([
        _verdict(stage), *_skip_notes(capture, stage), _re_recordings(stage), _overwritten_output(capture),
        para(f"Memory pool: {memory.reserved_growth_bytes / 2**20:.1f} MiB more CUDA memory reserved while "
             "warming up and recording.") if memory is not None else None,
        comparison_section(capture),
        heading("What torch logged", 4) if events else None,
        table(["compile", "event", "function", "message"],
              [[code(e.compile_id or "–"), e.kind, e.function or "", shorten(e.message, 240)] for e in events])
        if events else None,
        para("Counters: ", ", ".join(f"{k} = {v}" for k, v in sorted(stage.counters.items())), cls="tc-muted")
        if stage.counters else None,
    ])
