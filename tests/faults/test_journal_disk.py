"""The journal cannot be written: a read-only directory at start, a disk that fills mid-run."""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import functools
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from conftest import EventCollector
from faults.helpers import (
    SMALL,
    SmallDisk,
    global_variables,
    knobtop_process,
    knobtop_run,
    lab_session,
    mount_tmpfs,
    served_lab_session,
    unmount,
    wait_sysbench_gone,
    wait_until,
)
from harness.binaries import require_binary
from harness.procs import sysbench_processes
from harness.ui import until
from knobtop.journal import Error, Event, JournalReader, JournalWriter, Load, Note, Phase, Sample
from knobtop.journal.index import JournalIndex
from knobtop.lab import Sandbox
from knobtop.load.base import LoadError
from knobtop.recipes.reader import load_recipe
from knobtop.recipes.runner import RecipeRunner, RunFailed
from knobtop.ui.app import KnobtopApp
from knobtop.ui.widgets.journal_pane import JournalPane

# Its assertions hold the machine's timing (sysbench's per-second lines, the sampler's
# schedule, deadlines): run with no other live test beside it (make test).
pytestmark = [pytest.mark.integration, pytest.mark.serial]

LAB_LOAD = ("--load", SMALL.workload, "--threads", str(SMALL.threads), "--tables",
            str(SMALL.tables), "--table-size", str(SMALL.table_size))
# The three-arm sort-buffer recipe (bundled until issue 39 made it a curve)
SORT_ARMS = Path(__file__).parent.parent / "data" / "recipes" / "sort-buffer.toml"
FIX = "free space on that disk, or start again with another --journal path"


# Which full disk the tests get, in their ids: a real one (a 64 KiB tmpfs that runs out,
# ENOSPC) wherever mounting is allowed, i.e. as root (CI); elsewhere a file-size limit on the
# writer (EFBIG), the stand-in.  Root that cannot mount fails instead of quietly falling back;
# KNOBTOP_TEST_NO_MOUNT=1 asks for the stand-in on purpose.
DISK_MODE = ("rlimit-efbig" if os.environ.get("KNOBTOP_TEST_NO_MOUNT") or os.geteuid() != 0
             else "tmpfs-enospc")


@pytest.fixture(params=[DISK_MODE])
def small_disk(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SmallDisk]:
    where = tmp_path / "disk"
    mounted = request.param == "tmpfs-enospc"
    if mounted and not mount_tmpfs(where, "size=64k,mode=0700"):
        pytest.fail("running as root but cannot mount a tmpfs for the full-disk test; "
                    "give the container CAP_SYS_ADMIN, or set KNOBTOP_TEST_NO_MOUNT=1 to run "
                    "the file-size-limit stand-in instead")
    where.mkdir(exist_ok=True)
    disk = SmallDisk(where, mounted)
    try:
        yield disk
    finally:
        disk.restore()
        if mounted:
            unmount(where)


def journal_reads_cleanly(path: Path) -> list[Event]:
    """Every complete line decodes; at most the last line is torn (the failed write)."""
    events = list(JournalReader(path))
    with JournalIndex(path) as index:
        index.build()
        assert index.problems == []
        assert len(index) == len(events)
    return events


def sysbench_seconds(events: list[Event]) -> list[int]:
    """sysbench's own numbering of its per-second reports (``[ 7s ]``), as journaled."""
    return [e.s for e in events if isinstance(e, Load)]


def test_unwritable_journal_directory_refuses_to_start(
    sandbox: Sandbox, unwritable_dir: Path
) -> None:
    info = sandbox.connection()
    before = asyncio.run(global_variables(info))
    journal = unwritable_dir / "lab.knobtop.jsonl"
    result = knobtop_run("lab", "--dir", str(sandbox.root), "--headless", "--duration", "30",
                         "--journal", str(journal), *LAB_LOAD, timeout=120)
    assert result.returncode == 2, result.stderr
    err = " ".join(result.stderr.split())  # rich may fold a long line
    assert f"cannot create the journal {journal}" in err
    assert "choose another --journal path" in err
    assert "Traceback" not in result.stderr + result.stdout
    assert "load start" not in err and not sysbench_processes(str(sandbox.socket))
    assert not journal.exists()
    assert asyncio.run(global_variables(info)) == before
    assert sandbox.running_pid() is not None  # the lab joined it, so it left it running


