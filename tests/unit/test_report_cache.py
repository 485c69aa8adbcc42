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
    path = tmp_path / "j.knobtop.jsonl"
    original = RECORDED[0].read_bytes()
    cache = cache_at(tmp_path)
    for change in (lambda b: b + b"\n",  # appended to (a blank line)
                   lambda b: b[: b.rindex(b"\n", 0, len(b) - 1) + 1],  # cut short
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
