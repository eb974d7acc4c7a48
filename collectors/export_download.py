"""The client side of ``auditstream export``: page through a study's tables, write them out.

The service's manifest (``GET /v1/export/{kind}``) names the study's tables; each is read
with ``GET /v1/export/{kind}/{table}`` a page at a time, each page written to its file
before the next is asked for (``collectors/export_files.py``), so the export holds one page
in memory, however large the study. Then ``manifest.json`` (the service's manifest, with
each table's file and the rows written), the registration and plan files, and the
datasheet ``README.md`` (``collectors/export_datasheet.py``) are written, last, so a
folder with a README is a whole export.

A page the service could not answer for the moment (429, 502, 503, a lost connection) is
asked for again after ``Retry-After`` or a pause; a page is read by its position in the
table's order, so asking again changes nothing.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import orjson

from collectors.export_datasheet import render
from collectors.export_files import EventsWriter, PageWriter, ResultsWriter

Get = Callable[[str, dict[str, str]], Any]
"""A GET of the service's API: path and query, its JSON answer."""


class ExportFailed(Exception):
    """The service refused (4xx), or kept failing to answer."""


def http_get(url: str, api_key: str, tries: int = 10, timeout: float = 660.0) -> Get:
    """``Get`` against ``url`` with ``api_key``, retried on 429/502/503 and lost answers; a
    service that never answered is said at once (nothing listens there)."""
    answered = False

    def get(path: str, query: dict[str, str]) -> Any:
        nonlocal answered
        target = url.rstrip("/") + path + ("?" + urllib.parse.urlencode(query) if query else "")
        request = urllib.request.Request(target, headers={"Authorization": f"Bearer {api_key}"})
        delay, reason = 0.5, ""
        for _ in range(tries):
            try:
                with urllib.request.urlopen(request, timeout=timeout) as resp:
                    answer = orjson.loads(resp.read())
                answered = True
                return answer
            except urllib.error.HTTPError as exc:
                answered = True
                body = exc.read()[:500].decode("utf-8", "replace")
                if exc.code not in (429, 502, 503):
                    raise ExportFailed(f"{exc.code}: {_message(body)}") from None
                reason = f"{exc.code}: {_message(body)}"
                delay = float(exc.headers.get("Retry-After") or delay)
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                reason = f"cannot reach {url}: {getattr(exc, 'reason', exc)}"
                if not answered:
                    raise ExportFailed(f"{reason} (is `auditstream up` running?)") from None
            time.sleep(delay)  # the service is restarting or busy: its Retry-After, else a pause
            delay = min(delay * 2, 30.0)
        raise ExportFailed(f"gave up after {tries} tries ({reason})")

    return get


def _message(body: str) -> str:
    try:
        return str(orjson.loads(body).get("message", body))
    except (orjson.JSONDecodeError, AttributeError):
        return body


def pages(get: Get, kind: str, table: str, study: str, limit: int) -> Iterator[dict[str, Any]]:
    """Every page of one of a study's tables, in its key's order."""
    after: str | None = None
    while True:
        query = {"study": study, "limit": str(limit)} | ({"after": after} if after is not None else {})
        page = get(f"/v1/export/{kind}/{urllib.parse.quote(table)}", query)
        yield page
        after = page["next"]
        if after is None:
            return


@dataclass(frozen=True)
class Formats:
    events: str = "jsonl"  # or parquet
    tables: str = "parquet"  # or csv

    def file(self, table: dict[str, Any]) -> str:
        if table["events"]:
            suffix = ".parquet" if self.events == "parquet" else ".jsonl.gz"
            return f"events/{table['events']}{suffix}"
        return f"tables/{table['name']}.{self.tables}"


def export_table(
    get: Get,
    manifest: dict[str, Any],
    table: dict[str, Any],
    out: Path,
    formats: Formats,
    limit: int,
    on_rows: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Write one table, page after page; its manifest entry with ``file``, ``written`` and
    ``refused`` (stored rows that are no event of their type any more)."""
    name = formats.file(table)
    path = out / name
    path.parent.mkdir(parents=True, exist_ok=True)
    columns = [c["name"] for c in table["columns"]]
    writer: PageWriter
    if table["events"]:
        writer = EventsWriter(path, table["events"])
    else:
        writer = ResultsWriter(path, columns, [c["type"] for c in table["columns"]])
    try:
        for page in pages(get, manifest["kind"], table["name"], manifest["study"], limit):
            writer.write(page["columns"], page["rows"])
            if on_rows is not None:
                on_rows(len(page["rows"]))
    finally:
        writer.close()
    refused = getattr(writer, "refused", [])
    return {
        **table,
        "file": name,
        "written": writer.rows,
        "refused": len(refused),
        "refused_first": refused[:20],
    }


def finish(out: Path, manifest: dict[str, Any], tables: list[dict[str, Any]], command: str) -> dict[str, Any]:
    """Write ``manifest.json``, the registration files and the datasheet; the manifest."""
    written = {
        **manifest,
        "tables": tables,
        "command": command,
        "client_version": metadata.version("auditstream"),
    }
    if manifest.get("registration") is not None:
        folder = out / "registration"
        folder.mkdir(exist_ok=True)
        (folder / "experiment.json").write_bytes(
            orjson.dumps(manifest["registration"], option=orjson.OPT_INDENT_2)
        )
        if manifest.get("plan") is not None:
            plan = orjson.dumps(manifest["plan"]["plan"], option=orjson.OPT_INDENT_2)
            (folder / "plan.json").write_bytes(plan)
    (out / "manifest.json").write_bytes(orjson.dumps(written, option=orjson.OPT_INDENT_2))
    (out / "README.md").write_text(render(written), encoding="utf-8")
    return written
