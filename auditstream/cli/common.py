"""Shared CLI plumbing: settings from flags over environment, logging, errors."""

from __future__ import annotations

import logging
import os
import sys
import threading
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console

from core.settings import Settings

console = Console(stderr=True)

DataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", help="State directory \\[env: AUDITSTREAM_DATA_DIR, default: data]"),
]


def load_settings(**overrides: Any) -> Settings:
    """Settings from AUDITSTREAM_* variables, with the flags that were given on top."""
    given = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Settings(**given)
    except ValidationError as exc:
        for err in exc.errors(include_input=False):
            field = ".".join(str(p) for p in err["loc"])
            console.print(f"[red]bad setting {field}:[/] {err['msg']}")
        raise typer.Exit(2) from None


def result_console() -> Console:
    """A console for results on stdout: on a pipe or a file (no terminal, no COLUMNS), wide
    enough that tables are never cut at rich's default of 80 columns."""
    console = Console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(width=400)
    return console


_FORCED_EXIT: list[threading.Timer] = []


def exit_soon_after_interrupt(message: str, grace_s: float = 10.0) -> None:
    """After Ctrl-C, make sure the process ends within ``grace_s`` seconds.

    A crawl's state is journaled (and fsynced) record by record, so once it is
    cancelled nothing is left to save. Closing down can still wait on a worker thread
    held in I/O (``asyncio.run`` joins its executor, the interpreter joins non-daemon
    threads at exit); a daemon timer then prints ``message`` and exits with 130
    regardless. Armed once per process.
    """
    if _FORCED_EXIT:
        return

    def force() -> None:
        console.print(message)
        sys.stderr.flush()
        os._exit(130)

    timer = threading.Timer(grace_s, force)
    timer.daemon = True
    timer.start()
    _FORCED_EXIT.append(timer)


def setup_logging(level: str = "INFO") -> None:
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    for noisy in ("aiokafka", "faust", "mode"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))
    from ingest import log_privacy

    log_privacy.install()  # aiohttp would quote the start of a refused header (a key) in the log


def fail(message: str, code: int = 1) -> typer.Exit:
    console.print(f"[red]error:[/] {message}")
    return typer.Exit(code)
