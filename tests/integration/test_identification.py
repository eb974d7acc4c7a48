"""An engine whose pages stop being identified raises one alert an hour; a healthy engine raises none."""

from __future__ import annotations

import pytest

from collectors.simulate.extension_traffic import TrafficConfig
from tests.helpers import Service, post_study, wait_for, worker_metrics

pytestmark = pytest.mark.integration


def test_identification_spike_raises_one_alert(service: Service) -> None:
    broken = TrafficConfig(
        experiment_id="ident", seed=12, installs=60, engines=(("ecosia", 1.0),), p_unidentified=0.5
    )
    healthy = TrafficConfig(experiment_id="ident-ok", seed=13, installs=60, engines=(("qwant", 1.0),))
    post_study(service, broken, 1_000)
    post_study(service, healthy, 1_000)

    def alerts(subject: str) -> list[dict]:
        return service.sql(
            "SELECT toStartOfHour(created_at) AS hour, count() AS n, any(summary) AS summary FROM alerts "
            f"WHERE kind = 'identification_spike' AND subject = '{subject}' GROUP BY hour"
        )

    # A lasting failure is reported once per clock hour (the alert id holds the hour), so a
    # run that crosses an hour's end rightly finds two: each hour must hold exactly one.
    found = wait_for(lambda: alerts("ecosia"), 30, "the identification alert")
    assert all(int(row["n"]) == 1 and "ecosia" in row["summary"] for row in found)
    # Let the detector run twice more (every 2 s here): still one alert per hour, none for qwant.
    runs = 'auditstream_periodic_checks_total{check="check_identification",outcome="ok"}'
    before = worker_metrics(service)[runs]
    wait_for(lambda: worker_metrics(service)[runs] >= before + 2, 30, "two more identification checks")
    again = alerts("ecosia")
    assert 1 <= len(again) <= 2 and all(int(row["n"]) == 1 for row in again)
    assert alerts("qwant") == []