def test_unwritable_journal_is_refused_before_the_sandbox_starts(
    tmp_path: Path, unwritable_dir: Path
) -> None:
    """Nothing slow or visible happens first: no sandbox server, no tables."""
    lab_dir = tmp_path / "never-started"
    journal = unwritable_dir / "lab.knobtop.jsonl"
    result = knobtop_run("lab", "--dir", str(lab_dir), "--headless", "--duration", "30",
                         "--journal", str(journal), *LAB_LOAD, timeout=60)
    assert result.returncode == 2, result.stderr
    err = " ".join(result.stderr.split())
    assert f"cannot create the journal {journal}" in err
    assert "Starting the sandbox" not in result.stdout + result.stderr
    assert not lab_dir.exists()
    assert not journal.exists()


async def test_disk_full_mid_run_stops_the_session(
    sandbox: Sandbox, small_disk: SmallDisk, collector: EventCollector
) -> None:
    info = sandbox.connection()
    journal = small_disk.path / "full.knobtop.jsonl"
    session = lab_session(sandbox, journal)
    session.listeners.append(collector)
    marker = f"--mysql-socket={sandbox.socket}"

    def failed(events: list[Event]) -> bool:
        return any(isinstance(e, Error) and e.source == "journal" for e in events)

    await session.open()
    try:
        await session.start_load()
        await collector.wait_for(lambda ev: sum(isinstance(e, Load) for e in ev) >= 2, 60)
        before = await global_variables(info)
        small_disk.fill()
        await collector.wait_for(failed, timeout=30)
        # Sampling ends and the load stops on their own, before anyone closes the session.
        await collector.wait_for(lambda ev: any(
            isinstance(e, Phase) and e.action == "stop" for e in ev), timeout=30)
        assert session.sampler.task is not None
        done, _ = await asyncio.wait({session.sampler.task}, timeout=30)
        assert done and session.driver is not None and not session.driver.running
        assert sysbench_processes(marker) == {}
        refused = await session.set_knob("innodb_io_capacity", "4321")
        with pytest.raises(LoadError, match="cannot write the journal"):
            await session.start_load()
    finally:
        await session.close()
    assert refused.result == "refused" and "Nothing was changed" in refused.message
    assert await global_variables(info) == before
    events = collector.events
    error = next(i for i, e in enumerate(events) if isinstance(e, Error) and e.source == "journal")
    failure = events[error]
    assert isinstance(failure, Error) and failure.gap
    assert f"cannot write the journal {journal}" in failure.message and FIX in failure.message
    # The screen heard that the load stopped; no more samples came after the failure
    # (at most the one whose write failed).
    assert any(isinstance(e, Phase) and e.action == "stop" for e in events[error:])
    assert sum(isinstance(e, Sample) for e in events[error:]) <= 1
    # On disk: exactly every event handed to the journal before the failing write (the
    # listener saw each one the session emitted; the one whose write failed comes after the
    # error), every line whole but a torn last one.
    on_disk = journal_reads_cleanly(journal)
    assert on_disk == events[:error]
    assert len(on_disk) >= 3 and isinstance(events[error + 1], Sample | Load | Phase)
    seconds = sysbench_seconds(on_disk)
    assert seconds == list(range(1, len(seconds) + 1)) and len(seconds) >= 2


