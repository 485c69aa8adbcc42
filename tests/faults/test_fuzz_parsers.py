"""Property tests: every parser and validator of text a person or a program hands knobtop
raises nothing but its own clean error (or, for sysbench output, nothing at all)."""

from __future__ import annotations

import asyncio
import json
import math
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from harness.ui import until
from knobtop.analysis.compare import compare, comparison_markdown, comparison_text
from knobtop.analysis.journaldata import load_journal
from knobtop.analysis.replay import Replay
from knobtop.analysis.report import csv_report, markdown_report, steps_csv
from knobtop.analysis.times import parse_range, parse_time
from knobtop.cli import following_app, main, replay_for
from knobtop.journal.events import (
    EVENT_TYPES,
    Error,
    Event,
    EventDecodeError,
    Header,
    Unknown,
    event_from_dict,
)
from knobtop.journal.follow import JournalFollower
from knobtop.journal.index import JournalIndex, decode_line, scan_line
from knobtop.journal.reader import JournalFormatError, JournalReader
from knobtop.load.sysbench_output import (
    SysbenchOutputParser,
    parse_interval,
    parse_queue,
    parse_summary,
)
from knobtop.metrics.board import MetricBoard
from knobtop.profiles import EXAMPLE_PATH, ProfileError, load_profile
from knobtop.recipes.model import RecipeError
from knobtop.recipes.reader import bundled_recipes, load_recipe
from knobtop.server.knobs import KnobError, KnobFacts, validate
from knobtop.ui.replay_app import ReplayApp

DATA = Path(__file__).parent.parent / "data"
SYSBENCH_TEXT = [(DATA / "sysbench" / n).read_text()
                 for n in ("oltp_read_write.8.txt", "oltp_point_select.8.txt", "prepare.txt",
                           "fatal_missing_table.txt")]
SYSBENCH_LINES = sorted({ln for text in SYSBENCH_TEXT for ln in text.splitlines() if ln})
JOURNAL = (DATA / "journals" / "lab-80s.knobtop.jsonl").read_bytes().split(b"\n")
JOURNAL_HEADER, JOURNAL_LINES = JOURNAL[0], [ln for ln in JOURNAL[1:400] if ln]
RECIPES = [p.read_text() for p in bundled_recipes()]
PROFILE = EXAMPLE_PATH.read_text()

# Modest: the whole fault suite has a time budget.  No example database on disk.
FUZZ = settings(max_examples=150, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# -- strategies ---------------------------------------------------------------------------

# Digits a regex's \d accepts: ASCII, other scripts' digits, and runs too long for int().
digits = st.one_of(
    st.from_regex(r"\A[0-9]{1,6}\Z"),
    st.text(st.characters(categories=["Nd"]), min_size=1, max_size=8),
    st.integers(4290, 4400).map(lambda n: "9" * n),
)


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[str]) -> str:
    """A real line or document with a few edits: a slice replaced, cut off, digits swapped."""
    text = draw(base)
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["replace", "cut", "digits", "insert"]))
        i = draw(st.integers(0, len(text)))
        j = draw(st.integers(i, min(len(text), i + 12)))
        if op == "replace":
            text = text[:i] + draw(st.text(max_size=6)) + text[j:]
        elif op == "cut":
            text = text[:i]
        elif op == "digits":
            text = text[:i] + draw(digits) + text[j:]
        else:
            text = text[:i] + draw(st.sampled_from(["\n", "\r", "\0", "\ufeff", '"', "=",
                                                    "[", "]", "{", "}", ",", "#"])) + text[i:]
    return text


def interval_line(values: list[str]) -> str:
    s, thds, tps, qps, r, w, o, pct, lat, err, reconn = values
    return (f"[ {s}s ] thds: {thds} tps: {tps}.00 qps: {qps}.00 (r/w/o: {r}.00/{w}.00/{o}.00) "
            f"lat (ms,{pct}%): {lat}.00 err/s: {err}.00 reconn/s: {reconn}.00")


