"""`knobtop lab --headless` end to end: real sandbox, real sysbench, a real journal."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from harness.cli import knobtop as run_knobtop
from knobtop.journal import Change, End, JournalReader, Knobs, Load, Phase, Sample
from knobtop.lab import Sandbox

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def stop_leftover_sandbox(tmp_path: Path) -> Iterator[None]:
    """If a knobtop run was killed (a timeout), its sandbox server is stopped here."""
    yield
    Sandbox(tmp_path / "lab").stop()


knobtop = partial(run_knobtop, timeout=240)  # a headless lab starts and runs within 240 s


def test_headless_lab_records_samples_load_phases_and_a_change(
    tmp_path: Path, sysbench_path: str
) -> None:
    lab_dir = tmp_path / "lab"
    journal = tmp_path / "run.knobtop.jsonl"
    result = knobtop(
        "lab", "--dir", str(lab_dir), "--headless", "--duration", "6", "--journal", str(journal),
        "--tables", "2", "--table-size", "2000", "--threads", "2",
        "--set", "innodb_flush_log_at_trx_commit=2@3",
    )
    assert result.returncode == 0, result.stderr
    assert "Loaded 2 sysbench tables x 2000 rows" in result.stderr
    reader = JournalReader(journal)
    events = list(reader)
    assert reader.header.profile == "lab"
    assert reader.header.server["flavor"] == "mariadb"
    kinds = [e.kind for e in events]
    assert isinstance(events[0], Knobs) and isinstance(events[-1], End)
    assert kinds.count("sample") >= 5
    assert kinds.count("load") >= 3
    phases = [e for e in events if isinstance(e, Phase)]
    assert [p.action for p in phases] == ["start", "stop"]
    assert phases[0].workload == "oltp_read_write" and phases[0].threads == 2
    change = next(e for e in events if isinstance(e, Change))
    assert (change.knob, change.new, change.result) == ("innodb_flush_log_at_trx_commit", "2", "ok")
    loads = [e for e in events if isinstance(e, Load)]
    assert all(ld.tps > 0 and ld.thds == 2 for ld in loads)
    samples = [e for e in events if isinstance(e, Sample)]
    assert samples[-1].t - samples[0].t >= 4
    # The lab's password never reaches the journal, and the server was stopped.
    password = Sandbox(lab_dir).password()
    assert password not in journal.read_text()
    assert Sandbox(lab_dir).running_pid() is None
    assert oct(journal.stat().st_mode & 0o777) == "0o600"

    # Second run reuses the datadir and skips loading the tables.
    again = knobtop(
        "lab", "--dir", str(lab_dir), "--headless", "--duration", "1", "--load", "none",
        "--journal", str(tmp_path / "again.knobtop.jsonl"), "--tables", "2",
        "--table-size", "2000",
    )
    assert again.returncode == 0, again.stderr
    assert "Loaded" not in again.stderr
    assert not [e for e in JournalReader(tmp_path / "again.knobtop.jsonl") if e.kind == "phase"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--headless"], "--headless needs --duration"),
        (["--interval", "0.01", "--headless", "--duration", "1"], "sampling interval 0.01 s"),
        (["--threads", "0", "--headless", "--duration", "1"], "threads must be between 1"),
        (["--set", "innodb_io_capacity", "--headless", "--duration", "1"], "write KNOB=VALUE"),
    ],
)
def test_bad_lab_arguments_name_the_problem(tmp_path: Path, args: list[str], says: str) -> None:
    result = knobtop("lab", "--dir", str(tmp_path / "lab"), *args, timeout=120)
    assert result.returncode == 2
    assert says in result.stderr
    assert "Traceback" not in result.stderr


def test_headless_lab_with_the_builtin_driver_prepares_and_reports(tmp_path: Path) -> None:
    """No sysbench needed: knobtop creates the tables and drives the load itself."""
    journal = tmp_path / "b.knobtop.jsonl"
    result = knobtop(
        "lab", "--dir", str(tmp_path / "lab"), "--headless", "--duration", "4",
        "--journal", str(journal), "--driver", "builtin", "--load", "oltp_point_select",
        "--tables", "2", "--table-size", "1500", "--threads", "2",
    )
    assert result.returncode == 0, result.stderr
    assert "Loaded 2 sysbench tables x 1500 rows" in result.stderr
    events = list(JournalReader(journal))
    phases = [e for e in events if isinstance(e, Phase)]
    assert phases[0].driver == "builtin" and phases[0].summary["version"].startswith("asyncmy")
    loads = [e for e in events if isinstance(e, Load)]
    assert loads and all(ld.src == "builtin@local" and ld.tps > 0 for ld in loads)
    assert {"tps", "qps", "r", "w", "o", "lat", "err", "reconn"} <= set(vars_of(loads[0]))


def vars_of(event: Load) -> dict[str, object]:
    from knobtop.journal.events import to_dict

    return to_dict(event)
