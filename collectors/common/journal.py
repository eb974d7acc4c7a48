"""An append-only JSON Lines journal owned by one process: the resume state of a crawl.

Each ``append`` is one line, flushed and fsynced before it returns, so a step is either
journaled whole or not at all. A line torn by a crash is cut off when the owner opens
the journal. A ``lock`` file (flock) keeps a second process from writing the same
journal: two writers would interleave it.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import threading
from pathlib import Path
from typing import IO, Any

import orjson

from collectors.common.exceptions import CrawlStateError


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` (tmp + fsync + rename): readers see old or new, never half."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_journal(path: Path, *, repair: bool = False) -> list[dict[str, Any]]:
    """Every whole line; with ``repair`` (the owner only) a torn tail is cut off so appends stay clean."""
    data = path.read_bytes()
    records, good = [], 0
    for line in data.splitlines(keepends=True):
        if not line.endswith(b"\n"):
            break
        try:
            records.append(orjson.loads(line))
        except orjson.JSONDecodeError:
            break
        good += len(line)
    if repair and good != len(data):
        with path.open("r+b") as fh:
            fh.truncate(good)
    return records


def take_ownership(directory: Path, name: str) -> IO[bytes]:
    """Lock ``directory`` for this process (released when the returned file closes)."""
    fh = (directory / "lock").open("ab")
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.close()
        raise CrawlStateError(f"{name} is open in another process") from None
    return fh


class Journal:
    """``<directory>/journal.jsonl``, owned while open; ``append`` is safe from worker threads."""

    def __init__(self, directory: Path, name: str) -> None:
        self.directory = directory
        self.records: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._owner = take_ownership(directory, name)
        path = directory / "journal.jsonl"
        try:
            if path.exists():
                self.records = read_journal(path, repair=True)
            self._fh = path.open("ab")
        except BaseException:
            self._owner.close()
            raise

    def append(self, record: dict[str, Any]) -> None:
        line = orjson.dumps(record) + b"\n"
        with self._lock:
            self._fh.write(line)
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self.records.append(record)

    def close(self) -> None:
        with self._lock:  # an append still running in a worker thread finishes its line first
            self._fh.close()
        self._owner.close()  # releases the lock
