"""Schemathesis against a service of its own: every ``/v1`` operation of the served OpenAPI
document, every check (no 5xx; statuses, headers, content types and bodies as documented;
what the schemas admit accepted, what they refuse refused; keys enforced), in a bounded run.

The run is ``st run`` in a subprocess (its own output and its ``st replay`` ids are what a
developer reproduces a failure with), reading the document the service serves, with the
seed and example count fixed here; the service is its own because the run registers and
stops experiments and imports. This module is also the run's hooks file: ``st`` imports it
with ``HOOKS_ENV`` set, which registers ``register_hooks``.

What the hooks bend, each for a stated reason:

- ``POST /v1/import`` takes JSON lines as text: they are sent as text (a media type
  schemathesis has no serializer for), positive cases only (a text body has no wrong type
  on the wire to refuse).
- ``POST /v1/import/recompute`` starts up to 1000 days and 1000 studies of background work
  (about 0.1 s each: minutes of CPU beside the run, and 503 recompute_busy past four), so
  only its refusals are tested here; its poll route is tested whole.
- Integers go as JSON integers: schemathesis also sends ``2.0`` for an ``integer``, which
  JSON Schema admits and the service refuses by design (the document's info says so).
- ``WAIVED``: refusals of schema-valid requests for rules the document can only state in
  words (one field against another, a sum, SQL, the registry's contents).
- ``KNOWN_DEFECTS``: product defects this run found, reported and not yet fixed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ingest.import_routes import NDJSON_TYPES
from tests.helpers import Service, own_service

pytestmark = pytest.mark.integration

HOOKS_ENV = "AUDITSTREAM_SCHEMATHESIS_HOOKS"
KEY_ENV = "AUDITSTREAM_SCHEMATHESIS_KEY"
KEY = "schemathesis-0123456789abcdef0123456789"
MAX_EXAMPLES = 10
"""Fuzzed cases per operation (the coverage phase adds its boundary cases, the stateful
phase its sequences): about a minute and a half of requests on two busy cores."""
SEED = 20261127
RUN_TIMEOUT_S = 360
"""A safety net only: the run is bounded by its example counts (about 80 s on two cores)."""

CONFIG = """\
hooks = "{hooks}"
headers = {{ Authorization = "Bearer ${{{key_env}}}" }}
request-timeout = 30.0

[generation]
# JSON text is UTF-8: an unpaired surrogate escape is no text (400 malformed_json, documented)
codec = "utf-8"
database = "none"

[checks]
# 413 refuses too (too_many_events, body_too_large): schemathesis's default list lacks it
negative_data_rejection.expected-statuses = [
  "400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429", "5xx",
]

[[operations]]
include-name = "POST /v1/import"
generation.mode = "positive"

[[operations]]
include-name = "POST /v1/import/recompute"
generation.mode = "negative"
phases.stateful.enabled = false

# a valid request erases for seconds (tests/integration/test_erasure.py): the invalid ones here
[[operations]]
include-name = "POST /v1/participants/erase"
generation.mode = "negative"
phases.stateful.enabled = false
"""

PLAN_RULES = (
    "is not the path's",
    "is not one of the experiment's",
    "runs no arm",
    "unknown subsets",
    "at most once",
    "against itself are 0",
    "must not decrease",
    "leave every out",
)
"""The analysis plan's rules its operations state in words (ingest/plans.py, the model's)."""
WAIVED: dict[tuple[str, int, str], tuple[str, ...]] = {
    ("POST /v1/experiments", 422, "invalid_experiment"): (
        "end is before start",
        "which is not in engines",
        "names arms not in arms",
        "their sum must be a finite number",
        "of their sum (it would",
    ),
    ("POST /v1/reports/experiment", 400, "bad_request"): ("sum to", "is given twice"),
    ("PUT /v1/experiments/{experiment_id}/planted", 400, "bad_request"): (
        "is not one of the experiment's",
        "runs no arm",
        "at most once",
    ),
    ("PUT /v1/experiments/{experiment_id}/plan", 400, "bad_request"): PLAN_RULES,
    ("POST /v1/experiments/{experiment_id}/plan/amendments", 400, "bad_request"): PLAN_RULES,
    ("POST /v1/experiments/{experiment_id}/pilot-world", 400, "bad_request"): (
        "is not one of the experiment's",
        "runs no arm",
        "is the baseline",
        "is after until",
    ),
    ("POST /v1/experiments/{experiment_id}/plan/freeze-quintiles", 400, "bad_request"): (
        "since is after until",
    ),
    # the plan's state and the study's data, as the operation states them
    ("POST /v1/experiments/{experiment_id}/plan/freeze-quintiles", 409, "no_pilot_data"): ("",),
    ("POST /v1/experiments/{experiment_id}/plan/freeze-quintiles", 409, "quintiles_frozen"): ("",),
    # a study is named for these kinds; a cursor is a page's `next`; a table is its kind's
    ("GET /v1/export/{kind}", 400, "bad_request"): ("study:",),
    ("GET /v1/export/{kind}/{table}", 400, "bad_request"): ("study:", "after:"),
    ("GET /v1/export/{kind}/{table}", 404, "unknown_export"): ("the tables of a",),
    ("POST /v1/sql", 400, "not_read_only"): ("",),  # a random string is rarely one SELECT
    ("POST /v1/sql", 400, "query_failed"): ("",),
}
"""(operation, status, error code) -> the messages of rules the operation's description
states in words: a schema-valid request refused for one of them is not a failure."""

KNOWN_DEFECTS: dict[str, str] = {}
"""None now: burn_in_days, read laxly (true stored as 1, "7" as 7), is a strict integer."""


def _integers_as_integers(value: Any) -> Any:
    """``2.0`` -> ``2`` all through a JSON body (floats that are whole and exactly an integer)."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= 2**53:
        return int(value)
    if isinstance(value, list):
        return [_integers_as_integers(v) for v in value]
    if isinstance(value, dict):
        return {k: _integers_as_integers(v) for k, v in value.items()}
    return value


