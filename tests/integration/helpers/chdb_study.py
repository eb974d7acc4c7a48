"""What the fresh-chDB scripts (``hourly_chdb``, ``looks_chdb``) share: a seeded study
stored raw and recomputed as a bulk import does, and their ``main`` (chDB allows one
session per process, so each runs as ``python -m`` and prints its findings as JSON)."""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from core.store.chdb_store import ChdbStore
from streams.bulk_import import BulkImporter, Span


async def store_study(
    store: ChdbStore,
    config: TrafficConfig,
    start: datetime,
    days: int,
    events: int,
    engines: Sequence[str] = ("google",),
) -> None:
    """``events`` of the traffic received evenly over ``days`` from ``start``, stored raw,
    then every day and the study-wide rows recomputed per engine as an import does."""
    lines = []
    for i, event in enumerate(itertools.islice(ExtensionTraffic(config).events(), events)):
        moment = start + timedelta(seconds=i * days * 86400 // events)
        event["received_at"] = moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        lines.append(orjson.dumps(event))
    await store.insert_json_rows("raw_extension_events", b"\n".join(lines))
    importer = BulkImporter(store)
    first_day = int(start.timestamp()) // 86400 * 86400
    for engine in engines:
        for day in range(days + 1):
            await importer.recompute_day(Span(config.experiment_id, engine, first_day + day * 86400))
        await importer.recompute_installs(config.experiment_id, engine)


def print_run(run: Callable[[Path, int], Awaitable[dict[str, Any]]], default_events: int) -> None:
    """``run`` on a fresh chDB in a temporary folder (events: the first argument), printed."""
    events = int(sys.argv[1]) if len(sys.argv) > 1 else default_events
    with tempfile.TemporaryDirectory() as path:
        print(json.dumps(asyncio.run(run(Path(path) / "chdb", events))))
