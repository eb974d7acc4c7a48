"""The arms and engines of the registered experiments, as the intake checks an event's.

The event models take any short identifier as an experiment, an arm or an engine, so a
client that is not the extension could put words there (``arm: "john.smith"``). For an
experiment in the registry they are known: an event naming an arm the experiment does not
have, or an engine it does not run, is refused (``unregistered_arm``, the field named, the
value never echoed). An arm the experiment has but does not run on that engine
(``engine_arms``) is taken: it is a client that ignores ``engine_arms``, which the sample
ratio check reports. Events of experiments that are not registered are taken as before
(the demo, simulations and an earlier study's import name their own).

The intake must keep taking events while the store is down (Kafka, not ClickHouse, is its
dependency), so the registry is read at most every few seconds, one read at a time, in the
background (only the first read is waited on, briefly), and the last answer is kept when
the store cannot give one: an experiment registered seconds ago, or while the store is
down, is checked once it is read.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence

from pydantic import BaseModel, ValidationError

from core.store import Store, StoreUnavailable
from ingest.validation import Rejection
from schemas.experiments import ExperimentConfig

log = logging.getLogger(__name__)

Registry = Mapping[str, tuple[frozenset[str], frozenset[str]]]
"""Experiment id -> (its engines, its arms): plain data, so a process pool can be handed it."""
NO_REGISTRY: Registry = {}
"""Nothing registered: every event is taken (the default of the pure functions; never
changed)."""

READ_EVERY_S = 5.0
"""How old the registry's copy may get before a request starts a new read."""
WAIT_S = 0.5
"""How long after the first read started requests wait for it; after that they go on
without it. Later reads refresh the copy behind the requests, which never wait on them."""
REASON = "unregistered_arm"


class RegisteredArms:
    """A copy of the registry's experiments (id -> engines and arms), refreshed in the background."""

    def __init__(
        self,
        store: Store,
        every_s: float = READ_EVERY_S,
        wait_s: float = WAIT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store, self._every_s, self._wait_s, self._clock = store, every_s, wait_s, clock
        self._registry: Registry = {}
        self._read_at = -float("inf")
        self._reading: asyncio.Task[None] | None = None
        self._first: asyncio.Task[None] | None = None
        self._wait_until = -float("inf")
        self._closed = False
        self._warned_at = -float("inf")

    async def current(self) -> Registry:
        """The registry as last read, starting a new read when the copy is old. Only the
        first read is waited on, and only until ``wait_s`` after it started, whatever the
        store does: no request waits on the store after that."""
        if not self._closed and self._reading is None and self._clock() - self._read_at >= self._every_s:
            self._read_at = self._clock()  # one read per period, whether or not it succeeds
            self._reading = asyncio.ensure_future(self._read())
            if self._first is None:
                self._first, self._wait_until = self._reading, self._read_at + self._wait_s
        if self._first is not None and not self._first.done():
            left = self._wait_until - self._clock()
            if left > 0:  # asyncio.wait neither raises the read's errors nor cancels it
                await asyncio.wait({self._first}, timeout=left)
        return self._registry

    async def _read(self) -> None:
        try:
            result = await self._store.query("SELECT config FROM experiments", read_only=True)
            registry: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
            for row in result.rows:
                try:
                    config = ExperimentConfig.model_validate_json(row[0])
                except ValidationError:
                    continue  # a row the current model cannot read is not checked against
                registry[config.experiment_id] = (frozenset(config.engines), frozenset(config.arms))
            self._registry = registry
        except StoreUnavailable:
            pass  # keep the last copy; the next period tries again
        except Exception:
            if self._clock() - self._warned_at >= 60.0:  # a broken table would warn every 5 s
                self._warned_at = self._clock()
                log.warning("could not read the experiment registry; keeping the last copy", exc_info=True)
        finally:
            self._reading = None

    async def close(self) -> None:
        """Stop reading (at shutdown): a read under way is let finish for at most ``wait_s``."""
        self._closed = True
        reading, self._reading = self._reading, None
        if reading is not None:
            _, pending = await asyncio.wait({reading}, timeout=self._wait_s)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)


def unregistered(models: Sequence[BaseModel], registry: Registry) -> list[tuple[int, str]]:
    """(position, field) of each event of a registered experiment that names an engine the
    experiment does not run (``engine``) or an arm it does not have (``arm``)."""
    if not registry:
        return []
    out = []
    for i, model in enumerate(models):
        arm = getattr(model, "arm", None)
        registered = registry.get(getattr(model, "experiment_id", ""))
        if arm is None or registered is None:
            continue
        engines, arms = registered
        if getattr(model, "engine", None) not in engines:
            out.append((i, "engine"))
        elif arm not in arms:
            out.append((i, "arm"))
    return out


def without_unregistered(
    accepted: list[BaseModel], rejected: list[Rejection], registry: Registry
) -> tuple[list[BaseModel], list[Rejection]]:
    """``validate_batch``'s answer with the events of unregistered arms moved to the
    rejections (by their index in the batch, in order)."""
    refused = unregistered(accepted, registry)
    if not refused:
        return accepted, rejected
    invalid = {r.index for r in rejected}
    indices = [i for i in range(len(accepted) + len(rejected)) if i not in invalid]
    dropped = {position for position, _ in refused}
    more = [Rejection(indices[position], REASON, name) for position, name in refused]
    kept = [m for position, m in enumerate(accepted) if position not in dropped]
    return kept, sorted([*rejected, *more], key=lambda r: r.index)
