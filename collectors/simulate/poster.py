"""Post event batches to ingest at a steady rate, retrying what was not accepted.

A 503 or 429 answer means nothing of the request was reported accepted, so the
same batch (same event ids) is sent again; the pipeline drops any copies.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson


@dataclass
class PostStats:
    requests: int = 0
    accepted: int = 0
    rejected: int = 0
    retries: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    accepted_ids: list[str] = field(default_factory=list)


async def post_batches(
    url: str,
    api_key: str,
    batches: Iterable[list[dict[str, Any]]],
    *,
    rate: float | None = None,
    concurrency: int = 8,
    keep_ids: bool = False,
    on_progress: Callable[[int], None] | None = None,
    max_retry_s: float = 120.0,
    duration_s: float | None = None,
) -> PostStats:
    """Send every batch; ``rate`` is events per second (None = as fast as possible).

    With ``duration_s``, stop starting new batches after that many seconds.
    """
    stats = PostStats()
    headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"}
    endpoint = url.rstrip("/") + "/v1/events"
    queue: asyncio.Queue[list[dict[str, Any]] | None] = asyncio.Queue(maxsize=concurrency * 2)
    started = time.monotonic()
    scheduled = 0

    async def worker(session: aiohttp.ClientSession) -> None:
        while (batch := await queue.get()) is not None:
            body = orjson.dumps(batch)
            delay, deadline = 0.2, time.monotonic() + max_retry_s
            while True:
                stats.requests += 1
                try:
                    async with session.post(endpoint, data=body, headers=headers) as resp:
                        status = resp.status
                        doc = (
                            await resp.json(loads=orjson.loads)
                            if resp.content_type == "application/json"
                            else {}
                        )
                        retry_after = float(resp.headers.get("Retry-After", delay))
                except (aiohttp.ClientError, TimeoutError):
                    status, doc, retry_after = 0, {}, delay
                stats.statuses[status] = stats.statuses.get(status, 0) + 1
                if status in (202, 422):
                    rejected = {r["index"] for r in doc.get("rejected", [])}
                    stats.accepted += doc.get("accepted", 0)
                    stats.rejected += len(rejected)
                    if keep_ids:
                        stats.accepted_ids += [
                            e["event_id"] for i, e in enumerate(batch) if i not in rejected
                        ]
                    break
                if status not in (0, 429, 503) or time.monotonic() > deadline:
                    raise RuntimeError(f"ingest answered {status}: {doc}")
                stats.retries += 1
                await asyncio.sleep(min(retry_after, delay))
                delay = min(delay * 2, 5.0)
            if on_progress:
                on_progress(len(batch))

    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        tasks = [asyncio.create_task(worker(session)) for _ in range(concurrency)]

        async def put(item: list[dict[str, Any]] | None) -> None:
            """Queue ``item``, or raise a worker's error: once every worker has failed, a
            plain ``put`` on a full queue would wait forever."""
            putter = asyncio.ensure_future(queue.put(item))
            running = set(tasks)
            while running:
                done, _ = await asyncio.wait({putter, *running}, return_when=asyncio.FIRST_COMPLETED)
                if putter in done:
                    return
                for t in done:  # a worker that took its None ends; one that failed raises here
                    running.discard(t)
                    if t.exception() is not None:
                        putter.cancel()
                        t.result()
            putter.cancel()
            raise RuntimeError("every sender stopped before the batches were sent")

        try:
            for batch in batches:
                if duration_s is not None and time.monotonic() - started > duration_s:
                    break
                if rate:
                    ahead = scheduled / rate - (time.monotonic() - started)
                    if ahead > 0:
                        await asyncio.sleep(ahead)
                scheduled += len(batch)
                await put(batch)
            for _ in tasks:
                await put(None)
            await asyncio.gather(*tasks)
        finally:
            for t in tasks:
                t.cancel()
    return stats
