"""kill -9 of a real `knobtop lab --headless` mid-run, then the next `knobtop lab` on its dir."""

from __future__ import annotations

import itertools
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from faults.helpers import SMALL, knobtop_process, knobtop_run, wait_sysbench_gone, wait_until
from harness.procs import sysbench_processes
from knobtop.journal import End, JournalReader, Load, Sample
from knobtop.journal.index import JournalIndex
from knobtop.lab import Sandbox

# Its assertions hold the machine's timing (sysbench's per-second lines, the sampler's
# schedule, deadlines): run with no other live test beside it (make test).
pytestmark = [pytest.mark.integration, pytest.mark.serial]

INTERVAL = 0.5
LAB_LOAD = ("--load", SMALL.workload, "--threads", str(SMALL.threads), "--tables",
            str(SMALL.tables), "--table-size", str(SMALL.table_size))


@pytest.fixture
def lab_dir(tmp_path: Path) -> Iterator[Path]:
    """The lab's directory; whatever server the runs leave there is stopped at the end."""
    where = tmp_path / "lab"
    yield where
    Sandbox(where).stop()


def servers_of(lab: Path) -> list[int]:
    """Live mariadbd processes started with this lab's my.cnf."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if f"--defaults-file={lab / 'my.cnf'}".encode() in cmd and state != "Z":
            found.append(int(pid))
    return found


def journal_lines(path: Path) -> list[dict[str, object]]:
    lines = path.read_bytes().split(b"\n")[1:-1] if path.exists() else []
    return [orjson.loads(line) for line in lines]


def test_kill_9_mid_run_loses_at_most_a_second_and_the_next_lab_reuses_the_server(
    lab_dir: Path, tmp_path: Path, sysbench_path: str
) -> None:
    journal = tmp_path / "killed.knobtop.jsonl"
    proc = knobtop_process("lab", "--dir", str(lab_dir), "--headless", "--duration", "120",
                           "--interval", str(INTERVAL), "--journal", str(journal), *LAB_LOAD)
    marker = f"--mysql-socket={lab_dir / 'mysqld.sock'}"
    try:
        wait_until(lambda: sum(e["ev"] == "load" for e in journal_lines(journal)) >= 3,
                   120, "three load lines in the journal", proc)
        assert sysbench_processes(marker)
        # The kill falls at a moment of the test's own choosing, not right after a line it
        # saw on disk (a writer that holds lines back would look whole then).
        kill_at = time.monotonic() + 1.5 * INTERVAL
        wait_until(lambda: time.monotonic() >= kill_at, 5, "the moment to kill", proc)
        killed_at = time.time()
        os.kill(proc.pid, signal.SIGKILL)
        killed_by = time.time()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL

    # The journal reads cleanly (a torn last line at most) and lost at most ~a second.
    reader = JournalReader(journal)
    events = list(reader)
    with JournalIndex(journal) as index:
        index.build()
        assert index.problems == [] and len(index) == len(events)
    assert not any(isinstance(e, End) for e in events)
    samples = [e for e in events if isinstance(e, Sample)]
    assert len(samples) >= 3
    assert any(isinstance(e, Load) for e in events)
    # Every sample up to the kill is there: no gap between two of them reaches two
    # intervals (one lost line would make one) ...
    gaps = [b.t - a.t for a, b in itertools.pairwise(samples)]
    assert all(0 < g < 2 * INTERVAL for g in gaps), gaps
    # ... and the journal ends within one interval of the kill (the test's own clock),
    # give or take the lateness the sampler itself showed before it (a sample goes out
    # when its poll has answered).
    late = max(max(gaps) - INTERVAL, 0.0) + max(s.lat for s in samples)
    assert samples[-1].wall <= round(killed_by, 3)  # a wall time is rounded to 1 ms
    assert killed_at - samples[-1].wall <= INTERVAL + late, (killed_at, samples[-1], late)

    # No sysbench left behind once the stated grace time is over (TERM, KILL 3 s on).
    assert wait_sysbench_gone(marker, grace=10) == {}

    # sysbench's password file (given with --config-file) did not outlive knobtop either.
    password = Sandbox(lab_dir).password()
    assert not [f for f in Path("/tmp").glob("knobtop-sysbench-*.cfg")
                if password in f.read_text(errors="replace")]

    # The sandbox server outlived knobtop (it runs in its own session) ...
    server = Sandbox(lab_dir).running_pid()
    assert server is not None and servers_of(lab_dir) == [server]
    # ... and the next `knobtop lab` on the same --dir joins it instead of starting another.
    again = tmp_path / "again.knobtop.jsonl"
    result = knobtop_run("lab", "--dir", str(lab_dir), "--headless", "--duration", "2",
                         "--interval", str(INTERVAL), "--journal", str(again), *LAB_LOAD)
    assert result.returncode == 0, result.stderr
    assert "already running" in result.stderr and "Loaded" not in result.stderr
    assert "Traceback" not in result.stderr
    second = list(JournalReader(again))
    assert isinstance(second[-1], End) and sum(isinstance(e, Sample) for e in second) >= 2
    assert any(isinstance(e, Load) and e.tps > 0 for e in second)
    assert servers_of(lab_dir) == [server]  # still the one server, and no second one
    assert wait_sysbench_gone(marker) == {}
