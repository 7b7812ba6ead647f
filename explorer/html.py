"""Small, escaping HTML builders, and the stylesheet, that the views and pages are made of (a
whole page of a capture is ``explorer.page``).

Text is escaped by default: ``tag("td", torch_string)`` escapes the string; only ``Html`` (markup
built here or by pygments/graphviz) passes through unchanged.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import html
from importlib.resources import files

from compiler.stages.findings import plural, seconds  # noqa: F401 — one spelling for the views and the text form
from compiler.stages.files import shown_text

CSS_PATH = files("explorer") / "static" / "tcompile.css"  # package data (importlib.resources)


class Html(str):
    """Markup that is already safe: ``esc`` and ``tag`` never escape it again; ``+`` escapes plain text."""

    def __add__(self, other):
        return Html(str.__add__(self, esc(other)))

    def __radd__(self, other):
        return Html(str.__add__(esc(other), self))


def esc(value) -> Html:
    """Escaped text, or ``value`` unchanged when it is already ``Html``. Text longer than
    ``TEXT_CHARS`` is cut there, with a mark saying how much is left out (see ``cut_text``)."""
    if isinstance(value, Html):
        return value
    text = "" if value is None else shown_text(str(value))  # a lone surrogate from a trace is no UTF-8
    if len(text) > TEXT_CHARS:
        shown, mark = cut_text(text, TEXT_CHARS, inline=True)
        return Html(html.escape(shown, quote=True) + str(mark))  # str: Html's + would escape
    return Html(html.escape(text, quote=True))


def join(parts, sep: str = "") -> Html:
    """Escaped parts (``None`` and empty ones skipped) joined into one piece of markup."""
    return Html(esc(sep).join(esc(p) for p in parts if p is not None and p != ""))


def _attributes(attrs: dict) -> str:
    out = []
    for name, value in attrs.items():
        if value is None or value is False:
            continue
        name = "class" if name == "cls" else name.rstrip("_").replace("_", "-")
        if value is True:
            out.append(f" {name}")
            continue
        # a data: link cut short is a broken download; the view that makes one bounds its size itself
        whole = name == "href" and isinstance(value, str) and value.startswith("data:")
        out.append(f' {name}="{html.escape(value if whole else shorten(value, TEXT_CHARS))}"')
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


def note(*parts, kind: str = "info", title: str | None = None) -> Html:
    """A boxed message; kind is one of info, ok, warn, error."""
    return tag("div", *parts, cls=f"tc-note tc-{kind}", title=title)


def unavailable(what: str, reason: str | None) -> Html:
    """What an unavailable stage shows instead of an empty pane."""
    return note(tag("strong", f"{what}: unavailable. "), reason or "no reason was recorded", kind="muted")


TABLE_ROWS = 10_000  # rows of one table a view shows; the capture keeps every row


def table(headers, rows, row_classes=None, cls: str | None = None, drop_empty: bool = False) -> Html:
    """A table of escaped cells (cells may be ``Html``); ``row_classes`` marks rows (e.g. tc-hit);
    ``drop_empty`` leaves out columns with no value in any row. The first ``TABLE_ROWS`` rows, with a
    mark saying how many more the capture holds."""
    row_classes = row_classes or [None] * len(rows)
    if drop_empty and rows:
        keep = [i for i in range(len(headers)) if any(row[i] not in ("", None) for row in rows)]
        headers, rows = [headers[i] for i in keep], [[row[i] for i in keep] for row in rows]
    left = len(rows) - TABLE_ROWS
    if left > 0:
        rows, row_classes = rows[:TABLE_ROWS], row_classes[:TABLE_ROWS]
    head = tag("thead", tag("tr", *(tag("th", h) for h in headers)))
    body = tag("tbody", *(tag("tr", *(tag("td", c) for c in row), cls=rc) for row, rc in zip(rows, row_classes)))
    return join([tag("div", tag("table", head, body, cls="tc-table"), cls=f"tc-table-wrap {cls or ''}".strip()),
                 note(tag("strong", f"✂ {left:,} more rows not shown here"),
                      " — the capture holds every row (its saved JSON too).", kind="warn") if left > 0 else None])


def key_values(pairs) -> Html:
    """A two-column table of (name, value) pairs; pairs with value ``None`` are left out."""
    rows = [tag("tr", tag("th", k), tag("td", v)) for k, v in pairs if v is not None]
    return tag("table", *rows, cls="tc-table tc-kv")


def columns(*panes) -> Html:
    """Panes side by side (they stack when the page is narrow)."""
    return tag("div", *(tag("div", p, cls="tc-pane") for p in panes), cls="tc-columns")


def cards(items, titles: dict | None = None) -> Html:
    """Big-number cards: items of (label, value, kind); ``titles``: a tooltip per label (what it counts)."""
    titles = titles or {}
    return tag("div", *(tag("div", tag("div", value, cls="tc-card-value"), tag("div", label, cls="tc-card-label"),
                            cls=f"tc-card tc-{kind}", title=titles.get(label)) for label, value, kind in items),
               cls="tc-cards")


def preformatted(text, cls: str = "tc-pre") -> Html:
    """Text as it is (escaped), in a ``<pre>``; the first ``BLOCK_CHARS`` of it (see ``cut_text``)."""
    shown, mark = cut_text("" if text is None else str(text))
    return join([tag("pre", Html(html.escape(shown, quote=True)), cls=cls), mark])


@functools.lru_cache(maxsize=8)
def _lexer(language: str):
    from pygments.lexers import CppLexer, PythonLexer, TextLexer

    return {"cpp": CppLexer, "c++": CppLexer, "python": PythonLexer, "triton": PythonLexer}.get(
        language.lower(), TextLexer)()


HIGHLIGHT_LINES = 2000  # beyond this, plain escaped text: pygments is most of the render time


def highlighted_lines(text: str, language: str = "python") -> list[Html]:
    """One line of markup per source line of the first ``BLOCK_CHARS`` of ``text`` (the caller shows
    ``cut_text``'s mark for the rest): pygments markup for the first ``HIGHLIGHT_LINES`` lines (pygments
    closes its spans at line ends), escaped plain text after them."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter

    from .highlight import cpp_lines, python_lines

    lines = text[:_cut_end(text, BLOCK_CHARS)].split("\n")
    fast = {"python": python_lines, "triton": python_lines, "cpp": cpp_lines, "c++": cpp_lines,
            "text": _plain_lines}.get(language.lower())  # text (Triton's IR levels): escaped, no lexer
    if fast:  # pygments is 8x slower (explorer.highlight)
        markup = "\n".join(fast("\n".join(lines[:HIGHLIGHT_LINES])))
    else:
        markup = highlight("\n".join(lines[:HIGHLIGHT_LINES]), _lexer(language), HtmlFormatter(nowrap=True))
    out = [Html(line) for line in markup.rstrip("\n").split("\n")]
    out += [Html(html.escape(line, quote=True)) for line in lines[HIGHLIGHT_LINES:]]
    return out


