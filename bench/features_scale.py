"""The sequential and the reweighted report on kept studies, each service start a sample.

``bench.read_scale`` times every read once per size; this times the two reports of issue 16
(confidence sequences with the decision line, and the panel reweighted to a population)
on studies it kept (``read_scale --keep DIR``), several service starts each, alternated
between the sizes so a drift of the machine falls on both: per start the first call (cold),
the same call again (warm, from the results cache), four more reports with another rank
count (recomputed, every other cache warm) and the board's experiment panel. Prints the
medians and the growth from the first directory's study to the second's.

    python -m bench.features_scale /tmp/rs10 /tmp/rs --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from bench.common import append_result
from bench.pipeline import KEY, start_service
from bench.read_scale import EXPERIMENT, TARGETS, board_ready, timed, write_targets
from supervisor.broker import free_port

REPORTS: dict[str, dict[str, Any]] = {
    "sequential": {"experiment_id": EXPERIMENT, "intervals": "sequential"},
    "reweighted": {"experiment_id": EXPERIMENT, "targets": TARGETS},
}
OTHER_RANKS = (9, 8, 7, 5)
"""Another rank count is another report: computed again, with every other cache warm."""


async def reads(url: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {KEY}"}
    out: dict[str, Any] = {}
    async with aiohttp.ClientSession(headers=headers, timeout=aiohttp.ClientTimeout(total=900)) as s:

        async def ok(method: str, path: str, doc: Any = None) -> float:
            seconds, status = await timed(s, method, url + path, doc)
            if status != 200:  # a failed answer is not a time
                raise SystemExit(f"{method} {path} {doc} answered {status}")
            return seconds

        for name, body in REPORTS.items():
            cold = await ok("POST", "/v1/reports/experiment", body)
            warm = await ok("POST", "/v1/reports/experiment", body)
            again = [await ok("POST", "/v1/reports/experiment", {**body, "ranks": r}) for r in OTHER_RANKS]
            out[name] = {"cold": cold, "warm": warm, "recomputed": again}
        out["board experiment"] = await ok("GET", f"/v1/board/experiments/{EXPERIMENT}")
    return out


def one_start(study: Path) -> dict[str, Any]:
    os.environ["AUDITSTREAM_TARGETS_FILE"] = str(write_targets(study / "targets.csv"))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_service(study, port, 1)
    try:
        asyncio.run(board_ready(url))
        return asyncio.run(reads(url))
    finally:
        proc.send_signal(2)
        proc.wait(timeout=300)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("smaller", type=Path, help="a study kept by read_scale --keep (e.g. 10M events)")
    parser.add_argument("larger", type=Path, help="a larger kept study (e.g. 50M events)")
    parser.add_argument("--rounds", type=int, default=3, help="service starts per study (alternated)")
    args = parser.parse_args()
    samples: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    order = [args.smaller, args.larger, args.larger, args.smaller] * args.rounds
    for study in order[: 2 * args.rounds]:
        got = one_start(study)
        size = "smaller" if study == args.smaller else "larger"
        for name in REPORTS:
            samples[size, name, "cold"].append(got[name]["cold"])
            samples[size, name, "warm"].append(got[name]["warm"])
            samples[size, name, "recomputed"] += got[name]["recomputed"]
        samples[size, "board experiment", "cold"].append(got["board experiment"])
        print(f"{study}: {orjson.dumps(got).decode()}", file=sys.stderr)
    medians = {" ".join(k): round(statistics.median(v), 3) for k, v in samples.items()}
    growth = {
        f"{name} {kind}": round(medians[f"larger {name} {kind}"] / medians[f"smaller {name} {kind}"], 2)
        for name in REPORTS
        for kind in ("cold", "recomputed")
    }
    row = {
        "bench": "features_scale",
        "studies": [str(args.smaller), str(args.larger)],
        "medians_s": medians,
        "max_warm_s": max(max(v) for k, v in samples.items() if k[2] == "warm"),
        "growth": growth,
    }
    print(orjson.dumps(row, option=orjson.OPT_INDENT_2).decode())
    append_result(Path(__file__).with_name("results.jsonl"), row)


if __name__ == "__main__":
    main()
