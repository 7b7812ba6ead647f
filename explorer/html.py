"""Small, escaping HTML builders, and the stylesheet, that the views and pages are made of (a
whole page of a capture is ``explorer.page``).

Text is escaped by default: ``tag("td", torch_string)`` escapes the string; only ``Html`` (markup
built here or by pygments/graphviz) passes through unchanged.
"""
from __future__ import annotations

import functools
import html
from importlib.resources import files

CSS_PATH = files("explorer") / "static" / "tcompile.css"  # package data (importlib.resources)


class Html(str):
    """Markup that is already safe: ``esc`` and ``tag`` never escape it again; ``+`` escapes plain text."""

    def __add__(self, other):
        return Html(str.__add__(self, esc(other)))

    def __radd__(self, other):
        return Html(str.__add__(esc(other), self))


def esc(value) -> Html:
    """Escaped text, or ``value`` unchanged when it is already ``Html``."""
    if isinstance(value, Html):
        return value
    return Html(html.escape("" if value is None else str(value), quote=True))


def join(parts, sep: str = "") -> Html:
    """Escaped parts (``None`` and empty ones skipped) joined into one piece of markup."""
    return Html(esc(sep).join(esc(p) for p in parts if p is not None and p != ""))


def _attributes(attrs: dict) -> str:
    out = []
    for name, value in attrs.items():
        if value is None or value is False:
            continue
        name = "class" if name == "cls" else name.rstrip("_").replace("_", "-")
        out.append(f" {name}" if value is True else f' {name}="{esc(value)}"')
    return "".join(out)


def tag(name: str, *children, **attrs) -> Html:
    """``<name attrs>children</name>``; ``cls=`` sets class, ``data_x=`` sets ``data-x``."""
    return Html(f"<{name}{_attributes(attrs)}>{join(children)}</{name}>")


# --- building blocks shared by the views -------------------------------------------------------

def details(summary, *body, open: bool = False, cls: str | None = None) -> Html:
    return tag("details", tag("summary", summary), *body, open=open, cls=cls)


def heading(text, level: int = 3) -> Html:
    return tag(f"h{level}", text, cls="tc-heading")


def para(*parts, cls: str | None = None) -> Html:
    return tag("p", *parts, cls=cls)


def code(text) -> Html:
    return tag("code", text)


def badge(text, kind: str = "info", title: str | None = None) -> Html:
    """A small label; kind is one of info, ok, warn, error."""
    return tag("span", text, cls=f"tc-badge tc-{kind}", title=title)


def note(*parts, kind: str = "info") -> Html:
    """A boxed message; kind is one of info, ok, warn, error."""
    return tag("div", *parts, cls=f"tc-note tc-{kind}")


def unavailable(what: str, reason: str | None) -> Html:
    """What an unavailable stage shows instead of an empty pane."""
    return note(tag("strong", f"{what}: unavailable. "), reason or "no reason was recorded", kind="muted")


def table(headers, rows, row_classes=None, cls: str | None = None, drop_empty: bool = False) -> Html:
    """A table of escaped cells (cells may be ``Html``); ``row_classes`` marks rows (e.g. tc-hit);
    ``drop_empty`` leaves out columns with no value in any row."""
    row_classes = row_classes or [None] * len(rows)
    if drop_empty and rows:
        keep = [i for i in range(len(headers)) if any(row[i] not in ("", None) for row in rows)]
        headers, rows = [headers[i] for i in keep], [[row[i] for i in keep] for row in rows]
    head = tag("thead", tag("tr", *(tag("th", h) for h in headers)))
    body = tag("tbody", *(tag("tr", *(tag("td", c) for c in row), cls=rc) for row, rc in zip(rows, row_classes)))
    return tag("div", tag("table", head, body, cls="tc-table"), cls=f"tc-table-wrap {cls or ''}".strip())


def key_values(pairs) -> Html:
    """A two-column table of (name, value) pairs; pairs with value ``None`` are left out."""
    rows = [tag("tr", tag("th", k), tag("td", v)) for k, v in pairs if v is not None]
    return tag("table", *rows, cls="tc-table tc-kv")


def columns(*panes) -> Html:
    """Panes side by side (they stack when the page is narrow)."""
    return tag("div", *(tag("div", p, cls="tc-pane") for p in panes), cls="tc-columns")


def cards(items) -> Html:
    """Big-number cards: items of (label, value, kind)."""
    return tag("div", *(tag("div", tag("div", value, cls="tc-card-value"), tag("div", label, cls="tc-card-label"),
                            cls=f"tc-card tc-{kind}") for label, value, kind in items), cls="tc-cards")


def preformatted(text, cls: str = "tc-pre") -> Html:
    return tag("pre", text, cls=cls)


@functools.lru_cache(maxsize=8)
def _lexer(language: str):
    from pygments.lexers import CppLexer, PythonLexer, TextLexer

    return {"cpp": CppLexer, "c++": CppLexer, "python": PythonLexer, "triton": PythonLexer}.get(
        language.lower(), TextLexer)()


def highlighted_lines(text: str, language: str = "python") -> list[Html]:
    """One line of pygments markup per source line (pygments closes its spans at line ends)."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter

    markup = highlight(text, _lexer(language), HtmlFormatter(nowrap=True))
    return [Html(line) for line in markup.rstrip("\n").split("\n")]


HIGHLIGHT_LINES = 2000  # beyond this, plain escaped text: pygments is most of the render time


@functools.lru_cache(maxsize=64)
def _highlighted(text: str, language: str) -> Html:
    lines = text.split("\n")
    head = "\n".join(highlighted_lines("\n".join(lines[:HIGHLIGHT_LINES]), language))
    tail = "\n" + str(esc("\n".join(lines[HIGHLIGHT_LINES:]))) if len(lines) > HIGHLIGHT_LINES else ""
    return Html(head + tail)


def code_block(text: str | None, language: str = "python") -> Html:
    """Source code highlighted with pygments CSS classes (coloured by explorer/static/tcompile.css); the
    first ``HIGHLIGHT_LINES`` lines only, so huge modules stay fast to show."""
    if not text:
        return note("(empty)", kind="muted")
    return tag("div", tag("pre", _highlighted(text, language)), cls="tc-code")


# --- numbers ------------------------------------------------------------------------------------

def seconds(value: float | None) -> str:
    """``0.000347`` → ``347 µs``; ``1.49`` → ``1.49 s``."""
    if value is None:
        return "–"
    for scale, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value * 1e9:.3g} ns"


def plural(count: int, word: str, words: str | None = None) -> str:
    return f"{count} {word if count == 1 else (words or word + 's')}"


def shorten(text, limit: int = 120) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- the stylesheet and the frame of a view -------------------------------------------------------

@functools.lru_cache(maxsize=1)
def stylesheet() -> str:
    return CSS_PATH.read_text(encoding="utf-8") if CSS_PATH.is_file() else ""


def style_tag() -> Html:
    return Html(f"<style>{stylesheet()}</style>")


def view_frame(body) -> Html:
    """One view as the widget shows it: the ``.tcompile`` scope the stylesheet styles."""
    return tag("div", body, cls="tcompile tc-view")
