"""The alert rules and the Prometheus config: promtool checks them and runs their unit tests."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.test_deploy.common import (
    COMPOSE,
    DEPLOY,
    PROMETHEUS_CONFIG,
    RULES,
    RULES_TEST,
    compose,
    load_yaml,
    run,
    tool,
)

# Every alert the issue asks for, by what it watches (docs/metrics.md).
REQUIRED_ALERTS = {
    "AuditstreamSRM",
    "AuditstreamIdentificationFailureSpike",
    "AuditstreamEngineVolumeDrop",
    "AuditstreamExperimentVolumeDrop",
    "AuditstreamCrawlerBlocked",
    "AuditstreamSerpLayoutUnknown",
    "AuditstreamAutocompleteShock",
    "AuditstreamConsumerLagHigh",
    "AuditstreamSinkErrors",
    "AuditstreamIngest5xx",
}


def alert_rules() -> list[dict[str, Any]]:
    doc = load_yaml(RULES)
    return [rule for group in doc["groups"] for rule in group["rules"] if "alert" in rule]


def test_promtool_check_rules() -> None:
    result = run([tool("promtool"), "check", "rules", str(RULES)])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_promtool_check_config_resolves_the_rule_files() -> None:
    result = run([tool("promtool"), "check", "config", str(PROMETHEUS_CONFIG)])
    assert result.returncode == 0, result.stdout + result.stderr
    config = load_yaml(PROMETHEUS_CONFIG)
    assert config["rule_files"] == ["rules.yml"]
    # promtool read the rule file through the config: the relative path resolved.
    assert re.search(r"Checking .*rules\.yml\s+SUCCESS: \d+ rules found", result.stdout), result.stdout


def test_promtool_rule_unit_tests_pass() -> None:
    result = run([tool("promtool"), "test", "rules", str(RULES_TEST)], cwd=RULES_TEST.parent, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_promtool_unit_tests_catch_a_broken_rule(tmp_path: Path) -> None:
    """The unit tests are not vacuous: counting a partition twice makes them fail."""
    broken = RULES.read_text().replace(
        "sum by (topic) (max by (topic, partition) (auditstream_consumer_lag_messages)) > 10000",
        "sum by (topic) (auditstream_consumer_lag_messages) > 10000",
    )
    assert broken != RULES.read_text()
    (tmp_path / "rules.yml").write_text(broken)
    suite = load_yaml(RULES_TEST)
    suite["tests"] = [case for case in suite["tests"] if "lag" in case["name"]]  # only the relevant cases
    assert suite["tests"]
    (tmp_path / "rules_test.yml").write_text(yaml.safe_dump(suite))
    result = run([tool("promtool"), "test", "rules", "rules_test.yml"], cwd=tmp_path, timeout=300)
    assert result.returncode != 0
    assert "AuditstreamConsumerLagHigh" in result.stdout + result.stderr


def test_every_required_alert_exists() -> None:
    names = {rule["alert"] for rule in alert_rules()}
    assert names >= REQUIRED_ALERTS, REQUIRED_ALERTS - names
    assert len(names) == len(alert_rules()), "duplicate alert names"


@pytest.mark.parametrize("rule", alert_rules(), ids=lambda r: r["alert"])
def test_alert_has_for_severity_audience_and_runbook(rule: dict[str, Any]) -> None:
    assert re.fullmatch(r"\d+[smh]", rule["for"]), rule["for"]
    assert rule["labels"]["severity"] in {"critical", "warning", "info"}
    assert rule["labels"]["audience"] in {"oncall", "operator"}
    notes = rule["annotations"]
    assert notes["summary"].strip() and notes["description"].strip()
    assert "deploy/README.md#runbooks" in notes["runbook"]


def test_every_alert_is_tested_firing_and_not_firing() -> None:
    tests = load_yaml(RULES_TEST)["tests"]
    firing: set[str] = set()
    silent: set[str] = set()
    for case in tests:
        for check in case.get("alert_rule_test", []):
            (firing if check.get("exp_alerts") else silent).add(check["alertname"])
    names = {rule["alert"] for rule in alert_rules()}
    assert names - firing == set(), f"no case where these fire: {names - firing}"
    assert names - silent == set(), f"no case where these stay silent: {names - silent}"


def test_every_alert_has_a_runbook_entry() -> None:
    readme = (DEPLOY / "README.md").read_text()
    section = readme.split("## Runbooks", 1)[1]
    for rule in alert_rules():
        assert f"`{rule['alert']}`" in section, f"deploy/README.md#runbooks lacks {rule['alert']}"


def test_jobs_in_rules_exist_in_the_scrape_config() -> None:
    jobs = {job["job_name"] for job in load_yaml(PROMETHEUS_CONFIG)["scrape_configs"]}
    used = set(re.findall(r'job="([^"]+)"', RULES.read_text()))
    used |= {
        j
        for pattern in re.findall(r'job=~"([^"]+)"', RULES.read_text())
        for j in jobs
        if re.fullmatch(pattern, j)
    }
    assert used, "the rules watch no job"
    assert used <= jobs, used - jobs


def test_compose_mounts_the_config_and_rules_beside_each_other() -> None:
    prometheus = compose()["services"]["prometheus"]
    mounts = {m.split(":")[0]: m.split(":")[1] for m in prometheus["volumes"] if m.startswith("./")}
    assert mounts["./prometheus/prometheus.yml"] == "/etc/prometheus/prometheus.yml"
    assert mounts["./prometheus/rules.yml"] == "/etc/prometheus/rules.yml"
    for source in mounts:
        assert (COMPOSE.parent / source).is_file(), source
