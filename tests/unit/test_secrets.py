"""Secrets stay out of journals by construction; the writer's safety net matches a whole
free-text field only, so a short or common password ("1", "root", "knobtop", "test")
never turns a version, a user, a database or a knob value into "[redacted]"."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from knobtop.journal import Change, JournalReader, Knobs, Note
from knobtop.journal.events import Error, Header
from knobtop.journal.writer import FREE_TEXT, REDACTED, JournalWriter
from knobtop.lab import LAB_USER, Sandbox, native_password_hash


def fields(path: Path) -> Iterator[tuple[str, str]]:
    """Every string value in the journal with the name of the field that holds it."""

    def walk(key: str, value: object) -> Iterator[tuple[str, str]]:
        if isinstance(value, str):
            yield key, value
        elif isinstance(value, dict):
            for k, v in value.items():
                yield from walk(k, v)
        elif isinstance(value, list):
            for v in value:
                yield from walk(key, v)

    for line in path.read_bytes().splitlines():
        yield from walk("", orjson.loads(line))


# --------------------------------------------------------------------------- the safety net


@pytest.mark.parametrize("secret", ["1", "root", "knobtop", "test", "0.1", "db1"])
def test_the_net_leaves_names_and_values_alone(tmp_path: Path, secret: str) -> None:
    path = tmp_path / "n.knobtop.jsonl"
    head = Header(format=1, knobtop="0.1", profile="db1", started_wall=1.0, interval=1.0,
                  server={"flavor": "mariadb", "version": "10.11.1", "user": "root",
                          "database": "test", "socket": "/tmp/test_1/mysqld.sock"})
    writer = JournalWriter(path, head, secrets=(secret,))
    writer.append(Knobs(t=0.0, wall=1.0, values={"innodb_flush_log_at_trx_commit": "1",
                                                 "innodb_io_capacity": "201"}))
    writer.append(Change(t=1.0, wall=2.0, knob="innodb_flush_log_at_trx_commit", requested="1",
                         old="2", new="1", method="set_global", result="ok",
                         message="set 1 on db1 as root"))
    writer.append(Note(t=2.0, wall=3.0, text=f"{secret} is part of this note"))
    writer.close()
    reader = JournalReader(path)
    events = list(reader)
    assert reader.header == head
    assert isinstance(events[0], Knobs)
    assert events[0].values["innodb_flush_log_at_trx_commit"] == "1"
    change = events[1]
    assert isinstance(change, Change)
    assert (change.requested, change.old, change.new) == ("1", "2", "1")
    assert change.message == "set 1 on db1 as root"
    assert isinstance(events[2], Note) and events[2].text == f"{secret} is part of this note"
    assert REDACTED.encode() not in path.read_bytes()


@pytest.mark.parametrize("secret", ["1", "hunter2", 'quo"te\\back', "ev", "wall"])
def test_the_net_catches_a_whole_free_text_field(tmp_path: Path, secret: str) -> None:
    """A password pasted as a note or returned whole as an error is written as [redacted]."""
    path = tmp_path / "w.knobtop.jsonl"
    head = Header(format=1, knobtop="t", profile="p", started_wall=1.0, interval=1.0)
    writer = JournalWriter(path, head, secrets=(secret,))
    writer.append(Note(t=1.0, wall=2.0, text=secret))
    writer.append(Error(t=2.0, wall=3.0, source="load", message=secret))
    writer.append(Change(t=3.0, wall=4.0, knob="k", requested="v", old=None, new=None,
                         method="set_global", result="failed", message="x",
                         warnings=["fine", secret]))
    writer.close()
    events = list(JournalReader(path))  # still valid JSON whatever the secret is
    assert isinstance(events[0], Note) and events[0].text == REDACTED
    assert isinstance(events[1], Error) and events[1].message == REDACTED
    assert isinstance(events[2], Change) and events[2].warnings == ["fine", REDACTED]
    assert all(value != secret for key, value in fields(path) if key in FREE_TEXT)


def test_the_lab_user_is_made_from_the_hash_not_the_password() -> None:
    """The statement that creates the lab user (and any error quoting it) never holds the
    password: MariaDB's PASSWORD('1') is this value."""
    assert native_password_hash("1") == "*E6CC90B878B948C35E92B003C792C46C58C4AF40"
    assert re.fullmatch(r"\*[0-9A-F]{40}", native_password_hash("it's\\ a [test]"))


