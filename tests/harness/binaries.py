"""Locate external binaries needed by integration tests."""

from __future__ import annotations

import os
import shutil

import pytest

_EXTRA_DIRS = ("/usr/sbin", "/sbin")


def in_ci() -> bool:
    value = os.environ.get("CI", "").strip().lower()
    return value not in ("", "false", "0")


def require_binary(name: str, apt_package: str) -> str:
    """Return the absolute path of ``name``, searching PATH plus /usr/sbin and /sbin.

    If it is missing, fail the test when running in CI (env var CI set to anything but
    "", "false" or "0"), otherwise skip it. Either way the message names the binary and
    the exact install command.
    """
    search = os.pathsep.join([os.environ.get("PATH", os.defpath), *_EXTRA_DIRS])
    found = shutil.which(name, path=search)
    if found is not None:
        return os.path.abspath(found)
    message = (
        f"required binary {name!r} not found on PATH or in {', '.join(_EXTRA_DIRS)}; "
        f"install it with: apt-get install -y {apt_package}"
    )
    if in_ci():
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def require_file(path: str, apt_package: str) -> str:
    """Return ``path`` if it exists (a server plugin, a provider library); if not, fail in CI
    and skip elsewhere, naming the file and the exact install command."""
    if os.path.exists(path):
        return path
    message = f"required file {path} not found; install it with: apt-get install -y {apt_package}"
    if in_ci():
        pytest.fail(message, pytrace=False)
    pytest.skip(message)
