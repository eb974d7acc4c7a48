"""Read side at scale: a national panel's study of up to 50M click events over 100k installs.

Run from a checkout: ``.venv/bin/python -m bench.read_scale [--sizes 1e6,1e7,5e7]``.

It starts the embedded service, grows one study to each size in turn through
``auditstream import`` (JSON lines over 30 days, as an earlier study's export would be),
and after each size times, cold (the first call after the import) and warm (the next):
``POST /v1/reports/experiment`` for every subset (what ``report experiment`` runs), the
timeline over 30 days in 1-hour windows, and every board endpoint. Baselines from the same
run: raw chDB inserts of the same rows (for the import rate) and, for the read side, each
figure at the smallest size (how it grows). Results are printed and appended to
``bench/results.jsonl``.
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
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import orjson

from bench.common import append_result
from bench.pipeline import KEY, start_service
from core.store.chdb_store import ChdbStore
from schemas.migrate import migrate
from supervisor.broker import free_port

EXPERIMENT = "national-panel"
START = dt.datetime(2026, 9, 1, tzinfo=dt.UTC)
ARMS = ("control", "swap_1_2", "swap_1_3", "swap_2_3", "hide_ads", "hide_box", "hide_ads_box")
ARM_P = np.array([0.4, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1])
CTR = np.array([0.45, 0.15, 0.1, 0.07, 0.05, 0.04, 0.03, 0.03, 0.02, 0.02])
SUBSETS = ["all", "ads_or_box", "no_ads_no_box", "box", "ssr_c1_c2"] + [
    f"n_candidates_q{k}" for k in range(1, 6)
]
QUINTILES = [f"{p}n_candidates_q{k}" for p in ("", "no_ads_no_box_") for k in range(1, 6)]
"""Both families of quintiles: timed after ``--freeze-quintiles`` froze them."""
PILOT_DAYS = 7
"""``--freeze-quintiles``: the pilot is the study's first week."""
LINE = (
    '{"type":"click","event_id":"%s","schema_version":1,"sent_at":"%s","received_at":"%s",'
    '"experiment_id":"' + EXPERIMENT + '","arm":"%s","engine":"google","install_id":"%s",'
    '"install_day":"%s","extension_version":"1.5.0","page_index":0,"n_organic":10,'
    '"ads_top_count":%d,"box":"%s","ssr_positions":%s,"n_candidates":%d,"identified":true,'
    '"ui_lang":"de"%s}'
)


def write_events(path: Path, n: int, installs: int, days: int, seed: int) -> None:
    """``n`` click events (the paper's units) spread over ``days`` days, in time order."""
    rng = np.random.default_rng(seed)
    install_ids = [f"{i:08x}panel" for i in range(installs)]  # the same panel at every size
    install_days = [
        (START.date() - dt.timedelta(days=int(d))).isoformat() for d in rng.integers(0, 60, installs)
    ]
    with path.open("w") as out:
        written = 0
        while written < n:
            m = min(200_000, n - written)
            who = rng.integers(0, installs, m)
            arm = rng.choice(len(ARMS), m, p=ARM_P)
            moment = START.timestamp() + np.sort(rng.uniform(0, days * 86400, m))
            ads = (rng.random(m) < 0.3) * rng.integers(1, 4, m)
            box = np.where(rng.random(m) < 0.03, "top", "none")
            ssr = rng.random(m) < 0.2
            n_cand = (10 ** rng.uniform(4, 9.5, m)).astype(np.int64)
            clicked = rng.choice(11, m, p=np.append(CTR / CTR.sum() * 0.95, 0.05))  # 10 = an ad
            ids = rng.integers(0, 2**63, (m, 2))
            lines = []
            for k in range(m):
                stamp = dt.datetime.fromtimestamp(float(moment[k]), dt.UTC)
                sent = stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"
                received = stamp.strftime("%Y-%m-%d %H:%M:%S.") + f"{stamp.microsecond // 1000:03d}"
                h = f"{ids[k, 0]:016x}{ids[k, 1]:016x}"
                event_id = f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"
                c = int(clicked[k])
                extra = (
                    ',"element_type":"ad"'
                    if c == 10
                    else f',"element_type":"organic","original_rank":{c + 1},"display_rank":{c + 1}'
                )
                i = int(who[k])
                lines.append(
                    LINE
                    % (
                        event_id,
                        sent,
                        received,
                        ARMS[int(arm[k])],
                        install_ids[i],
                        install_days[i],
                        int(ads[k]),
                        box[k],
                        "[2]" if ssr[k] else "[]",
                        int(n_cand[k]),
                        extra,
                    )
                )
            out.write("\n".join(lines) + "\n")
            written += m


