"""The Hosts panel's lines (ui.widgets.host_panel.HostLines) are the lines Rich's Table drew
for the same rows, at every width: the same characters and the same styles."""

from __future__ import annotations

import random

from rich.console import Console
from rich.segment import Segment
from rich.text import Text

from knobtop.ui.widgets.host_panel import COLUMNS, HostLines, Row, host_notes, host_table


def lines(renderable: object, width: int) -> list[list[tuple[str, object]]]:
    """Each line's runs of one style (Rich's empty Style and no style draw alike)."""
    console = Console(width=width, color_system="truecolor", emoji=False, highlight=False)
    out = []
    for line in console.render_lines(renderable, console.options.update(width=width),
                                     pad=False):
        plain = [Segment(s.text, s.style or None) for s in line]
        out.append([(s.text, s.style) for s in Segment.simplify(plain)])
    return out


def random_rows(rng: random.Random) -> list[Row]:
    rows: list[Row] = []
    for i in range(rng.randint(0, 3)):
        name = rng.choice(["local", "app1", f"client-{i}.example.internal", "db", "ü-host"])
        figures = [rng.choice(["\u2013", "0", "1.40K", "82", "2.16", "14.3M", "123456", ""])
                   for _ in COLUMNS]
        rows.append((Text(name), *figures))
    if rng.random() < 0.3:
        rows.append((Text("ndb node 2"), "dpb hit 99.5%", *[""] * (len(COLUMNS) - 1)))
    return rows


def test_the_panels_lines_are_the_tables_at_every_width() -> None:
    rng = random.Random(16)
    drawn_here = 0
    for _ in range(300):
        rows = random_rows(rng)
        width = rng.randint(30, 90)
        got = lines(HostLines(rows), width)
        assert got == lines(host_table(rows), width), (rows, width)
        drawn_here += all(len(line) == 1 for line in got)  # its own lines, not the Table's
    assert drawn_here > 200  # most widths leave the host column room: drawn directly


def test_the_host_column_says_how_the_host_is_reached() -> None:
    """Issue 42: the journal's host facts say files go over the exec channel (no SFTP
    subsystem) and sudo is used there; the panel says so after the host's name."""
    assert host_notes({"files": "exec", "sudo": True}) == " (no sftp, sudo)"
    assert host_notes({"files": "sftp", "sudo": False}) == ""
    assert host_notes({"files": "exec"}) == " (no sftp)"
    assert host_notes(None) == "" and host_notes(["exec"]) == ""
