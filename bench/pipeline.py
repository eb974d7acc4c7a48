"""End-to-end benchmark: ingest, sustained end-to-end rate, freshness and memory.

Run from a checkout: ``.venv/bin/python -m bench.pipeline [--events 1000000]``.
Every figure is printed next to a baseline measured in the same run on the same
machine (raw aiokafka sends to the same broker kind; raw chDB inserts of the same
rows), and a JSON line with the git sha is appended to ``bench/results.jsonl``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import aiohttp
import orjson

from bench.common import MemorySampler, append_result, cpu_seconds, cpu_us_per_event, percentile
from bench.ingest_throughput import ingest_rate, raw_send_rate
from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from core.store.chdb_store import ChdbStore
from schemas.migrate import migrate
from schemas.topics import all_topics
from schemas.wire import format_received_at
from supervisor.broker import TansuBroker, free_port
from supervisor.children import wait_http

KEY = "bench-key-0123456789-padded-to-35-chars"


def make_bodies(n: int, experiment: str, seed: int) -> tuple[list[bytes], list[dict]]:
    traffic = ExtensionTraffic(TrafficConfig(experiment_id=experiment, seed=seed, installs=5000))
    bodies: list[bytes] = []
    sample: list[dict] = []
    for batch in traffic.batches(100, n):
        bodies.append(orjson.dumps(batch))
        if len(sample) < 200_000:
            sample.extend(batch)
    return bodies, sample


async def sql(session: aiohttp.ClientSession, url: str, statement: str) -> list[list]:
    async with session.post(
        url + "/v1/sql", json={"sql": statement}, headers={"Authorization": f"Bearer {KEY}"}
    ) as resp:
        doc = await resp.json()
        if resp.status != 200:
            raise RuntimeError(doc)
        return doc["rows"]


async def visible(
    session: aiohttp.ClientSession, url: str, experiment: str, table: str = "clicks_by_rank_1m"
) -> int:
    rank_1 = " AND original_rank = 1" if table == "clicks_by_rank_1m" else ""
    rows = await sql(
        session,
        url,
        f"SELECT sum(units) + sum(impressions) FROM {table} WHERE experiment_id = '{experiment}'{rank_1}",
    )
    return int(rows[0][0] or 0)


async def sustained(
    url: str, bodies: list[bytes], total: int, estimators: bool = True
) -> tuple[float, float]:
    """Post everything as fast as ingest takes it; return (ingest rate, end-to-end rate).

    The end is when every event is in the minute aggregate and, with the estimator
    statistics on, in the per-install day rows too (they are recomputed after it).
    """
    started = time.perf_counter()
    posting = asyncio.create_task(ingest_rate(url, KEY, bodies, 100, 16))
    tables = ["clicks_by_rank_1m"] + (["arrangement_install_day"] if estimators else [])
    async with aiohttp.ClientSession() as session:
        ingest = await posting
        for table in tables:
            while await visible(session, url, "bench", table) < total:
                await asyncio.sleep(0.1)
    return ingest, total / (time.perf_counter() - started)


async def freshness(url: str, rate: float, seconds: float) -> list[float]:
    """Background load at ``rate`` events/s; probes measure post → visible in the aggregate."""
    bodies, _ = make_bodies(int(rate * seconds) + 100, "fresh-load", seed=99)
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    probe_template = next(e for e in ExtensionTraffic(TrafficConfig(seed=7)).events() if e["type"] == "click")
    latencies: list[float] = []

    async with aiohttp.ClientSession() as session:

        async def load() -> None:
            start = time.perf_counter()
            for i, body in enumerate(bodies):
                ahead = i * 100 / rate - (time.perf_counter() - start)
                if ahead > 0:
                    await asyncio.sleep(ahead)
                async with session.post(url + "/v1/events", data=body, headers=headers) as r:
                    await r.read()

        async def probe(i: int) -> None:
            exp = f"fresh-{int(rate)}-{i}"
            event = {
                **probe_template,
                "experiment_id": exp,
                "event_id": str(uuid.uuid4()),
                "sent_at": dt.datetime.now(dt.UTC).isoformat(),
            }
            t0 = time.perf_counter()
            async with session.post(url + "/v1/events", data=orjson.dumps([event]), headers=headers) as r:
                assert r.status == 202, await r.text()
            while await visible(session, url, exp) < 1:
                await asyncio.sleep(0.05)  # poll resolution: 50 ms
            latencies.append(time.perf_counter() - t0)

        loader = asyncio.create_task(load())
        i = 0
        while not loader.done():  # one probe at a time, so probing adds little load
            await probe(i)
            i += 1
            await asyncio.sleep(0.2)
        await loader
    return latencies


async def chdb_insert_rate(rows: list[dict], tmp: Path) -> float:
    """Baseline: the same rows inserted straight into chDB in batches of 2000."""
    store = ChdbStore(tmp / "baseline-ch")
    await migrate(store)
    stamp = format_received_at(dt.datetime.now(dt.UTC))
    lines = [orjson.dumps({**r, "received_at": stamp}) for r in rows]
    started = time.perf_counter()
    for i in range(0, len(lines), 2000):
        await store.insert_json_rows("raw_extension_events", b"\n".join(lines[i : i + 2000]))
    rate = len(lines) / (time.perf_counter() - started)
    await store.close()
    return rate


def start_service(
    tmp: Path, port: int, ingest_processes: int, estimators: bool = True
) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "AUDITSTREAM_ESTIMATORS": "true" if estimators else "false",
        "AUDITSTREAM_RATE_LIMIT_RPS": "1e9",
        "AUDITSTREAM_RATE_LIMIT_BURST": "1000000000",
        "AUDITSTREAM_INGEST_PROCESSES": str(ingest_processes),
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "auditstream",
            "up",
            "--data-dir",
            str(tmp / "data"),
            "--port",
            str(port),
            "--api-key",
            KEY,
        ],
        env=env,
        stdout=open(tmp / "up.log", "wb"),  # noqa: SIM115
        stderr=subprocess.STDOUT,
    )

    try:
        asyncio.run(wait_http(f"http://127.0.0.1:{port}/readyz", 120))
    except RuntimeError:
        raise RuntimeError(f"service did not start; see {tmp}/up.log") from None
    return proc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--freshness-seconds", type=float, default=30)
    parser.add_argument("--ingest-processes", type=int, default=1)
    parser.add_argument(
        "--skip-estimator-baseline",
        action="store_true",
        help="skip the second end-to-end run with the per-install estimator statistics off",
    )
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-pipeline-"))
    print(f"generating {args.events} events ...", file=sys.stderr)
    bodies, sample = make_bodies(args.events, "bench", seed=1)

    print("baselines: raw aiokafka sends, raw chDB inserts ...", file=sys.stderr)
    broker = TansuBroker(free_port())
    asyncio.run(broker.start_and_wait(all_topics("auditstream"), 6))
    try:
        kafka_baseline = asyncio.run(
            raw_send_rate(broker.bootstrap, sample[:100_000], "auditstream.extension")
        )
    finally:
        asyncio.run(broker.stop())
    chdb_baseline = asyncio.run(chdb_insert_rate(sample[:200_000], tmp))

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_service(tmp, port, args.ingest_processes)
    run = tmp / "data" / "run"
    pids = {p.stem: int(p.read_text()) for p in run.glob("*.pid")}
    pids["up"] = proc.pid  # the supervisor, and the store when it is served in process
    try:
        print(f"sustained: {args.events} events through the pipeline ...", file=sys.stderr)
        cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
        with MemorySampler(pids) as memory:
            ingest, e2e = asyncio.run(sustained(url, bodies, args.events))
        cpu = cpu_us_per_event(pids, cpu_before, args.events)
        fresh = {}
        for label, rate in (("half_target_4000", 4000.0), ("half_measured", e2e / 2)):
            print(f"freshness at {rate:.0f} events/s ...", file=sys.stderr)
            fresh[label] = (rate, asyncio.run(freshness(url, rate, args.freshness_seconds)))
    finally:
        proc.send_signal(2)
        proc.wait(timeout=120)

    e2e_without = None
    if not args.skip_estimator_baseline:
        print("end to end again, estimator statistics off ...", file=sys.stderr)
        port2 = free_port()
        tmp2 = tmp / "no-estimators"
        tmp2.mkdir()
        proc2 = start_service(tmp2, port2, args.ingest_processes, estimators=False)
        try:
            _, e2e_without = asyncio.run(
                sustained(f"http://127.0.0.1:{port2}", bodies, args.events, estimators=False)
            )
        finally:
            proc2.send_signal(2)
            proc2.wait(timeout=120)

    result = {
        "bench": "pipeline",
        "events": args.events,
        "ingest_processes": args.ingest_processes,
        "ingest_events_per_s": round(ingest),
        "baseline_raw_aiokafka_send_events_per_s": round(kafka_baseline),
        "ingest_ratio_to_baseline": round(ingest / kafka_baseline, 3),
        "end_to_end_events_per_s": round(e2e),
        "baseline_raw_chdb_insert_rows_per_s": round(chdb_baseline),
        "end_to_end_ratio_to_baseline": round(e2e / chdb_baseline, 3),
        "end_to_end_events_per_s_estimators_off": round(e2e_without) if e2e_without else None,
        "estimators_on_to_off_ratio": round(e2e / e2e_without, 3) if e2e_without else None,
        "freshness": {
            label: {
                "rate_events_per_s": round(rate),
                "p50_s": round(percentile(lat, 0.5), 3),
                "p95_s": round(percentile(lat, 0.95), 3),
                "probes": len(lat),
            }
            for label, (rate, lat) in fresh.items()
        },
        "cpu_us_per_event": cpu,
        "memory_mb": memory.summary(),
    }
    print(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode())
    append_result(Path(__file__).parent / "results.jsonl", result)


if __name__ == "__main__":
    main()
