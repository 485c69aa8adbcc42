"""The report fold of a journal, kept while it records and as it ends (issue 41).

The first report of a day's journal folds 172,800 lines (about two seconds); the next ones
read what that first one kept (reportcache).  A session starts this module in a process of
its own, detached and at the lowest CPU priority, every ``keep_fold_every`` seconds while it
records and once more as it closes its journal; each run folds only the lines after the
fold kept before it, and keeps the fold to the journal's end: the first ``knobtop report``
or ``compare`` the next morning, or of what a killed session left, is then about as quick
as the second.  The kept fold is checked as ever when it is used (the size and SHA-256 of
the bytes it covers, the HMAC): a journal changed since is simply read again.

Run:  python -m knobtop.analysis.keepfold JOURNAL [--min-bytes N]
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from knobtop.analysis.reportcache import MIN_BYTES, ReportCache, default_dir

if TYPE_CHECKING:
    from knobtop.journal import Event


def spawn(journal: Path, min_bytes: int = MIN_BYTES) -> subprocess.Popen[bytes] | None:
    """Start keeping ``journal``'s fold in the background (its process, to wait for or
    leave); None when the cache is off or the journal is smaller than ``min_bytes`` (a
    small one reads as quickly as a kept fold would)."""
    if default_dir() is None:
        return None
    try:
        if journal.stat().st_size < max(min_bytes, 1):
            return None
    except OSError:
        return None
    return subprocess.Popen(
        [sys.executable, "-m", "knobtop.analysis.keepfold", str(journal),
         "--min-bytes", str(min_bytes)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,  # a closing terminal or session does not end it
    )


class FoldKeeper:
    """A recording journal's fold kept now and then (a sample ``every`` seconds after the
    last keeping starts the next, unless that one still runs) and once more at its end
    (``keep_now``): a session's, subscribed to its events."""

    def __init__(self, journal: Path, min_bytes: int, every: float) -> None:
        self.journal, self.min_bytes, self.every = journal, min_bytes, every
        self.proc: subprocess.Popen[bytes] | None = None  # the last keeping started
        self._next = every  # the session time of the next keeping

    def on_event(self, event: Event) -> None:
        if event.kind != "sample" or event.t < self._next:
            return
        self._next = event.t + self.every
        if self.proc is None or self.proc.poll() is not None:
            self.keep_now()

    def keep_now(self) -> None:
        with contextlib.suppress(OSError):
            self.proc = spawn(self.journal, self.min_bytes) or self.proc


def keep(journal: Path, min_bytes: int = MIN_BYTES) -> bool:
    """Fold ``journal`` and keep the fold (as a report does); False when there is no cache,
    or the journal could not be read as one (nothing is kept then, and the report that
    reads it says why)."""
    from knobtop.analysis.journaldata import load_journal
    from knobtop.journal import JournalFormatError

    where = default_dir()
    if where is None:
        return False
    try:
        load_journal(journal, cache=ReportCache(where, min_bytes=min_bytes, eager=True))
    except (OSError, JournalFormatError):
        return False
    return True


def main(argv: list[str]) -> int:
    os.nice(19)  # the person's next command comes first
    min_bytes = MIN_BYTES
    if len(argv) == 3 and argv[1] == "--min-bytes" and argv[2].isdigit():
        min_bytes = int(argv[2])
    elif len(argv) != 1:
        print("usage: python -m knobtop.analysis.keepfold JOURNAL [--min-bytes N]",
              file=sys.stderr)
        return 2
    return 0 if keep(Path(argv[0]), min_bytes) else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
