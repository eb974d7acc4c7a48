"""Reports are kept only under a data version that stood while they were computed."""

from __future__ import annotations

import asyncio
from typing import Any

from ingest.board.results import Results


def test_a_result_is_served_while_its_version_stands_and_never_kept_across_a_change() -> None:
    async def scenario() -> list[Any]:
        results = Results(kept=2)
        version = [1]
        computed: list[int] = []

        async def current() -> tuple[Any, ...]:
            return (version[0],)

        async def compute() -> int:
            computed.append(version[0])
            return len(computed)

        async def moving() -> int:  # a recompute lands while this report is computed
            version[0] += 1
            return await compute()

        got = [await results.get(("a",), current, compute), await results.get(("a",), current, compute)]
        version[0] = 2
        got.append(await results.get(("a",), current, compute))  # new data: computed again
        got.append(await results.get(("b",), current, moving))  # answered, not kept
        got.append(await results.get(("b",), current, compute))  # so computed again now
        got.append(await results.get(("b",), current, compute))  # and kept
        return [got, computed, results.hits, results.misses]

    got, computed, hits, misses = asyncio.run(scenario())
    assert got == [1, 1, 2, 3, 4, 4]
    assert computed == [1, 2, 3, 3] and (hits, misses) == (2, 4)


def test_at_most_kept_results_are_kept() -> None:
    async def scenario() -> int:
        results = Results(kept=2)
        calls = [0]

        async def version() -> tuple[Any, ...]:
            return ()

        async def compute() -> int:
            calls[0] += 1
            return calls[0]

        for key in ("a", "b", "c", "a"):
            await results.get((key,), version, compute)
        return calls[0]

    assert asyncio.run(scenario()) == 4  # "a" was dropped when "c" came
