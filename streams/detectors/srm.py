"""Sample-ratio mismatch per experiment and engine, as an alert record."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from analytics.stats.srm import srm_test
from core.store import Store, StoreError, StoreUnavailable
from schemas.experiments import ExperimentConfig
from schemas.sql import quote
from streams.detectors.alerts import AlertService, alert_record

log = logging.getLogger(__name__)


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


class SrmCheck:
    """Re-tests the allocation of every experiment touched since the last check.

    Runs on a timer (streams.app), not per batch, so a burst of batches costs one check
    and the last batch of a burst is always checked. ``due`` is told which experiments the
    per-install statistics just covered.
    """

    def __init__(self, store: Store, alerts: AlertService) -> None:
        self.store = store
        self.alerts = alerts
        self.pending: set[str] = set()

    def due(self, experiments: set[str]) -> None:
        self.pending.update(experiments)

    async def check_srm(self) -> None:
        due, self.pending = sorted(self.pending), set()
        if not due:
            return
        try:
            await self._check(due)
        except (StoreError, StoreUnavailable) as exc:
            self.pending.update(due)  # try again on the next tick
            # the store restarting is expected and retried: one line; a refused statement is not
            log.warning(
                "SRM check failed; retrying on the next tick (%s)",
                exc,
                exc_info=not isinstance(exc, StoreUnavailable),
            )

    async def _check(self, due: list[str]) -> None:
        listed = ", ".join(quote(e) for e in due)
        configs = await self.store.query(
            f"SELECT experiment_id, config, burn_in_days FROM experiments "
            f"WHERE experiment_id IN ({listed}) AND status = 'running'"
        )
        for experiment_id, config_json, burn_in in configs.rows:
            try:
                config = ExperimentConfig.model_validate_json(config_json)
            except ValidationError:  # written around the service: not ours to judge; skip it
                log.warning("experiment %s: its stored config does not validate; no SRM check", experiment_id)
                continue
            # study-wide rows keep burn-ins up to 7 days; longer ones read the slices
            source = "arrangement_install" if int(burn_in) <= 7 else "arrangement_install_day"
            units = await self.store.query(
                f"SELECT engine, arm, sum(units) FROM {source} "
                f"WHERE experiment_id = {quote(experiment_id)} AND identified = 1 "
                f"AND install_age_days >= {int(burn_in)} GROUP BY engine, arm"
            )
            by_engine: dict[str, dict[str, int]] = {}
            for engine, arm, n in units.rows:
                by_engine.setdefault(engine, {})[arm] = int(n)
            for engine, counts in by_engine.items():
                # each engine against the arms it runs (engine_arms), so an arm it does not
                # run has no expected share and any unit in it is a mismatch
                alert = srm_alert(experiment_id, engine, counts, config.arms_on(engine), datetime.now(UTC))
                if alert is not None:
                    await self.alerts.raise_once(alert)
