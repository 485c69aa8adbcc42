"""One host's sshd crashes while two hosts are sampled: it comes back; the other loses nothing."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import EventCollector
from harness.binaries import require_binary
from harness.sshd import SshServer
from knobtop.hosts.base import HOST_CPU_FIELDS
from knobtop.hosts.procstat import OS_FIELDS
from knobtop.hosts.ssh import SshHost
from knobtop.journal import Error, JournalReader, Sample
from knobtop.journal.events import Event
from knobtop.lab import Sandbox
from knobtop.session.core import Session, SessionConfig

# Its assertions hold the machine's timing (sysbench's per-second lines, the sampler's
# schedule, deadlines): run with no other live test beside it (make test).
pytestmark = [pytest.mark.integration, pytest.mark.serial]

INTERVAL = 0.5
OUTAGE_SAMPLES = 8  # the crashed host stays down this many sampling intervals
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")  # /proc/stat's unit


@pytest.fixture
def crashing_client() -> Iterator[SshServer]:
    """A client host of this test's own (127.0.0.5): the test crashes its sshd, so the
    session's shared hosts stay as they are for other tests."""
    with SshServer(require_binary("sshd", "openssh-server"), listen="127.0.0.5") as server:
        yield server


def ssh_host(server: SshServer, name: str, known: Path) -> SshHost:
    return SshHost(f"{server.user}@{server.host}:{server.port}", name=name,
                   known_hosts=str(known), client_keys=[str(server.client_key_path)],
                   config_paths=[], agent_path=None)


def host_errors(events: list[Event], host: str, says: str) -> list[Error]:
    return [e for e in events
            if isinstance(e, Error) and e.source == f"host {host}" and says in e.message]


def samples(events: list[Event]) -> list[Sample]:
    return [e for e in events if isinstance(e, Sample)]


def cpu_jiffies(sample: Sample, host: str) -> int:
    """All CPU time the host has counted, in clock ticks (it grows every tick, busy or idle)."""
    row = sample.host[host]
    return round(sum(row[: len(HOST_CPU_FIELDS)]) * CLOCK_TICKS)


def proc_stat_jiffies() -> int:
    """The same total read by the test itself: the aggregate ``cpu`` line of /proc/stat
    (both hosts are this machine, reached over SSH on loopback)."""
    first = Path("/proc/stat").read_text().splitlines()[0].split()
    assert first[0] == "cpu", first
    return sum(int(v) for v in first[1 : 1 + len(HOST_CPU_FIELDS)])


class ProcStatAtSamples:
    """A listener that reads /proc/stat each time a sample is emitted (after the session
    read its hosts' metrics for it): the true total as that sample went out."""

    def __init__(self) -> None:
        self.at: dict[float, int] = {}

    def __call__(self, event: Event) -> None:
        if isinstance(event, Sample):
            self.at[event.t] = proc_stat_jiffies()


async def test_sshd_crash_of_one_host_loses_nothing_from_the_other(
    tmp_path: Path, ssh_target: SshServer, crashing_client: SshServer, mariadb: Sandbox,
    collector: EventCollector,
) -> None:
    known = tmp_path / "known_hosts"
    known.write_text(ssh_target.known_hosts_path.read_text()
                     + crashing_client.known_hosts_path.read_text())
    db, app = ssh_host(ssh_target, "db", known), ssh_host(crashing_client, "app", known)
    journal = tmp_path / "hosts.knobtop.jsonl"
    config = SessionConfig(profile="hosts", connection=mariadb.connection(),
                           journal_path=journal, interval=INTERVAL)
    session = Session(config, db, None, clients=(app,))
    session.listeners.append(collector)
    truth = ProcStatAtSamples()
    session.listeners.append(truth)
    await session.open()
    try:
        await collector.wait_for(lambda ev: sum(
            {"db", "app"} <= set(s.host) for s in samples(ev)) >= 3, timeout=60)
        crashing_client.kill()
        await collector.wait_for(lambda ev: bool(host_errors(ev, "app", "lost")), timeout=30)
        lost_at = len(collector.events)
        await collector.wait_for(
            lambda ev: len(samples(ev[lost_at:])) >= OUTAGE_SAMPLES, timeout=60)
        crashing_client.restart()
        await collector.wait_for(lambda ev: bool(host_errors(ev, "app", "is back")), timeout=60)
        back_at = len(collector.events)
        await collector.wait_for(lambda ev: any(
            "app" in s.host for s in samples(ev[back_at:])), timeout=60)
    finally:
        await session.close()
    events = collector.events
    lost = host_errors(events, "app", "lost")
    assert len(lost) == 1 and lost[0].gap
    back = host_errors(events, "app", "is back")
    assert len(back) == 1 and back[0].t > lost[0].t
    outage = [s for s in samples(events) if lost[0].t < s.t < back[0].t]
    assert len(outage) >= OUTAGE_SAMPLES
    # The sampler kept its schedule through the outage (a dead host does not hold it up)...
    assert all(b.t - a.t < 3 * INTERVAL for a, b in itertools.pairwise(outage))
    # ... and every sample carried the other host's OS metrics, a fresh reading each
    # interval: its CPU total grew from one sample to the next, and lies between what the
    # test read from /proc/stat itself two samples earlier and as the sample went out.
    assert all(len(s.host.get("db", [])) == len(OS_FIELDS) for s in outage)
    assert all("app" not in s.host for s in outage)
    cpu = [cpu_jiffies(s, "db") for s in outage]
    stale = [(i, a) for i, (a, b) in enumerate(itertools.pairwise(cpu), 1) if b <= a]
    assert not stale, f"samples repeating the one before (index, total): {stale} of {cpu}"
    everything = samples(events)
    for sample, total in zip(outage, cpu, strict=True):
        i = everything.index(sample)
        assert truth.at[everything[i - 2].t] < total <= truth.at[sample.t], (
            i, total, [truth.at[s.t] for s in everything[i - 2 : i + 1]])
    # Only the crashed host had anything to report; the journal holds the same story.
    assert not host_errors(events, "db", "")
    assert list(JournalReader(journal)) == events
