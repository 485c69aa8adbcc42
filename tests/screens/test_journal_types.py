"""Journals with fields of the wrong type: every reader (report, compare, replay, follow) says
``FILE:LINE: field X should be Y`` and goes no further with that line; a newer format is
refused with the version it needs; any JSON spacing is read alike by the index and the
reader."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from harness import paths as repo_paths
from harness.ui import until
from knobtop.cli import following_app, main, replay_for
from knobtop.journal import FORMAT_VERSION, JournalFormatError, JournalReader, JournalWriter
from knobtop.journal.index import JournalIndex
from knobtop.ui.replay_app import ReplayApp
from knobtop.ui.widgets.journal_pane import JournalPane

RECORDED = repo_paths.DATA / "journals" / "lab-read-write.knobtop.jsonl"
LINES: list[dict[str, Any]] = [orjson.loads(ln) for ln in RECORDED.read_bytes().splitlines()]


def first_line(kind: str) -> int:
    """1-based file line of the first event of ``kind`` (the header is line 1)."""
    return next(n for n, d in enumerate(LINES, start=1) if d["ev"] == kind)


# (what the case is, the line it edits, the field, the bad value, what the message says)
HEADER_CASES: list[tuple[str, str, Any, str]] = [
    ("server-list", "server", [], "field server should be an object (the header has [])"),
    ("started-null", "started_wall", None,
     "field started_wall should be a number (the header has null)"),
    ("interval-text", "interval", "1s",
     'field interval should be a number (the header has "1s")'),
    ("interval-zero", "interval", 0, "field interval should be above 0"),
    ("counters-numbers", "counters", [1, 2], "field counters should be a list of strings"),
    ("profile-object", "profile", {}, "field profile should be a string"),
    ("format-text", "format", "1", "field format should be an integer"),
    ("format-zero", "format", 0, "field format should be 1 to"),
    ("format-newer", "format", 99,
     f"written by a newer knobtop: format 99, this knobtop reads up to {FORMAT_VERSION}; "
     "upgrade knobtop"),
]
EVENT_CASES = [
    ("change-knob-number", "change", "knob", 123,
     "field knob should be a string (a change event has 123)"),
    ("change-old-list", "change", "old", [1], "field old should be a string or null"),
    ("load-tps-text", "load", "tps", "x", 'field tps should be a number (a load event has "x")'),
    ("load-threads-float", "load", "thds", 4.5, "field thds should be an integer"),
    ("load-err-bool", "load", "err", True, "field err should be a number"),
    ("sample-v-object", "sample", "v", {"a": 1},
     "field v should be a list of numbers or nulls"),
    ("sample-v-strings", "sample", "v", ["1", "2"],
     "field v should be a list of numbers or nulls"),
    ("sample-host-text", "sample", "host", "cpu", "field host should be an object of lists"),
    ("knobs-values-list", "knobs", "values", [1],
     "field values should be an object of strings or nulls"),
    ("knobs-value-number", "knobs", "values", {"sort_buffer_size": 5},
     "field values should be an object of strings or nulls"),
    ("phase-threads-text", "phase", "threads", "4", "field threads should be an integer"),
    ("end-samples-null", "end", "samples", None, "field samples should be an integer"),
]


def write_journal(path: Path, edit: Callable[[list[dict[str, Any]]], None]) -> Path:
    lines = [dict(d) for d in LINES]
    edit(lines)
    path.write_bytes(b"".join(orjson.dumps(d) + b"\n" for d in lines))
    return path


def bad_header(tmp_path: Path, field: str, value: Any) -> Path:
    return write_journal(tmp_path / "bad.knobtop.jsonl",
                         lambda lines: lines[0].update({field: value}))


def bad_event(tmp_path: Path, kind: str, field: str, value: Any) -> tuple[Path, int]:
    line = first_line(kind)
    path = write_journal(tmp_path / "bad.knobtop.jsonl",
                         lambda lines: lines[line - 1].update({field: value}))
    return path, line


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    err = capsys.readouterr().err
    return code, " ".join(err.split())  # rich may fold a long line


COMMANDS = [("report",), ("compare", "--format", "text")]


def argv(command: tuple[str, ...], path: Path) -> list[str]:
    if command[0] == "compare":
        return ["compare", str(path), str(RECORDED), *command[1:]]
    return [command[0], str(path)]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize(("case", "field", "value", "says"), HEADER_CASES,
                         ids=[c[0] for c in HEADER_CASES])
def test_report_and_compare_name_the_header_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: tuple[str, ...],
    case: str, field: str, value: Any, says: str
) -> None:
    path = bad_header(tmp_path, field, value)
    code, err = cli(capsys, *argv(command, path))
    assert code == 2
    assert err.startswith(f"knobtop: {path}:1: {says}"), err
    assert "Traceback" not in err


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize(("case", "kind", "field", "value", "says"), EVENT_CASES,
                         ids=[c[0] for c in EVENT_CASES])
def test_report_and_compare_name_the_event_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: tuple[str, ...],
    case: str, kind: str, field: str, value: Any, says: str
) -> None:
    path, line = bad_event(tmp_path, kind, field, value)
    code, err = cli(capsys, *argv(command, path))
    assert code == 2
    assert err.startswith(f"knobtop: {path}:{line}: {says}"), err


@pytest.mark.parametrize(("case", "field", "value", "says"), HEADER_CASES,
                         ids=[c[0] for c in HEADER_CASES])
def test_replay_and_follow_refuse_the_header_before_any_screen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, field: str, value: Any,
    says: str
) -> None:
    path = bad_header(tmp_path, field, value)
    with pytest.raises(JournalFormatError) as replay_error:
        replay_for(path)
    assert str(replay_error.value).startswith(f"{path}:1: {says}")
    with pytest.raises(JournalFormatError) as follow_error:
        following_app(path, history=900)
    assert str(follow_error.value).startswith(f"{path}:1: {says}")
    for command in ("replay", "follow"):
        code, err = cli(capsys, command, str(path))
        assert code == 2 and err.startswith(f"knobtop: {path}:1: {says}"), err


@pytest.mark.parametrize(("case", "kind", "field", "value", "says"), EVENT_CASES,
                         ids=[c[0] for c in EVENT_CASES])
async def test_replay_skips_the_line_and_says_why(
    tmp_path: Path, case: str, kind: str, field: str, value: Any, says: str
) -> None:
    path, line = bad_event(tmp_path, kind, field, value)
    replay = replay_for(path)
    app = ReplayApp(replay)
    expected = f"line {line}"
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            await until(pilot, lambda: app.frame is not None)
            await pilot.press("end")  # the whole (short) journal is in the frame's window
            await until(pilot, lambda: any(
                expected in n.message and says in n.message for n in app._notifications))
            assert app.is_running
            await pilot.press("q")
    finally:
        replay.index.close()
    assert app.return_code == 0
    assert (line, says) in [(n, r[: len(says)]) for n, r in replay.index.problems]


def pane_text(app: Any) -> str:
    pane = app.live.query_one(JournalPane)
    return " ".join(" ".join(line.text for line in pane.lines).split())


@pytest.mark.parametrize(("case", "kind", "field", "value", "says"), EVENT_CASES,
                         ids=[c[0] for c in EVENT_CASES])
async def test_follow_shows_a_bad_line_in_history_and_one_appended_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str, kind: str, field: str,
    value: Any, says: str
) -> None:
    monkeypatch.chdir(tmp_path)  # a short file name: the pane cuts a line at its width
    path, line = bad_event(Path(), kind, field, value)
    says = f"field {field} should be"  # the pane cuts the rest at its width
    appended = dict(LINES[line - 1], **{field: value})
    app = following_app(path, history=900)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app._live_ready)
        await until(pilot, lambda: f"{path}:{line}: {says}" in pane_text(app))
        await until(pilot, lambda: "following" in app._state)
        with path.open("ab") as fh:  # the writer goes on, with another bad line
            fh.write(orjson.dumps(appended) + b"\n")
        later = len(LINES) + 1
        await until(pilot, lambda: f"{path}:{later}: {says}" in pane_text(app))
        assert app.is_running
        await pilot.press("q")
    assert app.return_code == 0


async def test_follow_says_when_a_newer_knobtop_takes_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a short file name: the pane cuts a line at its width
    path = Path("live.knobtop.jsonl")
    header = JournalReader(RECORDED).header
    writer = JournalWriter(path, header)
    writer.close()
    app = following_app(path, history=900)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: "following" in app._state)
        newer = Path("newer.knobtop.jsonl")
        newer.write_bytes(orjson.dumps(dict(LINES[0], format=FORMAT_VERSION + 1)) + b"\n")
        newer.rename(path)
        await until(pilot, lambda: f"{path}:1: written by a newer knobtop: format "
                    f"{FORMAT_VERSION + 1}" in pane_text(app))
        assert app.is_running
        await pilot.press("q")
    assert app.return_code == 0


def test_any_json_spacing_is_indexed_like_the_reader_reads_it(tmp_path: Path) -> None:
    """The index's fast path reads what JournalWriter writes; other layouts are parsed."""
    path = tmp_path / "spaced.knobtop.jsonl"
    layouts: list[Callable[[dict[str, Any]], str]] = [
        json.dumps,  # '"ev": "x", "t": 1'
        lambda d: json.dumps(dict(reversed(list(d.items())))),  # t before ev
        lambda d: json.dumps(d, indent=None, separators=(" , ", " : ")),
        lambda d: "  " + json.dumps(d, ensure_ascii=True) + " \t",
        lambda d: orjson.dumps(d).decode().replace('"ev":"', '"\\u0065v":"', 1),
    ]
    text = [json.dumps(LINES[0])]
    for n, d in enumerate(LINES[1:]):
        text.append(layouts[n % len(layouts)](d))
    path.write_text("\n".join(text) + "\n")
    expected = list(JournalReader(RECORDED))
    assert list(JournalReader(path)) == expected
    with JournalIndex(path) as index:
        index.build()
        assert index.problems == []
        assert index.read(0, len(index)) == expected
        assert [index.kind_at(i) for i in range(len(index))] == [e.kind for e in expected]
