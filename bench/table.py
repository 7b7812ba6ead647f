"""A result row (figure, tcompile, anchor, ratio, target, met?) and the printed table."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class Row:
    figure: str
    tcompile: str  # tcompile's number, formatted with its unit
    anchor: str  # what it is measured against, formatted
    ratio: float | None  # tcompile / anchor
    target: str  # e.g. "≤ 1.05"
    low: float | None = None  # the ratio must lie in [low, high] to meet the target
    high: float | None = None
    note: str = ""
    detail: dict = field(default_factory=dict)

    @property
    def met(self) -> bool | None:
        if self.ratio is None or (self.low is None and self.high is None):
            return None
        return (self.low is None or self.ratio >= self.low) and (self.high is None or self.ratio <= self.high)

    def to_json(self) -> dict:
        return {**asdict(self), "met": self.met}


def unavailable(figure: str, reason: str, target: str = "") -> Row:
    return Row(figure, "not available yet", "", None, target, note=reason)


def seconds(value: float | None) -> str:
    if value is None:
        return "—"
    if value >= 1:
        return f"{value:.2f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.1f} ms"
    return f"{value * 1e6:.1f} µs"


def megabytes(n_bytes: int) -> str:
    return f"{n_bytes / 1e6:.2f} MB"


def _met(row: Row) -> str:
    return {True: "yes", False: "NO", None: "—"}[row.met]


def format_table(rows: list[Row]) -> str:
    headers = ["figure", "tcompile", "anchor", "ratio", "target", "met?"]
    cells = [[r.figure, r.tcompile, r.anchor, "—" if r.ratio is None else f"{r.ratio:.3f}", r.target, _met(r)]
             for r in rows]
    widths = [max(len(str(x)) for x in column) for column in zip(headers, *cells)]
    line = lambda values: "  ".join(str(v).ljust(w) for v, w in zip(values, widths)).rstrip()  # noqa: E731
    out = [line(headers), line("-" * w for w in widths)] + [line(c) for c in cells]
    notes = [f"  [{i}] {r.figure}: {r.note}" for i, r in enumerate(rows, 1) if r.note]
    return "\n".join(out + (["", "notes:"] + notes if notes else []))


def markdown_table(rows: list[Row]) -> str:
    out = ["| figure | tcompile | anchor | ratio | target | met? |", "|---|---|---|---|---|---|"]
    for r in rows:
        ratio = "—" if r.ratio is None else f"{r.ratio:.3f}"
        out.append(f"| {r.figure} | {r.tcompile} | {r.anchor} | {ratio} | {r.target} | {_met(r)} |")
    return "\n".join(out)


def rows_from_json(path) -> list[Row]:
    import json
    from pathlib import Path

    fields = ("figure", "tcompile", "anchor", "ratio", "target", "low", "high", "note")
    return [Row(**{k: r.get(k) for k in fields}) for r in json.loads(Path(path).read_text())["rows"]]


if __name__ == "__main__":  # python -m bench.table bench/results.json → the Markdown table for RESULTS.md
    import sys

    print(markdown_table(rows_from_json(sys.argv[1] if len(sys.argv) > 1 else "bench/results.json")))
