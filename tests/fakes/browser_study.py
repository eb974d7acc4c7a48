"""Browser studies against the fake engine, reached under the engine's own host name over TLS.

The study file has no ``start``: a new study's grid begins once every profile's
Chromium is up, so no round waits on a launch. The logged-in profile gets its login
from a ``cookies.txt`` (as an operator exports one); every profile has a viewport and
a time zone, the control and its twin the same ones. ``chromium_options`` points
Chromium at the fake (``--host-resolver-rules``) and lets it accept the fake's
throw-away certificate.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from collectors.serp.browser import BrowserOptions
from tests.chromium import chromium_binary
from tests.fakes.serp_engine import host_rules
from tests.fakes.serp_study import UA

PROFILES = (
    ("control", "control", ""),
    ("twin", "control_twin", ""),
    ("login", "treatment", "logged_in"),
    ("boston", "treatment", "location=Boston"),
)
ZONES = {"boston": "America/New_York"}
"""Time zone per profile (default ``Europe/Zurich``)."""
VIEWPORT = "1280x800"
LOGIN_COOKIE = ("SID", "s3cr3t-login-value-7f1c")
"""The logged-in profile's session cookie, as it stands in its cookies.txt."""


def zone(profile: str) -> str:
    return ZONES.get(profile, "Europe/Zurich")


def write_cookies_txt(path: Path, cookies: dict[str, str], domain: str = ".google.com") -> Path:
    """A Netscape cookies.txt as a browser's export writes it (one secure, HTTP-only login cookie)."""
    expires = int(time.time()) + 30 * 86400
    lines = ["# Netscape HTTP Cookie File", "# exported for the test's logged-in profile", ""]
    lines += [f"#HttpOnly_{domain}\tTRUE\t/\tTRUE\t{expires}\t{k}\t{v}" for k, v in cookies.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def browser_study_file(
    tmp_path: Path,
    *,
    study_id: str,
    rounds: int,
    spacing: str = "3s",
    round_timeout: str = "2.8s",
    consent: str = "leave",
    skew_tolerance: str = "750ms",
    profiles: Sequence[tuple[str, str, str]] = PROFILES,
    fetcher: str = "browser",
    extra: str = "",
    profile_extra: Mapping[str, str] | None = None,
) -> Path:
    """A lock-step study of ``profiles`` (the ``login`` one logged in by its cookies.txt);
    rounds 3 s apart with 2.8 s to load: a cold Chromium's first page took over 1.3 s with
    another test starting its own browser beside it (pytest-xdist on two cores);
    ``extra`` adds lines to ``[study]``, ``profile_extra`` to a profile (by id) after its own."""
    write_cookies_txt(tmp_path / "login-cookies.txt", dict([LOGIN_COOKIE]))
    queries = "".join(
        f'\n[[queries]]\ntext = "{q}"\ncategory = "{c}"\n'
        for q, c in (("coffee", "food"), ("pizza boston", "places"))
    )
    people = "".join(
        f'\n[[profiles]]\nid = "{i}"\nrole = "{r}"\n'
        + (f'treatment = "{t}"\n' if t else "")
        + f'user_agent = "{UA}"\nlanguage = "en-US"\ncookies = {{ profile = "{i}" }}\n'
        + f'viewport = "{VIEWPORT}"\ntimezone = "{zone(i)}"\n'
        + ('cookies_file = "login-cookies.txt"\n' if i == "login" else "")
        + (profile_extra or {}).get(i, "")
        for i, r, t in profiles
    )
    consent_line = f'consent = "{consent}"\n' if fetcher == "browser" else ""
    text = (
        f'[study]\nid = "{study_id}"\nengine = "google"\nspacing = "{spacing}"\nrounds = {rounds}\n'
        f'round_timeout = "{round_timeout}"\nfetcher = "{fetcher}"\n{consent_line}'
        f'skew_tolerance = "{skew_tolerance}"\nretry_backoff = "50ms"\nmax_start_delay = "300ms"\n'
        f"{extra}{queries}{people}"
    )
    path = tmp_path / f"{study_id}.toml"
    path.write_text(text)
    return path


def chromium_options(port: int) -> BrowserOptions:
    """Debian's Chromium (whichever ``tests.chromium`` finds) sent to the fake engine on ``port``."""
    return BrowserOptions(chromium_binary() or "/usr/bin/chromium", host_rules(port))


def chromium_cli_args(port: int) -> list[str]:
    """The same as ``crawl serp`` options."""
    options = chromium_options(port)
    return ["--chromium", options.executable, *(f"--chromium-arg={a}" for a in options.args)]