async def test_disk_full_in_the_live_screen_is_shown(
    sandbox: Sandbox, small_disk: SmallDisk
) -> None:
    with served_lab_session(sandbox, small_disk.path / "ui.knobtop.jsonl") as session:
        app = KnobtopApp(session, start_load=True)
        async with app.run_test(size=(160, 48)) as pilot:
            await until(pilot, lambda: app.board is not None
                        and app.board.series["load_tps"].last is not None, timeout=60)
            small_disk.fill()
            pane = app.live.query_one(JournalPane)

            def shown() -> str:
                return " ".join(" ".join(line.text for line in pane.lines).split())

            await until(pilot, lambda: "journal: cannot write the journal" in shown(), timeout=30)
            await until(pilot, lambda: app.board is not None and not app.board.load_running,
                        timeout=30)
            assert app.is_running and app.return_code is None
            assert "load stop" in shown()
            assert "NOT RECORDING" in app._state  # the status bar says it too, and a notice
            assert any(n.title == "journal" and n.severity == "error" for n in app._notifications)
            await pilot.press("q")
        assert app.return_code == 0


def test_disk_full_ends_a_headless_run_cleanly(
    sandbox: Sandbox, small_disk: SmallDisk
) -> None:
    info = sandbox.connection()
    before = asyncio.run(global_variables(info))
    journal = small_disk.path / "cli.knobtop.jsonl"
    proc = knobtop_process("lab", "--dir", str(sandbox.root), "--headless", "--duration",
                           "120", "--interval", "0.25", "--journal", str(journal), *LAB_LOAD)
    marker = f"--mysql-socket={sandbox.socket}"
    try:
        def loads() -> int:
            lines = journal.read_bytes().split(b"\n")[1:-1] if journal.exists() else []
            return sum(orjson.loads(line).get("ev") == "load" for line in lines)

        wait_until(lambda: loads() >= 6, 60, "six load lines in the journal", proc)
        before_fill = journal.read_bytes()
        small_disk.fill(proc.pid)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1, err
    text = " ".join(err.split())  # rich may fold a long line
    assert f"error (journal): cannot write the journal {journal}" in text
    assert FIX in text
    assert "load stop" in text.split("cannot write the journal", 1)[1]
    assert "the journal could not be written" in text
    assert "Traceback" not in out + err
    assert wait_sysbench_gone(marker) == {}
    assert asyncio.run(global_variables(info)) == before
    on_disk = journal_reads_cleanly(journal)
    # Every line the test read before the disk filled is still there, unchanged, and
    # nothing between: sysbench's reports are numbered 1, 2, 3... by sysbench itself, and
    # the load started (the log line said so) is the first phase on disk.
    whole = before_fill[: before_fill.rfind(b"\n") + 1]
    assert journal.read_bytes().startswith(whole)
    seconds = sysbench_seconds(on_disk)
    assert seconds == list(range(1, len(seconds) + 1)) and len(seconds) >= 6
    assert [e.action for e in on_disk if isinstance(e, Phase)] == ["start"]


def test_no_headerless_journal_when_the_disk_is_already_full(
    small_disk: SmallDisk, sandbox: Sandbox
) -> None:
    """A journal that cannot even take its header is not left behind, and nothing ran."""
    journal = small_disk.path / "never.knobtop.jsonl"
    result = knobtop_run("lab", "--dir", str(sandbox.root), "--headless", "--duration", "30",
                         "--journal", str(journal), *LAB_LOAD, timeout=120,
                         preexec=small_disk.full_from_start())
    assert result.returncode == 2, result.stderr
    assert f"cannot create the journal {journal}" in " ".join(result.stderr.split())
    assert "Traceback" not in result.stderr + result.stdout
    assert "load start" not in result.stderr
    assert not journal.exists()


