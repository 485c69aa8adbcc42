"""The report cache (issue 41, analysis.reportcache): a journal's fold kept for its next
report, used only for the very bytes it was kept from, only when the kept file is intact."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from harness import paths as repo_paths
from harness.hostile import hostile_journal
from knobtop.analysis.compare import compare, comparison_markdown
from knobtop.analysis.journaldata import JournalData, load_journal
from knobtop.analysis.report import csv_report, markdown_report
from knobtop.analysis.reportcache import ReportCache, default_dir
from knobtop.journal import JournalFormatError
from test_report_fast import edited, no_end, odd_journal, two_phases

DATA = repo_paths.DATA / "journals"
RECORDED = sorted(DATA.glob("*.knobtop.jsonl"))


def cache_at(tmp_path: Path) -> ReportCache:
    return ReportCache(tmp_path / "cache", min_bytes=0)


def kept_file(cache: ReportCache) -> Path:
    files = [p for p in cache.directory.iterdir() if p.name.endswith(".json")]
    assert len(files) == 1
    return files[0]


def same_data(a: JournalData, b: JournalData) -> None:
    """Everything a report or comparison reads, equal (and the texts themselves)."""
    for name in ("rows", "loads", "phases", "changes", "outside", "restarts", "notes",
                 "marks", "errors", "end", "first_t", "last_t", "knobs_start", "knobs_end",
                 "skipped_unknown", "other_targets", "target_knobs", "unknown_types",
                 "torn_tail", "recipe_events"):
        assert repr(getattr(a, name)) == repr(getattr(b, name)), name
    assert markdown_report(a) == markdown_report(b)
    assert csv_report(a) == csv_report(b)


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name)
def test_kept_fold_gives_the_same_reports(path: Path, tmp_path: Path) -> None:
    cache = cache_at(tmp_path)
    fresh = load_journal(path, cache=None)
    first = load_journal(path, cache=cache)  # reads and keeps
    kept_file(cache)
    again = load_journal(path, cache=cache)  # from what was kept
    same_data(first, fresh)
    same_data(again, fresh)
    for t_from, t_to in ((10.0, 40.0), (None, 5.0), (30.0, None)):
        same_data(load_journal(path, t_from=t_from, t_to=t_to, cache=cache),
                  load_journal(path, t_from=t_from, t_to=t_to, cache=None))
    a, b = load_journal(path, cache=cache), load_journal(RECORDED[0], cache=None)
    assert comparison_markdown(compare(a, b)) == comparison_markdown(
        compare(fresh, load_journal(RECORDED[0], cache=None)))


def test_kept_fold_of_a_hostile_journal(tmp_path: Path) -> None:
    path = hostile_journal(tmp_path / "hostile.knobtop.jsonl")
    cache = cache_at(tmp_path)
    load_journal(path, cache=cache)
    same_data(load_journal(path, cache=cache), load_journal(path, cache=None))


def used(cache: ReportCache, path: Path) -> bool:
    """Whether the next report reads the kept fold (seen by what it reads: a kept fold
    whose rows were replaced would show them)."""
    kept = cache.open(path, path.stat().st_size)
    if kept is None:
        return False
    kept.close()
    return True


def test_a_journal_changed_since_is_read_again(tmp_path: Path) -> None:
    """Cut short, edited in place, its last line torn: the kept fold is not used. (A
    journal only appended to is read from its kept fold on: the test after this one.)"""
    path = tmp_path / "j.knobtop.jsonl"
    original = RECORDED[0].read_bytes()
    cache = cache_at(tmp_path)
    for change in (lambda b: b[: b.rindex(b"\n", 0, len(b) - 1) + 1],  # cut short
                   lambda b: b.replace(b'"tps":', b'"tps": ', 1)[:len(b)],  # same size
                   lambda b: b[:-1]):  # the last line torn
        path.write_bytes(original)
        load_journal(path, cache=cache)
        assert used(cache, path)
        path.write_bytes(change(original))
        assert not used(cache, path)
        fresh = load_journal(path, cache=None)
        same_data(load_journal(path, cache=cache), fresh)
        assert used(cache, path)  # kept again, for the new bytes


FIELDS = ("rows", "loads", "phases", "changes", "outside", "restarts", "notes", "marks",
          "errors", "end", "first_t", "last_t", "knobs_start", "knobs_end", "skipped_unknown",
          "other_targets", "target_knobs", "unknown_types", "torn_tail", "recipe_events")


def grown_journal(tmp_path: Path, name: str) -> Path:
    """Journals that exercise every part of the fold's state at a cut: a load report no
    sample took yet, a phase running (on one client and on two, whose per-client reports
    are left out), a further server's samples, a deriver's odd samples, a torn last line."""
    if name in RECORDED_NAMES:
        return DATA / name
    if name == "torn":
        torn = tmp_path / "torn.knobtop.jsonl"
        torn.write_bytes(RECORDED[0].read_bytes() + b'{"ev":"sample","t":99')
        return torn
    path = tmp_path / f"{name}.knobtop.jsonl"
    made = {"hostile": hostile_journal, "odd": odd_journal,
            "no-end": lambda p: edited(tmp_path, p.name, no_end),
            "two-phases": lambda p: edited(tmp_path, p.name, two_phases)}
    return made[name](path)  # type: ignore[no-any-return]


RECORDED_NAMES = [p.name for p in RECORDED]


@pytest.mark.parametrize("name", [*RECORDED_NAMES, "hostile", "odd", "no-end", "two-phases",
                                  "torn"])
def test_a_journal_that_grew_is_read_from_its_kept_fold_on(tmp_path: Path, name: str) -> None:
    """A report of a journal still being written (a soak, a session that went on) keeps
    the fold of the whole lines it read; the next report, of the journal grown since, reads
    that fold and folds only the lines after it, and gives what reading it all gives. Cut
    at every line and inside lines (a torn last line then), of journals whose fold has
    every kind of state at the cut; ranges too. (The keeper's cache, which keeps every fold
    that covers more: a report's keeps it once it is worth it, the test after this one.)"""
    cache = ReportCache(tmp_path / "cache", min_bytes=0, eager=True)
    grown = tmp_path / "grown.knobtop.jsonl"
    source = grown_journal(tmp_path, name)
    full = source.read_bytes()
    grown.write_bytes(full)
    fresh = load_journal(grown, cache=None)
    header = full.index(b"\n") + 1
    ends = [i + 1 for i, c in enumerate(full) if c == 0x0A]
    for cut in sorted({*ends, *(e + 7 for e in ends[:-1:5]), len(full)}):
        grown.write_bytes(full[:cut])
        load_journal(grown, cache=cache)  # keeps the fold of its whole lines
        with grown.open("ab") as fh:  # the session writes on
            fh.write(full[cut:])
        kept = cache.open(grown, len(full))
        assert kept is not None, (name, cut)
        kept.close()
        assert kept.size == max(e for e in ends if e <= cut) >= header  # whole lines
        again = load_journal(grown, cache=cache)
        for field in FIELDS:
            assert repr(getattr(again, field)) == repr(getattr(fresh, field)), (
                name, cut, field)
        kept = cache.open(grown, len(full))  # kept again, to the journal's end
        assert kept is not None and kept.size == ends[-1]
        kept.close()
    same_data(load_journal(grown, cache=cache), fresh)
    middle = ends[len(ends) // 2]
    times = [r.t for r in fresh.rows]
    for t_from, t_to in ((times[2], times[-2]), (None, times[len(times) // 2]),
                         (times[len(times) // 2], None)):
        grown.write_bytes(full[:middle])
        load_journal(grown, cache=cache)
        with grown.open("ab") as fh:
            fh.write(full[middle:])
        got = load_journal(grown, t_from=t_from, t_to=t_to, cache=cache)
        same_data(got, load_journal(grown, t_from=t_from, t_to=t_to, cache=None))


def test_a_report_keeps_a_grown_fold_again_once_it_grew_by_an_eighth(tmp_path: Path) -> None:
    """Rewriting a long journal's kept fold costs about what folding an eighth of it does:
    a report of a journal grown by less reads the kept fold and folds the new lines
    itself, leaving the kept fold as it was; grown by an eighth or more, it keeps the fold
    again, to the end. Either way the report is the journal's."""
    cache = cache_at(tmp_path)
    full = RECORDED[0].read_bytes()
    ends = [i + 1 for i, c in enumerate(full) if c == 0x0A]
    first = ends[len(ends) // 2]
    small = next(e for e in ends if e > first)  # one line more
    big = next(e for e in ends if e - first >= first // 8)
    path = tmp_path / "j.knobtop.jsonl"
    path.write_bytes(full[:first])
    load_journal(path, cache=cache)
    for upto, kept_to in ((small, first), (big, big)):
        path.write_bytes(full[:upto])
        fresh = load_journal(path, cache=None)
        same_data(load_journal(path, cache=cache), fresh)
        kept = cache.open(path, upto)
        assert kept is not None and kept.size == kept_to
        kept.close()
        same_data(load_journal(path, cache=cache), fresh)


def test_a_changed_line_is_found_bad_as_ever(tmp_path: Path) -> None:
    path = tmp_path / "j.knobtop.jsonl"
    lines = RECORDED[0].read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines))
    cache = cache_at(tmp_path)
    load_journal(path, cache=cache)
    lines[30] = b"{not json" + b" " * (len(lines[30]) - 10) + b"\n"  # the same size
    path.write_bytes(b"".join(lines))
    with pytest.raises(JournalFormatError, match=r":31: not valid JSON"):
        load_journal(path, cache=cache)


def tamper(cache: ReportCache, edit: object) -> None:
    kept = kept_file(cache)
    kept.write_bytes(edit(kept.read_bytes()))  # type: ignore[operator]


def test_a_tampered_kept_file_is_never_used(tmp_path: Path) -> None:
    """Rows changed in the kept file (its MAC no longer matches), the MAC recomputed by
    someone without the key, a kept file planted without a key, a key that is a link: each
    time the journal is read again and the report is the journal's own."""
    path = RECORDED[0]
    cache = cache_at(tmp_path)
    fresh = load_journal(path, cache=None)
    load_journal(path, cache=cache)
    assert used(cache, path)
    some = f"{fresh.rows[5].tps!r}".encode()
    tamper(cache, lambda b: b.replace(some, b"1.0", 1))
    assert not used(cache, path)
    same_data(load_journal(path, cache=cache), fresh)  # (and kept again)
    assert used(cache, path)
    tamper(cache, lambda b: b"0" * 64 + b[64:])  # a MAC made up
    assert not used(cache, path)
    load_journal(path, cache=cache)
    (cache.directory / "key").unlink()  # no key: nothing kept before can be checked
    assert not used(cache, path)
    same_data(load_journal(path, cache=cache), fresh)
    assert used(cache, path)  # a new key, a new kept file
    key = cache.directory / "key"
    key.chmod(0o644)
    assert not used(cache, path)  # a key others can read
    key.chmod(0o600)
    assert used(cache, path)
    cache.directory.chmod(0o777)
    assert not used(cache, path)  # a directory others can write (and swap the key in)
    cache.directory.chmod(0o700)
    key.rename(cache.directory / "real-key")
    os.symlink(cache.directory / "real-key", key)
    assert not used(cache, path)  # the key must be a file, not a link


def test_kept_rows_of_the_wrong_type_are_not_used(tmp_path: Path) -> None:
    """A kept file with the right MAC (made with the key) but a row of strings: read
    again from the journal (the kept values are checked as they are read back)."""
    import hashlib
    import hmac

    path = RECORDED[0]
    cache = cache_at(tmp_path)
    load_journal(path, cache=cache)
    kept = kept_file(cache)
    lines = kept.read_bytes().split(b"\n")
    rows = orjson.loads(lines[3])
    rows[2][4] = "99"
    lines[3] = orjson.dumps(rows)
    payload = b"\n".join(lines[1:])
    key = (cache.directory / "key").read_bytes()
    kept.write_bytes(hmac.new(key, payload, hashlib.sha256).hexdigest().encode() + b"\n"
                     + payload)
    assert used(cache, path)  # the MAC holds...
    same_data(load_journal(path, cache=cache), load_journal(path, cache=None))  # ...yet


def test_small_journals_and_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = ReportCache(tmp_path / "cache")  # the default floor: 1 MiB
    load_journal(RECORDED[0], cache=cache)
    assert not cache.directory.exists()
    monkeypatch.setenv("KNOBTOP_REPORT_CACHE", "off")
    assert default_dir() is None
    monkeypatch.setenv("KNOBTOP_REPORT_CACHE", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_dir() == tmp_path / "xdg" / "knobtop" / "reports"


def test_the_oldest_kept_files_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from knobtop.analysis import reportcache

    monkeypatch.setattr(reportcache, "KEEP_FILES", 2)
    cache = cache_at(tmp_path)
    paths = []
    for n in range(3):
        path = tmp_path / f"j{n}.knobtop.jsonl"
        path.write_bytes(RECORDED[0].read_bytes())
        load_journal(path, cache=cache)
        paths.append(path)
        kept = sorted(cache.directory.glob("*.json"))
        for when, p in enumerate(kept):  # written in turn: make the order plain
            os.utime(p, ns=(when, when) if p != cache._file(path) else (10**18, 10**18))
    assert len(list(cache.directory.glob("*.json"))) == 2
    assert not used(cache, paths[0]) and used(cache, paths[1]) and used(cache, paths[2])


def test_the_keeper_process_keeps_a_fold_the_next_report_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a session starts as it closes (analysis.keepfold): its own process, detached,
    which folds the journal and keeps the fold; the next report reads it and gives what
    the journal gives. A journal too small, the cache off, a file that is no journal: no
    process, or one that keeps nothing and says so by its exit code."""
    from knobtop.analysis import keepfold

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("KNOBTOP_REPORT_CACHE", raising=False)
    path = tmp_path / "j.knobtop.jsonl"
    path.write_bytes(RECORDED[0].read_bytes())
    cache = ReportCache(tmp_path / "xdg" / "knobtop" / "reports", min_bytes=0)
    assert keepfold.spawn(path) is None  # under the default 1 MiB: read as quickly
    assert not used(cache, path)
    proc = keepfold.spawn(path, min_bytes=0)
    assert proc is not None
    assert proc.wait(timeout=60) == 0
    assert used(cache, path)
    same_data(load_journal(path, cache=cache), load_journal(path, cache=None))
    bad = tmp_path / "bad.knobtop.jsonl"
    bad.write_bytes(b"{not a journal\n" * 10)
    proc = keepfold.spawn(bad, min_bytes=0)
    assert proc is not None and proc.wait(timeout=60) == 1
    assert not used(cache, bad)
    monkeypatch.setenv("KNOBTOP_REPORT_CACHE", "off")
    assert keepfold.spawn(path, min_bytes=0) is None
