"""The machinery every saved document is built on: typed, JSON-backed ``Data`` (each declared field
checked on read, unknown keys kept and written back), ``Stage`` (data with ``available``/``reason``),
``JsonFile`` (versioned JSON files, never pickle), and the one check of a document's format and
version. The declarations themselves: each stage beside its builder, ``Compile`` and ``CaptureData``
(which tie them together) in ``compiler.stages.schema``; fixes in ``compiler.stages.fix_schema``.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import gzip
import json
import threading
import types
import typing
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from compiler.drawing import draw


MAX_DEPTH = 200  # deeper JSON than this is not a capture (and would exhaust the stack)
FLOAT_MAX = 1.7976931348623157e308  # the largest float: an int beyond it overflows every figure made from it


class CaptureFormatError(ValueError):
    """A file that is not a tcompile capture, has an unknown major version, or is malformed."""


class TraceError(ValueError):
    """A path that is not a readable TORCH_TRACE log (missing, binary, no records), or a problem
    under ``strict=True`` (``compiler.readers.trace``; the stage builders raise it where the records form
    no capture)."""


def _shown(value) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "…"


_JSON_NAMES = {dict: "an object", list: "a list", str: "a string", int: "an integer", float: "a number",
               bool: "true or false"}


def _expected(tp) -> str:
    return _JSON_NAMES.get(typing.get_origin(tp) or tp, "an object" if isinstance(tp, type) else str(tp))


@contextlib.contextmanager
def paused_gc():
    """Reading a big file builds millions of small objects and no cycles; the cycle collector,
    triggered by those allocations, would take ~40 % of the time. Put back as it was."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class _Mismatch(Exception):
    """A value that is not of its declared type; ``where`` collects the JSON path on the way out."""

    def __init__(self, expected: str, value):
        self.expected, self.value, self.where = expected, value, []

    def error(self, path: str) -> CaptureFormatError:
        where = "".join(reversed(self.where))
        where = f"{path}{where}" if path else where.lstrip(".") or "capture"
        got = "missing" if self.expected == "missing" else f"expected {self.expected}, got {_shown(self.value)}"
        error = CaptureFormatError(f"{where}: {got}")
        error.where = where  # the JSON path of the value, e.g. compiles[1].shapes.symbols[0].symbol
        return error


def _same(value):
    return value


# converter → the exact types it returns unchanged: a list or dict of only those is copied at C speed
_PASS_TYPES: dict = {}


def _scalar(tp):
    expected = _expected(tp)
    if tp is float:
        def check(value):
            if type(value) is float:
                return value
            if isinstance(value, (int, float)) and not isinstance(value, bool) and -FLOAT_MAX <= value <= FLOAT_MAX:
                return value  # an int no float can hold (400 digits) is no number a capture wrote
            raise _Mismatch(expected, value)
    elif tp is int:
        def check(value):
            if type(value) is int or (isinstance(value, int) and not isinstance(value, bool)):
                return value
            raise _Mismatch(expected, value)
    else:
        def check(value):
            if type(value) is tp or isinstance(value, tp):
                return value
            raise _Mismatch(expected, value)
    _PASS_TYPES[check] = frozenset({float}) if tp is float else frozenset({tp})  # an int in a float field: checked
    return check


def _first_failing(convert, items) -> int:
    for index, item in enumerate(items):
        try:
            convert(item)
        except _Mismatch:
            return index
    return 0


# Converters of nested types are registered before their fields are filled (types nest:
# Graph.subgraphs), so building holds a lock: another thread must not use a half-built one.
_BUILDING = threading.RLock()


def _converter(tp):
    """A function that checks a JSON value against ``tp`` and returns it as ``tp`` (raising
    ``_Mismatch``). Built once per type: a 100 MB trace converts millions of values."""
    with _BUILDING:
        return _build_converter(tp)


