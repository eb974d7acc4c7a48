"""``POST /v1/import/recompute`` on the real service: a request naming 1,000 days (a couple of
hundred distinct, each real day many times over) and the study twice is answered at once
(202, running), finishes in the background, and leaves every derived table as it was after
the import (which recomputed them itself) and equal to a recount. 1,000 entries took over
60 s in the request before, past any proxy's timeout."""

from __future__ import annotations

import itertools
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from tests.helpers import Service, http, wait_for
from tests.integration.test_end_to_end import (
    assert_aggregate_exact,
    assert_hourly_replicates_exact,
    assert_install_stats_exact,
    assert_study_install_rows_exact,
)
from tests.integration.test_import import DERIVED, run_import

pytestmark = pytest.mark.integration

EXP = "recomputed-bg"
FIRST_DAY = datetime(2026, 9, 1, tzinfo=UTC)
DAYS = 3


def events(n: int) -> list[dict[str, Any]]:
    traffic = ExtensionTraffic(TrafficConfig(experiment_id=EXP, seed=29, installs=40))
    start = FIRST_DAY + timedelta(hours=8)
    out = []
    for i, event in enumerate(itertools.islice(traffic.events(), n)):
        event["sent_at"] = (start + timedelta(seconds=i * DAYS * 86400 // n)).isoformat(
            timespec="milliseconds"
        )
        out.append(event)
    return out


def snapshot(svc: Service) -> dict[str, Any]:
    return {
        table: svc.sql(f"SELECT {columns} FROM {table} WHERE experiment_id = '{EXP}'")
        for table, columns in DERIVED.items()
    }


def call(svc: Service, method: str, path: str, body: Any = None) -> Any:
    headers = {"Authorization": f"Bearer {svc.api_key}", "Content-Type": "application/json"}
    data = None if body is None else orjson.dumps(body)
    return http(method, svc.url + path, data, headers)


def test_a_large_recompute_answers_at_once_and_changes_no_derived_row(
    service: Service, tmp_path: Path
) -> None:
    path = tmp_path / "study.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(e) for e in events(3000)))
    code, output = run_import(service, str(path))
    assert code == 0, output
    assert service.scalar(f"SELECT count() FROM extension_events WHERE experiment_id = '{EXP}'") == 3000
    before = snapshot(service)

    first = int(FIRST_DAY.timestamp())
    real = [first + d * 86400 for d in range(DAYS)]
    empty = [first - (d + 1) * 86400 for d in range(200 - DAYS)]  # days with nothing stored
    days = (real * 300)[:500] + empty + (real * 300)[: 1000 - 500 - len(empty)]  # 1,000 entries, 200 days
    spans = [{"experiment_id": EXP, "engine": "google", "day_start": day} for day in days]
    assert len(spans) == 1000
    study = {"experiment_id": EXP, "engine": "google"}

    sent = time.monotonic()
    answer = call(service, "POST", "/v1/import/recompute", {"spans": spans, "installs": [study, study]})
    answered_s = time.monotonic() - sent
    assert answer.status == 202, answer.body
    state = answer.body
    assert state["status"] == "running" and state["days"] == 200 and state["installs"] == 1
    assert state["steps"] == 201 and answer.headers["Location"] == f"/v1/import/recompute/{state['id']}"
    assert answered_s < 5, answered_s

    def ended() -> dict[str, Any] | None:
        polled = call(service, "GET", answer.headers["Location"])
        assert polled.status == 200, polled.body
        return polled.body if polled.body["status"] != "running" else None

    done = wait_for(ended, 300, "the recompute to end")
    finished_s = time.monotonic() - sent
    assert done["status"] == "done" and done["done"] == 201, done
    assert finished_s > answered_s

    assert snapshot(service) == before
    assert_aggregate_exact(service, EXP)
    assert_install_stats_exact(service, EXP)
    assert_study_install_rows_exact(service, EXP)
    assert_hourly_replicates_exact(service, EXP)
