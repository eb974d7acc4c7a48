"""One service per data directory: ``up`` holds an exclusive lock on it for its whole life.

A second ``up`` on a directory a running service holds used to register its ``--api-key``,
delete the running service's ``run/ready`` and ``broker.pid`` and overwrite its other run
files before it noticed the port was taken. Now every command that uses a data directory
takes its lock first, before it touches anything: ``up`` exclusively; a standalone
``ingest``, ``worker``, ``store`` or ``db migrate`` shared (several may run side by side, as
in production, but none beside an ``up``). The processes ``up`` starts are told, through
``HELD_ENV``, that their supervisor holds the lock for them. The lock is ``flock`` on
``service.lock``, which the kernel releases when the holder dies: a crashed service never
leaves a stale lock behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from core.errors import AuditstreamError

LOCK_NAME = "service.lock"
HELD_ENV = "AUDITSTREAM_DATA_DIR_HELD_BY"
"""Set by the supervisor for its children: the data directory whose lock it holds."""


class DataDirHeld(AuditstreamError):
    """Another auditstream process holds the data directory."""


def _holder(path: Path) -> str:
    with contextlib.suppress(OSError, ValueError):
        pid = int(path.read_text().strip())
        return f" (pid {pid})"
    return ""


@contextlib.contextmanager
def hold(data_dir: Path, *, exclusive: bool) -> Iterator[None]:
    """Hold ``data_dir``'s lock while the block runs, or raise :class:`DataDirHeld` at once."""
    data_dir = Path(data_dir)
    if os.environ.get(HELD_ENV) == str(data_dir.resolve()):
        yield  # started by the supervisor that holds it
        return
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
        except BlockingIOError:
            what = "another auditstream process uses" if exclusive else "a running `auditstream up` holds"
            holder = "" if exclusive else _holder(path)  # the pid is written by an exclusive holder
            raise DataDirHeld(
                f"{what} the data directory {data_dir}{holder}; stop it first, or give "
                "another --data-dir (nothing was changed)"
            ) from None
        if exclusive:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        os.close(fd)  # releases the lock
