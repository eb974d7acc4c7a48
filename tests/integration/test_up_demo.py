"""Done-means 1: the main job starts, serves, runs its demo load, and stops cleanly."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from supervisor.broker import port_open
from tests.helpers import Service, free_port, http, start_up, wait_for

pytestmark = pytest.mark.integration


def test_up_demo_serves_and_stops_cleanly(tmp_path: Path) -> None:
    port = free_port()
    svc: Service = start_up(
        tmp_path / "data",
        port,
        "demo-key-0123456789-padded-to-35-chars",
        "--demo",
        "--demo-events",
        "3000",
        "--demo-rate",
        "3000",
    )
    wait_for(
        lambda: (
            svc.scalar("SELECT sum(units) + sum(impressions) FROM clicks_by_rank_1m WHERE original_rank = 1")
            == svc.scalar("SELECT countIf(page_index = 0) FROM extension_events")  # first pages count
            and svc.scalar("SELECT count() FROM extension_events") == 3000
        ),
        90,
        "the demo load in the aggregate",
    )
    assert svc.scalar("SELECT count() FROM extension_events") == 3000
    # The demo also runs an autocomplete study (12 rounds of 8 roots, a shock in round 8)
    # and a personalization study (200 rounds), before the extension traffic.
    wait_for(lambda: svc.scalar("SELECT count() FROM autocomplete_crawls") == 96, 60, "the demo crawls")
    wait_for(
        lambda: svc.scalar("SELECT count() FROM alerts WHERE kind = 'autocomplete_shock'") == 1,
        90,
        "the shock",
    )
    assert (
        svc.scalar("SELECT subject FROM alerts WHERE kind = 'autocomplete_shock'")
        == "google/demo-ac-google-r0008"
    )
    wait_for(
        lambda: svc.scalar("SELECT countIf(state = 'complete') FROM personalization_rounds") == 200,
        60,
        "the demo personalization rounds",
    )
    # the demo experiment is registered, so the board's SRM panel has an allocation to test
    assert svc.scalar("SELECT count() FROM experiments WHERE experiment_id = 'demo'") == 1
    assert http("GET", svc.url + "/metrics").status == 401  # its counts per key are for a metrics key
    assert http("GET", svc.url + "/metrics", headers={"Authorization": f"Bearer {svc.api_key}"}).status == 200
    worker_metrics = (tmp_path / "data" / "run" / "worker-0.metrics").read_text().strip()
    text = http("GET", worker_metrics).body
    assert "auditstream_sink_rows_total" in text and 'outcome="inserted"' in text
    broker_pid = svc.pid("broker")
    assert svc.process is not None
    svc.process.send_signal(signal.SIGINT)
    assert svc.process.wait(timeout=90) == 0
    assert not port_open("127.0.0.1", port)
    assert (
        not Path(f"/proc/{broker_pid}").exists() or "zombie" in Path(f"/proc/{broker_pid}/status").read_text()
    )
    assert not list((tmp_path / "data" / "run").glob("*.pid"))


def test_two_ingest_processes_share_the_port_and_their_metrics(tmp_path: Path) -> None:
    from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig

    svc = start_up(
        tmp_path / "data", free_port(), "multi-key-0123456789-padded-to-35-chars", "--ingest-processes", "2"
    )
    try:
        assert (tmp_path / "data" / "run" / "ingest-1.pid").exists()
        batches = ExtensionTraffic(TrafficConfig(experiment_id="multi", seed=4)).batches(50, 1000)
        for batch in batches:
            assert svc.post(batch).status == 202
        # Whichever process answers /metrics, it reports the sum over both.
        for _ in range(4):
            assert svc.metric("auditstream_ingest_events_accepted_total") == 1000
        wait_for(
            lambda: svc.scalar("SELECT count() FROM extension_events WHERE experiment_id='multi'") == 1000,
            60,
            "all events stored",
        )
    finally:
        assert svc.process is not None
        svc.process.send_signal(signal.SIGINT)
        assert svc.process.wait(timeout=90) == 0
