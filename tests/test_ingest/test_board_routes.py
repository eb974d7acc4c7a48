"""The board's HTTP edge, built by the real app factory: the page needs no key and holds no
data; every JSON endpoint needs the read scope; answers come from the store read-only."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from core.settings import Settings
from core.store.base import NoStore, QueryLimits, QueryResult, Store
from ingest.api_keys import KeyFile
from ingest.app import create_app
from ingest.registered_arms import REGISTRY_SQL
from schemas.erased_installs import HASHES_SQL
from studies.arrangement.selection import ReportQuery


class RecordingStore(Store):
    """Answers every query with no rows and remembers what was asked."""

    def __init__(self) -> None:
        self.queries: list[tuple[str, bool]] = []

    async def execute(self, sql: str, *, background: bool = False) -> None:
        raise AssertionError("the board never writes")

    async def query(
        self, sql: str, *, read_only: bool = False, limits: QueryLimits | None = None
    ) -> QueryResult:
        if sql not in (REGISTRY_SQL, HASHES_SQL):  # the intake's own reads, every few seconds
            self.queries.append((sql, read_only))
        return QueryResult()

    async def insert_json_rows(self, table: str, lines: bytes, *, background: bool = False) -> None:
        raise AssertionError("the board never writes")


async def client_for(tmp_path: Path, store: Store) -> tuple[TestClient, dict[str, str]]:
    settings = Settings(data_dir=tmp_path, kafka_bootstrap="127.0.0.1:9")
    keys = KeyFile(settings.resolved_keys_file)
    _, read = keys.create("reader", ("read",))
    _, ingest = keys.create("extension", ("ingest",))
    client = TestClient(TestServer(create_app(settings, store)))
    await client.start_server()
    return client, {"read": read, "ingest": ingest}


App = tuple[TestClient, dict[str, str], RecordingStore]


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[App]:
    store = RecordingStore()
    client, keys = await client_for(tmp_path, store)
    yield client, keys, store
    await client.close()


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def test_page_and_assets_need_no_key_and_allow_nothing_foreign(app: App) -> None:
    client, _, store = app
    resp = await client.get("/board")
    assert resp.status == 200 and resp.content_type == "text/html"
    html = await resp.text()
    assert '<script src="/board/static/board.js"' in html and 'id="panel-ctr"' in html
    csp = resp.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "connect-src 'self'" in csp and "default-src 'none'" in csp
    assert resp.headers["Referrer-Policy"] == "no-referrer"

    js = await client.get("/board/static/board.js")
    assert js.status == 200 and js.content_type == "text/javascript"
    api = await client.get("/board/static/api.js")  # the module that sends the key
    assert api.status == 200 and "Authorization: `Bearer" in await api.text()
    assert (await client.get("/board/static/board.css")).content_type == "text/css"
    missing = await client.get("/board/static/secrets.json")
    assert missing.status == 404 and (await missing.json())["error"] == "not_found"
    assert store.queries == []  # the page itself reads nothing


async def test_the_root_sends_a_person_to_the_board(app: App) -> None:
    """Issue 40: `/` answered a JSON 404; it is where a newcomer types the address."""
    client, _, store = app
    resp = await client.get("/", allow_redirects=False)
    assert resp.status == 302 and resp.headers["Location"] == "/board"
    followed = await client.get("/")
    assert followed.status == 200 and followed.content_type == "text/html"
    assert store.queries == []


@pytest.mark.parametrize(
    "path",
    [
        "/v1/board/index",
        "/v1/board/experiments/demo",
        "/v1/board/autocomplete?study=s-",
        "/v1/board/personalization/p1",
        "/v1/board/alerts",
    ],
)
async def test_every_endpoint_needs_the_read_scope(app: App, path: str) -> None:
    client, keys, store = app
    assert (await client.get(path)).status == 401
    assert (await client.get(path, headers=bearer("wrong"))).status == 401
    forbidden = await client.get(path, headers=bearer(keys["ingest"]))
    assert forbidden.status == 403 and (await forbidden.json())["error"] == "forbidden"
    assert store.queries == []
    ok = await client.get(path, headers=bearer(keys["read"]))
    assert ok.status == 200, await ok.text()
    assert ok.headers["Cache-Control"] == "no-store"
    assert store.queries and all(read_only for _, read_only in store.queries)


async def test_empty_store_gives_empty_panels(app: App) -> None:
    client, keys, store = app
    index = await (await client.get("/v1/board/index", headers=bearer(keys["read"]))).json()
    assert index == {"experiments": [], "autocomplete_studies": [], "personalization_studies": []}

    resp = await client.get("/v1/board/experiments/demo?engine=bing", headers=bearer(keys["read"]))
    doc = await resp.json()
    assert doc["experiment_id"] == "demo" and doc["engine"] == "bing" and doc["burn_in_days"] == 4
    assert doc["figure3"]["arms"] == [] and doc["box_subset"]["arms"] == []
    assert doc["srm"]["status"] == "unregistered" and doc["drops"] == []
    asked = [sql for sql, _ in store.queries]
    # the report's own statement
    assert ReportQuery("demo", "bing").per_install_keys_sql(0, elements=True) in asked

    ac = await (await client.get("/v1/board/autocomplete", headers=bearer(keys["read"]))).json()
    assert ac == {"study": "", "engine": "", "churn": [], "nmi": []}
    ps = await (await client.get("/v1/board/personalization/p1", headers=bearer(keys["read"]))).json()
    assert ps == {"study_id": "p1", "treatments": [], "rounds": None}
    alerts = await (await client.get("/v1/board/alerts?limit=5", headers=bearer(keys["read"]))).json()
    assert alerts == {"alerts": []}


async def test_answers_are_reused_for_a_moment(app: App) -> None:
    client, keys, store = app
    for _ in range(3):
        assert (await client.get("/v1/board/alerts", headers=bearer(keys["read"]))).status == 200
    assert len(store.queries) == 1


@pytest.mark.parametrize("query", ["ranks=0", "ranks=11", "ranks=x"])
async def test_bad_parameters_are_400(app: App, query: str) -> None:
    client, keys, _ = app
    resp = await client.get(f"/v1/board/experiments/demo?{query}", headers=bearer(keys["read"]))
    assert resp.status == 400 and (await resp.json())["error"] == "bad_request"


async def test_store_down_is_503_with_retry_after(tmp_path: Path) -> None:
    client, keys = await client_for(tmp_path, NoStore("store at http://127.0.0.1:4711 unreachable"))
    try:
        resp = await client.get("/v1/board/index", headers=bearer(keys["read"]))
        assert resp.status == 503 and "Retry-After" in resp.headers
        body = await resp.json()
        assert body["error"] == "store_unavailable"
        assert "4711" not in body["message"]  # the store's address is the log's, not the caller's
    finally:
        await client.close()


async def test_a_configured_target_population_adds_the_weighted_estimates(tmp_path: Path) -> None:
    """With AUDITSTREAM_TARGETS_FILE the experiment panel carries the reweighted Figure 3
    beside the panel's own; the profiles are read with the report's statements."""
    targets = tmp_path / "targets.csv"
    targets.write_text("dimension,bin,share\nage_band,18-24,0.5\nage_band,55-64,0.5\n")
    settings = Settings(data_dir=tmp_path, kafka_bootstrap="127.0.0.1:9", targets_file=targets)
    keys = KeyFile(settings.resolved_keys_file)
    _, read = keys.create("reader", ("read",))
    store = RecordingStore()
    client = TestClient(TestServer(create_app(settings, store)))
    await client.start_server()
    try:
        doc = await (await client.get("/v1/board/experiments/demo", headers=bearer(read))).json()
    finally:
        await client.close()
        from ingest.board import compute

        compute.TARGETS["board"] = None
    assert doc["weighted"]["targets"] == {"age_band": {"18-24": 0.5, "55-64": 0.5}}
    assert doc["weighted"]["installs_with_profile"] == 0 and doc["figure3"]["arms"] == []
    assert any("FROM install_profiles" in sql for sql, _ in store.queries)
    assert doc["intervals"] == "sequential" and "every moment" in doc["interval_guarantee"]


@pytest.mark.parametrize(
    "query",
    ["correction=sidak", "correction=", "correction=HOLM", "variance_reduction=2", "variance_reduction=yes"],
)
async def test_bad_correction_or_variance_reduction_is_400(app: App, query: str) -> None:
    client, keys, store = app
    resp = await client.get(f"/v1/board/experiments/demo?{query}", headers=bearer(keys["read"]))
    body = await resp.json()
    assert resp.status == 400 and body["error"] == "bad_request"
    assert query.split("=")[0] in body["message"]
    assert store.queries == []  # refused before anything is computed


TESTS = {
    "method": "holm",
    "family": "delta of every arm at every rank shown",
    "description": "Holm (family-wise error)",
    "level": 0.95,
    "tests": [
        {
            "quantity": "delta",
            "arm": "swap_1_2",
            "rank": 1,
            "estimate": -0.1,
            "p_value": 0.001,
            "adjusted_p_value": 0.004,
            "rejected": True,
            "ci_low": -0.14,
            "ci_high": -0.06,
            "family_ci_low": -0.16,
            "family_ci_high": -0.04,
            "family_level": 0.9875,
        }
    ],
    "untested": [],
}
REDUCED = {
    "method": "design control variates",
    "level": 0.95,
    "estimates": [
        {
            "quantity": "delta",
            "arm": "swap_1_2",
            "rank": 1,
            "estimate": -0.1,
            "ci_low": -0.13,
            "ci_high": -0.07,
            "plain_estimate": -0.1,
            "plain_ci_low": -0.14,
            "plain_ci_high": -0.06,
            "width_ratio": 0.75,
        }
    ],
}


async def test_the_panel_carries_the_corrected_family_holm_unless_asked(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The board's experiment panel asks the report for the family's tests, by Holm unless
    the correction parameter says otherwise, and for the variance-reduced estimates with
    variance_reduction=1; each asked for is its own report (and cache entry)."""
    from dataclasses import replace

    from ingest.board import compute
    from ingest.openapi_models import BoardExperimentPanel

    asked: list[tuple[str, object, bool]] = []
    real = compute.run_experiment_report

    async def report(store: Store, query: ReportQuery, ranks: int, *args: object) -> object:
        correction, family, reduced = args[-3:]
        asked.append((str(correction), family, bool(reduced)))
        made = await real(store, query, ranks, *args)  # type: ignore[arg-type]
        method = str(correction)
        return replace(
            made,
            corrections=None if method == "none" else {**TESTS, "method": method},
            variance_reduction=REDUCED if reduced else None,
        )

    monkeypatch.setattr(compute, "run_experiment_report", report)
    client, keys, _ = app

    async def panel(query: str) -> dict:
        resp = await client.get(f"/v1/board/experiments/demo-38?{query}", headers=bearer(keys["read"]))
        assert resp.status == 200, await resp.text()
        doc = await resp.json()
        BoardExperimentPanel.model_validate(doc)
        return doc

    shown = await panel("")
    assert shown["correction"] == "holm" and shown["corrections"]["method"] == "holm"
    assert shown["corrections"]["tests"][0]["adjusted_p_value"] == 0.004
    assert shown["variance_reduction"] is None
    assert asked == [("holm", None, False)]  # None: the default family

    bh = await panel("correction=bh&variance_reduction=1")
    assert bh["correction"] == "bh" and bh["corrections"]["method"] == "bh"
    assert bh["variance_reduction"]["estimates"][0]["width_ratio"] == 0.75
    none = await panel("correction=none&variance_reduction=0")
    assert none["correction"] == "none" and none["corrections"] is None and none["variance_reduction"] is None
    assert asked[1:] == [("bh", None, True), ("none", None, False)]
    assert (await panel("correction=holm"))["corrections"]["method"] == "holm"
    assert len(asked) == 3  # the defaults, named or not, are one panel
