"""No GET route writes to the store: every table's rows are the same before and after every
GET route of the service was called over a study (tests/integration/helpers/get_routes_chdb.py)."""

from __future__ import annotations

import pytest

from tests.helpers import run_own_process

pytestmark = pytest.mark.integration


def test_no_get_route_writes_to_the_store() -> None:
    out = run_own_process("tests.integration.helpers.get_routes_chdb", "6000")
    answered = out["answered"]
    # every GET route was called, and the study's panels answered with data
    assert len(out["routes"]) >= 12 and out["tables"] >= 25
    assert answered["/v1/board/experiments/get-only?intervals=sequential"] == 200
    assert answered["/v1/board/experiments/get-only?correction=bh&variance_reduction=1"] == 200
    assert answered["/v1/board/index"] == 200 and answered["/v1/openapi.json"] == 200
    assert answered["/v1/board/figures/personalization/figure5_by_rank?study=none"] == 200
    assert answered["/v1/export/arrangement?study=get-only"] == 200
    assert answered["/v1/export/arrangement/arrangement_install?study=get-only&limit=50"] == 200
    assert out["writes"] == [] and out["changed"] == []
    # the looks the reads did not store, the worker's step does, once
    assert out["kept"] == [1, 0] and out["looks"] > 0
