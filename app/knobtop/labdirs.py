"""Where the lab's sandboxes live on disk, and how knobtop makes their directories and writes
their files there: never through a link or a directory another local user planted.

A named sandbox lives inside its lab's own directory (``LAB/labs/NAME``), never beside it: a
place beside a ``--dir`` may be a shared one such as ``/tmp``, where another user can make
``/tmp/labs/NAME`` first. So every directory knobtop makes for a sandbox is made 0700, or,
when it is there already, checked with ``lstat`` (a real directory of this user's, then
0700); every file it writes is created with ``O_EXCL|O_NOFOLLOW``, or written atomically
(a new file beside it, then ``os.replace``, which replaces a link instead of following it).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import pwd
import re
import secrets
import shutil
import stat
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from knobtop.errors import KnobtopError

# Named sandboxes (``--name``, a recipe's lab targets) are folders of this one in a lab's dir.
LABS = "labs"
# The knobtop session using a sandbox holds this file in the sandbox's own directory.
SESSION_LOCK = "session.lock"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}")


class LabError(KnobtopError, RuntimeError):
    """The sandbox could not start; the message names the step and the fix."""


def default_lab_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "knobtop" / "lab"


def lab_dir_for(name: str | None, where: Path | None) -> Path:
    """A sandbox's directory: the lab's (``--dir``, else the default), or with ``--name
    NAME`` the named sandbox inside it, ``LAB/labs/NAME``; as a trusted path (see
    :func:`trusted_path`), so everything after works with no link left in it."""
    lab = trusted_path(default_lab_dir() if where is None else where)
    if name is None:
        return lab
    if not NAME.fullmatch(name):
        raise LabError(f"--name {name!r}: up to 32 letters, digits, _ and -")
    return lab / LABS / name


def trusted_path(path: Path) -> Path:
    """``path`` absolute, with its links resolved once, and checked: every link on the way
    and every directory it ends up in is this user's or root's, and none of those
    directories can be written by other users unless it is sticky (as /tmp is). Otherwise
    another user could point the way somewhere else between two uses of the name (and have
    the sandbox's server read their my.cnf): LabError naming the part and the fix."""
    given = Path(os.path.abspath(path))
    me = os.geteuid()
    for part, st in _existing_parts(given, os.lstat):
        if stat.S_ISLNK(st.st_mode) and st.st_uid not in (me, 0):
            raise LabError(f"{part} is a link owned by {_owner(st.st_uid)}: it could be "
                           "pointed elsewhere while the sandbox is in use; give a --dir "
                           "whose path has no other user's link in it")
    real = Path(os.path.realpath(given))
    for part, st in _existing_parts(real, os.stat):
        if st.st_uid not in (me, 0):
            raise LabError(f"{part} belongs to {_owner(st.st_uid)}: a sandbox may not live "
                           "under a directory another user can change; choose another --dir")
        if stat.S_ISDIR(st.st_mode) and st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            raise LabError(f"{part} can be written by other users (mode "
                           f"{stat.S_IMODE(st.st_mode):o}), who could replace what is in it: "
                           f"chmod go-w {part}, or choose another --dir")
    return real


def _existing_parts(path: Path, read: Callable[[Path], os.stat_result]
                    ) -> Iterator[tuple[Path, os.stat_result]]:
    """``/``, then each longer part of ``path`` down to itself, with ``read(part)``, while
    they exist."""
    for part in [*reversed(path.parents), path]:
        try:
            yield part, read(part)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise LabError(f"cannot read {part}: {exc.strerror}") from None


def find_program(*names: str) -> str | None:
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin:/usr/local/sbin"
    for name in names:
        found = shutil.which(name, path=path)
        if found:
            return found
    return None


def _owner(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _not_a_dir(path: Path, st: os.stat_result) -> LabError:
    if stat.S_ISLNK(st.st_mode):
        with contextlib.suppress(OSError):
            return LabError(f"{path} is a symbolic link (to {os.readlink(path)}), not a "
                            "directory: knobtop never follows a link to a sandbox's place; "
                            f"remove it (rm {path}) or choose another --dir or --name")
    return LabError(f"{path} is not a directory: remove it or choose another --dir or --name")


def own_dir(path: Path) -> None:
    """``path`` as a directory of this user's, mode 0700: made here, or one that is there
    already checked (a real directory, not a link, owned by this user) and made 0700;
    LabError naming the path and the fix otherwise."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise LabError(f"cannot make the sandbox directory {path}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise _not_a_dir(path, st)
    if st.st_uid != os.geteuid():
        raise LabError(f"{path} belongs to {_owner(st.st_uid)}, not to you: a sandbox may not "
                       "run from a directory another user can change; remove it (as its "
                       "owner) or choose another --dir or --name")
    # By descriptor, not by name: what was checked is what is made 0700.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise LabError(f"cannot open the sandbox directory {path}: {exc.strerror}") from None
    try:
        if os.fstat(fd).st_ino != st.st_ino:
            raise LabError(f"{path} changed while it was checked: start again")
        if stat.S_IMODE(st.st_mode) != 0o700:
            os.fchmod(fd, 0o700)
    finally:
        os.close(fd)


def safe_above(path: Path) -> None:
    """The directory a sandbox's own ones are made in (``--dir``'s parent, or the lab of a
    named sandbox): made if missing; a real directory owned by this user or root, that no
    one else can write to unless it is sticky (as /tmp is), or LabError: otherwise another
    user could move the sandbox's directory and put theirs in its place."""
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700, parents=True)
    try:
        st = os.stat(path)  # the directory itself (a link to it is the person's own doing)
    except OSError as exc:
        raise LabError(f"cannot make {path}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise LabError(f"{path} is not a directory: choose another --dir")
    if st.st_uid not in (os.geteuid(), 0):
        raise LabError(f"{path} belongs to {_owner(st.st_uid)}: a sandbox may not live in a "
                       "directory another user can change; choose another --dir")
    if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
        raise LabError(f"{path} can be written by other users (mode "
                       f"{stat.S_IMODE(st.st_mode):o}), who could replace the sandbox's "
                       f"directory in it: chmod go-w {path}, or choose another --dir")


def sandbox_dirs(root: Path) -> None:
    """Make (or check) the directories of the sandbox in ``root``: for a named one
    (``LAB/labs/NAME``) ``labs/`` and ``NAME/``, else ``root`` itself; the one above
    them must be safe (:func:`safe_above`)."""
    named = root.parent.name == LABS and NAME.fullmatch(root.name) is not None
    ours = [root.parent, root] if named else [root]
    safe_above(ours[0].parent)
    for path in ours:
        own_dir(path)


def refuse_link(path: Path) -> LabError:
    return LabError(f"{path} is a symbolic link: knobtop reads and writes a sandbox's files "
                    f"itself and never through a link; remove it (rm {path}) and start again")


def _open(path: Path, flags: int, mode: int = 0o600) -> int:
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise refuse_link(path) from None
        raise


def write_new(path: Path, text: str, mode: int = 0o600) -> None:
    """Create ``path`` with ``text``; it must not be there (not even as a link)."""
    try:
        fd = _open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except FileExistsError:
        raise LabError(f"{path} is there already: knobtop creates it itself; remove it "
                       "and start again") from None
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)