@functools.cache
def _build_converter(tp):
    if tp is Any:
        return _same
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(tp)
        nullable = type(None) in options
        converters = [_converter(o) for o in options if o is not type(None)]
        if len(converters) == 1:
            (only,) = converters

            def union(value):
                return None if value is None and nullable else only(value)
        else:
            def union(value):
                if value is None and nullable:
                    return None
                first = None
                for convert in converters:
                    try:
                        return convert(value)
                    except _Mismatch as exc:
                        first = first or exc
                raise first
        if all(c in _PASS_TYPES for c in converters):
            _PASS_TYPES[union] = frozenset().union(*(_PASS_TYPES[c] for c in converters),
                                                   {type(None)} if nullable else ())
        return union
    if origin is list:
        item = _converter(typing.get_args(tp)[0])
        passed = _PASS_TYPES.get(item, frozenset())

        def list_of(value):
            if type(value) is not list and not isinstance(value, list):
                raise _Mismatch("a list", value)
            if item is _same or passed.issuperset(map(type, value)):
                return list(value)
            try:
                return [item(v) for v in value]
            except _Mismatch as exc:
                exc.where.append(f"[{_first_failing(item, value)}]")
                raise
        return list_of
    if origin is dict:
        item = _converter(typing.get_args(tp)[1])
        passed = _PASS_TYPES.get(item, frozenset())

        def dict_of(value):
            if type(value) is not dict and not isinstance(value, dict):
                raise _Mismatch("an object", value)
            if (item is _same or passed.issuperset(map(type, value.values()))) and all(type(k) is str for k in value):
                return dict(value)
            out = {}
            for k, v in value.items():
                try:
                    out[str(k)] = item(v)
                except _Mismatch as exc:
                    exc.where.append(f".{k}")
                    raise
            return out
        return dict_of
    if isinstance(tp, type) and issubclass(tp, Data):
        return _data_converter(tp)
    return _scalar(tp)


_DATA_CONVERTERS: dict = {}


def _data_converter(cls):
    if cls in _DATA_CONVERTERS:  # registered before its fields are built: types nest (Graph.subgraphs)
        return _DATA_CONVERTERS[cls]
    fields = []
    # The object is made without calling the dataclass __init__ (half the time of a big load): the
    # declared defaults, then each field read, then __post_init__ where a class has one.
    defaults = {f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}
    factories = [(f.name, f.default_factory) for f in dataclasses.fields(cls)
                 if f.default_factory is not dataclasses.MISSING]
    post_init = getattr(cls, "__post_init__", None)
    new = object.__new__

    def data(value):
        if type(value) is cls:  # already typed: a stage builder returned its declared type, checked there
            return value
        if type(value) is Deferred and value.type is cls:  # built as its type on first read (BuiltOnRead)
            return value
        if type(value) is not dict and not isinstance(value, dict):
            raise _Mismatch("an object", value)
        attributes = dict(defaults)
        read = 0
        for name, key, convert, required in fields:
            if key in value:
                read += 1
                try:
                    attributes[name] = convert(value[key])
                except _Mismatch as exc:
                    exc.where.append(f".{key}")
                    raise
            elif required:
                exc = _Mismatch("missing", None)
                exc.where.append(f".{key}")
                raise exc
        for name, factory in factories:
            if name not in attributes:
                attributes[name] = factory()
        obj = new(cls)
        obj.__dict__ = attributes
        if post_init is not None:
            obj.__post_init__()
        if len(value) > read:
            known = {key for _, key, _, _ in fields} | derived
            unknown = {k: v for k, v in value.items() if k not in known}
            if unknown:
                attributes["_unknown"] = unknown
        return obj

    _DATA_CONVERTERS[cls] = data
    fields.extend((name, key, _converter(tp), required) for name, key, tp, required in _fields(cls)
                  if name not in _derived(cls))
    derived = {key for name, key, _, _ in _fields(cls) if name in _derived(cls)}
    return data


class Deferred:
    """A field's value built on its first read (``BuiltOnRead``), not when its document is made: ``build()``
    gives it as ``type``, run once, under a lock (two threads reading it get the one value). A stage whose
    build parses what its document already holds (a compile's provenance map: every graph of the compile)
    costs nothing until someone looks at it."""

    __slots__ = ("type", "_build", "_value", "_lock")

    def __init__(self, type, build):
        self.type, self._build, self._value, self._lock = type, build, None, threading.Lock()

    def value(self):
        with self._lock:
            if self._build is not None:
                self._value, self._build = self._build(), None
        return self._value

    @property
    def built(self) -> bool:
        return self._build is None

    def __deepcopy__(self, memo):  # a copy of its document holds a copy of the value (a lock is not copied)
        import copy

        return copy.deepcopy(self.value(), memo)


