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
dependency), so the registry is read every few seconds by a background task, one read at a
time (only the first read is waited on, briefly), and the last answer is kept when the
store cannot give one: an experiment registered in another intake process seconds ago, or
while the store is down, is checked once it is read.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ValidationError

from core.store import Store, StoreUnavailable
from ingest.validation import Rejection, move_to_rejected
from schemas.experiments import ExperimentConfig

log = logging.getLogger(__name__)

Registry = Mapping[str, tuple[frozenset[str], frozenset[str]]]
"""Experiment id -> (its engines, its arms): plain data, so a process pool can be handed it."""
NO_REGISTRY: Registry = {}
"""Nothing registered: every event is taken (the default of the pure functions; never
changed)."""

READ_EVERY_S = 5.0
"""The registry is read this often, events or not."""
WAIT_S = 0.5
"""How long after the start requests wait for the first read; after that they go on without
it. Later reads refresh the copy behind the requests, which never wait on them."""
REASON = "unregistered_arm"
REGISTRY_SQL = "SELECT config FROM experiments"


class RegisteredArms:
    """A copy of the registry's experiments (id -> engines and arms), kept fresh by one
    background task: read every ``every_s`` whether or not events arrive, so an experiment
    registered during a lull is checked from the first event after it (the process that
    registers one also notes it at once, ``note``)."""

    def __init__(self, store: Store, every_s: float = READ_EVERY_S, wait_s: float = WAIT_S) -> None:
        self._store, self._every_s, self._wait_s = store, every_s, wait_s
        self._registry: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
        self._task: asyncio.Task[None] | None = None
        self._first_read = asyncio.Event()
        self._wait_until = float("inf")
        self._warned_at = -float("inf")

    def start(self) -> None:
        """Start the refreshing task (at the app's start; ``current`` starts it if need be)."""
        if self._task is None:
            loop = asyncio.get_running_loop()
            self._wait_until = loop.time() + self._wait_s
            self._task = loop.create_task(self._refresh(), name="registered arms")

    async def current(self) -> Registry:
        """The registry as last read. Only the first read is waited on, and only until
        ``wait_s`` after the task started, whatever the store does: no request waits on the
        store after that."""
        self.start()
        if not self._first_read.is_set():
            left = self._wait_until - asyncio.get_running_loop().time()
            if left > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._first_read.wait(), left)
        return self._registry

    def note(self, config: ExperimentConfig) -> None:
        """An experiment this process registered: checked from now, not from the next read."""
        self._registry = {**self._registry, config.experiment_id: _entry(config)}

    async def _refresh(self) -> None:
        while True:
            await self._read()
            self._first_read.set()
            await asyncio.sleep(self._every_s)

    async def _read(self) -> None:
        try:
            result = await self._store.query(REGISTRY_SQL, read_only=True)
            registry = {}
            for row in result.rows:
                try:
                    config = ExperimentConfig.model_validate_json(row[0])
                except ValidationError:
                    continue  # a row the current model cannot read is not checked against
                registry[config.experiment_id] = _entry(config)
            self._registry = registry
        except StoreUnavailable:
            pass  # keep the last copy; the next period tries again
        except Exception:
            now = asyncio.get_running_loop().time()
            if now - self._warned_at >= 60.0:  # a broken table would warn every 5 s
                self._warned_at = now
                log.warning("could not read the experiment registry; keeping the last copy", exc_info=True)

    async def close(self) -> None:
        """Stop refreshing (at shutdown)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


def _entry(config: ExperimentConfig) -> tuple[frozenset[str], frozenset[str]]:
    return frozenset(config.engines), frozenset(config.arms)


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
    refused = [(position, REASON, name) for position, name in unregistered(accepted, registry)]
    return move_to_rejected(accepted, rejected, refused)
