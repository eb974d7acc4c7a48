"""The datasheet of an export: the README.md an outside reader starts from.

It says what the study is and how it was selected, who exported it when, with which
version and command; the experiment's registration and analysis plan (arrangement); each
file with its rows; and for each table what it holds and its columns with their types and
meanings, taken from ``schemas/clickhouse/README.md`` (``schemas/table_docs.py``) rather
than written twice. ``render`` is pure: it takes the export's manifest as written.
"""

from __future__ import annotations

from typing import Any

from schemas.event_types import EVENT_TYPES
from schemas.table_docs import doc_of, meaning, table_docs

FAMILY_INTROS = {
    "autocomplete": "Autocomplete analytics (RAI)",
    "personalization": "Personalization analytics (Hannak et al.)",
}
RECEIVED_AT = (
    "when the service received the event (UTC, `YYYY-MM-DD HH:MM:SS.fff`); every window, day "
    "and round of the results is in this time"
)
WIRE = {
    "received_at": RECEIVED_AT,
    "sent_at": "the client's clock when it sent the event (UTC); kept to measure skew",
    "event_id": "the event's id (a UUID): the service stores each id once",
    "schema_version": "the event schema's version (1)",
    "type": "the event type",
}
"""Fields of every event, said first for the raw events."""
GENERAL = {
    "experiment_id": "the experiment",
    "engine": "the search engine",
    "arm": "the experiment's arm (the arrangement applied; `control`: the engine's own order)",
    "install_id": "the extension install (a random id)",
    "install_day": "the day the extension was installed",
    "extension_version": "the extension's version",
    "page_index": "the result page (0: the first)",
    "n_organic": "the organic results on the page",
    "ads_top_count": "the ads on top of the page",
    "identified": "whether the extension identified the page's results (else the page stayed in control)",
    "ui_lang": "the browser's interface language",
    "window_start": "the minute (UTC)",
    "crawl_id": "the crawl round (every root of a round shares it)",
    "root": "the root query the crawl started from",
    "network": "`trimmed` (each crawl's trimming rule applied, the paper's) or `full` (as crawled)",
    "completed_at": "when the crawl's completion marker was received (UTC)",
    "study_id": "the study",
    "round_id": "the lock-step round",
    "query": "the query",
    "query_category": "the query's category",
    "profile_id": "the crawler's profile",
    "role": "`treatment`, `control` or `control_twin`",
    "treatment": "the treatment (`feature=value`); empty for the control and its twin",
    "links": "`primary` (every result's primary link, the paper's) or `organic` (the organic results)",
    "computed_at": "when the service computed the row (UTC)",
    "subset": "the named subset of pages",
}
"""What the README's text leaves unsaid about a column (a table's key, mostly)."""


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _fields_by_type(family: str) -> dict[str, list[str]]:
    """Each event field of the family, with the event types that carry it."""
    out: dict[str, list[str]] = {}
    for event_type in EVENT_TYPES:
        if event_type.family.name == family:
            for name in event_type.model.model_fields:
                out.setdefault(name, []).append(event_type.name)
    return out


def _columns(table: dict[str, Any], text: str) -> list[str]:
    types = {c["name"]: c["type"] for c in table["columns"]}
    names = tuple(types)
    lines = []
    if table["events"]:
        fields = _fields_by_type(table["events"])
        lines += ["| field | type | in | meaning |", "|---|---|---|---|"]
        for name, carriers in [*fields.items(), ("received_at", [])]:
            said = WIRE.get(name) or meaning(text, name, names) or GENERAL.get(name, "")
            if carriers and name not in types:
                said = "not stored by the service: never in an export"
            kinds = ", ".join(carriers) if carriers and len(carriers) < len(fields.get("type", [])) else "all"
            lines.append(f"| `{name}` | {_cell(types.get(name, ''))} | {kinds} | {_cell(said)} |")
    else:
        lines += ["| column | type | meaning |", "|---|---|---|"]
        for name, kind in types.items():
            said = meaning(text, name, names) or GENERAL.get(name, "")
            lines.append(f"| `{name}` | {_cell(kind)} | {_cell(said)} |")
    return lines


def _table(table: dict[str, Any]) -> list[str]:
    text = doc_of(tuple(table["documented_as"]))
    what = "raw events" if table["events"] else "result table"
    key = ", ".join(f"`{k}`" for k in table["key"])
    lines = [
        f"### `{table['name']}` ({what})",
        "",
        f"File `{table['file']}`: {table['written']:,} rows, ordered by {key} (unique per row).",
        "",
    ]
    if table["events"]:
        lines += [
            "One event a line (or a Parquet row) as the service accepted it, with its `received_at`: "
            "the fields below, a field a type does not carry left out (Parquet: null).",
            "",
        ]
    if table.get("refused"):
        lines += [
            f"{table['refused']:,} stored rows were left out: their event type's model refuses them "
            "(rows older than a rule); `manifest.json` names the first.",
            "",
        ]
    if text:
        lines += [text, ""]
    return [*lines, *_columns(table, text), ""]