LATENCY_ROUNDS = 2
LATENCY_S = 60
"""Ingest latency is measured in rounds of this many seconds without and with a board."""
BOARD_DRAIN_S = 65
"""The board's refresher keeps refreshing a panel for a minute after its last request
(``keep_s``): a round without a board starts this long after one with a board."""


def latency_schedule(rounds: int) -> list[bool | None]:
    """Whether each latency round has a board open (None: a pause while the refresher
    drains), in ABBA order: the latency probe's own study grows as it posts, and the p99
    drifts up with it, so the condition measured second in every pair would look worse."""
    plan: list[bool | None] = []
    for i in range(rounds):
        plan += [False, True, None] if i % 2 == 0 else [True, None, False]
    return plan


AGE_BANDS = ("18-24", "25-34", "35-44", "45-54", "55-64", "65+")
TARGETS = [
    {"dimension": "age_band", "bin": b, "share": s}
    for b, s in zip(AGE_BANDS, (0.11, 0.16, 0.16, 0.18, 0.17, 0.22), strict=True)
]
"""A target population for the reweighted report (an adult population's age mix)."""


def write_targets(path: Path) -> Path:
    """``TARGETS`` as a target file (``docs/reweighting.md``), for the board."""
    rows = "".join(f"{t['dimension']},{t['bin']},{t['share']}\n" for t in TARGETS)
    path.write_text("dimension,bin,share\n" + rows)
    return path


def write_profiles(path: Path, installs: int) -> Path:
    """The panel's questionnaire answers (install_profile events): a skew toward the young,
    one in ten declined."""
    rng = np.random.default_rng(7)
    bands = rng.choice(len(AGE_BANDS), installs, p=[0.3, 0.3, 0.15, 0.1, 0.1, 0.05])
    with path.open("w") as out:
        for i in range(installs):
            answer = (
                '"consent":"declined"'
                if i % 10 == 0
                else f'"consent":"given","age_band":"{AGE_BANDS[bands[i]]}"'
            )
            out.write(
                f'{{"type":"install_profile","event_id":"00000000-0000-4000-8000-{i:012x}","schema_version":1,'
                f'"sent_at":"{START.isoformat()}","install_id":"{i:08x}panel","install_day":"{START.date()}",'
                f'"extension_version":"1.5.0","experiment_id":"{EXPERIMENT}",{answer}}}\n'
            )
    return path


async def raw_insert_rate(path: Path, tmp: Path, rows: int = 500_000) -> float:
    """Baseline: the same rows straight into a fresh chDB's raw table, in batches of 50k."""
    store = ChdbStore(tmp / "baseline-ch")
    await migrate(store)
    with path.open("rb") as f:
        lines = [line.rstrip(b"\n") for _, line in zip(range(rows), f, strict=False)]
    started = time.perf_counter()
    for i in range(0, len(lines), 50_000):
        await store.insert_json_rows("raw_extension_events", b"\n".join(lines[i : i + 50_000]))
    rate = len(lines) / (time.perf_counter() - started)
    await store.close()
    return rate


def run_import(url: str, path: Path) -> tuple[float, str]:
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "auditstream", "import", str(path), "--url", url, "--api-key", KEY],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(out.stdout + out.stderr)
    return time.perf_counter() - started, out.stdout


async def board_ready(url: str, limit: float = 300) -> float:
    """Seconds from now (``/readyz`` just answered) until it reports the board's compute
    process started and warmed up: before that, the first board or report answer waits."""
    started = time.perf_counter()
    async with aiohttp.ClientSession() as session:
        while time.perf_counter() - started < limit:
            async with session.get(url + "/readyz") as resp:
                if (await resp.json()).get("board") == "ready":
                    return time.perf_counter() - started
            await asyncio.sleep(0.05)
    raise RuntimeError(f"the board's compute process was not ready after {limit:.0f} s")


async def timed(session: aiohttp.ClientSession, method: str, url: str, body: Any = None) -> tuple[float, int]:
    started = time.perf_counter()
    async with session.request(method, url, json=body) as resp:
        await resp.read()
        return time.perf_counter() - started, resp.status


