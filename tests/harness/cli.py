"""`knobtop` as a test runs it: ``python -m knobtop ARGS`` in a process of its own.

One wrapper for every module; where a module's copy differed (a longer timeout, a wider
COLUMNS for argparse's help, a working directory, variables added or dropped, stdin), the
difference is a parameter it passes."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import IO, Any

Stdin = int | IO[Any] | None


def knobtop_argv(*args: str) -> list[str]:
    """The command line of ``python -m knobtop ARGS`` (for a tmux pane or a Popen)."""
    return [sys.executable, "-m", "knobtop", *args]


def knobtop_env(columns: int | None = 200, env: Mapping[str, str] | None = None,
                drop: Iterable[str] = ()) -> dict[str, str]:
    """This process's environment for knobtop: ``drop`` left out (a name ending in ``*`` is
    a prefix), ``COLUMNS`` set unless ``columns`` is None, then ``env`` on top."""
    names = tuple(drop)
    prefixes = tuple(n[:-1] for n in names if n.endswith("*"))
    out = {k: v for k, v in os.environ.items()
           if k not in names and not (prefixes and k.startswith(prefixes))}
    if columns is not None:
        out["COLUMNS"] = str(columns)
    out.update(env or {})
    return out


def knobtop(*args: str, timeout: float = 60, columns: int | None = 200,
            cwd: Path | None = None, env: Mapping[str, str] | None = None,
            drop: Iterable[str] = (), stdin: Stdin = None,
            preexec: Callable[[], None] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m knobtop ARGS`` to its end (bounded by ``timeout``), output captured."""
    return subprocess.run(
        knobtop_argv(*args), capture_output=True, text=True, timeout=timeout, cwd=cwd,
        env=knobtop_env(columns, env, drop), stdin=stdin, check=False, preexec_fn=preexec,
    )


def knobtop_process(*args: str, columns: int | None = 200,
                    env: Mapping[str, str] | None = None, drop: Iterable[str] = (),
                    stdin: Stdin = subprocess.DEVNULL) -> subprocess.Popen[str]:
    """``python -m knobtop ARGS`` in the background, stdout and stderr captured."""
    return subprocess.Popen(
        knobtop_argv(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=knobtop_env(columns, env, drop), stdin=stdin,
    )