def _plain_lines(text: str) -> list[str]:
    """Text with nothing to colour (pygments' TextLexer gives one span-less line each), escaped: Generated code's
    Triton IR levels went through pygments, ~60 ms per kernel's four levels."""
    return html.escape(text, quote=False).split("\n")


@functools.lru_cache(maxsize=64)
def _highlighted(shown: str, language: str) -> Html:
    return Html("\n".join(highlighted_lines(shown, language)))


def code_block(text: str | None, language: str = "python") -> Html:
    """Source code highlighted with pygments CSS classes (coloured by explorer/static/tcompile.css): the
    first ``BLOCK_CHARS`` of it (see ``cut_text``), of which the first ``HIGHLIGHT_LINES`` lines are
    highlighted, so huge modules stay fast to show."""
    if not text:
        return note("(empty)", kind="muted")
    shown, mark = cut_text(text)
    return join([tag("div", tag("pre", _highlighted(shown, language)), cls="tc-code"), mark])


# --- long texts ---------------------------------------------------------------------------------

TEXT_CHARS = 20_000  # one piece of inline text: a table cell, a message, an attribute
BLOCK_CHARS = 500_000  # one block of code or text (``code_block``, ``preformatted``): ~6,000 lines of code

CUT_WHERE_STATIC = "full text in the saved capture (cap.save / its JSON)"  # a cut's mark, outside the widget
_CUT_TEXTS: contextvars.ContextVar[list | None] = contextvars.ContextVar("tcompile_cut_texts", default=None)


