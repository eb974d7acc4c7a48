"""Logged-in profiles' cookies.txt files, and the browser settings of a study (issue 18).

A cookies.txt holds credentials: every error names the file and line, never a value.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner
from yarl import URL

import collectors.serp
from auditstream.cli import app
from collectors.common.exceptions import CrawlConfigError
from collectors.serp.cookies import parse_cookies, read_cookies, unexpired
from collectors.serp.fetchers import HttpFetcher
from collectors.serp.study import load_study, parse_study

EXAMPLE = Path(collectors.serp.__file__).parent / "examples" / "study.toml"
SECRET = "hunter2-do-not-print"
runner = CliRunner()

GOOD = (
    "\ufeff# Netscape HTTP Cookie File\r\n"
    "# https://curl.se/docs/http-cookies.html\r\n"
    "\r\n"
    f".google.com\tTRUE\t/\tTRUE\t1893456000\tSID\t{SECRET}\r\n"
    f"#HttpOnly_.google.com\tTRUE\t/\tTRUE\t1893456000.5\t__Secure-3PSID\t{SECRET}\r\n"
    "www.google.com\tFALSE\t/search\tFALSE\t0\tPREF\tf1=1\r\n"
    "accounts.google.com\tFALSE\t/\tTRUE\t1000\tOLD\texpired\r\n"
)


def flat(text: str) -> str:
    return " ".join(text.split())


def study_text(header: str = "", extra: str = "", twin_extra: str = "") -> str:
    people = "".join(
        f'\n[[profiles]]\nid = "{i}"\nrole = "{r}"\n'
        + (f'treatment = "{t}"\n' if t else "")
        + 'user_agent = "UA"\n'
        f"{extra if i != 'twin' else twin_extra}"
        for i, r, t in (
            ("control", "control", ""),
            ("twin", "control_twin", ""),
            ("login", "treatment", "x=y"),
        )
    )
    return f'[study]\nid = "s1"\nengine = "google"\n{header}\n[[queries]]\ntext = "q"\n{people}'


def test_a_cookies_txt_export_is_read_as_a_browser_exports_it() -> None:
    cookies = parse_cookies(GOOD)
    assert [(c.line, c.domain, c.include_subdomains, c.name, c.http_only) for c in cookies] == [
        (4, "google.com", True, "SID", False),
        (5, "google.com", True, "__Secure-3PSID", True),
        (6, "www.google.com", False, "PREF", False),
        (7, "accounts.google.com", False, "OLD", False),
    ]
    sid, secure, pref, _expired = cookies
    assert sid.value == SECRET and sid.secure and sid.expires == 1893456000
    assert pref.expires is None and pref.path == "/search" and not pref.secure
    assert secure.for_playwright() == {
        "name": "__Secure-3PSID",
        "value": SECRET,
        "domain": ".google.com",
        "path": "/",
        "expires": 1893456000.5,
        "httpOnly": True,
        "secure": True,
    }
    assert pref.for_playwright()["domain"] == "www.google.com" and pref.for_playwright()["expires"] == -1
    assert unexpired(cookies, now=2000) == [sid, secure, pref]
    assert SECRET not in repr(sid) and SECRET not in str(cookies)  # a logged cookie shows no value


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (f".google.com\tTRUE\t/\t{SECRET}", "4 tab-separated fields, expected 7"),
        (f".google.com\tyes\t/\tTRUE\t0\tSID\t{SECRET}", "fields 2 and 4 must be TRUE or FALSE"),
        (f".google.com\tTRUE\tsearch\tTRUE\t0\tSID\t{SECRET}", "the path (field 3) must start with /"),
        (f".google.com\tTRUE\t/\tTRUE\tnever\tSID\t{SECRET}", "the expiry (field 5) is not a number"),
        (f".google.com\tTRUE\t/\tTRUE\t0\tS ID\t{SECRET}", "the cookie name (field 6) is empty"),
        (f"\tTRUE\t/\tTRUE\t0\tSID\t{SECRET}", "the domain (field 1) is empty"),
        (f".google.com\tTRUE\t/\tTRUE\t0\tSID\t{SECRET};x", "the value (field 7) has a ';'"),
        (f".google.com TRUE / TRUE 0 SID {SECRET}", "1 tab-separated fields"),  # spaces, not tabs
    ],
)
def test_a_malformed_line_is_named_and_its_value_never_shown(line: str, message: str) -> None:
    with pytest.raises(CrawlConfigError) as caught:
        parse_cookies(
            f"# Netscape HTTP Cookie File\n.google.com\tTRUE\t/\tTRUE\t0\tNID\tok\n\n{line}\n", "jar"
        )
    text = str(caught.value)
    assert text.startswith("jar line 4: ") and message in text
    assert SECRET not in text


def test_an_unreadable_cookies_file_says_why(tmp_path: Path) -> None:
    binary = tmp_path / "jar.txt"
    binary.write_bytes(b"# ok\n.google.com\tTRUE\t/\tTRUE\t0\tSID\t\xff\xfe\n")
    with pytest.raises(CrawlConfigError, match=r"jar.txt line 2: not UTF-8 text"):
        read_cookies(binary)
    with pytest.raises(CrawlConfigError, match="cannot read cookies file"):
        read_cookies(tmp_path / "missing.txt")


def test_crawl_serp_check_refuses_a_malformed_cookies_file_before_anything_runs(tmp_path: Path) -> None:
    (tmp_path / "login.txt").write_text(f"# Netscape HTTP Cookie File\n.google.com\tTRUE\t/\t{SECRET}\n")
    text = study_text(extra="").replace('treatment = "x=y"', 'treatment = "x=y"\ncookies_file = "login.txt"')
    (tmp_path / "study.toml").write_text(text)
    result = runner.invoke(
        app, ["crawl", "serp", "--study", str(tmp_path / "study.toml"), "--check"], terminal_width=200
    )
    assert result.exit_code == 2
    # without spaces: rich wraps the message at the console's width (COLUMNS is 80 under
    # pytest-xdist), and the temporary path decides where a line breaks
    output = "".join(result.output.split())
    assert "profilelogin:cookiesfile" in output and "login.txtline2:4tab-separatedfields" in output
    assert SECRET not in output


def test_the_http_fetcher_imports_a_cookies_file_with_its_scopes(tmp_path: Path) -> None:
    (tmp_path / "jar.txt").write_text(GOOD)
    study = parse_study(
        study_text().replace(
            'treatment = "x=y"', f'treatment = "x=y"\ncookies_file = "{tmp_path / "jar.txt"}"'
        )
    )

    async def jar_for(url: str) -> set[str]:
        fetcher = HttpFetcher(study.profiles[2], "https://www.google.com/search")
        try:
            return set(fetcher.jar.filter_cookies(URL(url)))
        finally:
            await fetcher.aclose()

    assert asyncio.run(jar_for("https://www.google.com/search")) == {"SID", "__Secure-3PSID", "PREF"}
    assert asyncio.run(jar_for("https://mail.google.com/")) == {"SID", "__Secure-3PSID"}  # PREF: host only
    assert asyncio.run(jar_for("http://www.google.com/search")) == {"PREF"}  # the secure ones need TLS


@pytest.mark.parametrize(
    ("header", "extra", "twin_extra", "message"),
    [
        ("", 'viewport = "1280x800"\n', 'viewport = "1366x768"\n', "configured like the control: viewport"),
        ("", 'timezone = "Europe/Zurich"\n', "", "configured like the control: timezone"),
        (
            "",
            'timezone = "Mars/Olympus"\n',
            'timezone = "Mars/Olympus"\n',
            "unknown time zone 'Mars/Olympus'",
        ),
        ("", 'viewport = "wide"\n', 'viewport = "wide"\n', "viewport: String should match pattern"),
        ('consent = "accept"', "", "", "consent = 'accept' needs fetcher = 'browser'"),
        ('fetcher = "browser"\nconsent = "maybe"', "", "", "study.consent: Input should be"),
    ],
)
def test_browser_settings_are_checked(header: str, extra: str, twin_extra: str, message: str) -> None:
    with pytest.raises(CrawlConfigError, match="not a valid study") as caught:
        parse_study(study_text(header, extra, twin_extra))
    assert message in str(caught.value)


def test_a_proxy_with_a_login_is_checked_without_showing_it() -> None:
    with pytest.raises(CrawlConfigError) as caught:
        parse_study(study_text(extra=f'proxy = "ftp://bob:{SECRET}@10.0.0.2"\n'))
    assert "proxy must look like http://host:port" in str(caught.value) and SECRET not in str(caught.value)
    ok = parse_study(study_text(extra='proxy = "http://bob:pw@10.0.0.2:3128"\n'))
    assert ok.profiles[0].proxy == "http://bob:pw@10.0.0.2:3128"


def test_the_fingerprint_of_a_saved_study_is_unchanged_and_browser_settings_count() -> None:
    """A study saved before issue 18 resumes: settings added since count only when set."""
    assert load_study(EXAMPLE).fingerprint() == "a74ecfd378bcc798"
    base = parse_study(study_text('fetcher = "browser"'))
    same = parse_study(study_text('fetcher = "browser"\nconsent = "leave"\nskew_tolerance = "2s"'))
    assert same.fingerprint() == base.fingerprint()
    assert same.skew_tolerance == 2.0 and base.skew_tolerance == 5.0  # 10% of 11 min, at most 5 s
    for changed in (
        parse_study(study_text('fetcher = "browser"\nconsent = "reject"')),
        parse_study(study_text('fetcher = "browser"', 'viewport = "1280x800"\n', 'viewport = "1280x800"\n')),
        parse_study(study_text('fetcher = "browser"', 'timezone = "UTC"\n', 'timezone = "UTC"\n')),
    ):
        assert changed.fingerprint() != base.fingerprint()


def test_crawl_serp_help_explains_logged_in_profiles_and_proxies() -> None:
    result = runner.invoke(app, ["crawl", "serp", "--help"], terminal_width=200)
    assert result.exit_code == 0
    text = flat(result.output)
    for words in (
        "Logged-in profiles",
        "pip install 'auditstream[browser]'",
        "cookies.txt",
        'cookies_file = "cookies/NAME.txt"',
        "imported once",
        "Proxies:",
        "http://user:password@host:port",
        "socks5://",
        "--chromium",
        "AUDITSTREAM_CHROMIUM",
        "--chromium-arg",
        "/usr/bin/chromium",
        "consent",
        "load skew",
    ):
        assert words in text, words