sysbench_lines = st.one_of(
    st.text(max_size=200),
    mutated(st.sampled_from(SYSBENCH_LINES)),
    st.lists(digits, min_size=11, max_size=11).map(interval_line),
    st.tuples(digits, digits).map(lambda q: f"queue length: {q[0]}, concurrency: {q[1]}"),
    st.tuples(digits, st.text(max_size=10)).map(
        lambda p: f"Inserting {p[0]} records into '{p[1]}'"),
)

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)
FIELD_NAMES = sorted({"t", "wall", *(name for cls in EVENT_TYPES.values()
                                     for name in cls.__dataclass_fields__)})


@st.composite
def event_dicts(draw: st.DrawFn) -> dict[str, Any]:
    """What orjson.loads gives for an event-like line: known kinds and field names, any
    JSON values (so wrong types, missing and extra fields)."""
    data: dict[str, Any] = {}
    if draw(st.booleans()):
        data["ev"] = draw(st.one_of(st.sampled_from(sorted(EVENT_TYPES)), json_values))
    for name in draw(st.lists(st.sampled_from(FIELD_NAMES), max_size=8)):
        data[name] = draw(json_values)
    if draw(st.booleans()):
        data["t"], data["wall"] = draw(json_scalars), draw(json_scalars)
    # Exactly what a journal line can hold: a round trip through orjson.
    loaded: dict[str, Any] = orjson.loads(orjson.dumps(data))
    return loaded


journal_lines = st.one_of(
    st.binary(max_size=200),
    mutated(st.sampled_from([ln.decode() for ln in JOURNAL_LINES])).map(
        lambda s: s.encode("utf-8", "surrogatepass")),
    event_dicts().map(orjson.dumps),
)


