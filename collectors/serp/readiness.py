"""What ``crawl serp --check`` refuses: a study that is valid but would not measure what it says.

The examples in ``examples/`` are meant to be copied, and two of their settings are
placeholders no study can run with: proxies (the profile would fail every round, or
search from somewhere else than its treatment says) and a logged-in profile without the
account's cookies (it would search logged out: a treatment that is not one). A proxy is
a placeholder when its host is

- a name reserved for examples (RFC 2606, RFC 6761): ``example``, ``invalid`` and
  ``test`` and names under them, ``example.com``, ``.net``, ``.org`` and names under them;
- a documentation address (RFC 5737, RFC 3849): 192.0.2.0/24, 198.51.100.0/24,
  203.0.113.0/24, 2001:db8::/32;
- or host and port of a proxy an example file declares (``10.0.0.2:3128`` ...): a
  private address is a real proxy on some network, so only the examples' own ones are
  called placeholders, whatever the scheme or login.

Pure: ``study_problems`` takes the study and the examples' proxies (``example_proxies``
reads them), and returns one line per problem.
"""

from __future__ import annotations

import ipaddress
import re
import tomllib
from collections.abc import Set
from pathlib import Path
from urllib.parse import urlsplit

from collectors.serp.study import Profile, Study

EXAMPLES = Path(__file__).parent / "examples"
RESERVED_TLDS = ("example", "invalid", "test")
RESERVED_DOMAINS = ("example.com", "example.net", "example.org")
DOCUMENTATION_NETS = tuple(
    ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32")
)
LOGGED_IN = "logged_in"
"""The treatment feature of a logged-in profile (``treatment = "logged_in"`` or ``"logged_in=..."``)."""

HostPort = tuple[str, int | None]


def host_port(proxy: str) -> HostPort:
    """Host (lower case, no brackets) and port of a proxy URL; the login is left out."""
    parts = urlsplit(proxy)
    try:
        port = parts.port
    except ValueError:
        port = None
    return (parts.hostname or "").rstrip(".").lower(), port


def example_proxies(examples: Path = EXAMPLES) -> set[HostPort]:
    """Host and port of every proxy the example files declare."""
    found = set()
    for path in examples.glob("*.toml"):
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
        for profile in doc.get("profiles", []):
            if isinstance(proxy := profile.get("proxy"), str):
                found.add(host_port(proxy))
    return found


def placeholder_reason(proxy: str, examples: Set[HostPort]) -> str | None:
    """Why a proxy is a placeholder, or None when it may be real."""
    host, port = host_port(proxy)
    labels = host.split(".")
    if labels[-1] in RESERVED_TLDS or any(host == d or host.endswith("." + d) for d in RESERVED_DOMAINS):
        return "a name reserved for examples"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is not None and any(address in net for net in DOCUMENTATION_NETS):
        return "a documentation address"
    if (host, port) in examples:
        return "a placeholder of the example studies (collectors/serp/examples/)"
    return None


def is_logged_in(profile: Profile) -> bool:
    return re.split(r"[=:]", profile.treatment, maxsplit=1)[0].strip() == LOGGED_IN


def study_problems(study: Study, examples: Set[HostPort]) -> list[str]:
    """One line per placeholder proxy and per logged-in profile without cookies, in profile order."""
    problems = []
    for profile in study.profiles:
        if profile.proxy is not None and (reason := placeholder_reason(profile.proxy, examples)):
            host, port = host_port(profile.proxy)
            shown = f"[{host}]" if ":" in host else host
            shown += f":{port}" if port is not None else ""
            problems.append(
                f"profile {profile.id}: proxy {shown} is {reason}: set the proxy this profile "
                "searches through (or remove the line to search without one)"
            )
        if is_logged_in(profile) and profile.cookies_file is None and not profile.cookies:
            problems.append(
                f"profile {profile.id}: a {LOGGED_IN} profile without cookies_file searches logged "
                "out: sign in, export the account's cookies.txt and set cookies_file (see "
                "`auditstream crawl serp --help`, Logged-in profiles)"
            )
    return problems