async def test_a_recipe_stops_at_once_when_the_journal_fills_up(
    sandbox: Sandbox, small_disk: SmallDisk, collector: EventCollector
) -> None:
    """Not at the end of the step: an unrecorded experiment is not worth two more minutes.
    The knobs of the arm go back to the baseline even though that is no longer journaled."""
    recipe = load_recipe(SORT_ARMS)
    recipe = recipe.changed(
        duration=600, warmup=1, pause=0.0, threads=(SMALL.threads,), replicates=1,
        tables=SMALL.tables, table_size=SMALL.table_size, order="interleaved",
        waits=dataclasses.replace(recipe.waits, timeout=8.0))
    info = sandbox.connection()
    baseline = (await global_variables(info))["sort_buffer_size"]
    session = lab_session(sandbox, small_disk.path / "recipe.knobtop.jsonl")
    session.listeners.append(collector)
    await session.open()
    runner = RecipeRunner(session, recipe)
    try:
        task = asyncio.create_task(runner.run())
        await collector.wait_for(lambda ev: sum(isinstance(e, Load) for e in ev) >= 2, 120)
        changed = (await global_variables(info))["sort_buffer_size"]
        small_disk.fill()
        with pytest.raises(RunFailed, match="cannot write the journal"):
            await asyncio.wait_for(task, timeout=60)  # the step itself would last 600 s
    finally:
        await session.close()
    assert changed != baseline
    assert (await global_variables(info))["sort_buffer_size"] == baseline
    assert not sysbench_processes(f"--mysql-socket={sandbox.socket}")


# -- fsync fails: a real one ------------------------------------------------------------------


@pytest.fixture
def lying_disk(tmp_path: Path) -> Iterator[Path]:
    """A directory whose writes succeed but whose fsync fails, for real: ext4 on a loop
    device whose 16 MiB backing file sits (sparse) on a 2 MiB tmpfs.  Writes land in the
    page cache; writing them back runs the tmpfs out of space, and fsync reports it."""
    if os.geteuid() != 0:
        pytest.fail("the fsync-failure test needs root (a loop device and two mounts); "
                    "no user-level way makes a real fsync fail")
    tiny, mnt = tmp_path / "tiny", tmp_path / "mnt"
    mnt.mkdir()
    assert mount_tmpfs(tiny, "size=2m"), "cannot mount a tmpfs (root without CAP_SYS_ADMIN?)"
    tools = {name: require_binary(name, pkg) for name, pkg in
             (("losetup", "mount"), ("mkfs.ext4", "e2fsprogs"), ("mount", "mount"))}
    loop = ""
    try:
        backing = tiny / "backing"
        with backing.open("wb") as fh:
            fh.truncate(16 << 20)
        run = functools.partial(subprocess.run, capture_output=True, text=True, timeout=60,
                                check=True)
        run([tools["mkfs.ext4"], "-q", "-F", str(backing)])
        loop = run([tools["losetup"], "-f", "--show", str(backing)]).stdout.strip()
        run([tools["mount"], loop, str(mnt)])
        try:
            yield mnt
        finally:
            unmount(mnt)
    finally:
        if loop:
            subprocess.run([tools["losetup"], "-d", loop], capture_output=True, timeout=60,
                           check=False)
        unmount(tiny)


def test_a_failed_fsync_stops_the_writer_and_says_why(lying_disk: Path) -> None:
    """The writer's policy: after a failed fsync the data may not be on disk, so every
    later append raises that error and nothing more is written."""
    path = lying_disk / "sync.knobtop.jsonl"
    header = JournalReader(Path(__file__).parent.parent / "data" / "journals" /
                           "lab-80s.knobtop.jsonl").header
    writer = JournalWriter(path, header, fsync_interval=0.05)
    text = "x" * 60_000
    try:
        for i in range(60):  # ~3.6 MB: more than the tmpfs under the loop device holds
            writer.append(Note(t=float(i), wall=float(i), text=text))  # page cache: fine
        wait_until(lambda: writer.failed is not None, 30, "the fsync thread's failure")
        failure = writer.failed
        assert isinstance(failure, OSError) and failure.errno in (errno.ENOSPC, errno.EIO)
        size = path.stat().st_size
        with pytest.raises(OSError) as later:
            writer.append(Note(t=99.0, wall=99.0, text="after the failure"))
        assert later.value.errno == failure.errno and str(path) in str(later.value)
        assert path.stat().st_size == size  # nothing written after the failure
        assert writer.events_written == 60
    finally:
        writer.close()  # does not raise: the failure was already reported
    assert writer.failed is failure
