"""Files over SSH's exec channel: for hosts whose sshd has no SFTP subsystem, and for
files written through ``sudo -n`` (SFTP cannot change user).

Each operation is one ``sh -c`` script with its arguments quoted by ``shlex``: ``cat`` to
read, and a write that goes to a temporary name under ``umask 077``, gets its mode, keeps
the old file as ``NAME.prev`` (a hard link) and is renamed over (``mv -T``), as the SFTP
path does.  The caller bounds each one with a deadline."""

from __future__ import annotations

import errno
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

# exit 66 (EX_NOINPUT): the file does not exist
NO_FILE = 66
READ_SCRIPT = '[ -e "$1" ] || { echo "no such file" >&2; exit 66; }; exec cat -- "$1"'
WRITE_SCRIPT = (
    'umask 077; t=$1; tmp=$2; prev=$3; '
    'mkdir -p -- "$(dirname -- "$t")" || exit 1; '
    'cat >"$tmp" || { rm -f -- "$tmp"; exit 1; }; '
    'sync -- "$tmp" 2>/dev/null; '
    'if chmod "$4" -- "$tmp" && { [ ! -e "$t" ] || { rm -f -- "$prev" && ln -- "$t" "$prev"; }; } '
    '&& mv -f -T -- "$tmp" "$t"; then exit 0; fi; '
    'rm -f -- "$tmp"; exit 1'
)
SUDO = ("sudo", "-n")
# What sudo -n says when it would have asked for a password (sudo 1.8 and 1.9).
PASSWORD_WANTED = ("a password is required", "a terminal is required")


@dataclass(frozen=True)
class ExecResult:
    returncode: int | None
    stdout: bytes
    stderr: str


def read_command(path: str, *, sudo: bool = False) -> str:
    return shlex.join([*(SUDO if sudo else ()), "sh", "-c", READ_SCRIPT, "sh", path])


def write_command(path: str, tmp: str, prev: str, mode: int, *, sudo: bool = False) -> str:
    argv = [*(SUDO if sudo else ()), "sh", "-c", WRITE_SCRIPT, "sh", path, tmp, prev,
            f"{mode:o}"]
    return shlex.join(argv)


def sudo_fix(user: str, host: str, commands: Sequence[str]) -> str:
    """How to give ``user`` the passwordless sudo knobtop needs (it never types a password)."""
    what = "; ".join(commands)
    return (
        f"{host}: sudo -n asks {user} for a password, and knobtop never types one into a "
        f"remote sudo. Give {user} passwordless sudo for what knobtop runs there ({what}), "
        f"e.g. a line `{user} ALL=(root) NOPASSWD: ...` in /etc/sudoers.d/knobtop (visudo -f), "
        "or set sudo = false in the profile and make the drop-in writable and the restart "
        f"command runnable by {user}"
    )


def wants_password(stderr: str) -> bool:
    return any(text in stderr for text in PASSWORD_WANTED)


def file_error(host: str, what: str, result: ExecResult) -> OSError | None:
    """The OSError a failed read or write means (missing file, permission), else None."""
    err = result.stderr.strip()[-300:]
    if result.returncode == NO_FILE:
        return FileNotFoundError(errno.ENOENT, f"{host}: {what}: no such file")
    if "Permission denied" in err or "Operation not permitted" in err:
        return PermissionError(errno.EACCES, f"{host}: {what}: {err}")
    return None


__all__ = [
    "NO_FILE",
    "READ_SCRIPT",
    "SUDO",
    "WRITE_SCRIPT",
    "ExecResult",
    "file_error",
    "read_command",
    "sudo_fix",
    "wants_password",
    "write_command",
]
