"""The report fold of a journal, kept as its recording ends (issue 41).

The first report of a day's journal folds 172,800 lines (about two seconds); the next ones
read what that first one kept (reportcache).  A session that closes its journal starts this
module in a process of its own, detached and at the lowest CPU priority, which folds the
journal once and keeps the fold: the first ``knobtop report`` or ``compare`` the next
morning is then as quick as the second.  The kept fold is checked as ever when it is used
(the journal's size and SHA-256, the HMAC): a journal changed since is simply read again.

Run:  python -m knobtop.analysis.keepfold JOURNAL [--min-bytes N]
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from knobtop.analysis.reportcache import MIN_BYTES, ReportCache, default_dir


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
        load_journal(journal, cache=ReportCache(where, min_bytes=min_bytes))
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
