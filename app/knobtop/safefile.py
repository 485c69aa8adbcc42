"""Files knobtop writes at names anyone can predict (screenshots, replay notes), opened so that
a link or a file someone else planted at that name is never written through.

A new file is created with ``O_CREAT|O_EXCL|O_NOFOLLOW`` (it cannot be an existing file or a
link); a file that is appended to across runs is opened with ``O_NOFOLLOW|O_NONBLOCK`` and
refused unless it is a regular file of this user's own.  A refusal is a :class:`NotOwnFile`
whose message names the file, what it is and the fix.  It imports only errors and printable
of knobtop, so every part above the journal may use it.
"""

from __future__ import annotations

import atexit
import errno
import os
import shutil
import stat
from pathlib import Path

from knobtop.errors import KnobtopError
from knobtop.printable import printable

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up time
if TYPE_CHECKING:
    from typing import BinaryIO

_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO planted at the name must not hang the screen in open().
_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
MAX_SUFFIX = 99
_private_cwd: str | None = None  # NAME-2.svg ... NAME-99.svg when screenshots share a second


class NotOwnFile(KnobtopError, OSError):
    """A name knobtop would write to is taken by something it must not write through."""


def _what(path: Path, st: os.stat_result | None = None) -> str:
    """What stands at ``path`` instead of a file of this user's own, in words."""
    try:
        st = st or os.lstat(path)
    except OSError:
        return "not a file knobtop can use"
    if stat.S_ISLNK(st.st_mode):
        return f"a symbolic link (to {os.readlink(path)!r})"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if st.st_uid != os.geteuid():
        return f"a file owned by uid {st.st_uid}, not by you"
    return "an existing file"


def _refused(path: Path, st: os.stat_result | None = None) -> NotOwnFile:
    return NotOwnFile(printable(
        f"{path} is {_what(path, st)}: knobtop writes only a file of its own there; remove "
        "it, or run knobtop where no one else can write", newlines=False))


def write_new(directory: Path, name: str, data: bytes, mode: int = 0o600) -> Path:
    """Write ``data`` to a new file ``name`` in ``directory`` (``NAME-2.EXT``... when a file
    of this user's own already has the name) and return its path.  Raises NotOwnFile when
    the name is a link or someone else's file, OSError when it cannot be written."""
    stem, dot, ext = name.rpartition(".")
    if not dot:
        stem, ext = name, ""
    for n in range(1, MAX_SUFFIX + 1):
        path = directory / (name if n == 1 else f"{stem}-{n}{dot}{ext}")
        try:
            fd = os.open(path, _NEW, mode)
        except FileExistsError:
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid():
                continue  # this user's own earlier file (the same second): the next name
            raise _refused(path, st) from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _refused(path) from None
            raise
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        return path
    raise FileExistsError(errno.EEXIST, f"{name} and its {MAX_SUFFIX - 1} next names are "
                          "taken", str(directory / name))


def open_append(path: Path, mode: int = 0o600) -> int:
    """A descriptor to append to ``path`` (created ``mode`` if missing): refused unless it
    is a regular file owned by this user (never a link, a FIFO or another user's file)."""
    try:
        fd = os.open(path, _APPEND, mode)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO):  # a link; a FIFO without a reader
            raise _refused(path) from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
        os.close(fd)
        raise _refused(path, st)
    os.set_blocking(fd, True)
    return fd


def open_own(path: Path) -> BinaryIO:
    """The regular file ``path``, open to read (FileNotFoundError when there is none);
    NotOwnFile for a link or anything but a regular file (a FIFO would never end)."""
    try:
        fd = os.open(path, _READ)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refused(path) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refused(path, st)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def read_own(path: Path) -> bytes:
    """The bytes of the regular file ``path`` (as open_own refuses what it refuses)."""
    with open_own(path) as fh:
        return fh.read()


__all__ = ["NotOwnFile", "open_append", "open_own", "read_own", "write_new"]


def private_cwd() -> str:
    """A directory of this user's own (0700, made for this process) that knobtop's child
    processes start in: a program that looks in its working directory first (sysbench for
    its Lua scripts and test name, ``python -c``, ``python -m``) never finds a file another
    user planted in the directory knobtop was started from."""
    global _private_cwd
    if _private_cwd is None or not os.path.isdir(_private_cwd):
        import tempfile  # (here: a report, which reads files only, needs none of it)

        _private_cwd = tempfile.mkdtemp(prefix="knobtop-cwd-")
        atexit.register(shutil.rmtree, _private_cwd, True)
    return _private_cwd
