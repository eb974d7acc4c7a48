"""Shared CLI plumbing: settings from flags over environment, logging, errors.

Both consoles are built with ``emoji=False``: a stored ``:smile:`` is shown as stored,
like every other value the CLI did not write itself (safe_text.py)."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.text import Text

from auditstream.cli.safe_text import markup_safe, printable
from core.settings import Settings


def _message_console() -> Console:
    """Messages and progress on stderr. Redirected to a file or a log (no terminal, no
    COLUMNS), a line is not wrapped at rich's default of 80 columns, where it would break
    inside a path or a name."""
    console = Console(stderr=True, emoji=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(stderr=True, emoji=False, width=1000)
    return console


console = _message_console()


def base_url(value: str) -> str:
    """A ``--url``: http(s) with a host, checked before any request is made."""
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018  (raises on a bad port)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise typer.BadParameter(f"{value!r} is not an http(s) URL; for example http://127.0.0.1:8080")
    return value


ServiceUrl = Annotated[
    str, typer.Option("--url", help="Base URL of a running auditstream ingest", callback=base_url)
]

DataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", help="State directory \\[env: AUDITSTREAM_DATA_DIR, default: data]"),
]


@contextlib.contextmanager
def data_dir_held(settings: Settings, *, exclusive: bool) -> Iterator[None]:
    """The data directory's lock for the command's whole run (``core/data_lock.py``), or a
    clear error before anything is touched."""
    from core.data_lock import DataDirHeld, hold

    try:
        lock = hold(settings.data_dir, exclusive=exclusive)
        lock.__enter__()
    except DataDirHeld as exc:
        raise fail(str(exc), 2) from None
    try:
        yield
    finally:
        lock.__exit__(None, None, None)


def load_settings(**overrides: Any) -> Settings:
    """Settings from AUDITSTREAM_* variables, with the flags that were given on top."""
    given = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Settings(**given)
    except ValidationError as exc:
        for err in exc.errors(include_input=False):
            field = ".".join(str(p) for p in err["loc"])
            console.print(f"[red]bad setting {markup_safe(field)}:[/] {markup_safe(err['msg'])}")
        raise typer.Exit(2) from None


def result_console() -> Console:
    """A console for results on stdout: on a pipe or a file (no terminal, no COLUMNS), wide
    enough that tables are never cut at rich's default of 80 columns."""
    console = Console(emoji=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(emoji=False, width=400)
    return console


def setup_logging(level: str = "INFO", on: Console | None = None) -> None:
    """The one logging set-up: timestamped lines for services, or (``on`` a console) lines
    through rich, so a crawler's log prints above its progress bars."""
    if on is None:
        logging.basicConfig(
            level=getattr(logging, level.upper(), logging.INFO),
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        )
    else:
        from rich.console import ConsoleRenderable
        from rich.logging import RichHandler

        class PrintableRichHandler(RichHandler):
            """A crawler's log lines quote what engines answered: shown printable (safe_text.py)."""

            def render_message(self, record: logging.LogRecord, message: str) -> ConsoleRenderable:
                return super().render_message(record, printable(message, multiline=True))

        logging.basicConfig(
            level=getattr(logging, level.upper(), logging.WARNING),
            format="%(message)s",
            handlers=[PrintableRichHandler(console=on, show_path=False)],
        )
    for noisy in ("aiokafka", "faust", "mode"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))
    from ingest import log_privacy

    log_privacy.install()  # aiohttp would quote the start of a refused header (a key) in the log


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print ``message`` as an error and return the exit to raise. The message is plain
    text, never markup: it often quotes a server's answer, a file or an exception, and is
    shown with its control characters made visible (safe_text.py)."""
    console.print(Text.assemble(("error:", "red"), " ", printable(message, multiline=True)))
    return typer.Exit(code)
