"""Helper processes that end with their parent.

The board's compute process and the import's validation processes are children of an
ingest process. If that process is killed (SIGKILL, OOM), nothing runs its clean-up, and
the children would live on as orphans. ``exit_with_parent`` makes a child follow: Linux's
parent-death signal where available, and a watchdog thread everywhere.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import threading
import time

PR_SET_PDEATHSIG = 1


def exit_with_parent(poll_s: float = 1.0) -> None:
    """Call in a child process: it ends when the process that started it is gone."""
    parent = os.getppid()
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)

    def watch() -> None:
        while True:
            time.sleep(poll_s)
            if os.getppid() != parent:
                os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()