async def read_side(url: str, subsets: list[str] | None = None) -> dict[str, dict[str, float]]:
    """Cold then warm seconds of every report subset, the timeline and every board endpoint
    (``subsets``: the reports of these subsets only)."""
    headers = {"Authorization": f"Bearer {KEY}"}
    timeout = aiohttp.ClientTimeout(total=900)
    out: dict[str, dict[str, float]] = {}
    async with aiohttp.ClientSession(headers=headers, timeout=timeout) as session:
        calls: list[tuple[str, str, str, Any]] = [
            (f"report {s}", "POST", "/v1/reports/experiment", {"experiment_id": EXPERIMENT, "subset": s})
            for s in (subsets or SUBSETS)
        ]
        calls += (
            []
            if subsets
            else [
                (
                    "report all, sequential (decision line)",
                    "POST",
                    "/v1/reports/experiment",
                    {"experiment_id": EXPERIMENT, "intervals": "sequential"},
                ),
                (
                    "report all, reweighted",
                    "POST",
                    "/v1/reports/experiment",
                    {"experiment_id": EXPERIMENT, "targets": TARGETS},
                ),
            ]
        )
        calls += (
            []
            if subsets
            else [
                (
                    "timeline 1h x 30d",
                    "POST",
                    "/v1/reports/timeline",
                    {"experiment_id": EXPERIMENT, "window": "1h"},
                )
            ]
        )
        calls += (
            []
            if subsets
            else [
                ("board index", "GET", "/v1/board/index", None),
                ("board experiment", "GET", f"/v1/board/experiments/{EXPERIMENT}", None),
                ("board autocomplete", "GET", "/v1/board/autocomplete", None),
                ("board personalization", "GET", "/v1/board/personalization/none", None),
                ("board alerts", "GET", "/v1/board/alerts", None),
            ]
        )
        for name, method, path, body in calls:
            cold, status = await timed(session, method, url + path, body)
            warm, _ = await timed(session, method, url + path, body)
            out[name] = {"cold_s": round(cold, 3), "warm_s": round(warm, 3), "status": status}
            line = f"  {name}: cold {cold:.2f} s, warm {warm:.2f} s"
            if isinstance(body, dict) and path.startswith("/v1/reports/"):
                # warm answers come from the results cache; this one is computed again with
                # every other cache warm (another rank count is another report)
                other = {**body, "ranks": 5} if "experiment" in path else {**body, "baseline": "swap_1_2"}
                again, _ = await timed(session, method, url + path, other)
                out[name]["recomputed_s"] = round(again, 3)
                line += f", recomputed {again:.2f} s"
            print(f"{line} ({status})", file=sys.stderr)
    return out


async def ingest_latency(url: str, seconds: float, board: bool) -> list[float]:
    """Seconds per POST /v1/events (batches of 50, 20 a second), with or without a board
    open on the study (polling every panel every second, as the page does)."""
    from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig

    headers = {"Authorization": f"Bearer {KEY}"}
    batches = ExtensionTraffic(TrafficConfig(experiment_id="latency-probe", installs=500)).batches(50, 10**7)
    latencies: list[float] = []
    stop = time.monotonic() + seconds
    async with aiohttp.ClientSession(headers=headers) as session:

        async def poll_board() -> None:
            while time.monotonic() < stop:
                for path in ("/v1/board/index", f"/v1/board/experiments/{EXPERIMENT}", "/v1/board/alerts"):
                    async with session.get(url + path) as resp:
                        await resp.read()
                await asyncio.sleep(1)

        poller = asyncio.create_task(poll_board()) if board else None
        while time.monotonic() < stop:
            started = time.perf_counter()
            async with session.post(url + "/v1/events", json=next(batches)) as resp:
                await resp.read()
            latencies.append(time.perf_counter() - started)
            await asyncio.sleep(max(0.0, 0.05 - (time.perf_counter() - started)))
        if poller is not None:
            await poller
    return latencies


async def _call(session: aiohttp.ClientSession, method: str, url: str, body: Any = None) -> tuple[int, Any]:
    async with session.request(method, url, json=body) as resp:
        return resp.status, await resp.json()


async def register_plan(url: str) -> None:
    """``--freeze-quintiles``: the study registered (its arms, the bench's weights) with an
    analysis plan that fixes no quintile boundaries yet."""
    experiment = {
        "experiment_id": EXPERIMENT,
        "engines": ["google"],
        "arms": {arm: float(p) for arm, p in zip(ARMS, ARM_P, strict=True)},
        "salt": "read-scale-salt",
        "start": START.date().isoformat(),
    }
    plan = {
        "experiment_id": EXPERIMENT,
        "primary": [{"quantity": "delta", "arm": "swap_1_2", "rank": 1}],
        "subsets": [*SUBSETS[:5], *QUINTILES],
    }
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {KEY}"}) as session:
        for method, path, body in (
            ("POST", "/v1/experiments", experiment),
            ("PUT", f"/v1/experiments/{EXPERIMENT}/plan", plan),
        ):
            status, answer = await _call(session, method, url + path, body)
            if status not in (200, 201, 409):
                raise RuntimeError(f"{method} {path}: {status} {answer}")


