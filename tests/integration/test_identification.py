"""An engine whose pages stop being identified raises one alert; a healthy engine raises none."""

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
            "SELECT subject, summary FROM alerts "
            f"WHERE kind = 'identification_spike' AND subject = '{subject}'"
        )

    found = wait_for(lambda: alerts("ecosia"), 30, "the identification alert")
    assert len(found) == 1 and "ecosia" in found[0]["summary"]
    # Let the detector run twice more (every 2 s here): still one alert, none for qwant.
    runs = 'auditstream_periodic_checks_total{check="check_identification",outcome="ok"}'
    before = worker_metrics(service)[runs]
    wait_for(lambda: worker_metrics(service)[runs] >= before + 2, 30, "two more identification checks")
    assert len(alerts("ecosia")) == 1 and alerts("qwant") == []
