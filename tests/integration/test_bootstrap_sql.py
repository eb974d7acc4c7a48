"""The bootstrap weights computed in ClickHouse equal the Python reference."""

from __future__ import annotations

import pytest

from analytics.stats.bootstrap import poisson1, unit_uniform, weight_sql
from tests.helpers import Service

pytestmark = pytest.mark.integration


def test_sql_weights_equal_python_weights(service: Service) -> None:
    installs = [f"install-{i:04d}" for i in range(50)]
    listed = ", ".join(f"'{i}'" for i in installs)
    rows = service.sql(
        f"SELECT install, b, {weight_sql('install', 'b', seed=42)} AS w "
        f"FROM (SELECT arrayJoin([{listed}]) AS install) "
        "ARRAY JOIN range(40) AS b"
    )
    assert len(rows) == 50 * 40
    for row in rows:
        assert row["w"] == poisson1(unit_uniform(row["install"], row["b"], seed=42)), row
    assert {row["w"] for row in rows} >= {0, 1, 2, 3}
