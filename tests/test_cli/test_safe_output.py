"""Stored text reaches the analyst's terminal as text (issue 33, item 4).

A value in the store, a column name chosen in SQL or a server's error message is shown
literally: rich markup in it is not applied (``[link=...]`` is no hyperlink) and escape
sequences in it (a window title, a screen clear, a C1 CSI, a bidi override) are shown as
visible escapes. The commands run through typer's CliRunner against a small stand-in for
the service's HTTP API, their consoles forced to a terminal, where a hyperlink would be an
OSC 8 sequence. JSON and CSV keep the stored values exactly.
"""

from __future__ import annotations

import csv
import io
import logging
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson
import pytest
from click.testing import Result
from typer.testing import CliRunner

from auditstream.cli import app, common
from auditstream.cli.safe_text import json_safe, markup_safe, plain, printable

LINK = "[link=https://evil.example/x]click[/link]"
STYLE = "[bold red]x[/]"
TITLE = "\x1b]0;pwned\x07"  # OSC 0: sets the terminal's title
CLEAR = "\x1b[2J"  # clears the screen
C1 = "\x9b31m"  # CSI as one C1 byte
BIDI = "\u202egnp.exe"  # right-to-left override: shows as "exe.png"
HOSTILE = f"{LINK} {STYLE} {TITLE}{CLEAR}{C1}{BIDI}"

SQL_ANSWER = {
    "columns": ["root", STYLE, f"n{CLEAR}"],
    "rows": [[HOSTILE, 1.5, 3], [":smile: \r\nforged line", None, 4]],
}


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("plain text, ünïcode and 中文", "plain text, ünïcode and 中文"),
        (LINK, LINK),  # markup is not printable()'s business: plain() and markup_safe() handle it
        (TITLE, "\\x1b]0;pwned\\x07"),
        (CLEAR, "\\x1b[2J"),
        ("a\x00b\x7fc", "a\\x00b\\x7fc"),
        (C1, "\\x9b31m"),
        ("x\x85y", "x\\x85y"),  # NEL, a C1 line break
        (BIDI, "\\u202egnp.exe"),
        (
            "\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069",
            "\\u202a\\u202b\\u202c\\u202d\\u2066\\u2067\\u2068\\u2069",
        ),
        ("\u200f\u00a0", "\u200f\u00a0"),  # a mark and a no-break space are left alone
        ("one\ntwo\tthree\rfour", "one\\x0atwo\\x09three\\x0dfour"),
        (12, "12"),
        (None, "None"),
    ],
)
def test_printable_makes_every_control_and_bidi_override_visible(value: object, shown: str) -> None:
    assert printable(value) == shown


def test_printable_multiline_keeps_line_feeds_and_tabs_only() -> None:
    assert printable("one\ntwo\tthree\rfour\x1b", multiline=True) == "one\ntwo\tthree\\x0dfour\\x1b"


def test_plain_and_markup_safe_render_literally() -> None:
    from rich.console import Console

    console = Console(file=io.StringIO(), force_terminal=True, color_system="truecolor", width=200)
    console.print(plain(HOSTILE))
    console.print(f"[yellow]{markup_safe(HOSTILE)}[/]")
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert_shown_literally(out)
    assert visible(out).count(LINK) == 2


def test_a_crawler_log_line_quoting_an_answer_is_shown_printable(monkeypatch: pytest.MonkeyPatch) -> None:
    from rich.console import Console

    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])  # basicConfig sets up only a root without handlers
    monkeypatch.setattr(root, "level", root.level)
    console = Console(file=io.StringIO(), force_terminal=True, color_system="truecolor", width=300)
    common.setup_logging("WARNING", console)
    (handler,) = root.handlers
    handler.handle(
        logging.LogRecord("crawler", logging.WARNING, __file__, 1, "no answer: %s", (HOSTILE,), None)
    )
    assert_shown_literally(console.file.getvalue())  # type: ignore[attr-defined]


