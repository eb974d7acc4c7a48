"""The OpenAPI document against the real service: every ``/v1`` route is called, for its
success and its errors, and every answer's body is validated against the schema the served
document declares for that status (``tests/openapi_check.py``).

The shared service (tansu + chDB + worker + ingest) gives the successes and the caller's
errors; a lone ingest without a store, then without its broker, gives the 503s, and a
rate of one request per key gives the 429.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import random
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
from openapi_spec_validator import OpenAPIV31SpecValidator

from collectors.simulate.autocomplete_traffic import AutocompleteSimulation, CrawlConfig
from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from ingest.api_keys import SCOPES, KeyFile
from supervisor.broker import TansuBroker
from tests.helpers import Service, http, post_study, wait_for
from tests.openapi_check import Api

pytestmark = pytest.mark.integration
NDJSON = "application/x-ndjson"


def served_document(svc: Service) -> dict[str, Any]:
    resp = http("GET", svc.url + "/v1/openapi.json")  # no key: the document holds no data
    assert resp.status == 200, resp.body
    assert not list(OpenAPIV31SpecValidator(resp.body).iter_errors())
    doc: dict[str, Any] = resp.body
    return doc


def experiment_body(experiment_id: str) -> dict[str, Any]:
    arms = {arm: weight for arm, weight in TrafficConfig().arms}
    return {
        "experiment_id": experiment_id,
        "engines": ["google", "bing"],
        "arms": arms,
        "salt": "openapi-salt",
        "start": datetime.now(UTC).date().isoformat(),
    }


def events_of(experiment_id: str, n: int, seed: int) -> list[dict[str, Any]]:
    traffic = ExtensionTraffic(TrafficConfig(experiment_id=experiment_id, seed=seed, installs=10))
    return list(itertools.islice(traffic.events(), n))


def post_autocomplete(api: Api, svc: Service, study: str) -> str:
    """Six crawl rounds of four roots with a shock in round 4 (three rounds of history before
    it), so the autocomplete panel has churn, nmi and a shock, and the alerts panel an alert."""
    config = CrawlConfig(
        roots=("asa hutchinson", "jeb bush", "ted cruz", "bernie sanders"),
        drift=0.05,
        shock_rounds=frozenset({4}),
        seed=11,
        study=study,
    )
    sim = AutocompleteSimulation(config)
    for r in range(6):
        api.call("POST", "/v1/events", 202, json=list(sim.crawl_round(r)))
    prefix = f"{study}-{config.engine}-"
    wait_for(
        lambda: (
            svc.scalar(f"SELECT count() FROM autocomplete_crawls WHERE startsWith(crawl_id, '{prefix}')")
            == 6 * len(config.roots)
        ),
        120,
        "every crawl analysed",
    )
    wait_for(
        lambda: svc.scalar(
            "SELECT count() FROM alerts WHERE kind = 'autocomplete_shock' "
            f"AND subject = 'google/{prefix}r0004'"
        ),
        60,
        "the shock alert",
    )
    return prefix


def post_personalization(api: Api, svc: Service, study: str) -> None:
    """Six lock-step rounds of a control, its twin and a treatment."""
    rng = random.Random(5)
    profiles = (("ctl", "control", ""), ("twin", "control_twin", ""), ("in", "treatment", "logged_in"))
    start = datetime.now(UTC)
    events = []
    for r, (k, (profile_id, role, treatment)) in itertools.product(range(6), enumerate(profiles)):
        base = [f"https://site{i}.example/{r % 2}" for i in range(10)]
        p = 0.08 if role != "treatment" else 0.3
        urls = [f"https://other.example/{rng.random()}" if rng.random() < p else u for u in base]
        events.append(
            {
                "type": "serp_snapshot",
                "schema_version": 1,
                "event_id": str(uuid.uuid4()),
                "sent_at": (start + timedelta(seconds=r, milliseconds=5 * k)).isoformat(
                    timespec="milliseconds"
                ),
                "study_id": study,
                "round_id": f"{study}-r{r:04d}",
                "profile_id": profile_id,
                "role": role,
                "treatment": treatment,
                "engine": "google",
                "query": f"openapi query {r % 2}",
                "query_category": "news",
                "results": [{"rank": i + 1, "type": "organic", "url": u} for i, u in enumerate(urls)],
                "result_estimate": 1000,
                "status": "ok",
                "raw_ref": "",
            }
        )
    api.call("POST", "/v1/events", 202, json=events)
    wait_for(
        lambda: (
            svc.scalar(
                "SELECT count() FROM personalization_pairs "
                f"WHERE study_id = '{study}' AND kind = 'noise' AND links = 'primary'"
            )
            == 6
        ),
        60,
        "personalization rounds compared",
    )


def check_events(api: Api, keys: dict[str, str], experiment_id: str) -> None:
    path = "/v1/events"
    api.call("POST", path, 202, json=events_of(experiment_id, 20, seed=5))
    mixed = [*events_of(experiment_id, 2, seed=6), {"type": "nope"}]
    assert api.call("POST", path, 202, json=mixed).body["rejected"][0]["reason"] == "unknown_type"
    assert api.call("POST", path, 422, json=[{"type": "nope"}, 7]).body["error"] == "all_rejected"
    assert api.call("POST", path, 400, raw=b"{not json").body["error"] == "malformed_json"
    assert api.call("POST", path, 400, json=[]).body["error"] == "empty_batch"
    assert api.call("POST", path, 413, json=[{}] * 501).body["error"] == "too_many_events"
    api.call("POST", path, 413, raw=b'["' + b"x" * (1024 * 1024 + 10) + b'"]')
    api.call("POST", path, 415, raw=b"{}", content_type="text/plain")
    api.call("POST", path, 401, json={}, key="")
    api.call("POST", path, 401, json={}, key="not-a-key")
    api.call("POST", path, 403, json={}, key=keys["read"])


def check_sql(api: Api, keys: dict[str, str]) -> None:
    path = "/v1/sql"
    assert api.call("POST", path, 200, json={"sql": "SELECT 1 AS one"}).body["rows"] == [[1]]
    api.call("POST", path, 200, json={"sql": "SHOW TABLES"})
    assert api.call("POST", path, 400, json={"sql": "DROP TABLE alerts"}).body["error"] == "not_read_only"
    failed = api.call("POST", path, 400, json={"sql": "SELECT no_such_column FROM extension_events"})
    assert failed.body["error"] == "query_failed"
    api.call("POST", path, 400, json={"query": "SELECT 1"})
    api.call("POST", path, 415, raw=b"SELECT 1", content_type="text/plain")
    api.call("POST", path, 403, json={"sql": "SELECT 1"}, key=keys["ingest"])


def check_experiments(api: Api, keys: dict[str, str], experiment_id: str) -> None:
    created = api.call("POST", "/v1/experiments", 201, json=experiment_body(experiment_id)).body
    assert created["experiment_id"] == experiment_id
    api.call("POST", "/v1/experiments", 409, json=experiment_body(experiment_id))
    no_control = {**experiment_body(experiment_id + "-bad"), "arms": {"a": 1, "b": 1}}
    assert api.call("POST", "/v1/experiments", 422, json=no_control).body["error"] == "invalid_experiment"
    api.call("POST", "/v1/experiments", 400, raw=b"{", content_type="application/json")
    api.call("POST", "/v1/experiments", 403, json=experiment_body("x"), key=keys["read"])
    listed = api.call("GET", "/v1/experiments", 200).body
    assert experiment_id in {e["experiment_id"] for e in listed}
    api.call("GET", "/v1/experiments", 401, key="")
    one, config, stop = (
        "/v1/experiments/{experiment_id}",
        "/v1/experiments/{experiment_id}/config",
        ("/v1/experiments/{experiment_id}/stop"),
    )
    ours, absent = {"experiment_id": experiment_id}, {"experiment_id": "no-such-experiment"}
    api.call("GET", one, 200, params=ours)
    api.call("GET", one, 404, params=absent)
    api.call("GET", one, 403, params=ours, key=keys["ingest"])
    public = api.call("GET", config, 200, params=ours, key=keys["ingest"]).body
    assert abs(sum(a["weight"] for a in public["arms"]) - 1) < 1e-9
    api.call("GET", config, 404, params=absent, key=keys["ingest"])
    api.call("GET", config, 403, params=ours, key=keys["read"])
    stopped = experiment_id + "-stopped"
    api.call("POST", "/v1/experiments", 201, json=experiment_body(stopped))
    assert api.call("POST", stop, 200, params={"experiment_id": stopped}).body["status"] == "stopped"
    api.call("POST", stop, 404, params=absent)
    api.call("POST", stop, 403, params=ours, key=keys["read"])
    planted = "/v1/experiments/{experiment_id}/planted"
    assert api.call("GET", planted, 200, params=ours).body["values"] == []
    value = {"engine": "google", "subset": "all", "baseline": "control", "arm": "control"}
    body = {"seed": 1, "model": "openapi", "values": [{**value, "quantity": "ctr", "rank": 1, "value": 0.43}]}
    assert api.call("PUT", planted, 200, params=ours, json=body).body["values"][0]["value"] == 0.43
    api.call("PUT", planted, 400, params=ours, json={**body, "seed": -1})
    api.call("PUT", planted, 404, params=absent, json=body)
    api.call("PUT", planted, 403, params=ours, json=body, key=keys["read"])
    api.call("GET", planted, 404, params=absent)
    check_plan(api, keys, ours, absent)


def check_plan(api: Api, keys: dict[str, str], ours: dict[str, str], absent: dict[str, str]) -> None:
    plan, amendments = (
        "/v1/experiments/{experiment_id}/plan",
        "/v1/experiments/{experiment_id}/plan/amendments",
    )
    deviations = "/v1/experiments/{experiment_id}/plan/deviations"
    body = {
        "experiment_id": ours["experiment_id"],
        "primary": [{"quantity": "delta", "arm": "swap_1_2", "rank": 1}],
    }
    assert api.call("GET", plan, 404, params=ours).body["error"] == "no_plan"
    api.call("POST", amendments, 404, params=ours, json={"reason": "r", "plan": body})
    assert api.call("PUT", plan, 200, params=ours, json=body).body["version"] == 1
    assert api.call("PUT", plan, 409, params=ours, json=body).body["error"] == "plan_exists"
    api.call("PUT", plan, 400, params=ours, json={**body, "alpha": 2})
    api.call("PUT", plan, 404, params=absent, json={**body, "experiment_id": absent["experiment_id"]})
    api.call("PUT", plan, 403, params=ours, json=body, key=keys["read"])
    amended = {"reason": "burn-in 2", "plan": {**body, "burn_in_days": 2}}
    assert api.call("POST", amendments, 200, params=ours, json=amended).body["version"] == 2
    api.call("POST", amendments, 409, params=ours, json=amended)
    api.call("POST", amendments, 403, params=ours, json=amended, key=keys["read"])
    assert len(api.call("GET", plan, 200, params=ours).body["history"]) == 2
    api.call("GET", plan, 404, params=absent)
    assert api.call("GET", deviations, 200, params=ours).body["deviations"] == []
    api.call("GET", deviations, 404, params=absent)


def check_freeze(api: Api, keys: dict[str, str], experiment_id: str) -> None:
    """``plan freeze-quintiles`` on the study check_plan gave a plan: a dry run, the amendment,
    then a second freeze refused (the plan fixes the boundaries now)."""
    freeze = "/v1/experiments/{experiment_id}/plan/freeze-quintiles"
    ours = {"experiment_id": experiment_id}
    today = {"until": datetime.now(UTC).date().isoformat()}
    assert api.call("POST", freeze, 200, params=ours, json={**today, "dry_run": True}).body["plan"] is None
    api.call("POST", freeze, 403, params=ours, json=today, key=keys["read"])
    api.call("POST", freeze, 400, params=ours, json={"until": "2026-01-02", "since": "2026-01-03"})
    api.call("POST", freeze, 409, params=ours, json={"until": "2000-01-01"})
    assert api.call("POST", freeze, 200, params=ours, json=today).body["plan"]["version"] == 3
    assert api.call("POST", freeze, 409, params=ours, json=today).body["error"] == "quintiles_frozen"
    api.call("POST", freeze, 404, params={"experiment_id": "no-such-experiment"}, json=today)


def check_reports(api: Api, keys: dict[str, str], experiment_id: str) -> None:
    report, timeline = "/v1/reports/experiment", "/v1/reports/timeline"
    doc = api.call("POST", report, 200, json={"experiment_id": experiment_id, "ranks": 3}).body
    assert {a["arm"] for a in doc["arms"]} >= {"control", "swap_1_2"}
    sequential = {"experiment_id": experiment_id, "intervals": "sequential", "seed": 1}
    assert api.call("POST", report, 200, json=sequential).body["decisions"] is not None
    api.call("POST", report, 404, json={"experiment_id": "no-such-experiment"})
    api.call("POST", report, 400, json={"experiment_id": experiment_id, "bogus": 1})
    api.call("POST", report, 400, json={"experiment_id": experiment_id, "subset": "no-such-subset"})
    api.call("POST", report, 415, raw=b"{}", content_type="text/plain")
    api.call("POST", report, 403, json={"experiment_id": experiment_id}, key=keys["ingest"])
    windows = api.call("POST", timeline, 200, json={"experiment_id": experiment_id, "window": "1d"}).body
    assert windows["window_seconds"] == 86400 and windows["windows"]
    api.call("POST", timeline, 400, json={"experiment_id": experiment_id, "window": "fortnight"})
    api.call("POST", timeline, 404, json={"experiment_id": "no-such-experiment"})
    api.call("POST", timeline, 401, json={"experiment_id": experiment_id}, key="")


def check_pilot_world(api: Api, keys: dict[str, str], experiment_id: str) -> None:
    """The study's data as the planner's world: the plan's arm and burn-in (check_plan
    registered delta_1 of swap_1_2, then a burn-in of 2)."""
    path = "/v1/experiments/{experiment_id}/pilot-world"
    ours, absent = {"experiment_id": experiment_id}, {"experiment_id": "no-such-experiment"}
    doc = api.call("POST", path, 200, params=ours, json={}).body
    assert (doc["arm"], doc["rank"], doc["burn_in_days"], doc["preprocessing_from"]) == (
        "swap_1_2",
        1,
        2,
        "plan",
    )
    assert doc["installs"] > 0 and 0 < doc["world"]["ctr"] < 1
    api.call("POST", path, 200, params=ours, json={"arm": "swap_1_3", "rank": 2, "model": "additive"})
    api.call("POST", path, 404, params=absent, json={})
    assert (
        api.call("POST", path, 404, params=ours, json={"since": "2001-01-01", "until": "2001-01-02"}).body[
            "error"
        ]
        == "no_units"
    )
    api.call("POST", path, 400, params=ours, json={"since": "2026-02-30"})
    api.call("POST", path, 400, params=ours, json={"since": "2026-03-02", "until": "2026-03-01"})
    api.call("POST", path, 400, params=ours, json={"arm": "no_such_arm"})
    api.call("POST", path, 400, params=ours, json={"rank": 11})
    api.call("POST", path, 415, params=ours, raw=b"{}", content_type="text/plain")
    api.call("POST", path, 403, params=ours, json={}, key=keys["ingest"])


def check_board(api: Api, keys: dict[str, str], experiment_id: str, autocomplete: str, pers: str) -> None:
    def listed() -> dict[str, Any] | None:
        # the board answers from a cache refreshed in the background: an earlier test may
        # have asked for the index before these studies existed
        index = api.call("GET", "/v1/board/index", 200).body
        ready = (
            experiment_id in {e["experiment_id"] for e in index["experiments"]}
            and autocomplete in {s["study"] for s in index["autocomplete_studies"]}
            and pers in {s["study_id"] for s in index["personalization_studies"]}
        )
        return index if ready else None

    wait_for(listed, 60, "the board's index to list the new studies")
    api.call("GET", "/v1/board/index", 401, key="")
    panel = "/v1/board/experiments/{experiment_id}"
    ours = {"experiment_id": experiment_id}
    shown = api.call("GET", panel, 200, params=ours).body
    assert shown["figure3"]["arms"] and shown["srm"]["registered"]
    api.call("GET", panel, 200, params=ours, query={"intervals": "bootstrap", "ranks": "3"})
    api.call("GET", panel, 400, params=ours, query={"ranks": "0"})
    api.call("GET", panel, 400, params=ours, query={"intervals": "sometimes"})
    assert shown["correction"] == "holm" and shown["corrections"]["method"] == "holm"
    reduced = api.call(
        "GET", panel, 200, params=ours, query={"correction": "bh", "variance_reduction": "1"}
    ).body
    assert reduced["corrections"]["method"] == "bh" and reduced["variance_reduction"] is not None
    api.call("GET", panel, 400, params=ours, query={"correction": "sidak"})
    api.call("GET", panel, 400, params=ours, query={"variance_reduction": "yes"})
    api.call("GET", panel, 403, params=ours, key=keys["ingest"])
    crawls = api.call("GET", "/v1/board/autocomplete", 200, query={"study": autocomplete}).body
    assert crawls["churn"] and any(r["shock"] for s in crawls["nmi"] for r in s["rounds"])
    api.call("GET", "/v1/board/autocomplete", 200, query={"study": "no-such-study-", "engine": "google"})
    api.call("GET", "/v1/board/autocomplete", 403, key=keys["admin"])
    personalization = "/v1/board/personalization/{study_id}"
    shown = api.call("GET", personalization, 200, params={"study_id": pers}).body
    assert shown["treatments"] and shown["rounds"]
    api.call("GET", personalization, 200, params={"study_id": "no-such-study"})
    api.call("GET", personalization, 401, params={"study_id": "x"}, key="not-a-key")
    alerts = api.call("GET", "/v1/board/alerts", 200, query={"limit": "500"}).body["alerts"]
    assert any(a["kind"] == "autocomplete_shock" for a in alerts)
    api.call("GET", "/v1/board/alerts", 400, query={"limit": "many"})
    api.call("GET", "/v1/board/alerts", 400, query={"limit": "501"})
    figure = "/v1/board/figures/{paper}/{figure}"
    page_mix = {"paper": "powermeter", "figure": "figure8"}
    svg = api.call("GET", figure, 200, params=page_mix, query={"experiment": experiment_id})
    assert svg.headers["Content-Type"].startswith("image/svg+xml") and "<svg" in svg.body
    api.call(
        "GET",
        figure,
        404,
        params={"paper": "powermeter", "figure": "figure99"},
        query={"experiment": experiment_id},
    )
    api.call("GET", figure, 403, params=page_mix, query={"experiment": experiment_id}, key=keys["ingest"])


def check_import(api: Api, keys: dict[str, str], experiment_id: str) -> None:
    lines = [orjson.dumps(e) for e in events_of(experiment_id, 30, seed=8)]
    body = b"\n".join([*lines, b"{broken", orjson.dumps({"type": "click"})]) + b"\n"
    answer = api.call("POST", "/v1/import", 200, raw=body, content_type=NDJSON).body
    assert answer["accepted"] == 30 and answer["inserted"] == 30 and len(answer["rejected"]) == 2
    again = api.call("POST", "/v1/import", 200, raw=body, content_type=NDJSON).body
    assert again["duplicates"] == 30 and again["inserted"] == 0
    api.call("POST", "/v1/import", 415, raw=body, content_type="application/json")
    api.call("POST", "/v1/import", 403, raw=body, content_type=NDJSON, key=keys["read"])
    recompute, progress = "/v1/import/recompute", "/v1/import/recompute/{recompute_id}"
    study = {"experiment_id": experiment_id, "engine": "google"}
    started = api.call("POST", recompute, 202, json={"spans": answer["spans"], "installs": [study]})
    assert started.headers["Location"] == f"{recompute}/{started.body['id']}"
    ours = {"recompute_id": started.body["id"]}

    def ended() -> dict[str, Any] | None:
        state: dict[str, Any] = api.call("GET", progress, 200, params=ours).body
        return state if state["status"] != "running" else None

    done = wait_for(ended, 120, "the recompute to end")
    assert (
        done is not None
        and done["status"] == "done"
        and (done["days"], done["installs"]) == (len(answer["spans"]), 1)
    )
    assert done["done"] == done["steps"] == len(answer["spans"]) + 1
    api.call("GET", progress, 404, params={"recompute_id": "rc_" + "0" * 20})
    api.call("GET", progress, 403, params=ours, key=keys["read"])
    midday = {"spans": [{**study, "day_start": 86400 * 20000 + 3600}]}
    api.call("POST", recompute, 400, json=midday)
    api.call("POST", recompute, 400, json={"spans": "all"})
    api.call("POST", recompute, 403, json={}, key=keys["ingest"])


def check_export(api: Api, keys: dict[str, str], experiment: str, autocomplete: str) -> None:
    """A study's manifest and its tables' pages, followed by their cursor."""
    manifest, page = "/v1/export/{kind}", "/v1/export/{kind}/{table}"
    ours = {"kind": "arrangement"}
    doc = api.call("GET", manifest, 200, params=ours, query={"study": experiment}).body
    assert doc["registration"]["experiment_id"] == experiment and doc["plan"]["version"] >= 1
    assert {t["name"] for t in doc["tables"]} >= {"extension_events", "arrangement_install"}
    crawls = {"kind": "autocomplete"}
    assert api.call("GET", manifest, 200, params=crawls, query={"study": autocomplete}).body["plan"] is None
    table = {**ours, "table": "extension_events"}
    first = api.call("GET", page, 200, params=table, query={"study": experiment, "limit": "5"}).body
    assert len(first["rows"]) == 5 and first["next"] is not None
    query = {"study": experiment, "limit": "5", "after": first["next"]}
    assert api.call("GET", page, 200, params=table, query=query).body["rows"] != first["rows"]
    api.call("GET", page, 400, params=table, query={"study": experiment, "after": "[1]"})
    wrong = {"study": experiment, "after": '["google", "yesterday", "x"]'}  # a key's length, not its types
    assert api.call("GET", page, 400, params=table, query=wrong).body["error"] == "bad_request"
    api.call("GET", page, 400, params=table, query={"study": experiment, "limit": "0"})
    api.call("GET", manifest, 400, params=ours)  # an experiment is named
    api.call("GET", manifest, 404, params={"kind": "nope"}, query={"study": experiment})
    api.call("GET", page, 404, params={**ours, "table": "alerts"}, query={"study": experiment})
    api.call("GET", manifest, 403, params=ours, query={"study": experiment}, key=keys["read"])


def check_participants(api: Api, keys: dict[str, str], experiment: str) -> None:
    """The operator erases an install; a volunteer's extension erases its own, proving it
    with the secret whose hash came with its onboarding answers."""
    erase, own = "/v1/participants/erase", "/v1/participants/erase-own"
    install, secret = f"oa-{uuid.uuid4().hex[:12]}", uuid.uuid4().hex * 2
    profile = {
        "schema_version": 1, "event_id": str(uuid.uuid4()), "sent_at": datetime.now(UTC).isoformat(),
        "type": "install_profile", "install_id": install, "install_day": datetime.now(UTC).date().isoformat(),
        "extension_version": "0.3.0", "experiment_id": experiment, "consent": "given",
        "erasure_key_sha256": hashlib.sha256(secret.encode()).hexdigest(),
    }  # fmt: skip
    api.call("POST", "/v1/events", 202, json=[profile], key=keys["ingest"])
    wait_for(
        lambda: api.svc.scalar(f"SELECT count() FROM install_profiles WHERE install_id = '{install}'") == 1,
        60,
        "the onboarding answers stored",
    )
    api.call("POST", own, 403, json={"install_id": install, "erasure_key": "0" * 64}, key=keys["ingest"])
    api.call("POST", own, 400, json={"install_id": install}, key=keys["ingest"])
    mine = {"install_id": install, "erasure_key": secret}
    receipt = api.call("POST", own, 200, json=mine, key=keys["ingest"])
    assert receipt.body["receipts"][0]["rows_removed"]["raw_install_profiles"] == 1
    api.call("POST", erase, 200, json={"install_ids": [install]}, key=keys["admin"])  # again: zeros
    api.call("POST", erase, 400, json={"install_ids": []}, key=keys["admin"])
    api.call("POST", erase, 403, json={"install_ids": [install]}, key=keys["ingest"])


def check_keys(api: Api, keys: dict[str, str]) -> None:
    for scope, key in keys.items():
        assert api.call("GET", "/v1/keys/self", 200, key=key).body["scopes"] == [scope]
    api.call("GET", "/v1/keys/self", 401, key="not-a-key")
    assert "ingest_requests_total" in api.call("GET", "/metrics", 200, key=keys["metrics"]).body
    api.call("GET", "/metrics", 403, key=keys["read"])
    api.call("GET", "/metrics", 401, key="")


def test_every_v1_route_answers_as_its_document_says(service: Service) -> None:
    api = Api(service, served_document(service))
    key_file = KeyFile(service.data_dir / "keys.json")
    keys = {scope: key_file.create(f"openapi-{scope}", (scope,))[1] for scope in SCOPES}
    experiment = "oa-" + uuid.uuid4().hex[:10]

    check_events(api, keys, experiment + "-events")
    check_sql(api, keys)
    check_experiments(api, keys, experiment)
    post_study(service, TrafficConfig(experiment_id=experiment, seed=11, installs=60), 3000, batch=300)
    check_reports(api, keys, experiment)
    check_pilot_world(api, keys, experiment)
    check_freeze(api, keys, experiment)
    autocomplete = post_autocomplete(api, service, experiment + "-ac")
    post_personalization(api, service, experiment + "-pers")
    check_board(api, keys, experiment, autocomplete, experiment + "-pers")
    check_import(api, keys, experiment + "-import")
    check_export(api, keys, experiment, autocomplete)
    check_keys(api, keys)
    check_participants(api, keys, experiment)
    api.call("GET", "/v1/openapi.json", 200, key="")

    assert api.missing() == []


@pytest.mark.parametrize(
    "lone_ingest",
    [{"AUDITSTREAM_RATE_LIMIT_RPS": "0.01", "AUDITSTREAM_RATE_LIMIT_BURST": "1"}],
    indirect=True,
)
def test_unavailable_and_rate_limited_answers_match_the_document(
    lone_ingest: tuple[Service, TansuBroker],
) -> None:
    """With no store every store-backed route answers 503 with Retry-After; with the broker
    gone, so does ``/v1/events``; a key's second request within its rate gets 429. The rate
    allows one request per 100 s, so each request here has a fresh key but the 429's second."""
    svc, broker = lone_ingest
    api = Api(svc, served_document(svc))
    key_file = KeyFile(svc.data_dir / "keys.json")
    fresh = (key_file.create(f"k{n}", SCOPES)[1] for n in itertools.count())
    ours = {"experiment_id": "exp"}
    body = {"experiment_id": "exp"}
    line = orjson.dumps(events_of("exp", 1, seed=9)[0])
    span = {"spans": [{"experiment_id": "exp", "engine": "google", "day_start": 86400 * 20000}]}
    unavailable: list[tuple[str, str, dict[str, Any]]] = [
        ("POST", "/v1/sql", {"json": {"sql": "SELECT 1"}}),
        ("POST", "/v1/experiments", {"json": experiment_body("exp")}),
        ("GET", "/v1/experiments", {}),
        ("GET", "/v1/experiments/{experiment_id}", {"params": ours}),
        ("GET", "/v1/experiments/{experiment_id}/config", {"params": ours}),
        ("POST", "/v1/experiments/{experiment_id}/stop", {"params": ours}),
        ("GET", "/v1/experiments/{experiment_id}/planted", {"params": ours}),
        ("GET", "/v1/experiments/{experiment_id}/plan", {"params": ours}),
        ("GET", "/v1/experiments/{experiment_id}/plan/deviations", {"params": ours}),
        ("POST", "/v1/experiments/{experiment_id}/pilot-world", {"params": ours, "json": {}}),
        (
            "PUT",
            "/v1/experiments/{experiment_id}/planted",
            {"params": ours, "json": {"seed": 1, "model": "m", "values": []}},
        ),
        ("POST", "/v1/reports/experiment", {"json": body}),
        ("POST", "/v1/reports/timeline", {"json": body}),
        ("POST", "/v1/import", {"raw": line, "content_type": NDJSON}),
        ("POST", "/v1/import/recompute", {"json": span}),
        ("GET", "/v1/export/{kind}", {"params": {"kind": "arrangement"}, "query": {"study": "exp"}}),
        (
            "GET",
            "/v1/export/{kind}/{table}",
            {"params": {"kind": "arrangement", "table": "extension_events"}, "query": {"study": "exp"}},
        ),
        ("GET", "/v1/board/index", {}),
        ("GET", "/v1/board/experiments/{experiment_id}", {"params": ours}),
        ("GET", "/v1/board/autocomplete", {}),
        ("GET", "/v1/board/personalization/{study_id}", {"params": {"study_id": "s"}}),
        ("GET", "/v1/board/alerts", {}),
        (
            "GET",
            "/v1/board/figures/{paper}/{figure}",
            {"params": {"paper": "powermeter", "figure": "figure8"}, "query": {"experiment": "exp"}},
        ),
    ]
    for method, path, kwargs in unavailable:
        resp = api.call(method, path, 503, key=next(fresh), **kwargs)
        assert resp.body["error"] == "store_unavailable", (path, resp.body)
        assert int(resp.headers["Retry-After"]) >= 1, path

    key = next(fresh)
    api.call("POST", "/v1/events", 202, key=key, json=events_of("exp", 3, seed=10))
    limited = api.call("POST", "/v1/events", 429, key=key, json=events_of("exp", 3, seed=10))
    assert int(limited.headers["Retry-After"]) >= 1

    asyncio.run(broker.stop())
    down = api.call("POST", "/v1/events", 503, key=next(fresh), json=events_of("exp", 3, seed=12))
    assert down.body["error"] == "broker_unavailable" and int(down.headers["Retry-After"]) >= 1
    want = {(m, p, 503) for m, p, _ in unavailable} | {
        ("POST", "/v1/events", 429),
        ("POST", "/v1/events", 503),
    }
    assert want <= api.seen
