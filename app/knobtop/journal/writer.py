"""Append-only journal writer: one write per event, fsync at least once a second, mode 0600."""

from __future__ import annotations

import errno
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from knobtop.journal.events import Event, Header, to_dict

REDACTED = "[redacted]"
# The fields that hold text from outside knobtop (a server's or a program's error, what a
# person typed): where a password pasted by mistake would land whole. Names and values
# (knob values, versions, users, databases) are data: a short password equal to one of them
# is a coincidence, and writing "[redacted]" there would corrupt the experiment.
FREE_TEXT = frozenset({"message", "text", "label", "reason", "warnings", "error", "note"})


def cannot_create(path: Path, exc: OSError) -> str:
    """The message for a journal that cannot be created at ``path``."""
    return (f"cannot create the journal {path}: {exc.strerror or exc}; "
            "choose another --journal path")


def check_journal_path(path: Path) -> None:
    """Raise OSError now if no journal can be created at ``path``.

    Run before any slow or visible work (starting a sandbox, preparing tables), so a bad
    --journal is reported before anything happened. Creates the directory, as the writer
    would, and a probe file it removes at once.
    """
    if path.exists():
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, probe = tempfile.mkstemp(prefix=".knobtop-probe-", dir=path.parent)
    os.close(fd)
    os.unlink(probe)


class JournalWriter:
    """Writes a header, then events, each as one line in a single ``write``.

    A line reaches the OS before ``append`` returns, so a ``kill -9`` loses
    nothing that was appended; a background thread fsyncs dirty data at least
    once a second so an OS crash loses at most that second.

    Secrets are kept out of events where they are made (a password never goes into a
    message or a description); the registered ones are only a safety net, and it matches
    a whole free-text field (a message, a note, a warning) equal to a secret, never a
    part of one and never a name or a value: with the password ``1`` a change to ``1``, a
    version ``0.1`` and a database ``db1`` are written as they are.
    """

    def __init__(
        self,
        path: Path,
        header: Header,
        *,
        fsync_interval: float = 1.0,
        secrets: tuple[str, ...] = (),
    ) -> None:
        self.path = path
        self.header = header
        self.events_written = 0
        self._secrets: list[str] = [s for s in secrets if s]
        self._lock = threading.Lock()
        self._dirty = False
        self._closed = False
        # The first write that failed (a full disk): no line may follow a torn one.
        self.failed: OSError | None = None
        path.parent.mkdir(parents=True, exist_ok=True)
        # O_EXCL: a journal is never appended to by a second session by accident.
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        try:
            self._write_line(self._encode(to_dict(header)))
        except OSError:
            os.close(self._fd)  # no headerless file left behind
            path.unlink(missing_ok=True)
            raise
        self._stop = threading.Event()
        self._syncer = threading.Thread(
            target=self._sync_loop, args=(fsync_interval,), name="journal-fsync", daemon=True
        )
        self._syncer.start()

    def add_secret(self, secret: str) -> None:
        """Never write this string (a password, a token) to the journal."""
        if secret:
            self._secrets.append(secret)

    def append(self, event: Event) -> None:
        self._write_line(self._encode(to_dict(event)))
        self.events_written += 1

    def _encode(self, data: dict[str, Any]) -> bytes:
        return orjson.dumps(self._redact(data) if self._secrets else data)

    def _redact(self, value: Any, free_text: bool = False) -> Any:
        if isinstance(value, str):
            return REDACTED if free_text and value in self._secrets else value
        if isinstance(value, dict):  # keys are field names
            return {k: self._redact(v, free_text or k in FREE_TEXT) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self._redact(v, free_text) for v in value]
        return value

    def _write_line(self, line: bytes) -> None:
        data = memoryview(line + b"\n")
        with self._lock:
            if self._closed:
                raise ValueError(f"journal {self.path} is closed")
            if self.failed is not None:
                raise OSError(self.failed.errno, self.failed.strerror, str(self.path))
            try:
                while data:  # a short write (full disk, signal) must not leave half a line
                    written = os.write(self._fd, data)
                    data = data[written:]
            except OSError as exc:
                self.failed = exc
                raise
            self._dirty = True

    def _sync_loop(self, interval: float) -> None:
        while not self._stop.wait(interval):
            self.sync()

    def sync(self) -> None:
        with self._lock:
            if self._closed or not self._dirty:
                return
            self._dirty = False
            fd = self._fd
        try:
            os.fsync(fd)
        except OSError as exc:  # the data may not be on disk: appends fail from now on
            with self._lock:
                self.failed = self.failed or exc

    def close(self) -> None:
        self._stop.set()
        self._syncer.join(timeout=5)
        with self._lock:
            if self._closed:
                return
            try:
                os.fsync(self._fd)
            except OSError as exc:
                self.failed = self.failed or exc
            finally:
                os.close(self._fd)
                self._closed = True


def default_journal_path(directory: Path, profile: str, when: float | None = None) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(when or time.time()))
    return directory / f"{profile}-{stamp}.knobtop.jsonl"