def built(value):
    """``value``, or what it is once built if it is ``Deferred`` (for code that reads a document still being
    assembled, as data)."""
    return value.value() if type(value) is Deferred else value


class BuiltOnRead:
    """A ``Data`` field that may hold a ``Deferred``: the first read builds it and keeps what was built (then
    tells its owner: ``_on_built(name, value)``, where the owner's class has one)."""

    def __init__(self, name: str):
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        try:
            value = obj.__dict__[self.name]
        except KeyError:
            raise AttributeError(self.name) from None
        if type(value) is Deferred:
            value = obj.__dict__[self.name] = value.value()
            on_built = getattr(type(obj), "_on_built", None)
            if on_built is not None:
                on_built(obj, self.name, value)
        return value

    def __set__(self, obj, value):
        obj.__dict__[self.name] = value


def _dump(value):
    if isinstance(value, Data):
        return value.to_data()
    if isinstance(value, list):
        return [_dump(v) for v in value]
    if isinstance(value, dict):
        return {k: _dump(v) for k, v in value.items()}
    return value


@functools.cache
def _derived(cls) -> frozenset[str]:
    """Fields derived from others (``metadata={"derived": True}``, set in ``__post_init__``): written for
    readers that expect them, never read back — the fact is held once, where it is derived from."""
    return frozenset(f.name for f in dataclasses.fields(cls) if f.metadata.get("derived"))


@functools.cache
def _defaults(cls) -> dict:
    """Each field's value when none is given (the default, or what its factory makes)."""
    return {f.name: f.default if f.default is not dataclasses.MISSING else f.default_factory()
            for f in dataclasses.fields(cls)
            if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING}


@functools.cache
def _fields(cls) -> tuple[tuple[str, str, Any, bool], ...]:
    """(attribute, JSON key, type, required) for each saved field of ``cls``."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        if f.metadata.get("live"):
            continue
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        out.append((f.name, f.metadata.get("key", f.name), hints[f.name], required))
    return tuple(out)


@dataclass(repr=False, eq=False)
class Data:
    """Typed, JSON-backed data: ``from_data`` checks each declared field, ``to_data`` writes it back
    together with any unknown keys it was read with."""

    @classmethod
    def from_data(cls, value, path: str = ""):
        try:
            with paused_gc():  # see paused_gc: a big capture is ~10^5 objects
                return _converter(cls)(value)
        except _Mismatch as exc:
            raise exc.error(path) from None

    @classmethod
    def list_from_data(cls, values: list, path: str = "") -> list:
        """``[cls.from_data(v) for v in values]`` in one pass (a parser's thousands of rows: one check each, and
        the garbage collector paused once, not once a row)."""
        convert = _converter(cls)
        try:
            with paused_gc():
                return [convert(value) for value in values]
        except _Mismatch as exc:
            raise exc.error(path) from None

    # rows saved by the thousand (graph, IR and provenance nodes) leave out each field at its default value,
    # which loading fills in again
    OMIT_DEFAULTS: ClassVar[bool] = False

    def to_data(self) -> dict:
        if self.OMIT_DEFAULTS:
            defaults = _defaults(type(self))
            out = {}
            for name, key, _, _ in _fields(type(self)):
                value = getattr(self, name)
                if name not in defaults or value != defaults[name]:
                    out[key] = _dump(value)
        else:
            out = {key: _dump(getattr(self, name)) for name, key, _, _ in _fields(type(self))}
        out.update(self.__dict__.get("_unknown", {}))
        return out

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name, _, tp, _ in _fields(type(self))
                          if getattr(self, name) not in (None, [], {}, "") and not _is_big(getattr(self, name)))
        return f"{type(self).__name__}({shown})"


def plain_data(value):
    """``value`` as data with nothing left out: what ``to_data`` gives before a stage drops what loading
    rebuilds (a graph's parsed nodes, generated kernels' source) — for code that reads stages as dicts."""
    if isinstance(value, Data):
        return {key: plain_data(getattr(value, name)) for name, key, _, _ in _fields(type(value))}
    if isinstance(value, list):
        return [plain_data(v) for v in value]
    if isinstance(value, dict):
        return {k: plain_data(v) for k, v in value.items()}
    return value


def _is_big(value) -> bool:
    return isinstance(value, (Data, list, dict)) or (isinstance(value, str) and len(value) > 80)


@dataclass(repr=False, eq=False)
class Stage(Data):
    """One stage: ``available``, and when not, the ``reason``; ``as_text()`` reads like the stage."""

    NAME: ClassVar[str] = "stage"
    available: bool = False
    reason: str | None = None

    def as_text(self) -> str:
        if not self.available:
            return f"[{self.NAME}: unavailable — {self.reason or 'no reason recorded'}]"
        return self._text()

    def _text(self) -> str:
        return ""

    def _repr_html_(self) -> str:
        return draw("stage", self, self.as_text)

    def __repr__(self) -> str:
        if not self.available:
            return f"<{type(self).__name__} unavailable: {self.reason}>"
        return f"<{type(self).__name__} {self._summary()}>".replace("  ", " ").replace(" >", ">")

    def _summary(self) -> str:
        return "available"


PARSE_FAILED = "tcompile could not parse what torch logged for this stage"


def parse_failed(exc: Exception) -> str:
    """A stage's reason when building it failed: what failed, and where the raw records are."""
    return (f"{PARSE_FAILED} ({type(exc).__name__}: {exc}); the raw records are in capture.live.records "
            "(capture.trace_records for a loaded trace)")