async def quintiles_stored(url: str) -> bool:
    """Whether a kept study's plan already has its quintiles frozen and stored (an earlier
    run froze them after its first size)."""
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {KEY}"}) as session:
        status, plan = await _call(session, "GET", f"{url}/v1/experiments/{EXPERIMENT}/plan")
    return status == 200 and bool(plan.get("quintiles_stored"))


async def freeze_quintiles(url: str) -> dict[str, Any]:
    """``plan freeze-quintiles`` over the study's first week, then the time until the worker
    keeps the quintiles as named subsets (the plan says ``quintiles_stored``)."""
    until = (START.date() + dt.timedelta(days=PILOT_DAYS - 1)).isoformat()
    timeout = aiohttp.ClientTimeout(total=900)
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {KEY}"}, timeout=timeout) as session:
        started = time.perf_counter()
        status, answer = await _call(
            session,
            "POST",
            f"{url}/v1/experiments/{EXPERIMENT}/plan/freeze-quintiles",
            {"until": until, "reason": "bench.read_scale"},
        )
        if status != 200:
            raise RuntimeError(f"freeze-quintiles: {status} {answer}")
        answered = time.perf_counter() - started
        while not (await _call(session, "GET", f"{url}/v1/experiments/{EXPERIMENT}/plan"))[1][
            "quintiles_stored"
        ]:
            if time.perf_counter() - started > 7200:
                raise RuntimeError("the frozen quintiles were not stored within two hours")
            await asyncio.sleep(1)
    return {
        "pilot": answer["pilot"],
        "freeze_answered_s": round(answered, 3),
        "stored_after_s": round(time.perf_counter() - started, 3),
    }


def latency_figures(latencies: list[float]) -> dict[str, float]:
    from bench.common import percentile

    return {
        "requests": len(latencies),
        "p50_ms": round(percentile(latencies, 0.5) * 1000, 1),
        "p99_ms": round(percentile(latencies, 0.99) * 1000, 1),
    }


