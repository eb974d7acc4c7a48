"""``auditstream export`` (issue 40): a study's export, imported into a fresh, empty service,
gives the same ``report experiment``, ``report autocomplete`` and ``report personalization``
as the service it came from; every table's file holds the rows the service counts, and the
datasheet describes each of them."""

from __future__ import annotations

import itertools
import random
import re
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from auditstream.cli import app
from collectors.export_files import read_events
from collectors.simulate.autocomplete_traffic import AutocompleteSimulation, CrawlConfig
from collectors.simulate.extension_traffic import TrafficConfig
from tests.helpers import Service, http, own_service, post_study, wait_for

pytestmark = pytest.mark.integration
ROUNDS = 6


def run(svc: Service, *args: str) -> str:
    result = CliRunner().invoke(app, [*args, "--url", svc.url, "--api-key", svc.api_key], terminal_width=200)
    assert result.exit_code == 0, result.output
    return result.stdout


def call(svc: Service, method: str, path: str, body: Any) -> Any:
    headers = {"Authorization": f"Bearer {svc.api_key}", "Content-Type": "application/json"}
    resp = http(method, svc.url + path, orjson.dumps(body), headers)
    assert resp.status in (200, 201), (path, resp.status, resp.body)
    return resp.body


def arrangement(svc: Service, experiment: str) -> None:
    """A registered experiment with an analysis plan (burn-in 2) and 3,000 events."""
    config = TrafficConfig(experiment_id=experiment, seed=13, installs=60)
    registration = {
        "experiment_id": experiment,
        "engines": [engine for engine, _ in config.engines],
        "arms": dict(config.arms),
        "salt": config.salt,
        "start": (datetime.now(UTC).date() - timedelta(days=30)).isoformat(),
    }
    call(svc, "POST", "/v1/experiments", registration)
    plan = {"experiment_id": experiment, "primary": [{"quantity": "delta", "arm": "swap_1_2", "rank": 1}]}
    call(svc, "PUT", f"/v1/experiments/{experiment}/plan", {**plan, "burn_in_days": 2})
    post_study(svc, config, 3000, batch=300)
    now = datetime.now(UTC)
    profiles = [
        {"type": "install_profile", "schema_version": 1, "event_id": str(uuid.uuid4()),
         "sent_at": now.isoformat(), "install_id": f"panel-{experiment}-{i}",
         "install_day": now.date().isoformat(), "extension_version": "0.3.0", "experiment_id": experiment,
         "consent": "given", "age_band": "25-34"}
        for i in range(3)
    ]  # fmt: skip
    assert svc.post(profiles).status == 202
    stored = f"SELECT count() FROM install_profiles WHERE experiment_id = '{experiment}'"
    wait_for(lambda: svc.scalar(stored) == 3, 60, "the onboarding answers stored")


def autocomplete(svc: Service, study: str) -> str:
    """Six rounds of four roots with a shock in round 4: churn, nmi and a shock alert."""
    config = CrawlConfig(
        roots=CrawlConfig.roots[:4], drift=0.05, shock_rounds=frozenset({4}), seed=11, study=study
    )
    sim = AutocompleteSimulation(config)
    for r in range(ROUNDS):
        assert svc.post(list(sim.crawl_round(r))).status == 202
    analysed = f"SELECT count() FROM autocomplete_crawls WHERE startsWith(crawl_id, '{study}-')"
    wait_for(lambda: svc.scalar(analysed) == ROUNDS * 4, 120, "every crawl analysed")
    shock = (
        f"SELECT count() FROM alerts WHERE kind = 'autocomplete_shock' AND subject LIKE 'google/{study}-%'"
    )
    wait_for(lambda: svc.scalar(shock) == 1, 60, "the shock alert")
    return f"{study}-"


def personalization(svc: Service, study: str) -> None:
    """Six lock-step rounds of a control, its twin and a treatment, each round complete."""
    rng = random.Random(5)
    profiles = (("ctl", "control", ""), ("twin", "control_twin", ""), ("in", "treatment", "logged_in"))
    start = datetime.now(UTC)
    events = []
    for r, (k, (profile_id, role, treatment)) in itertools.product(range(ROUNDS), enumerate(profiles)):
        base = [f"https://site{i}.example/{r % 2}" for i in range(10)]
        p = 0.08 if role != "treatment" else 0.3
        urls = [f"https://other.example/{rng.random()}" if rng.random() < p else u for u in base]
        sent = start + timedelta(seconds=r, milliseconds=5 * k)
        events.append(
            {
                "type": "serp_snapshot", "schema_version": 1, "event_id": str(uuid.uuid4()),
                "sent_at": sent.isoformat(timespec="milliseconds"), "study_id": study,
                "round_id": f"{study}-r{r:04d}", "profile_id": profile_id, "role": role,
                "treatment": treatment, "engine": "google", "query": f"export query {r % 2}",
                "query_category": "news", "result_estimate": 1000, "status": "ok", "coverage": 0.9,
                "results": [{"rank": i + 1, "type": "organic", "url": u} for i, u in enumerate(urls)],
            }
        )  # fmt: skip
    assert svc.post(events).status == 202
    rounds = f"SELECT countIf(state = 'complete') FROM personalization_rounds WHERE study_id = '{study}'"
    wait_for(lambda: svc.scalar(rounds) == ROUNDS, 60, "every round compared")


