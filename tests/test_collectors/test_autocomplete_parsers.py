"""Parsers on recorded response bodies, one table; plus a fuzz test of the never-raise contract."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.autocomplete.engines import ADAPTERS, DEFAULT_FORMAT, FORMATS
from collectors.autocomplete.parsers import (
    CRASH_PREFIX,
    MAX_SUGGESTIONS,
    PARSERS,
    STATUSES,
    ParsedResponse,
    parse_response,
    query_key,
)
from schemas.events import Suggestion

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "autocomplete"


def parse_fixture(name: str, fmt: str, http_status: int = 200, query: str | None = None) -> ParsedResponse:
    return parse_response(fmt, (FIXTURES / name).read_bytes(), http_status, query=query)


def texts(parsed: ParsedResponse) -> list[tuple[int, str, bool, str]]:
    return [(s.rank, s.text, s.self_loop, s.type) for s in parsed.suggestions]


def test_google_psy_ab_strips_bold_unescapes_keeps_positions_and_types() -> None:
    parsed = parse_fixture("google_psyab_charlie_baker.json", "psy-ab")
    assert parsed.status == "ok" and parsed.query == "charlie baker"
    assert texts(parsed) == [
        (1, "charlie baker email", False, "0:22,30"),
        (2, "charlie baker", True, "0:512,433,22,30"),
        (3, "charlie baker wife", False, "0:22,30"),
        (4, "charlie baker approval rating", False, "0:22,30"),
        (5, "charlie baker height", False, "0:22,30"),
        (6, "charlie baker's wife lauren", False, "0:22,30"),
        (7, "charlie baker salary & net worth", False, "35:22,30,143"),
        (8, "charlie baker twitter", False, "0:22,30"),
        (9, "Charlie Baker", True, "46:199,465"),  # entity entry; case-folded self-loop
        (10, "charlie baker youtube", False, "0:22,30"),
    ]


def test_google_psy_ab_with_xssi_prefix() -> None:
    parsed = parse_fixture("google_psyab_xssi.txt", "psy-ab")
    assert parsed.status == "ok" and parsed.query == "kate brown"
    assert [s.text for s in parsed.suggestions] == [
        "kate brown oregon",
        "kate brannan",
        "kate brown governor",
    ]
    assert parsed.suggestions[2].type == "0:512,650"


def test_submitted_query_wins_over_the_echoed_one_for_self_loops() -> None:
    parsed = parse_fixture("google_psyab_charlie_baker.json", "psy-ab", query="charlie baker email")
    assert parsed.query == "charlie baker email"
    assert [s.rank for s in parsed.suggestions if s.self_loop] == [1]


def test_unreadable_entries_leave_a_gap_in_the_ranks() -> None:
    body = orjson.dumps(["q", [["q a", 0], 7, [None], ["q <b>d</b>", 0, []], ["   ", 0]], {}])
    parsed = parse_response("psy-ab", body)
    assert [(s.rank, s.text, s.type) for s in parsed.suggestions] == [(1, "q a", "0"), (4, "q d", "0")]


def test_at_most_the_schema_limit_of_suggestions_is_kept() -> None:
    body = orjson.dumps(["q", [f"q {i}" for i in range(30)]])
    parsed = parse_response("firefox", body)
    assert len(parsed.suggestions) == MAX_SUGGESTIONS and parsed.suggestions[-1].rank == MAX_SUGGESTIONS


@pytest.mark.parametrize(
    ("fixture", "fmt", "expected"),
    [
        (
            "google_firefox_charlie_baker.json",
            "firefox",
            ["charlie baker", "charlie baker email", "charlie baker wife", "charlie baker approval rating"],
        ),
        (
            "bing_osjson_charlie_baker.json",
            "osjson",
            ["charlie baker", "charlie baker governor", "charlie baker ncaa", "charlie baker wife"],
        ),
        (
            "bing_as_charlie_baker.html",
            "as",
            ["charlie baker", "charlie baker governor", "charlie baker ncaa", "charlie baker's wife"],
        ),
    ],
)
def test_plain_formats(fixture: str, fmt: str, expected: list[str]) -> None:
    parsed = parse_fixture(fixture, fmt, query="charlie baker")
    assert parsed.status == "ok"
    assert [s.text for s in parsed.suggestions][:4] == expected
    assert [s.rank for s in parsed.suggestions] == list(range(1, len(parsed.suggestions) + 1))
    assert parsed.suggestions[0].self_loop and not any(s.self_loop for s in parsed.suggestions[1:])


def test_bing_as_reads_li_and_div_sa_tm_and_entities() -> None:
    parsed = parse_fixture("bing_as_charlie_baker.html", "as")
    assert parsed.query is None  # the fragment does not echo the query
    assert [s.text for s in parsed.suggestions][-2:] == ["charlie baker q&a", "charlie baker email address"]
    assert len(parsed.suggestions) == 7  # the "Related searches" header is not a suggestion


@pytest.mark.parametrize(
    ("fixture", "fmt", "http_status", "status"),
    [
        ("google_psyab_empty.json", "psy-ab", 200, "empty"),
        ("google_firefox_empty.json", "firefox", 200, "empty"),
        ("bing_osjson_empty.json", "osjson", 200, "empty"),
        ("bing_as_empty.html", "as", 200, "empty"),
        ("bing_as_empty_list.html", "as", 200, "empty"),
        ("bing_as_empty.html", "psy-ab", 200, "empty"),  # an empty body is empty in any format
        ("google_sorry.html", "psy-ab", 429, "blocked"),
        ("google_sorry.html", "psy-ab", 200, "blocked"),  # the /sorry/ page after a redirect
        ("google_sorry.html", "firefox", 503, "blocked"),
        ("google_psyab_charlie_baker.json", "psy-ab", 429, "blocked"),  # 429 whatever the body
        ("bing_challenge.html", "as", 200, "blocked"),
        ("bing_challenge.html", "osjson", 200, "blocked"),
        ("google_psyab_truncated.json", "psy-ab", 200, "error"),
        ("google_503.html", "psy-ab", 503, "error"),
        ("google_503.html", "psy-ab", 200, "error"),
        ("bing_as_charlie_baker.html", "psy-ab", 200, "error"),  # wrong format: unreadable
        ("google_psyab_charlie_baker.json", "as", 200, "error"),
    ],
)
def test_empty_blocked_and_error(fixture: str, fmt: str, http_status: int, status: str) -> None:
    parsed = parse_fixture(fixture, fmt, http_status)
    assert parsed.status == status, parsed.detail
    assert parsed.suggestions == ()
    assert not parsed.detail.startswith(CRASH_PREFIX)


def test_a_suggestion_mentioning_captcha_is_not_a_block() -> None:
    parsed = parse_response("firefox", orjson.dumps(["captcha", ["captcha solver", "recaptcha"]]))
    assert parsed.status == "ok" and len(parsed.suggestions) == 2


def test_unknown_format_is_a_caller_error() -> None:
    with pytest.raises(ValueError, match="unknown suggestion format"):
        parse_response("nope", b"[]")


def test_registry_ties_every_adapter_format_to_a_parser() -> None:
    assert {a.format for a in ADAPTERS} == set(PARSERS)
    assert DEFAULT_FORMAT == {"google": "psy-ab", "bing": "as"}
    assert FORMATS == {"google": ("psy-ab", "firefox"), "bing": ("as", "osjson")}


def test_query_key_folds_case_and_whitespace() -> None:
    assert query_key("  Charlie   BAKER ") == query_key("charlie baker")


def _check_contract(parsed: ParsedResponse) -> None:
    assert parsed.status in STATUSES
    assert not parsed.detail.startswith(CRASH_PREFIX), parsed.detail
    assert (parsed.status == "ok") == bool(parsed.suggestions)
    assert len(parsed.suggestions) <= MAX_SUGGESTIONS
    for s in parsed.suggestions:
        Suggestion(rank=s.rank, text=s.text, self_loop=s.self_loop, type=s.type)  # schema-valid
    orjson.dumps(parsed.to_json())  # serialisable (no lone surrogates)


@settings(max_examples=300, deadline=None)
@given(
    fmt=st.sampled_from(sorted(PARSERS)),
    body=st.binary(max_size=2048),
    http_status=st.sampled_from([200, 204, 302, 403, 429, 500, 503]),
)
def test_parsers_never_raise_on_arbitrary_bytes(fmt: str, body: bytes, http_status: int) -> None:
    _check_contract(parse_response(fmt, body, http_status, query="q"))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(fmt=st.sampled_from(sorted(PARSERS)), doc=json_values, entries=st.lists(json_values, max_size=8))
def test_parsers_never_raise_on_json_shaped_noise(fmt: str, doc: Any, entries: list[Any]) -> None:
    for candidate in (doc, ["q", entries], ["q", entries, doc]):
        _check_contract(parse_response(fmt, json.dumps(candidate).encode()))


@settings(max_examples=200, deadline=None)
@given(
    fragments=st.lists(
        st.sampled_from(
            ['<li class="sa_tm">', "</li>", '<div class="sa_tm">', "</div>", "<b>", "&amp;", "&#"]
        )
        | st.text(max_size=12),
        max_size=20,
    )
)
def test_bing_html_parser_never_raises_on_tag_soup(fragments: list[str]) -> None:
    _check_contract(parse_response("as", "".join(fragments).encode()))