def test_json_safe_is_the_same_json_value_with_no_raw_controls() -> None:
    doc = {"k": HOSTILE, "del": "\x7f", "all": "".join(map(chr, range(0x100)))}
    text = json_safe(orjson.dumps(doc).decode())
    assert orjson.loads(text) == doc
    assert not re.search(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", text)


# the commands, against a stand-in service

Answers = dict[tuple[str, str], tuple[int, bytes]]  # (method, path) -> (status, body)
Api = tuple[str, Answers]  # the base URL, and the answers to set


class _Api(BaseHTTPRequestHandler):
    answers: Answers = {}

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status, body = self.answers.get((self.command, self.path), (404, b'{"message": "no route"}'))
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def api() -> Iterator[Api]:
    """A stand-in service: its base URL and its answers, empty until a test sets them."""
    answers: Answers = {}
    handler = type("Api", (_Api,), {"answers": answers})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", answers
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's consoles as on a colour terminal, wide enough that nothing wraps."""
    for name in ("NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("COLUMNS", "400")
    monkeypatch.setattr(common, "console", common._message_console())  # errors (built at import)


def visible(output: str) -> str:
    """The output without its colours (SGR sequences), as a person reads it."""
    return re.sub(r"\x1b\[[0-9;]*m", "", output)


def assert_shown_literally(output: str) -> None:
    assert "\x1b]" not in output, "an OSC sequence: a hyperlink (8) or a window title (0)"
    assert CLEAR not in output and "\x9b" not in output and "\u202e" not in output
    text = visible(output)
    assert LINK in text and STYLE in text
    assert "\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\u202egnp.exe" in text


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def test_sql_table_shows_stored_markup_and_escapes_as_text(api: Api, terminal: None) -> None:
    url, answers = api
    answers["POST", "/v1/sql"] = (200, orjson.dumps(SQL_ANSWER))
    result = invoke("sql", "SELECT root FROM autocomplete_nodes", "--url", url, "--api-key", "k")
    assert result.exit_code == 0, result.output
    assert "\x1b[" in result.stdout, "the console is not rendering as a terminal"
    assert_shown_literally(result.stdout)
    text = visible(result.stdout)
    assert "n\\x1b[2J" in text  # a column name is stored text too
    assert ":smile: \\x0d\\x0aforged line" in text and "😄" not in text
    assert "\x1b[2J" not in result.stdout and "\r" not in result.stdout


def test_sql_json_and_csv_keep_the_stored_values_exactly(api: Api, terminal: None) -> None:
    url, answers = api
    answers["POST", "/v1/sql"] = (200, orjson.dumps(SQL_ANSWER))
    as_json = invoke("sql", "SELECT 1", "--url", url, "--api-key", "k", "--format", "json")
    assert as_json.exit_code == 0, as_json.output
    columns = SQL_ANSWER["columns"]
    assert orjson.loads(as_json.stdout) == [dict(zip(columns, r, strict=True)) for r in SQL_ANSWER["rows"]]
    assert "\x9b" not in as_json.stdout and "\u202e" not in as_json.stdout  # as \u escapes
    as_csv = invoke("sql", "SELECT 1", "--url", url, "--api-key", "k", "--format", "csv")
    assert as_csv.exit_code == 0, as_csv.output
    # stdout_bytes: Result.stdout turns every \r\n into \n
    rows = list(csv.reader(io.StringIO(as_csv.stdout_bytes.decode(), newline="")))
    assert rows[0] == columns and rows[1][0] == HOSTILE and rows[2][0] == ":smile: \r\nforged line"


def test_experiment_list_and_stop_show_stored_ids_as_text(api: Api, terminal: None) -> None:
    url, answers = api
    experiment = {"experiment_id": HOSTILE, "status": STYLE, "start": "2026-01-01", "end": None,
                  "engines": ["google"], "arms": {LINK: 1.0}, "unit_mode": "click"}  # fmt: skip
    answers["GET", "/v1/experiments"] = (200, orjson.dumps([experiment]))
    listed = invoke("experiment", "list", "--url", url, "--api-key", "k")
    assert listed.exit_code == 0, listed.output
    assert_shown_literally(listed.stdout)
    answers["POST", "/v1/experiments/e1/stop"] = (200, orjson.dumps({"experiment_id": HOSTILE, "end": "x"}))
    stopped = invoke("experiment", "stop", "e1", "--url", url, "--api-key", "k")
    assert stopped.exit_code == 0, stopped.output
    assert_shown_literally(stopped.stdout)


def test_report_autocomplete_tables_show_stored_suggestions_as_text(api: Api, terminal: None) -> None:
    url, answers = api
    answers["POST", "/v1/sql"] = (200, orjson.dumps(SQL_ANSWER))
    args = ("--section", "survival", "--url", url, "--api-key", "k")
    result = invoke("report", "autocomplete", *args)
    assert result.exit_code == 0, result.output
    assert_shown_literally(result.stdout)


def test_report_timeline_title_and_cells_show_stored_values_as_text(api: Api, terminal: None) -> None:
    url, answers = api
    doc = {
        "burn_in_days": 4,
        "unit_mode": LINK,  # in the title
        "windows": [{"window_start": HOSTILE, "arms": [{"arm": STYLE, "units": 3, "ctr_c1": 0.5}]}],
    }
    answers["POST", "/v1/reports/timeline"] = (200, orjson.dumps(doc))
    result = invoke("report", "timeline", "e1", "--url", url, "--api-key", "k")
    assert result.exit_code == 0, result.output
    assert_shown_literally(result.stdout)
    assert f"units {LINK}" in visible(result.stdout)


def test_report_experiment_tables_show_stored_arms_as_text(api: Api, terminal: None) -> None:
    url, answers = api
    arm = {"arm": HOSTILE, "units": 10, "installs": 2, "ctr_c1": 0.5, "delta_c1": 0.1, "beta_c1": 0.2}
    doc = {
        "burn_in_days": 4,
        "unit_mode": "click",
        "baseline": LINK,
        "arms": [arm],
        "interval_guarantee": STYLE + TITLE,
        "element_shares": [{"arm": STYLE, "organic": 1.0, "ad": 0, "shopping_box": 0, "ssr": 0, "other": 0}],
        "preprocessing": [{HOSTILE: "dropped", "units": 1}],
        "reweighting": {"installs_raked": LINK, "installs_with_profile": 2, "effective_sample_size": 1.5,
                        "max_weight": CLEAR},
        "unweighted_arms": [{"arm": LINK, "ctr_c1": 0.4}],
    }  # fmt: skip
    answers["POST", "/v1/reports/experiment"] = (200, orjson.dumps(doc))
    result = invoke("report", "experiment", "e1", "--url", url, "--api-key", "k")
    assert result.exit_code == 0, result.output
    assert_shown_literally(result.stdout)
    text = visible(result.stdout)
    assert f"against {LINK}" in text and f"intervals: {STYLE}\\x1b]0;pwned\\x07" in text


def test_a_server_error_message_is_shown_as_text(api: Api, terminal: None) -> None:
    url, answers = api
    answers["GET", "/v1/experiments/e1"] = (400, orjson.dumps({"message": HOSTILE}))
    result = invoke("experiment", "show", "e1", "--url", url, "--api-key", "k")
    assert result.exit_code == 1
    assert "\x1b[" in result.stderr, "the message console is not rendering as a terminal"
    assert_shown_literally(result.stderr)
    assert f"400: {LINK}" in visible(result.stderr)


@pytest.mark.parametrize("body", [b"[1, 2]", b'"\x1b]0;pwned\x07"', b"\x1b[2Jnot json \xff"])
def test_an_error_answer_that_is_not_a_json_object_is_a_message_not_a_traceback(
    api: Api, terminal: None, body: bytes
) -> None:
    url, answers = api
    answers["GET", "/v1/experiments/e1"] = (502, body)
    result = invoke("experiment", "show", "e1", "--url", url, "--api-key", "k")
    assert result.exit_code == 1 and "502: " in result.stderr
    assert "\x1b]" not in result.stderr and CLEAR not in result.stderr
