"""Paths and helpers shared by the deployment tests."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
MIGRATIONS = ROOT / "schemas" / "clickhouse" / "migrations"
VIEWS = ROOT / "schemas" / "clickhouse" / "views"
DASHBOARDS = DEPLOY / "grafana" / "dashboards"
K8S = DEPLOY / "k8s"
COMPOSE = DEPLOY / "docker-compose.yml"
RULES = DEPLOY / "prometheus" / "rules.yml"
RULES_TEST = DEPLOY / "prometheus" / "rules_test.yml"
PROMETHEUS_CONFIG = DEPLOY / "prometheus" / "prometheus.yml"
METRICS_DOC = ROOT / "docs" / "metrics.md"

# Views the dashboards may use before a migration creates them (the lead adds them).
NOT_YET_MIGRATED = {"personalization_by_rank"}


def tool(name: str) -> str:
    """Path of a system tool. CI installs them (.ci/run), so a missing one is a failure."""
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed; .ci/run installs it (apt-get install prometheus haproxy)")
    return path


def run(
    args: list[str],
    cwd: Path | None = None,
    timeout: float = 120,
    stdin_text: str | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, input=stdin_text, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def python_module(module: str) -> list[str]:
    """Command prefix running a module with the interpreter of this test run (the venv)."""
    return [sys.executable, "-m", module]


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def load_yaml_all(path: Path) -> list[Any]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def migration_objects() -> set[str]:
    """Names of every table the migrations create and every view (plus the migration ledger)."""
    names = {"schema_migrations"}
    pattern = re.compile(
        r"CREATE\s+(?:OR\s+REPLACE\s+)?(?:TABLE|(?:MATERIALIZED\s+)?VIEW|DICTIONARY)\s+"
        r"(?:IF\s+NOT\s+EXISTS\s+)?`?(\w+)`?",
        re.IGNORECASE,
    )
    for sql in [*sorted(MIGRATIONS.glob("*.sql")), *sorted(VIEWS.glob("*.sql"))]:
        names.update(pattern.findall(sql.read_text()))
    return names


def compose() -> dict[str, Any]:
    doc = load_yaml(COMPOSE)
    assert isinstance(doc, dict)
    return doc
