"""A logged-in profile's cookies, read from a Netscape ``cookies.txt`` export.

Browsers' cookie-export extensions, ``curl -c`` and ``yt-dlp --cookies`` write this
format: one cookie per line, seven tab-separated fields::

    # Netscape HTTP Cookie File
    .google.com	TRUE	/	TRUE	1767225600	SID	<value>
    #HttpOnly_.google.com	TRUE	/	TRUE	1767225600	__Secure-3PSID	<value>

(domain, include subdomains, path, secure only, expiry as Unix seconds with 0 for a
session cookie, name, value). ``#HttpOnly_`` marks a cookie scripts may not read;
other lines starting with ``#`` and blank lines are comments.

Cookie values are credentials: errors name the file and the line number, never a
value (nor the line, which holds one), and a :class:`FileCookie`'s repr leaves its
value out, so it cannot end up in a log.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from collectors.common.exceptions import CrawlConfigError

HTTP_ONLY = "#HttpOnly_"
FIELDS = 7
_FLAGS = {"TRUE": True, "FALSE": False}
_BAD_NAME = frozenset(' \t\r\n;,="')


@dataclass(frozen=True)
class FileCookie:
    line: int
    """Where it stood in the file (1-based), for error messages."""
    domain: str
    """Without the leading dot; ``include_subdomains`` says whether it had one."""
    include_subdomains: bool
    path: str
    secure: bool
    expires: float | None
    """Unix seconds; None for a session cookie."""
    name: str
    value: str = field(repr=False)
    http_only: bool = False

    def for_playwright(self) -> dict[str, Any]:
        """This cookie as Playwright's ``BrowserContext.add_cookies`` takes it."""
        return {
            "name": self.name,
            "value": self.value,
            "domain": f".{self.domain}" if self.include_subdomains else self.domain,
            "path": self.path,
            "expires": self.expires if self.expires is not None else -1,
            "httpOnly": self.http_only,
            "secure": self.secure,
        }


def parse_cookies(text: str, source: str = "cookies file") -> list[FileCookie]:
    """Every cookie of a ``cookies.txt`` document; a malformed line raises, naming its number."""
    cookies = []
    for number, raw in enumerate(text.removeprefix("\ufeff").splitlines(), start=1):
        line = raw.strip("\r\n")
        http_only = line.startswith(HTTP_ONLY)
        if http_only:
            line = line.removeprefix(HTTP_ONLY)
        elif not line.strip() or line.lstrip().startswith("#"):
            continue
        cookies.append(_cookie(line, number, http_only, source))
    return cookies


def _cookie(line: str, number: int, http_only: bool, source: str) -> FileCookie:
    def bad(why: str) -> CrawlConfigError:
        return CrawlConfigError(f"{source} line {number}: {why} (Netscape cookies.txt format expected)")

    parts = line.split("\t")
    if len(parts) != FIELDS:
        raise bad(f"{len(parts)} tab-separated fields, expected {FIELDS}")
    domain, subdomains, path, secure, expires, name, value = parts
    domain = domain.strip()
    if not domain or any(c in _BAD_NAME for c in domain):
        raise bad("the domain (field 1) is empty or not a host name")
    flags = (subdomains.strip().upper(), secure.strip().upper())
    if any(f not in _FLAGS for f in flags):
        raise bad("fields 2 and 4 must be TRUE or FALSE")
    if not path.startswith("/"):
        raise bad("the path (field 3) must start with /")
    try:
        expiry = float(expires)
    except ValueError:
        raise bad("the expiry (field 5) is not a number of seconds") from None
    if not name or any(c in _BAD_NAME for c in name):
        raise bad("the cookie name (field 6) is empty or has a space, ';', ',', '=' or quote")
    if any(c in "\r\n;" for c in value):
        raise bad("the value (field 7) has a ';' or a line break")
    return FileCookie(
        line=number,
        domain=domain.lstrip("."),
        include_subdomains=domain.startswith(".") or _FLAGS[flags[0]],
        path=path,
        secure=_FLAGS[flags[1]],
        expires=expiry if expiry > 0 else None,
        name=name,
        value=value,
        http_only=http_only,
    )


def read_cookies(path: Path) -> list[FileCookie]:
    """The cookies of ``path``; unreadable files and malformed lines raise :class:`CrawlConfigError`."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CrawlConfigError(f"cannot read cookies file {path}: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise CrawlConfigError(f"cookies file {path} line {line}: not UTF-8 text") from None
    return parse_cookies(text, f"cookies file {path}")


def unexpired(cookies: list[FileCookie], now: float | None = None) -> list[FileCookie]:
    """Cookies still valid ``now`` (an export keeps expired ones; a browser would drop them)."""
    at = time.time() if now is None else now
    return [c for c in cookies if c.expires is None or c.expires > at]
