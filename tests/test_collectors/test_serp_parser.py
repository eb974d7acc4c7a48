"""The SERP parser on recorded-style Google and Bing pages, URL normalization, and totality."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import collectors.serp
from collectors.common.exceptions import CrawlConfigError
from collectors.serp import parser
from collectors.serp.engines import SERP_ENGINES
from collectors.serp.parser import CRASH_PREFIX, MAX_COMPONENTS, parse_estimate, parse_serp
from collectors.serp.rulebook import load_rules, parse_rules, rules_engines
from collectors.serp.types import BY_NAME, COMPONENT_TYPES, SECTIONS
from collectors.serp.urls import normalize_url
from schemas.events import SerpResult
from tests.serp_labels import Label, labels

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "serp"


def page(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def rows(engine: str, name: str) -> list[tuple[str, str, str]]:
    parsed = parse_serp(engine, page(name))
    assert parsed.status == "ok" and not parsed.errors, parsed
    assert [c.rank for c in parsed.components] == list(range(1, len(parsed.components) + 1))
    return [(c.section, c.type, c.url) for c in parsed.components]


GOOGLE_COFFEE = [
    ("top", "shopping", "https://www.amazon.com/dp/B00BRQ5NCE?th=1"),
    ("top", "ad", "https://www.bluebottlecoffee.com/subscriptions"),
    ("top", "ad", "https://www.drinktrade.com/coffee-subscription"),
    ("main", "organic", "https://en.wikipedia.org/wiki/Coffee"),
    ("main", "organic", "https://www.nationalgeographic.com/culture/article/coffee"),
    (
        "main",
        "organic",
        "https://www.hopkinsmedicine.org/health/wellness-and-prevention/"
        "9-reasons-why-the-right-amount-of-coffee-is-good-for-you",
    ),
    ("main", "people_also_ask", ""),
    (
        "main",
        "organic",
        "https://www.healthline.com/nutrition/top-13-evidence-based-health-benefits-of-coffee",
    ),
    ("main", "videos", "https://www.youtube.com/watch?v=iQ2Ezh6xMVA&t=12"),
    ("main", "images", ""),
    ("main", "organic", "https://www.starbucks.com/menu/drinks/hot-coffees?size=tall"),
    ("main", "unknown", "https://www.google.com/search?q=coffee+history"),
    ("main", "organic", "https://www.coffeereview.com/"),
    ("bottom", "ad", "https://www.peets.com/coffee"),
    ("bottom", "related_searches", ""),
    ("side", "knowledge_panel", "https://en.wikipedia.org/wiki/Coffee"),
]
GOOGLE_PIZZA = [
    ("main", "local", "https://www.reginapizzeria.com/"),
    ("main", "organic", "https://www.yelp.com/search?find_desc=Pizza&find_loc=Boston%2C+MA"),
    ("main", "top_stories", "https://www.bostonglobe.com/2024/05/01/food/best-pizza-boston/?s_campaign=gn"),
    ("main", "organic", "https://www.tripadvisor.com/Restaurants-g60745-c31-Boston_Massachusetts.html"),
    ("main", "organic", "https://www.timeout.com/boston/restaurants/best-pizza-in-boston"),
    ("bottom", "related_searches", ""),
]
BING_COFFEE = [
    ("top", "ad", "https://www.bluebottlecoffee.com/"),
    ("top", "ad", "https://www.drinktrade.com/"),
    ("main", "shopping", "https://www.amazon.com/dp/B00BRQ5NCE?tag=bingshop-20"),
    ("main", "organic", "https://en.wikipedia.org/wiki/Coffee"),
    ("main", "top_stories", "https://www.reuters.com/markets/commodities/coffee-prices-2024-05-02/"),
    ("main", "organic", "https://www.nationalgeographic.com/culture/article/coffee"),
    ("main", "people_also_ask", ""),
    ("main", "videos", "https://www.bing.com/videos/riverview/relatedvideo?q=coffee&mid=ABC"),
    ("main", "images", ""),
    ("main", "local", "https://www.starbucks.com/store-locator/store/1234/"),
    ("main", "organic", "https://www.healthline.com/nutrition/coffee-and-health"),
    ("main", "unknown", "https://www.bing.com/search?q=coffee+trivia"),
    ("bottom", "ad", "https://www.peets.com/coffee"),
    ("main", "related_searches", ""),
    ("side", "knowledge_panel", "https://en.wikipedia.org/wiki/Coffee"),
]


def test_google_page_components_in_page_order() -> None:
    assert rows("google", "google_coffee.html") == GOOGLE_COFFEE
    assert rows("google", "google_pizza_boston.html") == GOOGLE_PIZZA


def test_bing_page_components_in_page_order() -> None:
    assert rows("bing", "bing_coffee.html") == BING_COFFEE


@pytest.mark.parametrize("engine", ["google", "bing"])
def test_every_component_type_is_covered_by_the_fixtures(engine: str) -> None:
    names = {"google": ["google_coffee.html", "google_pizza_boston.html"], "bing": ["bing_coffee.html"]}
    seen = {c.type for n in names[engine] for c in parse_serp(engine, page(n)).components}
    assert seen == set(BY_NAME)
    tops = {(c.section, c.type) for n in names[engine] for c in parse_serp(engine, page(n)).components}
    assert {("top", "ad"), ("bottom", "ad")} <= tops


def test_page_facts_estimate_language_and_titles() -> None:
    coffee = parse_serp("google", page("google_coffee.html"))
    assert (coffee.result_estimate, coffee.language) == (2_140_000_000, "en")
    assert coffee.components[3].title == "Coffee - Wikipedia"
    assert coffee.components[6].title == "Is coffee good for you?"
    pizza = parse_serp("google", page("google_pizza_boston.html"))
    assert (pizza.result_estimate, pizza.language) == (48_600_000, "en-US")  # "Page 2 of about ..."
    assert pizza.components[0].title == "Regina Pizzeria"
    bing = parse_serp("bing", page("bing_coffee.html"))
    assert (bing.result_estimate, bing.language) == (1_230_000, "en")
    assert bing.components[0].title == "Blue Bottle Coffee - Fresh Roasted Subscriptions"


@pytest.mark.parametrize(
    ("engine", "name", "http_status", "status", "language"),
    [
        ("google", "google_sorry.html", 429, "captcha", None),
        ("google", "google_sorry.html", 200, "captcha", None),
        ("bing", "bing_captcha.html", 200, "captcha", "en"),
        ("google", "google_consent.html", 200, "blocked", "de"),
        ("google", "google_coffee.html", 429, "blocked", "en"),
        ("google", "google_coffee.html", 503, "error", "en"),
        ("bing", "google_coffee.html", 200, "error", "en"),  # not a Bing result page
    ],
)
def test_status_of_blocked_and_broken_pages(
    engine: str, name: str, http_status: int, status: str, language: str | None
) -> None:
    parsed = parse_serp(engine, page(name), http_status=http_status)
    assert (parsed.status, parsed.language, parsed.components) == (status, language, ())
    assert parsed.detail


def test_a_page_without_results_is_ok_and_empty() -> None:
    parsed = parse_serp("google", page("google_no_results.html"))
    assert (parsed.status, parsed.result_estimate, parsed.components) == ("ok", None, ())


def test_a_result_page_about_unusual_traffic_is_not_a_captcha() -> None:
    """The block phrases only count on pages that are not result pages."""
    html = page("google_pizza_boston.html").replace(
        b"The best pizza in Boston", b"Our systems have detected unusual traffic from your computer network"
    )
    assert parse_serp("google", html).status == "ok"


def test_unknown_engine_is_an_error_not_an_exception() -> None:
    parsed = parse_serp("altavista", "<html></html>")
    assert parsed.status == "error" and "altavista" in parsed.detail


def test_components_are_capped_at_the_schema_rank_limit() -> None:
    results = "".join(
        f'<div class="g"><div class="yuRUbf"><a href="https://e{i}.example/"><h3>{i}</h3></a></div></div>'
        for i in range(MAX_COMPONENTS + 5)
    )
    parsed = parse_serp("google", f'<div id="search"><div id="rso">{results}</div></div>')
    assert len(parsed.components) == MAX_COMPONENTS and "kept the first" in parsed.detail
    assert parsed.components[-1].rank == MAX_COMPONENTS


def test_a_component_that_fails_becomes_unknown_with_an_error_record(monkeypatch: pytest.MonkeyPatch) -> None:
    real = parser._link

    def broken(node: object, selector: str, base: str) -> str:
        if selector == "a.WlydOe, a[href]":  # the top-stories rule's link
            raise RuntimeError("boom")
        return real(node, selector, base)  # type: ignore[arg-type]

    monkeypatch.setattr(parser, "_link", broken)
    parsed = parse_serp("google", page("google_pizza_boston.html"))
    assert parsed.status == "ok"
    assert [c.type for c in parsed.components] == [
        "local",
        "organic",
        "unknown",
        "organic",
        "organic",
        "related_searches",
    ]
    assert len(parsed.errors) == 1
    error = parsed.errors[0]
    assert (error.section, error.rule, error.error) == ("main", "top_stories", "RuntimeError: boom")
    assert "RuntimeError" in error.traceback
    assert parsed.coverage == round(5 / 6, 4)  # the failed block counts as unclaimed


# --- URL normalization -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("href", "expected"),
    [
        ("https://example.com/a?b=1#frag", "https://example.com/a?b=1"),
        ("HTTPS://WWW.Example.COM:443/Path", "https://www.example.com/Path"),
        ("http://example.com:80", "http://example.com/"),
        ("http://example.com:8080/x", "http://example.com:8080/x"),
        ("https://user:pw@example.com/x", "https://example.com/x"),
        (
            "https://example.com/?utm_source=g&utm_medium=cpc&id=7&gclid=x&fbclid=y",
            "https://example.com/?id=7",
        ),
        ("https://example.com/?msclkid=1&gad_source=1&srsltid=AfmB", "https://example.com/"),
        (
            "https://example.com/search?form=contact&sa=1&ved=2",
            "https://example.com/search?form=contact&sa=1&ved=2",
        ),
        (
            "https://www.google.com/search?q=coffee&sa=X&ved=2ah&ei=x&oq=cof",
            "https://www.google.com/search?q=coffee",
        ),
        ("https://www.bing.com/search?q=coffee&FORM=QSRE1&cvid=ABC", "https://www.bing.com/search?q=coffee"),
        (
            "/url?q=https://example.com/a%3Fb%3D1%26utm_source%3Dx&sa=U&ved=2&usg=A",
            "https://example.com/a?b=1",
        ),
        ("https://www.google.de/url?url=https://example.de/&sa=t", "https://example.de/"),
        (
            "https://www.googleadservices.com/pagead/aclk?sa=L&adurl=https://shop.example/p",
            "https://shop.example/p",
        ),
        ("/aclk?sa=l&ai=x&adurl=", ""),
        (
            "https://www.bing.com/ck/a?!&&p=abc&u=a1aHR0cHM6Ly9lbi53aWtpcGVkaWEub3JnL3dpa2kvQ29mZmVl&ntb=1",
            "https://en.wikipedia.org/wiki/Coffee",
        ),
        (
            "https://www.bing.com/aclk?ld=e8&u=https%3a%2f%2fshop.example%2f%3fmsclkid%3d1",
            "https://shop.example/",
        ),
        ("https://www.bing.com/ck/a?u=a1!!notbase64", ""),
        ("https://example.com/a b", "https://example.com/a b"),
        ("javascript:void(0)", ""),
        ("mailto:a@example.com", ""),
        ("#", ""),
        ("", ""),
        ("http://[::1", ""),
        ("https://[2001:db8::1]:8443/x", "https://[2001:db8::1]:8443/x"),
        ("//cdn.example.com/x", "https://cdn.example.com/x"),
    ],
)
def test_normalize_url(href: str, expected: str) -> None:
    assert normalize_url(href, "https://www.google.com/") == expected


def test_redirect_loops_end() -> None:
    href = "https://www.google.com/url?q=https://www.google.com/url?q%3Dhttps://www.google.com/url"
    assert normalize_url(href) == ""


@given(st.text(max_size=300))
@settings(max_examples=300, deadline=None)
def test_normalize_url_never_raises(href: str) -> None:
    assert isinstance(normalize_url(href, "https://www.bing.com/"), str)


# --- result estimate ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("About 323,000,000 results (0.52 seconds)", 323_000_000),
        ("About 1,230,000 results", 1_230_000),
        ("1.234.000 results", 1_234_000),
        ("Ungefähr 1.234.000 Ergebnisse (0,41 Sekunden)", 1_234_000),
        ("Environ 1\u202f230\u00a0000 résultats", 1_230_000),
        ("Page 2 of about 48,600,000 results (0.52 seconds)", 48_600_000),
        ("1 result", 1),
        ("", None),
        ("no results", None),
        ("9" * 30 + " results", None),
    ],
)
def test_parse_estimate(text: str, expected: int | None) -> None:
    assert parse_estimate(text) == expected


# --- the rules: one table, files tied to it ----------------------------------------------


def test_every_engine_has_rules_and_every_type_fits_the_schema() -> None:
    assert set(SERP_ENGINES) == set(rules_engines())
    for t in COMPONENT_TYPES:
        assert re.fullmatch(r"^[a-z][a-z0-9_]{0,31}$", t.name)
        SerpResult(rank=1, type=t.name, url="")
    for engine in rules_engines():
        rules = load_rules(engine)
        assert {r.type for r in rules.rules} <= set(BY_NAME) - {"unknown"}
        assert {s.name for s in rules.sections} <= set(SECTIONS)


def test_bad_rules_are_rejected_with_the_field_named() -> None:
    good = (Path(collectors.serp.__file__).parent / "rules" / "google.toml").read_text()
    with pytest.raises(CrawlConfigError, match=r"rules\.0\.type: .*unknown component type 'sponsored'"):
        parse_rules(good.replace('type = "ad"', 'type = "sponsored"', 1), "google.toml")
    with pytest.raises(CrawlConfigError, match="bad CSS selector"):
        parse_rules(good.replace('match = "[data-text-ad]"', 'match = "div >> p"', 1), "google.toml")
    with pytest.raises(CrawlConfigError, match="not valid TOML"):
        parse_rules("engine = ", "google.toml")


# --- totality: never raises on anything --------------------------------------------------

ALL_FIXTURES = sorted(p.name for p in FIXTURES.glob("*.html"))


@given(st.one_of(st.text(max_size=2000), st.binary(max_size=2000)), st.sampled_from(["google", "bing"]))
@settings(max_examples=300, deadline=None)
def test_never_raises_on_random_input(body: str | bytes, engine: str) -> None:
    parsed = parse_serp(engine, body)
    assert not parsed.detail.startswith(CRASH_PREFIX) and not parsed.errors


@given(
    st.sampled_from(ALL_FIXTURES),
    st.sampled_from(["google", "bing"]),
    st.lists(st.tuples(st.floats(0, 1), st.integers(1, 400), st.binary(max_size=40)), max_size=8),
)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_never_raises_on_mutated_fixtures(
    name: str, engine: str, edits: list[tuple[float, int, bytes]]
) -> None:
    """Cut out or splice random bytes anywhere (tags, attributes, entities, UTF-8 sequences)."""
    body = page(name)
    for where, length, insert in edits:
        at = int(where * len(body))
        body = body[:at] + insert + body[at + length :]
    parsed = parse_serp(engine, body)
    assert not parsed.detail.startswith(CRASH_PREFIX) and not parsed.errors
    for c in parsed.components:
        SerpResult(rank=c.rank, type=c.type, url=c.url[:2048])


REAL_PAGES = [
    lab
    for lab in labels()
    if lab.name
    in {
        "google-keanu-reeves-za",
        "google-matkasse-se-basic",
        "google-french-bulldog-sge",
        "bing-sweden-riots",
    }
]


@given(
    st.sampled_from(REAL_PAGES),
    st.lists(st.tuples(st.floats(0, 1), st.integers(1, 4000), st.binary(max_size=40)), max_size=8),
)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_never_raises_on_mutated_real_pages(label: Label, edits: list[tuple[float, int, bytes]]) -> None:
    body = label.html()
    for where, length, insert in edits:
        at = int(where * len(body))
        body = body[:at] + insert + body[at + length :]
    parsed = parse_serp(label.engine, body)
    assert not parsed.detail.startswith(CRASH_PREFIX) and not parsed.errors
    assert parsed.coverage is None or 0.0 <= parsed.coverage <= 1.0


# --- layouts the rules do not know -----------------------------------------------------------


def test_a_layout_no_rule_knows_is_reported_not_an_empty_success() -> None:
    """A redesign the rules have never seen: results as <article><h2><a>, in a new container."""
    articles = "".join(
        f'<article><h2><a href="https://e{i}.example/">Result {i}</a></h2><p>snippet {i}</p></article>'
        for i in range(8)
    )
    parsed = parse_serp("google", f'<html><body><div id="search"><main>{articles}</main></div></body></html>')
    assert parsed.status == "ok"
    assert parsed.coverage == 0.0
    assert [c.type for c in parsed.components] == ["unknown"]


def test_unclaimed_blocks_lower_the_coverage() -> None:
    known = '<div class="g"><a href="https://known.example/"><h3>Known</h3></a></div>'
    strange = '<div class="x9"><span>New widget</span><a href="https://new.example/">more</a></div>'
    html = f'<div id="search"><div id="rso">{known}{strange}{strange}{strange}</div></div>'
    parsed = parse_serp("google", html)
    assert [c.type for c in parsed.components] == ["organic", "unknown", "unknown", "unknown"]
    assert parsed.coverage == 0.25


def test_a_no_results_page_is_fully_covered() -> None:
    assert parse_serp("google", page("google_no_results.html")).coverage == 1.0


def test_charset_from_the_page_is_used() -> None:
    html = (
        '<meta charset="iso-8859-1"><div id="search"><div id="rso">'
        '<div class="g"><h3>Caf\xe9</h3></div></div></div>'
    )
    parsed = parse_serp("google", html.encode("latin-1"))
    assert parsed.components[0].title == "Café"


def test_the_engines_own_pages_are_results_and_its_searches_are_not() -> None:
    """For "google" the first results are Google's own pages (a self-preferencing audit
    counts them); links to another search are Google's navigation. A held-out real
    basic page lost 7 of its 10 results when every link to www.google.com was dropped."""
    parsed = parse_serp("google", page("google_own_pages.html"))
    assert parsed.status == "ok"
    assert [c.url for c in parsed.components if c.type == "organic"] == [
        "https://www.google.com/",
        "https://www.google.com/account/about/",
        "https://www.google.com/maps",
        "https://www.google.com/search/howsearchworks/",
        "https://en.wikipedia.org/wiki/Google",
    ]


def test_engine_navigation_patterns_are_checked_like_host_patterns() -> None:
    good = (Path(collectors.serp.__file__).parent / "rules" / "google.toml").read_text()
    bad = good.replace("engine_paths = '^/(search", "engine_paths = '^/(search|x);alert(1)", 1)
    with pytest.raises(CrawlConfigError, match="engine_paths"):
        parse_rules(bad, "google.toml")
