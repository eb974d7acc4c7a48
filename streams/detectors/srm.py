"""Sample-ratio mismatch per experiment and engine, as an alert record."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from analytics.stats.srm import srm_test
from streams.detectors.alerts import alert_record


def srm_alert(
    experiment_id: str,
    engine: str,
    units_by_arm: Mapping[str, int],
    weights: Mapping[str, float],
    now: datetime,
) -> dict[str, Any] | None:
    """An ``alerts`` row when the units per arm contradict the allocation (p < 0.001).

    The alert id depends only on the experiment and engine, so the same mismatch
    is reported once however often it is re-checked.
    """
    result = srm_test(units_by_arm, weights)
    if not result.mismatch:
        return None
    subject = f"{experiment_id}/{engine}"
    total_w = sum(weights.values())
    return alert_record(
        "srm",
        "critical",
        subject,
        f"sample ratio mismatch in {experiment_id} on {engine}: chi2={result.chi2:.1f}, "
        f"p={result.p_value:.2g} over {result.units} units",
        {
            "units": dict(units_by_arm),
            "expected_share": {a: w / total_w for a, w in weights.items()},
            "chi2": result.chi2,
            "p_value": result.p_value,
        },
        now,
    )
