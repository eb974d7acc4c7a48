"""Ingest events/s through POST /v1/events in batches of 100, against raw aiokafka sends.

Run from a checkout: ``.venv/bin/python -m bench.ingest_throughput``. Two baselines, both
measured in the same run on the same tansu broker, so the ratios are what matter: aiokafka's
per-message ``send`` and its batch API (what ingest's producer uses) (``create_batch`` /
``send_batch``: one batch per request and partition, the events keyed by install as ingest
keys them), the cheapest way a Python producer can hand the same events to the broker.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import orjson
from aiokafka import AIOKafkaProducer
from aiokafka.partitioner import DefaultPartitioner

from bench.common import cpu_seconds, cpu_us_per_event
from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from ingest.api_keys import KeyFile
from schemas.topics import all_topics
from schemas.wire import format_received_at
from supervisor.broker import TansuBroker, free_port
from supervisor.children import wait_http


async def raw_send_rate(bootstrap: str, events: list[dict], topic: str) -> float:
    """Per-message aiokafka send with acks=all: the baseline ingest is compared to."""
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks="all", linger_ms=2, enable_idempotence=False
    )
    await producer.start()
    stamp = format_received_at(__import__("datetime").datetime.now(__import__("datetime").UTC))
    values = [(e["install_id"].encode(), orjson.dumps({**e, "received_at": stamp})) for e in events]
    started = time.perf_counter()
    futures = [await producer.send(topic, v, key=k) for k, v in values]
    await asyncio.gather(*futures)
    elapsed = time.perf_counter() - started
    await producer.stop()
    return len(values) / elapsed


async def raw_batch_rate(bootstrap: str, events: list[dict], topic: str, per_request: int = 100) -> float:
    """aiokafka's batch API with acks=all: each request's events grouped by the partition
    their install key hashes to (the default partitioner's murmur2, as ``send`` picks it),
    one ``send_batch`` per group."""
    import datetime as dt

    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks="all", enable_idempotence=False, max_batch_size=1 << 20
    )
    await producer.start()
    partitions = sorted(await producer.partitions_for(topic))
    stamp = format_received_at(dt.datetime.now(dt.UTC))
    values = [(e["install_id"].encode(), orjson.dumps({**e, "received_at": stamp})) for e in events]
    partitioner = DefaultPartitioner()
    started = time.perf_counter()
    futures = []
    for i in range(0, len(values), per_request):
        groups: dict[int, list[tuple[bytes, bytes]]] = {}
        for key, value in values[i : i + per_request]:
            groups.setdefault(partitioner(key, partitions, partitions), []).append((key, value))
        for partition, rows in groups.items():
            batch = producer.create_batch()
            for key, value in rows:
                if batch.append(key=key, value=value, timestamp=None) is None:  # full: send it, go on
                    futures.append(await producer.send_batch(batch, topic, partition=partition))
                    batch = producer.create_batch()
                    batch.append(key=key, value=value, timestamp=None)
            futures.append(await producer.send_batch(batch, topic, partition=partition))
    await asyncio.gather(*futures)
    elapsed = time.perf_counter() - started
    await producer.stop()
    return len(values) / elapsed


async def ingest_rate(url: str, key: str, bodies: list[bytes], per_body: int, concurrency: int) -> float:
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    queue: asyncio.Queue[bytes | None] = asyncio.Queue()
    for b in bodies:
        queue.put_nowait(b)
    for _ in range(concurrency):
        queue.put_nowait(None)
    failures = backpressure = 0

    async def worker(session: aiohttp.ClientSession) -> None:
        nonlocal failures, backpressure
        while (body := await queue.get()) is not None:
            for _ in range(BACKPRESSURE_TRIES):
                async with session.post(url + "/v1/events", data=body, headers=headers) as resp:
                    answer = await resp.read()
                    wait = resp.headers.get("Retry-After")
                if resp.status != 503 or b'"storage_behind"' not in answer:
                    break
                # the store is behind (a run longer than ingest's replay bound): retry when
                # told, as a client does; the run then measures what the store can take
                backpressure += 1
                await asyncio.sleep(float(wait or 1))  # wait-ok: the service's Retry-After
            if resp.status != 202:
                failures += 1
                if failures < 3:
                    print(resp.status, answer[:300])

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        started = time.perf_counter()
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    if backpressure:
        print(f"  {backpressure} requests waited for the store (503 storage_behind)", file=sys.stderr)
    if failures:
        raise RuntimeError(f"{failures} requests were not accepted")
    return len(bodies) * per_body / elapsed


BACKPRESSURE_TRIES = 600


WRK_SCRIPT = """
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer %(key)s"
local bodies = {}
local f = io.open("%(bodies)s", "r")
for line in f:lines() do bodies[#bodies + 1] = line end
f:close()
local i = 0
request = function()
  i = i %% #bodies + 1
  return wrk.format(nil, nil, nil, bodies[i])
end
done = function(summary, latency, requests)
  io.write(string.format("WRK %%d %%d %%d\\n", summary.requests, summary.duration,
    summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write))
end
"""


def wrk_rate(url: str, key: str, bodies: list[bytes], per_body: int, tmp: Path, seconds: int = 15) -> float:
    """Ingest rate with wrk (C) as the client, which leaves more CPU to ingest than Python."""
    lines = tmp / "bodies.ndjson"
    lines.write_bytes(b"\n".join(bodies) + b"\n")
    script = tmp / "post.lua"
    script.write_text(WRK_SCRIPT % {"key": key, "bodies": lines})
    out = subprocess.run(
        ["wrk", "-t", "1", "-c", "32", "-d", f"{seconds}s", "-s", str(script), url + "/v1/events"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    requests, micros, errors = (int(x) for x in out.split("WRK ")[1].split()[:3])
    if errors:
        raise RuntimeError(f"wrk saw {errors} failed requests:\n{out}")
    return requests * per_body / (micros / 1e6)


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--processes", type=int, default=1, help="ingest processes (SO_REUSEPORT)")
    args = parser.parse_args()

    events = list(
        next(ExtensionTraffic(TrafficConfig(seed=1, installs=2000)).batches(args.events, args.events))
    )
    bodies = [orjson.dumps(events[i : i + 100]) for i in range(0, len(events), 100)]
    tmp = Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    broker = TansuBroker(free_port(), log_path=tmp / "broker.log")
    asyncio.run(broker.start_and_wait(all_topics("auditstream"), 6))
    _, key = KeyFile(tmp / "keys.json").create("bench", ("ingest",))
    port = free_port()
    env = {
        **os.environ,
        "AUDITSTREAM_RATE_LIMIT_RPS": "1e9",
        "AUDITSTREAM_RATE_LIMIT_BURST": "1000000000",
        # no worker here: without this, intake refuses (storage_behind) once a run passes 60 s
        "AUDITSTREAM_UNSTORED_LIMIT_S": "0",
    }
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "auditstream",
                "ingest",
                "--port",
                str(port),
                "--data-dir",
                str(tmp),
                "--kafka-bootstrap",
                broker.bootstrap,
                "--log-level",
                "WARNING",
            ],
            env=env,
            stderr=open(tmp / "ingest.log", "wb"),  # noqa: SIM115
        )
        for _ in range(args.processes)
    ]
    url = f"http://127.0.0.1:{port}"
    try:
        asyncio.run(wait_http(url + "/readyz", 30))
        baseline = asyncio.run(raw_send_rate(broker.bootstrap, events[:100_000], "auditstream.extension"))
        batched = asyncio.run(raw_batch_rate(broker.bootstrap, events[:100_000], "auditstream.extension"))
        before = {str(p.pid): cpu_seconds(p.pid) for p in procs}
        rate = asyncio.run(ingest_rate(url, key, bodies, 100, args.concurrency))
        cpu = sum(cpu_us_per_event({str(p.pid): p.pid for p in procs}, before, len(events)).values())
        wrk = wrk_rate(url, key, bodies, 100, tmp) if shutil.which("wrk") else None
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait()
        asyncio.run(broker.stop())
    result = {
        "bench": "ingest",
        "ingest_events_per_s": round(rate),
        "raw_aiokafka_send_events_per_s": round(baseline),
        "ratio": round(rate / baseline, 3),
        "raw_aiokafka_batch_events_per_s": round(batched),
        "ratio_to_batch_api": round(rate / batched, 3),
        "ingest_processes": args.processes,
        "ingest_cpu_us_per_event": round(cpu, 1),
    }
    if wrk is not None:
        result["ingest_events_per_s_wrk_client"] = round(wrk)
        result["ratio_wrk_client"] = round(wrk / baseline, 3)
        result["ratio_wrk_client_to_batch_api"] = round(wrk / batched, 3)
    print(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode())
    return result


if __name__ == "__main__":
    main()