def write_atomic(path: Path, text: str, mode: int = 0o600) -> None:
    """Replace ``path`` with ``text`` at once: a new file beside it, then ``os.replace``
    (a link at ``path`` is replaced, never followed)."""
    temp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.new")
    fd = _open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def read_own(path: Path) -> str | None:
    """The text of a sandbox's file, None when it is not there; LabError for a link."""
    try:
        fd = _open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, encoding="utf-8", errors="replace") as fh:
        return fh.read()


def open_append(path: Path) -> IO[str]:
    """``path`` opened for appending (created 0600 if missing), never through a link."""
    return os.fdopen(_open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND), "a", encoding="utf-8")


# -- one knobtop session per sandbox ----------------------------------------------------------


def _start_time(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot, /proc/PID/stat field 22), None
    when there is no such process or it has exited (a zombie): with the pid it names one
    process, not a later one given the same pid."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[-1].split()
    return None if fields[0] in ("Z", "X") else fields[19]


def _holder(text: str) -> dict[str, object]:
    """The lock file's record ({} when it is not one knobtop wrote)."""
    with contextlib.suppress(ValueError):
        found = json.loads(text)
        if isinstance(found, dict):
            return found
    return {}


def _alive(holder: dict[str, object]) -> bool:
    pid = holder.get("pid")
    return type(pid) is int and pid > 0 and _start_time(pid) == holder.get("start")


def _in_use(root: Path, holder: dict[str, object]) -> LabError:
    from knobtop.printable import printable

    pid = holder.get("pid")
    what = printable(str(holder.get("command") or "knobtop"), newlines=False)
    since = holder.get("since")
    when = (f", since {time.strftime('%H:%M:%S', time.localtime(since))}"
            if isinstance(since, int | float) else "")
    return LabError(
        f"the sandbox in {root} is in use by another knobtop session (pid {pid}: {what}"
        f"{when}); two sessions on one sandbox would change its knobs and reload its tables "
        f"under each other. Quit that one first (q on its screen, or kill {pid}), or use "
        "another sandbox (--name NAME, or another --dir)")


@contextlib.contextmanager
def session_lock(root: Path) -> Iterator[None]:
    """Hold the sandbox in ``root`` (made or checked first) for this process's knobtop
    session: ``SESSION_LOCK`` created O_EXCL in it, holding this process's pid and start
    time. A lock whose process is gone is stale and taken over; one whose process runs is a
    LabError naming that pid and the fix. The lock goes when the block ends."""
    sandbox_dirs(root)
    path = root / SESSION_LOCK
    pid = os.getpid()
    mine = {"pid": pid, "start": _start_time(pid), "since": round(time.time(), 3),
            "command": " ".join(["knobtop", *sys.argv[1:2]])}
    for _attempt in range(5):
        try:
            write_new(path, json.dumps(mine) + "\n")
            break
        except LabError:  # there already: whose is it?
            pass
        try:
            fd = _open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue  # gone meanwhile: try again
        with os.fdopen(fd, encoding="utf-8", errors="replace") as fh:
            judged = os.fstat(fh.fileno())
            holder = _holder(fh.read(4096))
        if _alive(holder):
            raise _in_use(root, holder)
        # Stale: moved aside first, removed only if it is still the file judged stale (a
        # session that took it over meanwhile keeps its own).
        aside = root / f".{SESSION_LOCK}.{secrets.token_hex(6)}.stale"
        with contextlib.suppress(FileNotFoundError):
            os.rename(path, aside)
            if os.lstat(aside).st_ino == judged.st_ino:
                os.unlink(aside)
            else:
                with contextlib.suppress(FileExistsError):
                    os.link(aside, path)
                os.unlink(aside)
    else:
        raise LabError(f"could not take {path}: other sessions keep taking it; start again")
    try:
        yield
    finally:
        with contextlib.suppress(OSError, LabError):
            if _holder(read_own(path) or "").get("pid") == pid:
                path.unlink()