def toml_value(value: Any) -> str:
    """One TOML value (inline tables for nested tables), for documents built from dicts."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value) if math.isfinite(value) else ("nan" if value != value else
                                                          ("inf" if value > 0 else "-inf"))
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}"
                               for k, v in value.items()) + "}"
    raise TypeError(type(value))


def toml_document(doc: dict[str, Any]) -> str:
    return "".join(f"{json.dumps(k)} = {toml_value(v)}\n" for k, v in doc.items())


toml_scalars = st.one_of(st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(),
                         st.text(max_size=12), st.sampled_from(["", "ON", "OFF", "1G", "-1"]))
toml_values = st.recursive(
    toml_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=8,
)


@st.composite
def edited_toml(draw: st.DrawFn, sources: list[str]) -> str:
    """A real document with some of its values replaced or removed, written back as TOML:
    well-formed, so the checks behind the TOML parser are what is exercised."""
    doc = tomllib.loads(draw(st.sampled_from(sources)))
    for _ in range(draw(st.integers(1, 4))):
        node: Any = doc
        while True:  # walk down to a random table or array
            keys = list(node) if isinstance(node, dict) else list(range(len(node)))
            if not keys:
                break
            key = draw(st.sampled_from(keys))
            child = node[key]
            if isinstance(child, dict | list) and child and draw(st.booleans()):
                node = child
                continue
            action = draw(st.sampled_from(["set", "drop"]))
            if action == "drop":
                del node[key]
            else:
                node[key] = draw(toml_values)
            break
    return toml_document(doc)


# -- sysbench output ------------------------------------------------------------------------


@FUZZ
@given(sysbench_lines)
@example("[ 1s ] thds: " + "9" * 4400 + " tps: 1.00 qps: 1.00 (r/w/o: 1.00/0.00/0.00) "
         "lat (ms,95%): 1.00 err/s: 0.00 reconn/s: 0.00")
def test_sysbench_lines_never_raise(line: str) -> None:
    report = parse_interval(line)
    if report is not None:  # only a "[ Ns ] thds: ..." line is one, with sane numbers
        assert line.lstrip().startswith("[") and "thds:" in line
        assert report.threads >= 0 and report.second >= 0
        # numbers (a run of thousands of digits may read as inf; sysbench never prints one)
        assert all(isinstance(v, int | float) and not math.isnan(v) for v in (
            report.tps, report.qps, report.reads, report.writes, report.other,
            report.latency_ms, report.errors_per_s, report.reconnects_per_s))
    queue = parse_queue(line)
    assert queue is None or "queue length:" in line
    SysbenchOutputParser().feed(line)


@settings(FUZZ, max_examples=60)
@given(mutated(st.sampled_from(SYSBENCH_TEXT[:2])))
def test_sysbench_output_never_raises(text: str) -> None:
    parse_summary(text)
    parser = SysbenchOutputParser()
    for line in text.splitlines():
        parser.feed(line)


# -- journal lines and files ------------------------------------------------------------------


# Every reason knobtop's journal decoder gives for a line it refuses.
LINE_REASON = re.compile(
    r"not valid JSON \(|not a JSON object$|line has no event type \('ev'\)$"
    r"|.+ event has no numeric 't'( and 'wall')?$|field \w+ should be .+ \(.+ has .+\)$"
    r"|.+ event is missing fields: ", re.S)


@FUZZ
@given(journal_lines)
def test_journal_lines_decode_or_say_why(line: bytes) -> None:
    try:
        decode_line(line)
    except EventDecodeError as exc:  # knobtop's own: any other ValueError fails the test
        assert LINE_REASON.match(str(exc)), str(exc)
    scanned = scan_line(line)
    assert isinstance(scanned, str) or (math.isfinite(scanned[0])
                                        and isinstance(scanned[1], bytes))


@FUZZ
@given(event_dicts())
@example({"ev": "x", "t": 18446744073709551615, "wall": 0})
def test_event_from_dict_raises_only_its_decode_error(data: dict[str, Any]) -> None:
    try:
        event = event_from_dict(data)
    except EventDecodeError as exc:
        assert LINE_REASON.match(str(exc)), str(exc)
    else:
        assert isinstance(event, Unknown) or event.kind == data["ev"]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tmp_path_factory.mktemp("fuzz")


journal_files = st.one_of(
    st.binary(max_size=300),
    st.lists(journal_lines, max_size=12).map(
        lambda lines: b"\n".join([JOURNAL_HEADER, *lines])),
    st.tuples(mutated(st.sampled_from([ln.decode() for ln in JOURNAL[:40]])),
              st.binary(max_size=4)).map(
        lambda p: JOURNAL_HEADER + b"\n" + p[0].encode("utf-8", "surrogatepass") + p[1]),
)


@settings(FUZZ, max_examples=100)
@given(journal_files)
def test_journal_files_read_or_name_the_line(scratch: Path, data: bytes) -> None:
    path = scratch / "fuzz.knobtop.jsonl"
    path.write_bytes(data)
    try:
        list(JournalReader(path))
    except JournalFormatError as exc:
        assert re.match(rf"{re.escape(str(path))}:[0-9]+: .", str(exc)), str(exc)
    try:
        index = JournalIndex(path)
    except JournalFormatError:
        return
    with index:
        index.build()
        index.read(0, len(index) + 1)
        index.tail_window(1e9)
        index.seek(0.0)
        assert all(line > 1 and why for line, why in index.problems)


# -- recipes and profiles ---------------------------------------------------------------------


@settings(FUZZ, max_examples=120)
@given(st.one_of(st.text(max_size=300), mutated(st.sampled_from(RECIPES)),
                 edited_toml(RECIPES)))
@example('name = "x"\n[run]\nreplicates = ' + "9" * 4400 + "\n")  # tomllib's own int()
def test_recipe_files_load_or_raise_recipe_error(scratch: Path, text: str) -> None:
    path = scratch / "fuzz-recipe.toml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        load_recipe(path)
    except RecipeError as exc:
        assert str(exc)


@settings(FUZZ, max_examples=120)
@given(st.one_of(st.text(max_size=300), mutated(st.just(PROFILE)), edited_toml([PROFILE])))
@example("[target.mysql]\nport = " + "9" * 4400 + "\n")  # tomllib's own int()
def test_profile_files_load_or_raise_profile_error(scratch: Path, text: str) -> None:
    path = scratch / "fuzz-profile.toml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    path.chmod(0o600)
    try:
        load_profile(str(path))
    except ProfileError as exc:
        assert str(exc)


# -- knob values and time ranges --------------------------------------------------------------

bounds = st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False))
knob_facts = st.builds(
    KnobFacts,
    name=st.from_regex(r"\A[a-z][a-z0-9_]{0,20}\Z"),
    present=st.booleans(),
    value=st.one_of(st.none(), st.text(max_size=8)),
    dynamic=st.booleans(),
    type=st.sampled_from(["BOOLEAN", "ENUM", "SET", "INT UNSIGNED", "BIGINT", "BIGINT UNSIGNED",
                          "DOUBLE", "FLOAT", "DECIMAL", "VARCHAR", "", "int"]),
    minimum=bounds,
    maximum=bounds,
    block_size=st.one_of(st.none(), st.integers(0, 1 << 20)),
    choices=st.lists(st.text(max_size=6), max_size=4).map(tuple),
)
knob_values = st.one_of(
    st.text(max_size=30),
    st.tuples(digits, st.sampled_from(["", "K", "M", "G", "T", "kb", "MiB", ".5", "e9"])).map(
        "".join),
    st.sampled_from(["nan", "inf", "-inf", "1e400", "1e308", "ON", "off", "0x10", "1_000"]),
)


@FUZZ
@given(knob_facts, knob_values, st.booleans())
@example(KnobFacts("innodb_io_capacity", True, dynamic=True, type="BIGINT UNSIGNED",
                   minimum=100, maximum=1.8e19), "9" * 400, False)
@example(KnobFacts("long_query_time", True, dynamic=True, type="DOUBLE", minimum=0,
                   maximum=3.15e7), "nan", False)
def test_knob_values_validate_or_raise_knob_error(
    facts: KnobFacts, raw: str, static_ok: bool
) -> None:
    try:
        value = validate(facts, raw, static_ok=static_ok)
    except KnobError as exc:
        assert facts.name in str(exc)
        return
    if isinstance(value, float | int):
        assert math.isfinite(value)


time_texts = st.one_of(
    st.text(max_size=20),
    st.lists(st.one_of(digits, st.from_regex(r"\A[0-9]{1,3}\.[0-9]{1,3}\Z")), min_size=1,
             max_size=4).map(":".join),
    st.sampled_from(["nan", "inf", "1e400", "-5", "1:nan", "0x10"]),
)


@FUZZ
@given(time_texts)
def test_times_parse_or_raise_value_error(text: str) -> None:
    try:
        seconds = parse_time(text)
    except ValueError as exc:  # knobtop's message, not CPython's (int digits, float())
        assert str(exc).startswith(f"not a time: {text!r}"), str(exc)
    else:
        assert math.isfinite(seconds)


@FUZZ
@given(st.one_of(st.text(max_size=30),
                 st.tuples(time_texts, st.sampled_from(["-", "..", " - "]), time_texts).map(
                     "".join)))
def test_time_ranges_parse_or_raise_value_error(text: str) -> None:
    try:
        lo, hi = parse_range(text)
    except ValueError as exc:  # knobtop's messages only
        assert re.match(r"(not a time: |not a time range: |empty time range: )", str(exc)), exc
    else:
        assert all(x is None or math.isfinite(x) for x in (lo, hi))
        assert lo is None or hi is None or lo < hi


# -- whole journals through report, compare, replay and follow --------------------------------

GOOD = DATA / "journals" / "lab-read-write.knobtop.jsonl"
GOOD_LINES = [orjson.loads(ln) for ln in GOOD.read_bytes().splitlines()]
HEADER_FIELDS = sorted(GOOD_LINES[0])


@st.composite
def broken_journals(draw: st.DrawFn) -> bytes:
    """A valid journal with a few structured edits: a field of a wrong type, a field
    removed, an extra field, a line replaced by bytes, the file cut short."""
    lines: list[Any] = [dict(d) for d in GOOD_LINES]
    cut: int | None = None
    for _ in range(draw(st.integers(1, 3))):
        # the header half the time: one line that every reader needs
        n = draw(st.one_of(st.just(0), st.integers(1, len(lines) - 1)))
        op = draw(st.sampled_from(["type", "drop", "extra", "bytes", "cut"]))
        line = lines[n]
        if op == "cut":
            cut = draw(st.integers(0, len(GOOD.read_bytes())))
        elif op == "bytes" or not isinstance(line, dict):
            lines[n] = draw(st.binary(max_size=40))
        elif op == "extra":
            line[draw(st.text(max_size=6))] = draw(json_values)
        else:
            key = draw(st.sampled_from(sorted(line)))
            if op == "drop":
                del line[key]
            else:
                line[key] = draw(json_values)
    data = b"".join((ln if isinstance(ln, bytes) else orjson.dumps(ln)) + b"\n"
                    for ln in lines)
    return data if cut is None else data[:cut]


any_journal = st.one_of(st.binary(max_size=300), broken_journals())
FILE_LINE = "{}:[0-9]+: ."


def knobtop_error(path: Path, exc: JournalFormatError) -> None:
    """knobtop's journal error: FILE:LINE: reason."""
    assert re.match(FILE_LINE.format(re.escape(str(path))), str(exc)), str(exc)


