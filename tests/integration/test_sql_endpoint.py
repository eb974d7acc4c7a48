"""/v1/sql runs one read-only statement for keys with the read scope, nothing else."""

from __future__ import annotations

import orjson
import pytest

from ingest.api_keys import KeyFile
from tests.helpers import Service, http

pytestmark = pytest.mark.integration


def run(svc: Service, sql: str, key: str | None = None) -> tuple[int, dict]:
    resp = http(
        "POST",
        svc.url + "/v1/sql",
        orjson.dumps({"sql": sql}),
        {"Authorization": f"Bearer {key or svc.api_key}", "Content-Type": "application/json"},
    )
    return resp.status, resp.body


def test_select_and_show_work(service: Service) -> None:
    status, body = run(service, "SELECT 1 + 1 AS two")
    assert status == 200 and body["columns"] == ["two"] and body["rows"] == [[2]]
    status, body = run(service, "SHOW TABLES")
    assert status == 200 and ["clicks_by_rank_1m"] in body["rows"]


@pytest.mark.parametrize(
    "sql",
    [
        "DROP TABLE alerts",
        "INSERT INTO alerts (kind) VALUES ('x')",
        "SELECT 1; DROP TABLE alerts",
        "SELECT 1 INTO OUTFILE '/tmp/auditstream-outfile'",
        "SELECT * FROM file('/etc/hostname', 'LineAsString')",
        "SELECT nope FROM nowhere",
    ],
)
def test_anything_but_a_read_is_refused(service: Service, sql: str) -> None:
    status, body = run(service, sql)
    assert status == 400, body
    assert body["error"] in ("not_read_only", "query_failed")
    assert run(service, "SELECT count() FROM alerts")[0] == 200  # still there


def test_ingest_only_key_cannot_read(service: Service) -> None:
    _, secret = KeyFile(service.data_dir / "keys.json").create("extension", ("ingest",))
    status, body = run(service, "SELECT 1", key=secret)
    assert status == 403 and body["error"] == "forbidden"
