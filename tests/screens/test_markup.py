"""Text from files, servers and users is shown as it is, never read as Rich/Textual markup:
file names and profile fields on the command line, the headless log's [ok] markers, knob
values, notes and errors on the live screen; and a listener that raises is contained."""

from __future__ import annotations

import dataclasses
import os
from functools import partial
from pathlib import Path

import pytest

from harness import paths as repo_paths
from harness.cli import knobtop as run_knobtop
from harness.ui import until, widget_text
from knobtop.journal import Change, JournalReader, Knobs, Note
from knobtop.journal.events import Error, Event
from knobtop.lab import Sandbox
from knobtop.server.link import ConnectionInfo
from knobtop.session.core import Session, SessionConfig
from knobtop.ui.app import KnobtopApp
from knobtop.ui.widgets.journal_pane import JournalPane
from knobtop.ui.widgets.knob_panel import KnobPanel

RECORDED = repo_paths.DATA / "journals" / "lab-80s.knobtop.jsonl"
# Each would be eaten, turned into a link or style, or raise MarkupError if read as markup.
MARKUP = ["[/]", "[b]x[/b]", "[link=https://evil.example]click[/link]", "[red]boom[/]",
          "[/b]", "[@click=app.quit]q[/]", "\\[b]esc", "[bold red]knobtop:[/]"]


knobtop = partial(run_knobtop, columns=300)  # error lines whole on one line


@pytest.mark.parametrize("text", MARKUP)
def test_a_journal_path_with_markup_is_named_as_it_is(tmp_path: Path, text: str) -> None:
    name = f"{text}x.jsonl"
    result = knobtop("report", name, cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert f"({Path(name)})" in result.stderr, result.stderr


@pytest.mark.parametrize("text", MARKUP)
def test_a_profile_field_with_markup_is_shown_as_it_is(tmp_path: Path, text: str) -> None:
    """The profile's flavor is refused, and the message quotes it exactly (no link)."""
    profile = tmp_path / "p.toml"
    profile.write_text(f'[target]\nflavor = "{text.replace(chr(92), chr(92) * 2)}"\n')
    os.chmod(profile, 0o600)
    result = knobtop("connect", str(profile), cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert f"unknown flavor {text!r}" in result.stderr, result.stderr


@pytest.mark.integration
def test_the_headless_log_shows_each_change_result(tmp_path: Path, sysbench_path: str) -> None:
    lab = tmp_path / "lab"
    journal = tmp_path / "run.knobtop.jsonl"
    try:
        result = knobtop(
            "lab", "--dir", str(lab), "--headless", "--duration", "3", "--journal",
            str(journal), "--tables", "1", "--table-size", "200", "--threads", "1",
            # A value the catalog cannot judge (a table's name) that the server refuses:
            # one of the catalog's refusals ends the run before it starts (issue 37).
            "--set", "innodb_io_capacity=201@0", "--set",
            "innodb_ft_server_stopword_table=nope@1", cwd=tmp_path, timeout=240,
        )
    finally:
        Sandbox(lab).stop()
    assert result.returncode == 1, result.stderr  # the refused change makes it 1
    lines = [ln for ln in result.stderr.splitlines() if "] change innodb_" in ln]
    # The third line is the run putting its --set change back at the end (#14 item 2).
    assert len(lines) == 3, result.stderr
    assert lines[0].endswith("change innodb_io_capacity: 200 -> 201 [ok]"), lines
    assert "change innodb_ft_server_stopword_table:" in lines[1], lines
    assert lines[2].endswith("change innodb_io_capacity: 201 -> 200 [ok]"), lines
    refused = next(e for e in JournalReader(journal) if isinstance(e, Change)
                   and e.result != "ok")
    assert f"[{refused.result}]" in lines[1] and refused.message in lines[1], lines


async def test_server_text_and_notes_are_shown_as_they_are() -> None:
    reader = JournalReader(RECORDED)
    events: list[Event] = list(reader)
    first = next(i for i, e in enumerate(events) if isinstance(e, Knobs))
    knobs = events[first]
    assert isinstance(knobs, Knobs)
    values = {**knobs.values, "aa_markup": "[b]x[/b]", "[i]k[/i]": "[/]"}
    events[first] = dataclasses.replace(knobs, values=values)
    t = events[-1].t
    events += [Note(t=t, wall=1.0, text="[b]x[/b] and [/]"),
               Note(t=t, wall=1.0, text="[link=https://e.example]l[/link]"),
               Error(t=t, wall=1.0, source="load", message="[red]boom[/]")]
    app = KnobtopApp(header=reader.header, events=events)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app.live.query_one(KnobPanel).row_count > 0)
        await pilot.pause()
        panel = "\n".join(widget_text(app.live.query_one(KnobPanel)))
        assert "[b]x[/b]" in panel and "[i]k[/i]" in panel and "[/]" in panel, panel
        pane = "\n".join(widget_text(app.live.query_one(JournalPane)))
        assert "[b]x[/b] and [/]" in pane and "[link=https://e.example]l[/link]" in pane, pane
        assert "[red]boom[/]" in pane, pane
        await pilot.press("q")


def test_a_listener_that_raises_is_contained_and_reported_once(tmp_path: Path) -> None:
    from knobtop.journal.events import Header
    from knobtop.journal.writer import JournalWriter

    config = SessionConfig(profile="t", connection=ConnectionInfo(port=1, user="u"),
                           journal_path=tmp_path / "l.knobtop.jsonl")
    session = Session(config, host=None, driver=None)  # type: ignore[arg-type]
    session.journal = JournalWriter(config.journal_path, Header(
        format=1, knobtop="t", profile="t", started_wall=1.0, interval=1.0))
    heard: list[Event] = []

    def broken(event: Event) -> None:
        raise RuntimeError(f"cannot show {event.kind}")

    session.listeners += [broken, heard.append]
    for text in ("one", "two"):
        session.emit(Note(t=1.0, wall=1.0, text=text))
    session.journal.close()
    written = list(JournalReader(config.journal_path))
    kinds = [(e.kind, getattr(e, "text", "")) for e in written]
    assert kinds == [("note", "one"), ("error", ""), ("note", "two")]
    assert heard == written  # the other listener got every event, in the journal's order
    error = written[1]
    assert isinstance(error, Error) and error.source == "listener"
    assert "broken" in error.message and "RuntimeError: cannot show note" in error.message
