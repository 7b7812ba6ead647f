"""Writing files safely, and naming files safely: the one place captures, reports and traces are
written (``write_atomic``), and the one spelling of a path that came from a directory listing
(``shown_path``).

A write goes to a temporary file in the target's directory, is flushed and fsynced, then renamed
over the target (``os.replace``): a reader sees the old file or the new one, never a part of one —
also when the process is killed mid-save, the disk fills, or two writers race. Only a regular file
(or a new name) is written: ``/dev/full``, a FIFO, a directory, a name ending in ``/`` and a read-only
file are refused with a one-line ``OutputError``. A temporary file names its writer's process id: one
left by a writer killed mid-save (whose process is gone) is removed by the next write to the same name.
"""
from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
from pathlib import Path


class OutputError(OSError):
    """A path that cannot be written (missing folder, read-only, not a regular file, disk full…);
    its message is one line naming the path and the cause."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_MODE = 0o666 & ~_umask()  # what open(path, "w") would give a new file


def output_target(path) -> Path:
    """The file a write to ``path`` replaces: a symlink's target, and only a regular file or a new
    name in an existing folder; else an ``OutputError`` (callers check early, before slow work)."""
    if os.fspath(path).endswith(("/", os.sep)):  # Path() would drop the slash and write a file of that name
        raise OutputError(f"cannot write {shown_path(path)}: a name ending in / is a folder; name a file")
    path = Path(path)
    path = Path(os.path.realpath(path)) if path.is_symlink() else path
    try:
        info = path.stat()
    except FileNotFoundError:
        if not path.parent.is_dir():
            why = "is not a directory" if path.parent.exists() else "does not exist"
            raise OutputError(f"cannot write {path}: its folder {path.parent} {why}") from None
        return path
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise OutputError(f"cannot write {path}: not a regular file (a directory, device or FIFO); "
                          "name a new or regular file")
    # the rename would replace a read-only file regardless: refused, as opening it for writing is (root too,
    # where no write bit is set: the file was made read-only on purpose)
    if not info.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(path, os.W_OK):
        raise OutputError(f"cannot write {path}: the file is read-only")
    return path


def write_atomic(path, text: str | bytes) -> Path:
    """Write ``text`` (UTF-8) or bytes to ``path`` atomically; return ``path``."""
    with atomic_file(path, binary=isinstance(text, bytes)) as f:
        f.write(text)
    return Path(path)


@contextlib.contextmanager
def atomic_file(path, binary: bool = False):
    """A file object to write ``path``'s new content to, streaming; the target is replaced only when
    the block ends without an error (temporary file in the same folder, fsync, ``os.replace``)."""
    target = output_target(path)
    _remove_abandoned(target)
    try:
        fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.{os.getpid()}.",
                                    suffix=".partial")
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from None
    try:
        os.fchmod(fd, stat.S_IMODE(target.stat().st_mode) if target.exists() else _MODE)
        with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="\n")) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        if isinstance(exc, OSError) and not isinstance(exc, OutputError):
            raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from None
        raise
    _sync_folder(target.parent)


def _remove_abandoned(target: Path) -> None:
    """Remove the temporary files of earlier writes to ``target`` whose writer is gone (killed mid-save:
    ``.NAME.PID.XXXX.partial`` with no process PID); a live writer's file is left alone."""
    temporary = re.compile(rf"\.{re.escape(target.name)}\.(\d+)\.\w+\.partial")  # mkstemp's part: letters, digits, _
    try:
        names = os.listdir(target.parent)
    except OSError:
        return
    for name in names:
        match = temporary.fullmatch(name)
        if match and int(match[1]) != os.getpid() and not _alive(int(match[1])):
            with contextlib.suppress(OSError):
                os.unlink(target.parent / name)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: another user's live process
        return True
    return True


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable (best effort: some file systems refuse a folder's fsync)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def shown_path(path) -> str:
    """A path as text that can always be written out: a file name that is not UTF-8 (a Latin-1 byte
    listed as a lone surrogate by ``os.listdir``) shows that byte as U+FFFD."""
    try:
        return os.fsencode(path).decode("utf-8", "replace")
    except UnicodeEncodeError:  # a surrogate no file name can hold
        return shown_text(os.fspath(path))


def without_surrogates(value):
    """A parsed JSON value with every lone surrogate in its strings (keys too) replaced, in place
    and iteratively (a value may be nested as deep as ``json`` reads)."""
    if isinstance(value, str):
        return shown_text(value)
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            for i, v in enumerate(item):
                if isinstance(v, str):
                    item[i] = shown_text(v)
                elif isinstance(v, (list, dict)):
                    stack.append(v)
        elif isinstance(item, dict):
            pairs = list(item.items())
            item.clear()
            for k, v in pairs:
                if isinstance(v, str):
                    v = shown_text(v)
                elif isinstance(v, (list, dict)):
                    stack.append(v)
                item[shown_text(k) if isinstance(k, str) else k] = v
    return value


# What a terminal would execute rather than show: C0 controls but tab and newline (ESC starts erase-line, title,
# OSC 52 clipboard and OSC 8 link sequences; CR overwrites the line), DEL, C1 controls (CSI, OSC), and the
# bidirectional overrides that reorder what is shown.
_TERMINAL_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def terminal_text(text, newlines: bool = True) -> str:
    """``text`` (from a file: a name, a sentence) as a terminal may print it: each control character shown
    as ``\\xNN`` / ``\\uNNNN``, never executed, lone surrogates as U+FFFD (``newlines=False``: newlines
    shown too)."""
    text = shown_text(str(text))
    if not newlines:
        text = text.replace("\n", "\\n")
    return _TERMINAL_CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", text)


def shown_text(text: str) -> str:
    """``text`` with lone surrogates (``"\\ud800"`` from a JSON escape) replaced by U+FFFD, so it can be
    written as UTF-8; the same string when it has none."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