@contextlib.contextmanager
def collecting_cut_texts(found: list | None = None):
    """Within it, every text that the builders cut is appended, whole, to the list it yields, as
    ``(text, characters shown)``, and its mark refers to it by number (``✂1``): the widget shows the
    rest of each on demand (``explorer.full_text``). Outside it (the static page), the mark says
    where the whole text is. ``found``: a tab's list to go on with (a part of it drawn later)."""
    found = [] if found is None else found
    token = _CUT_TEXTS.set(found)
    try:
        yield found
    finally:
        _CUT_TEXTS.reset(token)


def cut_text(text: str, limit: int = BLOCK_CHARS, inline: bool = False) -> tuple[str, Html | None]:
    """``(shown, mark)``: the first ``limit`` characters of ``text`` (ending at a line end near the limit
    when there is one) and the mark to show after them, or ``(text, None)`` when it is short enough.
    A view shows a bounded part of any text, however large the capture: the whole text stays in
    the capture (and its saved JSON)."""
    end = _cut_end(text, limit)
    if end == len(text):
        return text, None
    found = _CUT_TEXTS.get()
    label = "✂"
    if found is not None:
        number = next((i for i, (t, _) in enumerate(found, 1) if t is text), None)
        if number is None:
            found.append((text, end))
            number = len(found)
        elif end < found[number - 1][1]:
            found[number - 1] = (text, end)
        label = f"✂{number}"
        where, more = "full text below this view", f"the rest of {label} loads on demand below this view"
    else:  # the static page holds no capture data: the rest is in the capture (and the JSON it saves to)
        where, more = CUT_WHERE_STATIC, ("the capture holds the whole text: cap.save(PATH) or %%tcompile --save "
                                         "PATH writes it to JSON; the interactive explorer loads it on demand")
    left = f"{label} {len(text) - end:,} more characters"
    if inline:
        return text[:end], tag("span", f"… {left} — {where}", cls="tc-badge tc-warn tc-cut",
                               title=f"{left} not shown here: {more}")
    return text[:end], note(tag("strong", f"{left} not shown here"), f" — {where}.", kind="warn", title=more)


def _cut_end(text: str, limit: int) -> int:
    if len(text) <= limit:
        return len(text)
    end = text.rfind("\n", limit - limit // 10, limit)
    return limit if end < 0 else end + 1


def shown_part(text: str, limit: int = BLOCK_CHARS) -> str:
    """The part of ``text`` a view shows (what ``cut_text`` keeps), for views that lay out its lines
    themselves and show the mark elsewhere, or not at all."""
    return text[:_cut_end(text, limit)]


def cut_mark(text: str | None, limit: int = BLOCK_CHARS) -> Html | None:
    """The mark ``cut_text`` shows after ``text`` if a view cut it (for views that show the lines of
    ``highlighted_lines`` themselves)."""
    return cut_text(text, limit)[1] if text else None


# --- numbers ------------------------------------------------------------------------------------

# --- lists that can be as long as a trace: every list view shows one page -------------------------

LIST_PAGE = 50  # cards (graph breaks, skipped frames…) a view shows at once
LIST_WHERE = ("page through them in the explorer widget; the saved capture (cap.save) and the capture object "
              "(cap.breaks.items, cap.recompiles…) hold every one")


def page_count(total: int, per_page: int = LIST_PAGE) -> int:
    return max(1, -(-total // per_page))


def one_page(items, page: int = 0, per_page: int = LIST_PAGE) -> tuple[list, int]:
    """The items of page ``page`` (clamped to the pages there are) and that page's number."""
    items = list(items) if not isinstance(items, (list, tuple)) else items
    page = min(max(0, int(page or 0)), page_count(len(items), per_page) - 1)
    return list(items[page * per_page:(page + 1) * per_page]), page


def page_note(total: int, page: int, what: str, per_page: int = LIST_PAGE, where: str = LIST_WHERE) -> Html:
    """The line under a page of a long list: which of how many it shows, and where the rest is."""
    if total <= per_page:
        return Html("")
    first, last = page * per_page + 1, min(total, (page + 1) * per_page)
    return para(f"Showing {what} {first:,}–{last:,} of {total:,} (page {page + 1} of {page_count(total, per_page)}); "
                f"{where}.", cls="tc-muted tc-page-note")


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