# --------------------------------------------------------------------------- real sessions


def lab_run(tmp_path: Path, password: str, *sets: str) -> tuple[Path, str]:
    """`knobtop lab --headless` on a new sandbox whose lab user has ``password`` (the lab
    reads it from client.cnf, as it would read one it made itself)."""
    lab = tmp_path / "lab"
    lab.mkdir()
    cnf = lab / "client.cnf"
    fd = os.open(cnf, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(f"[client]\nuser={LAB_USER}\npassword={password}\n")
    journal = tmp_path / "run.knobtop.jsonl"
    args = ["lab", "--dir", str(lab), "--headless", "--duration", "4", "--journal",
            str(journal), "--tables", "1", "--table-size", "200", "--threads", "1"]
    for change in sets:
        args += ["--set", change]
    try:
        result = subprocess.run(
            [sys.executable, "-m", "knobtop", *args], capture_output=True, text=True,
            timeout=240, env={**os.environ, "COLUMNS": "200"}, check=False,
        )
    finally:
        Sandbox(lab).stop()  # a run killed by the timeout leaves no server behind
    assert result.returncode == 0, result.stderr
    return journal, result.stdout + result.stderr


@pytest.mark.integration
@pytest.mark.parametrize("password", ["1", "root", "knobtop", "test"])
def test_a_short_or_common_password_leaves_the_journal_intact(
    tmp_path: Path, sysbench_path: str, password: str
) -> None:
    journal, output = lab_run(
        tmp_path, password,
        "innodb_flush_log_at_trx_commit=2@0", "innodb_flush_log_at_trx_commit=1@1",
        "innodb_io_capacity=201@1",
    )
    data = journal.read_bytes()
    assert REDACTED.encode() not in data and REDACTED not in output
    reader = JournalReader(journal)
    server = reader.header.server
    assert re.fullmatch(r"\d+\.\d+\.\d+", server["version"]), server
    assert server["version_text"].startswith(server["version"])
    assert server["user"] == LAB_USER and server["socket"].endswith("mysqld.sock")
    assert reader.header.knobtop and reader.header.profile == "lab"
    events = list(reader)
    changes = [(e.knob, e.old, e.new, e.result) for e in events if isinstance(e, Change)]
    assert changes == [("innodb_flush_log_at_trx_commit", "1", "2", "ok"),
                       ("innodb_flush_log_at_trx_commit", "2", "1", "ok"),
                       ("innodb_io_capacity", "200", "201", "ok"),
                       # a headless run puts its --set changes back at the end (#14 item 2)
                       ("innodb_io_capacity", "201", "200", "ok")]
    workloads = {e.workload for e in events if e.kind == "phase"}  # type: ignore[attr-defined]
    assert workloads == {"oltp_read_write"}
    # Where the password's text appears whole, it is a name or a value that happens to
    # be the same word (the lab user "knobtop", a knob's "1"), never a message or a note.
    whole = {key for key, value in fields(journal) if value == password}
    assert not whole & FREE_TEXT, whole


@pytest.mark.integration
def test_a_long_unique_password_is_nowhere_in_the_journal_or_the_output(
    tmp_path: Path, sysbench_path: str
) -> None:
    password = "kt-" + secrets.token_hex(16)
    journal, output = lab_run(tmp_path, password, "innodb_io_capacity=201@0")
    assert password.encode() not in journal.read_bytes()
    assert password not in output
    for log in (tmp_path / "lab").rglob("*.log"):
        assert password.encode() not in log.read_bytes(), log
    assert any(isinstance(e, Change) and e.result == "ok" for e in JournalReader(journal))
