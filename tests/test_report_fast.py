"""The report's quick path (issue 41): sample and load lines checked without building their
events (journal.reader.sample_ok/load_ok), rates derived without a Snapshot per sample
(metrics.derive.BriefDeriver).  Each is held against the path it replaces: the same
acceptance as event_from_dict, the same rows as derive(brief=True), the same errors."""

from __future__ import annotations

import copy
import itertools
from pathlib import Path
from typing import Any

import orjson
import pytest

from harness.hostile import hostile_journal
from knobtop.analysis.journaldata import ROW_FIELDS, load_journal
from knobtop.analysis.report import csv_report, markdown_report
from knobtop.journal import JournalFormatError, JournalReader, Sample
from knobtop.journal.events import EventDecodeError, event_from_dict, target_of
from knobtop.journal.reader import load_ok, sample_ok
from knobtop.metrics.derive import BRIEF_ROW, BriefDeriver, Snapshot, derive

DATA = Path(__file__).parent / "data" / "journals"
RECORDED = sorted(DATA.glob("*.knobtop.jsonl"))
WRONG: list[Any] = [None, True, False, 0, -1, 1.5, "", "x", [], [1], [None], [1.5], ["x"],
                    [True], {}, {"a": 1}, {"a": []}, {"a": [1]}, {"a": [1.5]}, {"a": ["x"]},
                    {"a": [None]}, {"a": [True]}]


def recorded_lines(kind: str) -> list[dict[str, Any]]:
    lines = [orjson.loads(x) for p in RECORDED for x in p.read_bytes().splitlines()[1:]
             if x.strip()]
    return [x for x in lines if x.get("ev") == kind]


def accepted(d: dict[str, Any]) -> bool:
    try:
        event_from_dict(d)
    except EventDecodeError:
        return False
    return True


@pytest.mark.parametrize(("kind", "ok"), [("sample", sample_ok), ("load", load_ok)])
def test_quick_checks_accept_only_what_event_from_dict_accepts(kind: str, ok: Any) -> None:
    """Every field of a recorded line set to every kind of wrong value, or left out, or an
    extra key added: what the quick check lets through event_from_dict accepts too, and
    the recorded lines themselves take the quick path."""
    bases = recorded_lines(kind)[:3]
    assert bases and all(ok(b) for b in bases)
    tried = passed = 0
    for base in bases:
        fields = [*base, "target", "extra"]
        variants = []
        for name in fields:
            gone = copy.deepcopy(base)
            gone.pop(name, None)
            variants.append(gone)
            for value in WRONG:
                variants.append({**copy.deepcopy(base), name: value})
        for one, two in itertools.combinations(["lat", "re", "host", "ndb", "target"], 2):
            variants.append({**base, one: base.get(one, ""), two: None})
        for d in variants:
            tried += 1
            if d.get("ev") == kind and ok(d):  # JournalReader.quick asks only then
                passed += 1
                assert accepted(d), d
    assert passed < tried  # some variants were refused, some (a right value) let through
    assert passed > 0


def reference_rows(path: Path) -> list[tuple[Any, ...]]:
    """(t, wall, the BRIEF_ROW values) of every own sample, as the report derived them
    before the quick path: a Snapshot per sample and derive(brief=True)."""
    reader = JournalReader(path)
    header = reader.header
    prev = None
    out = []
    for event in reader:
        if not isinstance(event, Sample) or target_of(event):
            continue
        snap = Snapshot.from_values(event.t, header.counters, event.v, event.host,
                                    reconnect=event.re)
        values = derive(prev, snap, header.host_fields, brief=True)
        prev = snap
        out.append((event.t, event.wall, *(values.get(k) for k in BRIEF_ROW)))
    return out


def quick_rows(path: Path) -> list[tuple[Any, ...]]:
    rows = load_journal(path).rows
    order = ("t", "wall", *BRIEF_ROW)
    return [tuple(getattr(r, k) for k in order) for r in rows]


def odd_journal(path: Path) -> Path:
    """The recorded lab-80s journal with the samples a deriver can trip on: a reconnect,
    Uptime going back, counters missing (null) and cut short, a repeated counter name,
    a second host, deltas of -0.0, an int time, a sample of another target."""
    lines = [orjson.loads(x) for x in (DATA / "lab-80s.knobtop.jsonl").read_bytes()
             .splitlines() if x.strip()]
    header = lines[0]
    header["counters"] = [*header["counters"], "Questions"]  # a repeat: the last one counts
    samples = [x for x in lines if x["ev"] == "sample"]
    for n, s in enumerate(samples):
        s["v"] = [*s["v"], 10 * n]
        if n % 7 == 3:
            s["re"] = True
        if n % 11 == 5:
            s["v"][0] = 1  # Uptime went back: the server restarted
        if n % 13 == 6:
            s["v"] = s["v"][:5]  # cut short: the rest reads as missing
        if n % 5 == 2:
            s["v"] = [None if i % 3 == 0 else x for i, x in enumerate(s["v"])]
        if n % 9 == 4:
            s["host"] = {"other": s["host"]["local"], **s["host"]}
        if n % 17 == 8:
            s["t"] = int(s["t"]) + 1
    extra = copy.deepcopy(samples[10])
    extra["target"] = "b"
    zero = copy.deepcopy(samples[20])
    zero["t"] = samples[20]["t"] + 0.5
    zero["v"] = [-0.0 if isinstance(x, int) else x for x in zero["v"]]
    samples[20]["v"] = [0.0 if isinstance(x, int) else x for x in samples[20]["v"]]
    index = lines.index(samples[20])
    lines[index + 1:index + 1] = [zero, extra]
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    return path


