"""Where a compiled frame's source text comes from: a file name and line number in → its lines out.

A live capture reads the user's own code (``linecache``, as Python's tracebacks do). A loaded trace
is someone else's file: the names and line numbers in it are data, and reading them on the reader's
machine would copy the reader's files (``/proc/self/environ``, keys, …) into a capture and a report
they may share, or hang on a FIFO, or fill memory from ``/dev/zero``. So a trace reads no local file
unless the reader opts in (``load_trace(path, sources="local")``, ``--sources local``), and even then
only a regular ``.py`` file outside /proc, /sys and /dev, at most ``MAX_BYTES``, opened without
blocking and read within ``TIMEOUT_S``.
"""
from __future__ import annotations

import linecache
import os
import stat
import time
from dataclasses import dataclass, field

MODES = ("live", "trace", "local")
MAX_BYTES = 2 * 1024 * 1024
TIMEOUT_S = 2.0
_SPECIAL_ROOTS = ("/proc", "/sys", "/dev")
NOT_READ = ("not read: this compile comes from a loaded trace, and tcompile reads no local file a trace names "
            "(load with sources=\"local\", or --sources local, to read it from this machine)")


class SourceModeError(ValueError):
    """``sources`` is not one of MODES."""


@dataclass
class SourceFiles:
    """How source lines are looked up for one capture: ``live`` (linecache), ``trace`` (never read a
    local file) or ``local`` (opt-in: safe reads of regular files, each file read once)."""

    mode: str = "live"
    _cache: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        if self.mode not in MODES:
            raise SourceModeError(f"sources={self.mode!r}: expected one of {', '.join(MODES)}")

    def lines(self, filename: str) -> tuple[list[str], str | None]:
        """The file's lines, or [] and why there are none."""
        if self.mode == "live":
            lines = linecache.getlines(filename)
            return lines, None if lines else (f"the source of {filename} is not available in this process "
                                               "(linecache is empty)")
        if self.mode == "trace":
            return [], NOT_READ
        if filename not in self._cache:
            self._cache[filename] = read_local_source(filename)
        return self._cache[filename]

    def line(self, filename: str | None, lineno: int | None) -> str | None:
        """One line, stripped; None where it is not available."""
        if not filename or not isinstance(lineno, int) or lineno < 1:
            return None
        lines, _ = self.lines(filename)
        return lines[lineno - 1].strip() or None if lineno <= len(lines) else None


def read_local_source(filename: str) -> tuple[list[str], str | None]:
    """A source file named by a trace, read only if it is a regular ``.py`` file of at most MAX_BYTES
    outside the kernel's pseudo file systems; never blocks on a FIFO or a device."""
    try:
        real = os.path.realpath(filename)
    except (OSError, ValueError) as exc:
        return [], f"not read: {filename!r} is not a usable path ({exc})"
    if not real.endswith(".py"):
        return [], f"not read: {filename} is not a .py file"
    if any(real == root or real.startswith(root + "/") for root in _SPECIAL_ROOTS):
        return [], f"not read: {filename} is in a system pseudo file system"
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except (OSError, ValueError) as exc:
        return [], f"not read: {filename} could not be opened ({type(exc).__name__}: {exc})"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return [], f"not read: {filename} is not a regular file"
        if info.st_size > MAX_BYTES:
            return [], f"not read: {filename} is {info.st_size:,} bytes, over the {MAX_BYTES:,}-byte limit"
        chunks, left, deadline = [], info.st_size, time.monotonic() + TIMEOUT_S
        while left > 0:
            if time.monotonic() > deadline:
                return [], f"not read: reading {filename} took over {TIMEOUT_S:g} s"
            chunk = os.read(fd, min(left, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        return [], f"not read: {filename} could not be read ({type(exc).__name__}: {exc})"
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", errors="replace").splitlines(True), None