def measure_latency(url: str) -> dict[str, Any]:
    """Ingest latency without and with a board open (``latency_schedule``): each round's
    p50 and p99, and both over all rounds of a condition."""
    rounds: dict[str, list[dict[str, float]]] = {"without_board": [], "with_board": []}
    pooled: dict[str, list[float]] = {"without_board": [], "with_board": []}
    for board in latency_schedule(LATENCY_ROUNDS):
        if board is None:
            time.sleep(BOARD_DRAIN_S)
            continue
        name = "with_board" if board else "without_board"
        latencies = asyncio.run(ingest_latency(url, LATENCY_S, board=board))
        rounds[name].append(latency_figures(latencies))
        pooled[name] += latencies
    return {**rounds, "pooled": {name: latency_figures(values) for name, values in pooled.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1e6,1e7,5e7", help="study sizes in events, comma-separated")
    parser.add_argument("--installs", type=int, default=100_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument(
        "--import-only", action="store_true", help="time the imports only (no reads, no ingest latency)"
    )
    parser.add_argument(
        "--keep",
        type=Path,
        help="run the service on this directory and keep it: sizes already imported there are "
        "neither imported nor read again (the study is larger now); see --reads-only",
    )
    parser.add_argument(
        "--reads-only",
        action="store_true",
        help="with --keep: import nothing, time the reads of the study as it is there (labelled "
        "with the last of --sizes) after a fresh start",
    )
    parser.add_argument(
        "--freeze-quintiles",
        action="store_true",
        help="register the study with an analysis plan, freeze its quintile boundaries from the first "
        "week after the first size's reads (plan freeze-quintiles), time the recompute and every "
        "quintile report then, and at the later sizes (both families)",
    )
    parser.add_argument("--skip-latency", action="store_true", help="no ingest latency rounds at the end")
    parser.add_argument(
        "--events-dir",
        type=Path,
        help="keep the generated event files here and reuse them in later runs (50M events take "
        "~24 GiB and ~20 minutes to write); by default they are written to the run's temporary "
        "directory and deleted after their import",
    )
    args = parser.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    tmp = args.keep or Path(tempfile.mkdtemp(prefix="bench-read-scale-"))
    tmp.mkdir(parents=True, exist_ok=True)
    state_file = tmp / "imported.json"
    imported: dict[str, float] = orjson.loads(state_file.read_bytes()) if state_file.exists() else {}
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    os.environ["AUDITSTREAM_IMPORT_MAX_BODY_BYTES"] = str(256 * 1024 * 1024)
    # the board reweights to the same population as the reweighted report, as an operator
    # who configured a target file has it: its experiment panel carries both estimates
    os.environ["AUDITSTREAM_TARGETS_FILE"] = str(write_targets(tmp / "targets.csv"))
    proc = start_service(tmp, port, 1)
    results: list[dict[str, Any]] = []
    baseline = None
    latency: dict[str, Any] = {}
    try:
        # reads are timed once the board's compute process has started and warmed up (on a
        # kept study: the weights of its installs); that start-up is reported on its own
        start_up_s = asyncio.run(board_ready(url))
        print(f"board's compute process ready {start_up_s:.2f} s after /readyz", file=sys.stderr)
        if args.freeze_quintiles:
            asyncio.run(register_plan(url))
        frozen: dict[str, Any] | None = None
        have = 0
        if args.reads_only:
            if args.keep is None:
                parser.error("--reads-only needs --keep")
            sizes, have = [], sizes[-1]
            if not (tmp / "profiles.jsonl").exists():  # a study kept from before the questionnaire
                run_import(url, write_profiles(tmp / "profiles.jsonl", args.installs))
            results.append({"events": have, "reads": asyncio.run(read_side(url))})
        for seed, size in enumerate(sizes, start=1):
            if str(size) in imported:
                print(f"{size:,} events imported in an earlier run", file=sys.stderr)
                have = size
                if args.freeze_quintiles and frozen is None and asyncio.run(quintiles_stored(url)):
                    frozen = {"earlier_run": True}
                continue  # its reads were timed then (the study is larger now)
            name = f"events-{size - have}-{args.installs}-{args.days}-{seed}.jsonl"
            path = (args.events_dir or tmp) / name
            if not path.exists():
                print(f"writing {size - have:,} more events ...", file=sys.stderr)
                write_events(path.with_suffix(".part"), size - have, args.installs, args.days, seed)
                path.with_suffix(".part").rename(path)
            if baseline is None:
                baseline = asyncio.run(raw_insert_rate(path, tmp))
            print(f"importing to {size:,} events ...", file=sys.stderr)
            seconds, _ = run_import(url, path)
            rate = (size - have) / seconds
            if have == 0:
                run_import(url, write_profiles(tmp / "profiles.jsonl", args.installs))
            imported[str(size)] = rate
            state_file.write_bytes(orjson.dumps(imported))
            print(f"  {rate:,.0f} events/s ({rate / baseline:.2f} of raw chDB inserts)", file=sys.stderr)
            if args.events_dir is None:
                path.unlink()
            have = size
            subsets = [*SUBSETS[:5], *QUINTILES] if frozen is not None else None
            results.append(
                {
                    "events": size,
                    "import_events_per_s": round(rate),
                    "import_ratio_to_raw_insert": round(rate / baseline, 3),
                    "quintiles": "frozen" if frozen is not None else "moving",
                    "reads": {} if args.import_only else asyncio.run(read_side(url, subsets)),
                }
            )
            if args.freeze_quintiles and frozen is None:
                print("freezing the quintile boundaries from the first week ...", file=sys.stderr)
                frozen = asyncio.run(freeze_quintiles(url))
                print(f"  {frozen}", file=sys.stderr)
                results[-1]["freeze"] = frozen
                results[-1]["frozen_reads"] = asyncio.run(read_side(url, QUINTILES))
        if not args.import_only and not args.skip_latency:
            # a minute each, in ABBA order: the p99 of 30 s (the sixth slowest of 600) moved
            # by 10-20 ms between rounds of one condition, as the latency probe's study grows
            print("ingest latency without and with a board open, ABBA ...", file=sys.stderr)
            latency = measure_latency(url)
            print(f"  {latency}", file=sys.stderr)
    finally:
        proc.send_signal(2)
        proc.wait(timeout=300)
    row = {
        "bench": "read_scale",
        "installs": args.installs,
        "days": args.days,
        "baseline_raw_chdb_insert_rows_per_s": round(baseline or 0),
        "sizes": results,
        "board_ready_after_readyz_s": round(start_up_s, 3),
        "ingest_latency": latency,
    }
    print(orjson.dumps(row, option=orjson.OPT_INDENT_2).decode())
    append_result(Path(__file__).with_name("results.jsonl"), row)


if __name__ == "__main__":
    main()
