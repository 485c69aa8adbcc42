"""Fixtures for the fault tests: a sandbox of their own, a disk that can be made full, a
directory that cannot be written.  All real: a small tmpfs mounted for the test (root),
else a file-size limit (RLIMIT_FSIZE, any user) or permissions.  KNOBTOP_TEST_NO_MOUNT=1
runs the fallbacks where mounting would work."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from faults.helpers import SMALL, SmallDisk, mount_tmpfs, sysbench_on, unmount
from knobtop.lab import Sandbox
from knobtop.load.prepare import prepare_tables


@pytest.fixture
def sandbox(tmp_path: Path, sysbench_path: str) -> Iterator[Sandbox]:
    """A running sandbox of the test's own (it may crash it, or have `knobtop lab --dir`
    join it), with sysbench tables loaded."""
    box = Sandbox(tmp_path / "lab")
    info = box.start()
    try:
        asyncio.run(prepare_tables(info, sysbench_on(box), SMALL))
        yield box
    finally:
        box.stop()


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[SmallDisk]:
    """A 64 KiB tmpfs (or a file-size limit) for the journal; unmounted at the end."""
    where = tmp_path / "disk"
    mounted = not os.environ.get("KNOBTOP_TEST_NO_MOUNT") and mount_tmpfs(
        where, "size=64k,mode=0700")
    where.mkdir(exist_ok=True)
    disk = SmallDisk(where, mounted)
    try:
        yield disk
    finally:
        disk.restore()
        if mounted:
            unmount(where)


@pytest.fixture
def unwritable_dir(tmp_path: Path) -> Iterator[Path]:
    """A journal directory nobody can create a file in: a read-only tmpfs (root), a 0555
    directory (any other user), or, for root that may not mount, a path under a file."""
    where = tmp_path / "ro"
    if not os.environ.get("KNOBTOP_TEST_NO_MOUNT") and mount_tmpfs(where, "ro,size=16k"):
        try:
            yield where
        finally:
            unmount(where)
        return
    if os.geteuid() != 0:
        where.mkdir(exist_ok=True)
        where.chmod(0o555)
        try:
            yield where
        finally:
            with contextlib.suppress(OSError):
                where.chmod(0o755)
        return
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    yield blocker / "journals"
