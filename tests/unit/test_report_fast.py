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

from harness import paths as repo_paths
from harness.hostile import hostile_journal
from knobtop.analysis.journaldata import ROW_FIELDS, load_journal
from knobtop.analysis.report import csv_report, csv_stream, markdown_report
from knobtop.journal import JournalFormatError, JournalReader, Sample
from knobtop.journal.events import EventDecodeError, event_from_dict, target_of
from knobtop.journal.reader import load_ok, sample_ok
from knobtop.metrics.derive import BRIEF_ROW, BriefDeriver, Snapshot, derive

DATA = repo_paths.DATA / "journals"
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


def edited(tmp_path: Path, name: str, edit: Any) -> Path:
    """The recorded lab-80s journal with ``edit(events)`` applied to its events (dicts)."""
    lines = [orjson.loads(x) for x in (DATA / "lab-80s.knobtop.jsonl").read_bytes()
             .splitlines() if x.strip()]
    events = edit(lines[1:]) or lines[1:]
    path = tmp_path / name
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in [lines[0], *events]))
    return path


def no_end(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The phase still running at the end: no stop, no end event, a sample last."""
    kept = [e for e in events if not (e["ev"] == "phase" and e["action"] != "start")
            and e["ev"] != "end"]
    last = max(i for i, e in enumerate(kept) if e["ev"] == "sample")
    return kept[:last + 1]


def stop_early(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The phase's stop stamped before the samples written ahead of it (out of order)."""
    for e in events:
        if e["ev"] == "phase" and e["action"] != "start":
            e["t"] -= 3.0
    return events


def two_phases(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A second phase from t=40 on two clients (only their sum "all" counts), escaped."""
    start = next(e for e in events if e["ev"] == "phase")
    out = []
    for e in events:
        if e["ev"] == "load" and e["t"] >= 40:
            out.append({**e, "src": "all", "tps": e["tps"] * 2})
        out.append(e)
        if e["ev"] == "sample" and 40 <= e["t"] < 41:
            out.append({**start, "t": e["t"] + 0.001, "phase": 2, "host": "a,b",
                        "workload": "oltp_\u0001point"})
    return out


def test_csv_streams_what_csv_report_writes(tmp_path: Path) -> None:
    """The streamed CSV is csv_report's text, line for line, over recorded, hostile, odd
    and edited journals and ranges, the edge ones too (a range starting at the journal's
    last time while its phase still runs: load_journal drops that phase)."""
    journals = [*RECORDED, hostile_journal(tmp_path / "hostile.knobtop.jsonl"),
                odd_journal(tmp_path / "odd.knobtop.jsonl"),
                edited(tmp_path, "no-end.knobtop.jsonl", no_end),
                edited(tmp_path, "stop-early.knobtop.jsonl", stop_early),
                edited(tmp_path, "two.knobtop.jsonl", two_phases)]
    torn = tmp_path / "torn.knobtop.jsonl"
    torn.write_bytes(journals[0].read_bytes() + b'{"ev":"sample","t":99')
    journals.append(torn)
    for path in journals:
        whole = load_journal(path)
        times = [r.t for r in whole.rows]
        assert whole.last_t is not None
        ranges = [(None, None), (times[1], None), (times[3], times[-3]), (None, times[5]),
                  (whole.last_t, None), (times[-1], None), (1e9, None), (-5.0, 0.0)]
        for t_from, t_to in ranges:
            want = csv_report(load_journal(path, t_from=t_from, t_to=t_to))
            got = list(csv_stream(path, t_from, t_to))
            assert "".join(got) == want, (path.name, t_from, t_to)
            assert len(got) == want.count("\n")  # a line at a time
    edge = journals[-4]  # no end: from its last sample on, load_journal drops the phase
    last = load_journal(edge).rows[-1]
    assert "".join(csv_stream(edge, last.t)).endswith(",,,\n")
    assert not "".join(csv_stream(edge, last.t - 0.5)).endswith(",,,\n")
    two = "".join(csv_stream(journals[-2]))
    assert ",2,oltp_\\x01point,4\n" in two  # the second phase, its name made printable


def test_csv_stream_stops_at_a_bad_line_naming_it(tmp_path: Path) -> None:
    lines = (DATA / "lab-80s.knobtop.jsonl").read_bytes().splitlines(keepends=True)
    n = len(lines) // 2
    path = tmp_path / "bad.knobtop.jsonl"
    path.write_bytes(b"".join([*lines[:n], b'{"ev":"sample","t":1,\n', *lines[n:]]))
    with pytest.raises(JournalFormatError) as want:
        load_journal(path)
    out = []
    with pytest.raises(JournalFormatError) as got:
        for line in csv_stream(path):
            out.append(line)
    assert str(got.value) == str(want.value) and got.value.line_no == n + 1
    assert 1 < len(out) < n  # the rows before it went out


def test_csv_output_file_left_as_it_was_by_a_bad_journal(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`report --format csv -o FILE` writes through FILE.part: a journal found bad halfway
    leaves FILE as it was and no part behind; a good one replaces it."""
    from knobtop.cli import main

    lines = (DATA / "lab-80s.knobtop.jsonl").read_bytes().splitlines(keepends=True)
    bad = tmp_path / "bad.knobtop.jsonl"
    bad.write_bytes(b"".join([*lines[:40], b"not json\n", *lines[40:]]))
    out = tmp_path / "r.csv"
    out.write_text("before\n")
    assert main(["report", str(bad), "--format", "csv", "-o", str(out)]) != 0
    assert f"{bad}:41: not valid JSON" in capsys.readouterr().err
    assert out.read_text() == "before\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.knobtop.jsonl", "r.csv"]
    assert main(["report", str(DATA / "lab-80s.knobtop.jsonl"), "--format", "csv", "-o",
                 str(out)]) == 0
    assert out.read_text() == csv_report(load_journal(DATA / "lab-80s.knobtop.jsonl"))


def test_bootstrap_draws_as_choices_and_median() -> None:
    """stats.bootstrap_ratio_ci's written-out resampling gives the bounds that
    rng.choices + statistics.median give, bit for bit (zeros and ties in A too)."""
    import random
    import statistics

    from knobtop.analysis.stats import _quantile_sorted, bootstrap_ratio_ci

    def reference(a: list[float], b: list[float], seed: int) -> tuple[float, float]:
        rng = random.Random(seed)
        ratios = []
        for _ in range(300):
            ma = statistics.median(rng.choices(a, k=len(a)))
            mb = statistics.median(rng.choices(b, k=len(b)))
            if ma != 0:
                ratios.append(mb / ma)
        ratios.sort()
        alpha = (1.0 - 0.95) / 2  # as bootstrap_ratio_ci computes it
        return _quantile_sorted(ratios, alpha), _quantile_sorted(ratios, 1.0 - alpha)

    g = random.Random(3)
    checked = 0
    for n in range(300):
        a = [g.choice([0, 1, 2.5, 3, 1000.0, 7]) if n % 3 == 0 else g.uniform(1, 100)
             for _ in range(g.randint(1, 9))]
        b = [g.uniform(0, 100) for _ in range(g.randint(1, 9))]
        if statistics.median(a) == 0:
            continue
        assert repr(bootstrap_ratio_ci(a, b, resamples=300, seed=n)) == repr(
            reference(a, b, n))
        checked += 1
    assert checked > 200


def test_idle_past_the_cpu_fields_is_named_as_derive_names_it(tmp_path: Path) -> None:
    """A header whose host fields put ``idle`` after a field that is no CPU time: derive
    stops at the first sample with a rate, and so does the quick path, with its words."""
    lines = [orjson.loads(x) for x in (DATA / "lab-80s.knobtop.jsonl").read_bytes()
             .splitlines() if x.strip()]
    header = lines[0]
    fields = header["host_fields"]
    order = [f for f in fields if f != "idle"] + ["idle"]
    header["host_fields"] = ["load1", *order]
    for e in lines[1:]:
        if e["ev"] == "sample":
            e["host"] = {h: [0.5, *(xs[fields.index(f)] for f in order)]
                         for h, xs in e["host"].items()}
    path = tmp_path / "fields.knobtop.jsonl"
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    samples = [n for n, e in enumerate(lines) if e["ev"] == "sample"]
    with pytest.raises(JournalFormatError) as err:
        load_journal(path, cache=None)
    with pytest.raises(ValueError) as want:
        reference_rows(path)
    assert err.value.line_no == samples[1] + 1
    assert err.value.reason == f"sample event has values of the wrong type ({want.value})"


def test_the_phase_median_is_statistics_median() -> None:
    """phasestats' median, written out to keep `statistics` off a report's start, gives
    what statistics.median gives: odd and even counts, ties, ints and floats, Nones left
    out, nothing at all."""
    import random
    import statistics

    from knobtop.analysis.phasestats import _median

    rng = random.Random(41)
    for n in range(0, 40):
        values: list[float | None] = [rng.choice([rng.random() * 1e4, rng.randint(0, 9), None])
                                      for _ in range(n)]
        present = [v for v in values if v is not None]
        assert _median(values) == (statistics.median(present) if present else None)
