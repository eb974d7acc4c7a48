"""The small files of ``run/`` that name the service's processes (``ingest.pid``,
``broker.pid``, ``broker.addr``): written so a full disk cannot stop the service.

They tell people and tools which process is which; the service itself never reads them.
A write that fails (no space left) removes the stale file, so none names a process that
is gone, and says so once per file; the child or broker it was about runs all the same.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

log = logging.getLogger(__name__)


def write_run_file(path: Path, text: str) -> bool:
    """Write ``text`` to ``path``; False, with the stale file removed, when the disk refuses."""
    try:
        path.write_text(text)
        return True
    except OSError as exc:
        with contextlib.suppress(OSError):
            path.unlink()
        log.warning("could not write %s (%s); it is left out until the next write", path.name, exc.strerror)
        return False
