"""The Capture: plain, JSON-serializable data about every compile, and small read-only views of it.

Data flows one way: torch → records → ``assemble`` → this data → explorer views.
A Capture loaded from a file offers the same API as a live one, except what-if checks,
which need the live guards.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

FORMAT = "tcompile-capture"
VERSION = [1, 0]  # major, minor: a reader accepts any minor of its major

STAGES = ("source", "bytecode", "graph", "guards", "breaks", "recompile", "aot",
          "inductor", "kernels", "cudagraphs", "timings", "shapes")


class CaptureFormatError(ValueError):
    """A capture file that is not a tcompile capture, has an unknown major version, or is malformed."""


_RESUME = re.compile(r"^torch_dynamo_resume_in_(?P<fn>\w+?)_at_(?P<line>\d+)$")


def resume_origin(name: str | None) -> tuple[str, int] | None:
    """``torch_dynamo_resume_in_f_at_4`` → ``("f", 4)``: the function and line a resume frame continues."""
    match = _RESUME.match(name or "")
    return (match["fn"], int(match["line"])) if match else None


def unavailable(reason: str, **extra) -> dict:
    return {"available": False, "reason": reason, **extra}


class Stage:
    """One stage of one compile: a dict with ``available`` and, when not, the ``reason``."""

    def __init__(self, name: str, data: dict):
        self.name = name
        self.data = data

    @property
    def available(self) -> bool:
        return bool(self.data.get("available", False))

    @property
    def reason(self) -> str | None:
        return self.data.get("reason")

    def __getitem__(self, key):
        return self.data[key]

    def get(self, key, default=None):
        return self.data.get(key, default)

    def table(self, key: str):
        """A pandas DataFrame of the list of rows under ``key``."""
        import pandas as pd

        return pd.DataFrame(self.data.get(key) or [])

    @property
    def df(self):
        return self.table(TABLE_KEYS.get(self.name, "rows"))

    def as_text(self) -> str:
        if not self.available:
            return f"[{self.name}: unavailable — {self.reason}]"
        text_key = TEXT_KEYS.get(self.name)
        if text_key and self.data.get(text_key):
            return self.data[text_key]
        return json.dumps({k: v for k, v in self.data.items() if k != "available"}, indent=2, default=str)

    def __repr__(self) -> str:
        state = "available" if self.available else f"unavailable: {self.reason}"
        return f"<Stage {self.name} ({state})>"


TEXT_KEYS = {"source": "text", "graph": "code", "guards": "tree", "kernels": "module"}
TABLE_KEYS = {"graph": "nodes", "guards": "table", "breaks": "items", "kernels": "kernels",
              "timings": "phases", "aot": "graphs", "recompile": "reasons", "shapes": "symbols"}


class Compile:
    """Everything captured for one frame compile (compile id ``frame/compile``)."""

    def __init__(self, data: dict):
        self.data = data

    compile_id = property(lambda self: self.data["compile_id"])
    frame_id = property(lambda self: self.data["frame_id"])
    attempts = property(lambda self: self.data.get("attempts", 1))
    name = property(lambda self: self.data.get("name"))
    status = property(lambda self: self.data.get("status"))
    error = property(lambda self: self.data.get("error"))
    metrics = property(lambda self: self.data.get("metrics") or {})

    def stage(self, name: str) -> Stage:
        return Stage(name, self.data.get(name) or unavailable("not recorded"))

    def __getattr__(self, name):
        if name in STAGES:
            return self.stage(name)
        raise AttributeError(name)

    def __repr__(self) -> str:
        return f"<Compile {self.compile_id} {self.name} status={self.status}>"


class JsonFile:
    """Saved and loaded as versioned JSON — data only, never pickle, never executed. Subclasses name
    their ``document`` kind and check loaded data in ``validate_data``."""

    document = "capture"

    @staticmethod
    def validate_data(data) -> None:
        validate(data)

    def to_json(self) -> str:
        # compact: a GPT-2-sized capture stays under 5 MB (indented it is ~20 % larger)
        return json.dumps(self.data, separators=(",", ":"), default=str)

    def save(self, path) -> Path:
        path = Path(path)
        path.write_text(self.to_json(), encoding="utf-8")
        return path

    @classmethod
    def from_json(cls, text: str):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CaptureFormatError(f"not a tcompile {cls.document}: invalid JSON ({exc})") from None
        cls.validate_data(data)
        return cls(data)

    @classmethod
    def load(cls, path):
        return cls.from_json(Path(path).read_text(encoding="utf-8"))


class Capture(JsonFile):
    """The result of ``compiler.capture()`` / ``compiler.explore()``."""

    def __init__(self, data: dict, live=None):
        self.data = data
        self._live = live  # LiveState: guard managers for what-if; None once saved/loaded

    @property
    def compiles(self) -> list[Compile]:
        return [Compile(c) for c in self.data.get("compiles", [])]

    def compile(self, compile_id: str) -> Compile:
        for c in self.compiles:
            if c.compile_id == compile_id:
                return c
        raise KeyError(f"no compile {compile_id!r}; have {[c.compile_id for c in self.compiles]}")

    environment = property(lambda self: self.data.get("environment", {}))
    options = property(lambda self: self.data.get("options", {}))
    error = property(lambda self: self.data.get("error"))
    breaks = property(lambda self: Stage("breaks", self.data.get("breaks") or unavailable("not recorded")))
    recompiles = property(lambda self: self.data.get("recompiles", []))
    runtime = property(lambda self: Stage("runtime", self.data.get("runtime") or unavailable("not measured")))
    summary = property(lambda self: self.data.get("summary", {}))
    unknown_records = property(lambda self: self.data.get("unknown_records", {}))
    cudagraphs = property(lambda self: Stage("cudagraphs", self.data.get("cudagraphs") or unavailable("not recorded")))

    @property
    def guards_df(self):
        import pandas as pd

        frames = [c.guards.df.assign(compile_id=c.compile_id) for c in self.compiles if c.guards.available]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    @property
    def is_live(self) -> bool:
        return self._live is not None

    def frame_code(self, compile_id: str | None = None):
        """The live code object of a compiled frame (the first one by default), usable as ``fn``
        in ``what_if`` when the function itself is not at hand. None for a loaded capture."""
        if self._live is None or not self._live.codes:
            return None
        return self._live.codes.get(compile_id) if compile_id else next(iter(self._live.codes.values()))

    def what_if(self, fn, *args, **kwargs):
        """Would calling ``fn(*args, **kwargs)`` hit a cached compile, or recompile — and why?

        Checks the live guards without running ``fn``. Needs a live capture.
        """
        from .whatif import what_if

        if self._live is None:
            raise RuntimeError("what-if checks need the live guards of this Python process; "
                               "a capture loaded from a file only holds their text")
        return what_if(self._live, fn, args, kwargs, self.compiles)

    def diff(self, other, **kwargs):
        """Stage-by-stage differences to another capture (``compiler.diff.diff``)."""
        from .diff import diff

        return diff(self, other, **kwargs)

    @classmethod
    def from_error(cls, exc: BaseException, stage: str, message: str | None = None) -> "Capture":
        """A capture that holds only an error raised before anything compiled (e.g. a syntax error)."""
        from .environment import environment

        data = {"format": FORMAT, "version": list(VERSION), "environment": environment(), "options": {},
                "compiles": [], "breaks": {"available": True, "items": [], "total": 0}, "recompiles": [],
                "cudagraphs": unavailable("nothing was compiled"), "counters": {}, "unknown_records": {},
                "extra_records": [], "summary": {},
                "error": {"type": type(exc).__name__, "module": type(exc).__module__,
                          "message": message or str(exc), "stage": stage, "cause": None,
                          "compile_id": None, "last_record": None, "traceback": None}}
        return cls(data)

    def __eq__(self, other) -> bool:
        return isinstance(other, Capture) and self.data == other.data

    def __repr__(self) -> str:
        s = self.summary
        return (f"<Capture {len(self.data.get('compiles', []))} compiles, {s.get('graphs', 0)} graphs, "
                f"{s.get('graph_breaks', 0)} graph breaks, {s.get('recompiles', 0)} recompiles"
                + (f", error {self.error['type']} in {self.error['stage']}" if self.error else "") + ">")


def validate(data) -> None:
    """Reject anything that is not a capture of a version this reader knows."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CaptureFormatError(f"not a tcompile capture: missing \"format\": \"{FORMAT}\"")
    version = data.get("version")
    if not (isinstance(version, list) and len(version) == 2 and all(isinstance(v, int) for v in version)):
        raise CaptureFormatError(f"malformed capture: version must be [major, minor], got {version!r}")
    if version[0] != VERSION[0]:
        raise CaptureFormatError(f"capture format version {version[0]}.{version[1]} is not supported "
                                 f"by this tcompile (reads {VERSION[0]}.x)")
    compiles = data.get("compiles")
    if not isinstance(compiles, list) or not all(isinstance(c, dict) and "compile_id" in c for c in compiles):
        raise CaptureFormatError("malformed capture: \"compiles\" must be a list of compiles with a compile_id")


def load(path) -> Capture:
    return Capture.load(path)