def as_declared(cls, data: dict):
    """A stage (or part of one) that a builder read from torch's records, as its declared type: every field
    checked, as on load (a trace may hold values torch would not write); one that does not fit leaves the
    stage out, with the reason."""
    try:
        return cls.from_data(data, cls.NAME)
    except CaptureFormatError as exc:
        return cls(available=False, reason=parse_failed(exc))


def _table(rows):
    import pandas as pd

    return pd.DataFrame([r.to_data() if isinstance(r, Data) else r for r in rows])


def _text_table(rows, columns) -> str:
    """Rows as an aligned plain-text table of the given columns."""
    cells = [[str(getattr(r, c) if getattr(r, c) is not None else "") for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    line = lambda values: "  ".join(v.ljust(w) for v, w in zip(values, widths)).rstrip()  # noqa: E731
    return "\n".join([line(columns), line(["-" * w for w in widths]), *(line(row) for row in cells)])


class JsonFile:
    """Saved and loaded as versioned JSON — data only, never pickle, never executed. A subclass
    names its ``document`` kind; ``from_data`` checks what was read (here: ``validate_data`` on
    a plain ``data`` dict; typed documents such as ``Capture`` check every field instead)."""

    document = "capture"

    def to_data(self) -> dict:
        return self.data

    @staticmethod
    def validate_data(data) -> None:
        raise NotImplementedError

    @classmethod
    def from_data(cls, data):
        cls.validate_data(data)
        return cls(data)

    def to_json(self) -> str:
        # compact: a GPT-2-sized capture stays under 5 MB (indented it is ~20 % larger)
        return json.dumps(self.to_data(), separators=(",", ":"), default=str)

    def save(self, path) -> Path:
        """Write the JSON atomically (``compiler.stages.files.write_atomic``): the old file or the new
        one, never a part of one; a path that cannot be written is an ``OutputError`` (an OSError). A name
        ending in ``.gz`` is written gzip-compressed (the same JSON; a many-compile capture shrinks ~8×)."""
        from compiler.stages.files import write_atomic

        text = self.to_json()
        if str(path).endswith(".gz"):
            return write_atomic(path, gzip.compress(text.encode(), compresslevel=6, mtime=0))
        return write_atomic(path, text)

    @classmethod
    def from_json(cls, text: str | bytes):
        return cls.from_data(read_json_text(text, cls.document))

    @classmethod
    def load(cls, path):
        """Read a saved document (JSON, or gzip-compressed JSON: ``save`` to a ``.gz`` name)."""
        try:
            text = utf8_text(gunzipped(Path(path).read_bytes(), cls.document), cls.document)
        except OSError as exc:
            raise CaptureFormatError(f"cannot read {path}: {exc.strerror or exc}") from None
        with paused_gc():
            return cls.from_json(text)


def check_document_header(data, format: str, version: list[int], what: str, older_majors: tuple = ()) -> None:
    """The one check of a saved document's ``format`` and ``version`` (captures, diffs, comparisons): a
    reader accepts any minor version of its major, and of the ``older_majors`` it still reads."""
    if not isinstance(data, dict) or data.get("format") != format:
        raise CaptureFormatError(f"not a tcompile {what}: missing \"format\": \"{format}\"")
    found = data.get("version")
    if not (isinstance(found, list) and len(found) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in found)):
        raise CaptureFormatError(f"version: expected [major, minor], got {_shown(found)}")
    if found[0] != version[0] and found[0] not in older_majors:
        majors = [f"{major}.x" for major in sorted((version[0], *older_majors), reverse=True)]
        reads = " and ".join(majors) if len(majors) <= 2 else f"{', '.join(majors[:-1])} and {majors[-1]}"
        raise CaptureFormatError(f"{what} format version {found[0]}.{found[1]} is not supported "
                                 f"by this tcompile (reads {reads})")


MAX_GUNZIPPED_BYTES = 2 ** 30  # a saved capture expands to far less; more is a zip bomb, not a capture


def gunzipped(raw: bytes, what: str, limit: int = MAX_GUNZIPPED_BYTES) -> bytes:
    """``raw`` itself, or, gzip-compressed (it starts with gzip's magic bytes), what it expands to — at most
    ``limit`` bytes, else a ``CaptureFormatError``: a small hostile file must not fill the reader's memory."""
    if not raw.startswith(b"\x1f\x8b"):
        return raw
    inflate = zlib.decompressobj(wbits=31)
    try:
        out = inflate.decompress(raw, limit + 1)
    except zlib.error as exc:
        raise CaptureFormatError(f"not a tcompile {what}: broken gzip data ({exc})") from None
    if len(out) > limit:
        raise CaptureFormatError(f"not a tcompile {what}: the gzip data expands beyond {limit / 2 ** 30:g} GiB")
    if not inflate.eof:
        raise CaptureFormatError(f"not a tcompile {what}: the gzip data is cut short")
    return out


def utf8_text(raw: bytes | str, what: str) -> str:
    if isinstance(raw, bytes):
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CaptureFormatError(f"not a tcompile {what}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return raw


def read_json_text(raw: bytes | str, what: str):
    """JSON text → Python value; anything that is not UTF-8 JSON of sane depth is a CaptureFormatError."""
    raw = utf8_text(raw, what)
    try:
        value = json.loads(raw)
    except ValueError as exc:  # JSONDecodeError, and an integer longer than Python converts (4,300 digits)
        raise CaptureFormatError(f"not a tcompile {what}: invalid JSON ({exc})") from None
    except RecursionError:
        raise CaptureFormatError(f"not a tcompile {what}: JSON nested deeper than Python can read") from None
    if _depth(value) > MAX_DEPTH:
        raise CaptureFormatError(f"not a tcompile {what}: JSON nested deeper than {MAX_DEPTH} levels")
    return value


def _depth(value) -> int:
    """How many arrays and objects are nested in ``value`` (a scalar: 0), level by level without recursion (a
    recursive walk would itself overflow), looking only at containers: scalars are most of a capture's values."""
    level, todo = 0, [value]
    while todo:
        todo = [item for item in todo if type(item) is dict or type(item) is list]
        if not todo:
            break
        level += 1
        if level > MAX_DEPTH:
            break
        inner = []
        for item in todo:
            inner.extend(item.values() if type(item) is dict else item)
        todo = inner
    return level