def _registration(manifest: dict[str, Any]) -> list[str]:
    config, plan = manifest.get("registration"), manifest.get("plan")
    lines = ["## Registration and analysis plan", ""]
    if config is None:
        lines += ["The experiment was not registered: the reports used the defaults (docs/method.md).", ""]
    else:
        arms = ", ".join(f"`{a}` ({w:g})" for a, w in config["arms"].items())
        lines += [
            f"Registered (`registration/experiment.json`, as `POST /v1/experiments` takes it): arms {arms}; "
            f"engines {', '.join(config['engines'])}; start {config['start']}, "
            f"end {config.get('end') or '-'}; "
            f"burn-in {config.get('burn_in_days')} days; units {config.get('unit_mode')}; status "
            f"{config.get('status')}; assignment salt `{config['salt']}`.",
            "",
        ]
    if config is not None:
        auth = "-H 'Authorization: Bearer ADMINKEY' -H 'Content-Type: application/json'"
        calls = [f"curl -X POST $URL/v1/experiments {auth} -d @registration/experiment.json"]
        if plan is not None:
            where = f"$URL/v1/experiments/{config['experiment_id']}/plan"
            calls.append(f"curl -X PUT {where} {auth} -d @registration/plan.json")
        lines += [
            "The reports follow the registration and the plan: in another service, register them "
            "before the import (its `unregistered_arm` check then holds too):",
            "",
            "```sh",
            *calls,
            "```",
            "",
        ]
    if plan is None:
        lines += ["No analysis plan was registered.", ""]
        return lines
    lines += [
        f"Analysis plan version {plan['version']} (sha256 `{plan['sha256']}`), the one the reports "
        "follow (`registration/plan.json`, as `PUT /v1/experiments/{id}/plan` takes it); its history:",
        "",
        "| version | kind | registered at | by | sha256 | reason |",
        "|---|---|---|---|---|---|",
    ]
    for v in plan["history"]:
        row = (v["version"], v["kind"], v["registered_at"], v["registered_by"], v["sha256"][:12], v["reason"])
        lines.append("| " + " | ".join(_cell(x) for x in row) + " |")
    return [*lines, ""]


def render(manifest: dict[str, Any]) -> str:
    """The datasheet of an export whose ``manifest.json`` is ``manifest``."""
    kind, study = manifest["kind"], manifest["study"]
    events = [t for t in manifest["tables"] if t["events"]]
    files = " ".join(t["file"] for t in events)
    register = manifest.get("registration") is not None
    lines = [
        f"# {kind} study `{study}`: an auditstream export",
        "",
        f"The study is {manifest['study_is']} (`{study}`): the rows where `{manifest['selected_by']}`. "
        f"Exported {manifest['exported_at']} UTC (the service's clock) from auditstream "
        f"{manifest['version']}, by auditstream {manifest['client_version']}, with:",
        "",
        "```sh",
        manifest["command"],
        "```",
        "",
        "## Using it",
        "",
        "- `events/`: the study's raw events. `auditstream import` (below) stores them in a running "
        "auditstream service (once per event id) and recomputes every result table from them; the "
        "reports then give what the source service gave.",
        "- `tables/`: the result tables the service computed, as they were when exported. Times "
        "are UTC. Their descriptions below come from the service's `schemas/clickhouse/README.md`.",
        "- `manifest.json`: the same facts, for programs (each table's columns, types, key and rows).",
        "",
        "```sh",
        *(["# first the experiment and its plan: registration/ below"] if register else []),
        f"auditstream import {files} --url http://127.0.0.1:8080 --api-key ADMINKEY",
        "```",
        "",
    ]
    if intro := table_docs().get(FAMILY_INTROS.get(kind, "")):
        lines += ["## How the results were computed", "", intro, ""]
    if kind == "arrangement":
        lines += _registration(manifest)
    lines += ["## Files", "", "| file | rows | holds |", "|---|---:|---|"]
    for t in manifest["tables"]:
        holds = f"raw {t['events']} events" if t["events"] else f"result table `{t['name']}`"
        lines.append(f"| `{t['file']}` | {t['written']:,} | {holds} |")
    lines += ["", "## Tables", ""]
    for t in manifest["tables"]:
        lines += _table(t)
    return "\n".join(lines).rstrip() + "\n"
