"""How punctually the lock-step crawler sends on this machine, idle and under CPU load.

Run from a checkout: ``.venv/bin/python -m bench.serp_skew [--rounds 60] [--hogs 2]``.
The tests check the crawler's schedule exactly (every first attempt planned for its
slot); what a machine actually does is a figure, measured here. The same study (5
profiles, 120 ms apart, against the fake engine from ``tests/fakes``) runs twice in one
run: first on an idle machine (the baseline), then with ``--hogs`` CPU-burning
processes beside it. For each it prints p50/p95/max of the per-round skew
(``max(sent_at) - min(sent_at)``, what the stream stores) and of ``late_ms`` (first
launch after the slot), plus the rounds missed, and the loaded/idle ratios. A JSON line
with the git sha is appended to ``bench/results.jsonl``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import tempfile
from pathlib import Path
from typing import Any

from bench.common import append_result, percentile
from collectors.common.journal import read_journal
from collectors.serp.study import load_study
from tests.fakes.serp_engine import FakeSerpEngine
from tests.fakes.serp_study import PROFILES_5, crawl, script_for, study_file


def _burn() -> None:  # pragma: no cover - runs in a child process until terminated
    while True:
        pass


def run_study(directory: Path, study_id: str, rounds: int, spacing_ms: int) -> dict[str, Any]:
    """One study against a fresh fake engine; its round records' timing figures."""
    path, start = study_file(
        directory,
        study_id=study_id,
        rounds=rounds,
        spacing=f'"{spacing_ms}ms"',
        max_start_delay=f"{spacing_ms // 10}ms",  # the study default: 10% of the spacing
        profiles=PROFILES_5,
    )
    study = load_study(path)
    with FakeSerpEngine() as engine:
        engine.script = script_for(study, start)
        crawl(study, engine, directory, out=f"{study_id}.jsonl")
    records = read_journal(directory / "state" / study_id / "journal.jsonl")
    done = [r for r in records if r["kind"] == "round"]
    skews = [r["skew_ms"] for r in done]
    lates = [r["late_ms"] for r in done]
    return {
        "rounds": len(done),
        "missed": sum(r["kind"] == "missed" for r in records),
        "planned_skew_ms_max": max((r["planned_skew_ms"] for r in done), default=None),
        **{f"skew_ms_{name}": _q(skews, q) for name, q in (("p50", 0.5), ("p95", 0.95), ("max", 1.0))},
        **{f"late_ms_{name}": _q(lates, q) for name, q in (("p50", 0.5), ("p95", 0.95), ("max", 1.0))},
    }


def _q(values: list[float], q: float) -> float | None:
    if not values:
        return None
    return max(values) if q >= 1 else percentile(values, q)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=60, help="rounds per run (default 60)")
    parser.add_argument("--spacing-ms", type=int, default=120, help="slot spacing (default 120 ms)")
    parser.add_argument("--hogs", type=int, default=2, help="CPU-burning processes in the loaded run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="serp-skew-") as tmp:
        idle = run_study(Path(tmp), "idle", args.rounds, args.spacing_ms)
        hogs = [multiprocessing.Process(target=_burn, daemon=True) for _ in range(args.hogs)]
        for h in hogs:
            h.start()
        try:
            loaded = run_study(Path(tmp), "loaded", args.rounds, args.spacing_ms)
        finally:
            for h in hogs:
                h.terminate()
                h.join()
    print(f"{'':24}{'idle':>10}{f'{args.hogs} hogs':>10}{'ratio':>8}")
    for name in idle:
        a, b = idle[name], loaded[name]
        ratio = f"{b / a:8.1f}" if isinstance(a, float | int) and isinstance(b, float | int) and a else ""
        print(f"{name:24}{_fmt(a):>10}{_fmt(b):>10}{ratio}")
    append_result(
        Path(__file__).with_name("results.jsonl"),
        {
            "bench": "serp_skew",
            "rounds": args.rounds,
            "spacing_ms": args.spacing_ms,
            "hogs": args.hogs,
            "idle": idle,
            "loaded": loaded,
        },
    )


def _fmt(value: object) -> str:
    return f"{value:.1f}" if isinstance(value, float) else str(value)


if __name__ == "__main__":
    main()