def reports(svc: Service, experiment: str, prefix: str, study: str) -> dict[str, Any]:
    """Each report as printed (its tables) and as JSON."""
    commands = {
        "experiment": ("experiment", experiment),
        "sequential": ("experiment", experiment, "--intervals", "sequential"),
        "autocomplete": ("autocomplete", "--study", prefix),
        "personalization": ("personalization", "--study", study),
    }
    out: dict[str, Any] = {}
    for name, args in commands.items():
        out[f"{name} (printed)"] = re.sub(r"logged at [^\n]+ UTC", "logged at", run(svc, "report", *args))
        out[name] = orjson.loads(run(svc, "report", *args, "--format", "json"))
    assert out["sequential"]["plan"].pop("logged_at")  # a departure from the plan, logged as it ran
    return out


def same(a: Any, b: Any) -> bool:
    """Equal, floats to 1e-12 relative: ClickHouse sums floats in the order of the rows'
    parts, and the rows imported lie in other parts than the rows posted live (the Spearman
    correlations of report autocomplete differ in the 15th digit; printed, they are equal)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == pytest.approx(b, rel=1e-12, abs=1e-15)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def export(svc: Service, kind: str, study: str, out: Path, *formats: str) -> dict[str, Any]:
    run(svc, "export", kind, study, "--out", str(out), "--page-rows", "700", *formats)
    manifest: dict[str, Any] = orjson.loads((out / "manifest.json").read_bytes())
    for table in manifest["tables"]:  # every row of every table, over pages of 700
        assert table["written"] == table["rows"] and table["refused"] == 0, table["name"]
        assert (out / table["file"]).is_file()
    datasheet = (out / "README.md").read_text()
    for table in manifest["tables"]:
        assert (
            f"### `{table['name']}`" in datasheet
            and f"`{table['file']}`: {table['written']:,} rows" in datasheet
        )
    return manifest


def test_an_export_imported_into_an_empty_service_reports_the_same(service: Service, tmp_path: Path) -> None:
    tag = uuid.uuid4().hex[:8]
    experiment, crawls, study = f"exp-{tag}", f"ac-{tag}", f"pers-{tag}"
    arrangement(service, experiment)
    prefix = autocomplete(service, crawls)
    personalization(service, study)
    before = reports(service, experiment, prefix, study)

    out = tmp_path / "exports"
    made = {
        "arrangement": export(service, "arrangement", experiment, out / "a", "--events-format", "parquet",
                              "--tables-format", "csv"),
        "autocomplete": export(service, "autocomplete", prefix, out / "ac"),
        "personalization": export(service, "personalization", study, out / "p"),
    }  # fmt: skip
    assert made["arrangement"]["registration"]["salt"] == TrafficConfig.salt
    assert made["arrangement"]["plan"]["plan"]["burn_in_days"] == 2
    assert "Analysis plan version 1" in (out / "a" / "README.md").read_text()
    assert [t["written"] for t in made["arrangement"]["tables"] if t["events"]] == [3000, 3]
    assert (
        sum(t["written"] for t in made["autocomplete"]["tables"] if t["name"] == "autocomplete_shocks") == 1
    )
    events = [out / k / t["file"] for k, m in zip(("a", "ac", "p"), made.values(), strict=True)
              for t in m["tables"] if t["events"]]  # fmt: skip
    snapshot = next(read_events(out / "p" / "events" / "serp.jsonl.gz"))
    assert snapshot["study_id"] == study and snapshot["received_at"][10] == " "

    with own_service(
        tmp_path / "fresh", service.api_key, {"AUDITSTREAM_PERSONALIZATION_ROUND_WAIT_S": "4"}
    ) as fresh:
        registration = orjson.loads((out / "a" / "registration" / "experiment.json").read_bytes())
        call(fresh, "POST", "/v1/experiments", registration)
        plan = orjson.loads((out / "a" / "registration" / "plan.json").read_bytes())
        call(fresh, "PUT", f"/v1/experiments/{experiment}/plan", plan)
        summary = run(fresh, "import", *map(str, events))
        assert "valid events" in summary
        after = reports(fresh, experiment, prefix, study)
    for name in before:
        assert same(after[name], before[name]), name