@settings(FUZZ, suppress_health_check=[*FUZZ.suppress_health_check,
                                       HealthCheck.function_scoped_fixture])
@given(any_journal)
@example(GOOD.read_bytes().replace(b'"format":1', b'"format":99'))
@example(GOOD.read_bytes().replace(b'"ev":"sample"', b'"ev": "sample"'))
def test_report_and_compare_end_with_knobtop_error_or_output(
    scratch: Path, capsys: pytest.CaptureFixture[str], data: bytes
) -> None:
    path = scratch / "any.knobtop.jsonl"
    path.write_bytes(data)
    try:
        journal = load_journal(path)
    except JournalFormatError as exc:
        knobtop_error(path, exc)
    else:
        assert markdown_report(journal) and csv_report(journal) is not None
        if not journal.recipe_events:
            with pytest.raises(ValueError, match="no recipe steps in this journal"):
                steps_csv(journal)
        good = load_journal(GOOD)
        for a, b in ((journal, good), (good, journal)):
            result = compare(a, b)
            assert comparison_markdown(result) and comparison_text(result)
    for argv in (["report", str(path)], ["compare", str(path), str(GOOD), "--format", "md"]):
        code = main(argv)
        err = " ".join(capsys.readouterr().err.split())
        assert code in (0, 2) and "Traceback" not in err
        if code == 2:
            assert re.match("knobtop: " + FILE_LINE.format(re.escape(str(path))), err), err