def map_body(context: Any, body: Any) -> Any:
    return _integers_as_integers(body)


def _answer(response: Any) -> dict[str, Any]:
    try:
        answer = response.json()
    except ValueError:
        return {}
    return answer if isinstance(answer, dict) else {}


def filter_failure(context: Any, failure: Any, case: Any, response: Any) -> bool:
    """False (not a failure) for a waived refusal or a known defect."""
    operation, status, answer = case.operation.label, response.status_code, _answer(response)
    code, message = str(answer.get("error")), str(answer.get("message", ""))
    if failure.code == "ST202":  # a schema-valid request refused
        if status == 413 and code == "body_too_large":  # the byte limit, in the body's description
            return False
        if operation == "POST /v1/events" and code == "all_rejected":
            reasons = {r.get("reason") for r in answer.get("rejected", [])}
            return not reasons <= {"unregistered_arm", "conflicting_event_id"}
        return not any(rule in message for rule in WAIVED.get((operation, status, code), ()))
    return True


def register_hooks() -> None:
    import schemathesis

    schemathesis.serializer.alias(list(NDJSON_TYPES), "text/plain")
    schemathesis.hook("map_body")(map_body)
    schemathesis.hook("filter_failure")(filter_failure)


if os.environ.get(HOOKS_ENV):  # imported by `st` as its hooks file
    register_hooks()


@pytest.fixture(scope="module")
def st_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """A service of this module's own: the run registers and stops experiments, imports."""
    with own_service(tmp_path_factory.mktemp("schemathesis") / "data", KEY) as svc:
        yield svc


@pytest.mark.timeout(RUN_TIMEOUT_S + 120)  # the service's start, then the run
def test_schemathesis_finds_nothing_the_document_does_not_say(st_service: Service, tmp_path: Path) -> None:
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG.format(hooks=__name__, key_env=KEY_ENV))
    root = Path(__file__).resolve().parents[2]
    command = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "--config-file",
        str(config),
        "run",
        f"{st_service.url}/v1/openapi.json",
        "--checks",
        "all",
        "--max-examples",
        str(MAX_EXAMPLES),
        "--seed",
        str(SEED),
        "--no-color",
        "--report",
        "json",
        "--report-dir",
        str(tmp_path),
    ]
    env = {
        **os.environ,
        HOOKS_ENV: "1",
        KEY_ENV: KEY,
        "PYTHONPATH": os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p),
    }
    started = time.monotonic()
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S
    )
    took = time.monotonic() - started
    output = done.stdout + done.stderr
    print(output)  # shown with -s, and with a failure
    [path] = tmp_path.glob("json-*.json")
    report = json.loads(path.read_text())
    print(
        f"schemathesis: {took:.0f} s, {report['test_cases']['generated']} cases, {report['filtered']} waived"
    )

    assert report["complete"] and report["stop_reason"] == "completed", output[-3000:]
    assert report["operations"]["tested"] == report["operations"]["total"], report["operations"]
    assert report["failures"] == [], output[-6000:]
    assert report["errors"] == [], output[-6000:]
    assert done.returncode == 0, output[-3000:]