def same(a: list[tuple[Any, ...]], b: list[tuple[Any, ...]]) -> None:
    """Equal values of equal types (an int time stays an int, -0.0 is not 0.0)."""
    assert len(a) == len(b) > 0
    for x, y in zip(a, b, strict=True):
        assert [repr(v) for v in x] == [repr(v) for v in y]


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name)
def test_rows_as_derive_gives_them_recorded(path: Path) -> None:
    same(quick_rows(path), reference_rows(path))


def test_rows_as_derive_gives_them_odd_and_hostile(tmp_path: Path) -> None:
    odd = odd_journal(tmp_path / "odd.knobtop.jsonl")
    same(quick_rows(odd), reference_rows(odd))
    assert load_journal(odd).other_targets == 1
    hostile = hostile_journal(tmp_path / "hostile.knobtop.jsonl")
    same(quick_rows(hostile), reference_rows(hostile))


def test_deriver_falls_back_to_derive_values() -> None:
    """A sample with no previous one and one after a reconnect: gauges only, as derive."""
    names = ["Uptime", "Innodb_buffer_pool_pages_dirty", "Innodb_buffer_pool_pages_total"]
    deriver = BriefDeriver(names, ["user", "idle"])
    first = deriver.step(1.0, [5, 10, 100], {"local": [1.0, 1.0]}, False)
    assert dict(zip(BRIEF_ROW, first, strict=True))["dirty_pct"] == 10.0
    again = deriver.step(2.0, [6, 20, 100], {"local": [2.0, 1.5]}, True)
    want = derive(None, Snapshot.from_values(2.0, names, [6, 20, 100]), ["user", "idle"],
                  brief=True)
    assert again == tuple(want.get(k) for k in BRIEF_ROW)


def test_a_short_cpu_list_is_named_by_file_and_line(tmp_path: Path) -> None:
    """What the checks cannot see (a host's CPU list shorter than its fields) still stops
    the report at that line, with derive's own words."""
    lines = (DATA / "lab-80s.knobtop.jsonl").read_bytes().splitlines(keepends=True)
    samples = [n for n, x in enumerate(lines) if b'"ev":"sample"' in x]
    n = samples[3]
    bad = orjson.loads(lines[n])
    bad["host"]["local"] = bad["host"]["local"][:2]
    lines[n] = orjson.dumps(bad) + b"\n"
    path = tmp_path / "short.knobtop.jsonl"
    path.write_bytes(b"".join(lines))
    with pytest.raises(JournalFormatError) as err:
        load_journal(path)
    assert err.value.line_no == n + 1
    assert str(err.value) == (f"{path}:{n + 1}: sample event has values of the wrong type "
                              "(list index out of range)")


def test_a_wrong_field_is_named_as_before(tmp_path: Path) -> None:
    """A sample and a load that fail the quick check go through event_from_dict: its
    message, the file and the line."""
    lines = (DATA / "lab-80s.knobtop.jsonl").read_bytes().splitlines(keepends=True)
    for kind, field, value, says in (
            ("sample", "v", [1, "x"], "field v should be a list of numbers or nulls"),
            ("load", "tps", "fast", "field tps should be a number"),
            ("sample", "re", 1, "field re should be a boolean")):
        n = next(i for i, x in enumerate(lines) if x.startswith(f'{{"ev":"{kind}"'.encode()))
        bad = orjson.loads(lines[n])
        bad[field] = value
        path = tmp_path / f"{kind}-{field}.knobtop.jsonl"
        path.write_bytes(b"".join([*lines[:n], orjson.dumps(bad) + b"\n", *lines[n + 1:]]))
        with pytest.raises(JournalFormatError) as err:
            load_journal(path)
        assert str(err.value).startswith(f"{path}:{n + 1}: {says} (")


def test_reports_unchanged_by_range(tmp_path: Path) -> None:
    """A range's rows are the whole journal's rows inside it (rates at its first sample
    still derived from the one before), in the Markdown and the CSV alike."""
    path = DATA / "lab-80s.knobtop.jsonl"
    whole = load_journal(path)
    part = load_journal(path, t_from=20.0, t_to=50.0)
    inside = [r for r in whole.rows if 20.0 <= r.t < 50.0]
    assert part.rows == inside and 0 < len(inside) < len(whole.rows)
    assert "| # |" in markdown_report(part)
    assert csv_report(part).count("\n") == len(inside) + 1
    assert len(ROW_FIELDS) == 12