def board_over(events: list[Event], header: Header) -> MetricBoard:
    board = MetricBoard(header)
    for event in events:
        board.apply(event)
    return board


@settings(FUZZ, max_examples=150)
@given(any_journal)
def test_replay_and_follow_read_any_journal_or_name_the_line(scratch: Path, data: bytes) -> None:
    """What the replay and follow screens compute from a journal: no exception but
    knobtop's journal error (for the header), bad lines listed with their reason."""
    path = scratch / "view.knobtop.jsonl"
    path.write_bytes(data)
    try:
        index = JournalIndex(path)
    except JournalFormatError as exc:
        knobtop_error(path, exc)
        assert exc.line_no == 1
        return
    with index:
        index.build()
        replay = Replay(index)
        for at in (replay.start, (replay.start + replay.indexed_to) / 2, replay.indexed_to):
            replay.frame(at)
        assert all(n > 1 and LINE_REASON.match(why) for n, why in index.problems), \
            index.problems
        with JournalFollower(path) as follower:
            events = follower.poll()
            assert follower.header == index.header
            board_over(events, index.header)
            told = [e for e in events if isinstance(e, Error) and e.source == "journal"]
            assert [e.message for e in told] == [
                f"{path}:{n}: {why}; line skipped" for n, why in follower.problems]


async def screens_end_cleanly(path: Path) -> None:
    """The replay and follow apps under a pilot: open, play to the end, quit with 0."""
    try:
        replay = replay_for(path)
    except JournalFormatError as exc:
        knobtop_error(path, exc)
        with pytest.raises(JournalFormatError):
            following_app(path, history=900)
        return
    try:
        app = ReplayApp(replay)
        async with app.run_test(size=(120, 36)) as pilot:
            await until(pilot, lambda: app.frame is not None)
            await pilot.press("end", "home", "c", "right")
            await pilot.press("q")
        assert app.return_code == 0
    finally:
        replay.index.close()
    follow = following_app(path, history=900)
    async with follow.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: follow._live_ready and follow._state.startswith(
            ("following", "ended")))  # "ended" once it read the writer's end event
        await pilot.press("q")
    assert follow.return_code == 0


@settings(FUZZ, max_examples=12)
@given(any_journal)
@example(GOOD.read_bytes().replace(b'"knob":"', b'"knob":123,"x":"', 1))
def test_replay_and_follow_screens_never_crash(scratch: Path, data: bytes) -> None:
    path = scratch / "screen.knobtop.jsonl"
    path.write_bytes(data)
    asyncio.run(screens_end_cleanly(path))
