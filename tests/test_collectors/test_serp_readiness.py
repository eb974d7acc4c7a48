"""What ``crawl serp --check`` refuses (issue 40): the examples' placeholder proxies and a
logged-in profile without its account's cookies, each named; a study without them passes."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import collectors.serp
from auditstream.cli import app
from collectors.serp.readiness import example_proxies, placeholder_reason, study_problems
from collectors.serp.study import load_study, parse_study

EXAMPLES = Path(collectors.serp.__file__).parent / "examples"
runner = CliRunner()
FROM_EXAMPLES = {("10.0.0.2", 3128)}


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize(
    ("proxy", "reason"),
    [
        ("http://boston-proxy.example:3128", "a name reserved for examples"),
        ("http://proxy.test:8080", "a name reserved for examples"),
        ("socks5://x.invalid:1080", "a name reserved for examples"),
        ("http://EXAMPLE.com.:3128", "a name reserved for examples"),
        ("http://proxy.example.org:3128", "a name reserved for examples"),
        ("http://192.0.2.10:3128", "a documentation address"),
        ("http://user:secret@203.0.113.7:8080", "a documentation address"),
        ("http://[2001:db8::1]:3128", "a documentation address"),
        ("socks5://10.0.0.2:3128", "a placeholder of the example studies (collectors/serp/examples/)"),
        ("http://10.0.0.2:3129", None),  # a private address is a real proxy on some network
        ("http://10.1.2.3:3128", None),
        ("http://proxy.lab.internal:3128", None),
        ("http://myexample.com:3128", None),
        ("http://127.0.0.1:8118", None),
    ],
)
def test_a_proxy_is_a_placeholder_by_a_reserved_name_or_address_or_the_examples(
    proxy: str, reason: str | None
) -> None:
    assert placeholder_reason(proxy, FROM_EXAMPLES) == reason


def test_the_examples_proxies_are_read_from_the_example_files() -> None:
    found = example_proxies()
    assert {("10.0.0.2", 3128), ("boston-proxy.example", 3128), ("10.0.0.17", 3128)} <= found


def test_the_example_study_has_five_placeholder_proxies_and_a_logged_in_profile_without_cookies() -> None:
    problems = study_problems(load_study(EXAMPLES / "study.toml"), example_proxies())
    assert [p.split(":")[0] for p in problems] == [
        "profile control",
        "profile control-twin",
        "profile logged-in",
        "profile logged-in",
        "profile boston",
        "profile no-cookies",
    ]
    assert "proxy 10.0.0.4:3128 is a placeholder of the example studies" in problems[2]
    assert "a logged_in profile without cookies_file searches logged out" in problems[3]
    assert "proxy boston-proxy.example:3128 is a name reserved for examples" in problems[4]


def test_a_login_in_the_proxy_is_never_shown() -> None:
    study = parse_study(
        '[study]\nid = "s"\nengine = "google"\n[[queries]]\ntext = "q"\n'
        '[[profiles]]\nid = "c"\nrole = "control"\nuser_agent = "UA"\nproxy = "http://bob:hunter2@192.0.2.1:1"\n'
        '[[profiles]]\nid = "t"\nrole = "control_twin"\nuser_agent = "UA"\n'
        '[[profiles]]\nid = "l"\nrole = "treatment"\ntreatment = "logged_in=alice"\nuser_agent = "UA"\n'
        'cookies = { SID = "x" }\n'
    )
    (problem,) = study_problems(study, set())
    assert "192.0.2.1:1" in problem and "hunter2" not in problem and "bob" not in problem


def ready_study(tmp_path: Path) -> Path:
    """The example study with its own proxies and the logged-in profile's cookies file."""
    (tmp_path / "cookies").mkdir()
    (tmp_path / "cookies" / "logged-in.txt").write_text(
        "# Netscape HTTP Cookie File\n.google.com\tTRUE\t/\tTRUE\t1893456000\tSID\tvalue\n"
    )
    text = (EXAMPLES / "study.toml").read_text()
    text = text.replace("10.0.0.", "10.9.0.").replace("boston-proxy.example", "boston.proxies.lab.internal")
    text = text.replace('# cookies_file = "cookies/logged-in.txt"', 'cookies_file = "cookies/logged-in.txt"')
    (tmp_path / "study.toml").write_text(text)
    return tmp_path / "study.toml"


def test_crawl_serp_check_fails_naming_each_placeholder_and_passes_once_fixed(tmp_path: Path) -> None:
    """Issue 40: `--check` passed the example study, which README says to fix first."""
    example = runner.invoke(
        app, ["crawl", "serp", "--study", str(EXAMPLES / "study.toml"), "--check"], terminal_width=200
    )
    assert example.exit_code == 1, example.output
    text = flat(example.output)
    assert "35 rounds, spacing 660s" in text  # the plan is still shown
    for profile in ("control", "control-twin", "logged-in", "boston", "no-cookies"):
        assert f"profile {profile}: proxy" in text
    assert "profile logged-in: a logged_in profile without cookies_file" in text
    assert "6 setting(s) of the study to fix before it runs" in text

    ready = runner.invoke(app, ["crawl", "serp", "--study", str(ready_study(tmp_path)), "--check"])
    assert ready.exit_code == 0, ready.output
    assert "placeholder" not in ready.output and "to fix" not in ready.output
