"""How often the report's 95% intervals hold the simulator's planted values (issue 37).

    .venv/bin/python -m bench.paper_world_coverage [--events 200000] SEED [SEED ...]

Per seed: docs/reproducing.md's seven-arm experiment (Bing: control and swap_1_2) simulated
as ``auditstream simulate extension`` would, its kept click units (installs past the burn-in,
identified pages) counted per install, arm and subset in memory, and the report's estimator
run on them (``analytics.stats.arrangement_table.figure3``: the same clustered bootstrap,
the same deterministic weights). Prints one JSON line per seed: the Figure 3 and Figure 5
intervals checked (135), how many missed their planted value, and which. No service needed.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
from typing import Any

from analytics.stats.arrangement_table import ArmRow, InstallArmCounts, figure3
from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig, with_registered

ARMS = {
    "control": 4,
    "swap_1_2": 1,
    "swap_1_3": 1,
    "swap_2_3": 1,
    "hide_box": 1,
    "hide_ads_box": 1,
    "hide_ads_box_swap_1_2": 1,
}
REGISTERED = {
    "engines": ["google", "bing"],
    "arms": ARMS,
    "engine_arms": {"bing": ["control", "swap_1_2"]},
    "salt": "paper-world-salt",
}
FIGURE3 = {"google": ("control", "swap_1_2", "swap_1_3", "swap_2_3"), "bing": ("control", "swap_1_2")}
FIGURE5 = {
    "hide_box": ("hide_box", "control", "swap_1_2"),
    "hide_ads_box": ("hide_ads_box", "control", "swap_1_2", "hide_ads_box_swap_1_2"),
}
Key = tuple[Any, ...]


def run(seed: int, events: int) -> dict[str, Any]:
    config = with_registered(TrafficConfig(experiment_id="paper-world", seed=seed), REGISTERED)
    traffic = ExtensionTraffic(config)
    planted = {
        (p.engine, p.subset, p.baseline, p.arm, p.quantity, p.rank): p.value for p in traffic.planted()
    }
    kept = {i["install_id"] for i, t in zip(traffic.installs, traffic.traits, strict=True) if t.kept}
    units: collections.Counter[tuple[str, str, str, str]] = collections.Counter()
    clicks: dict[tuple[str, str, str, str], list[float]] = collections.defaultdict(lambda: [0.0] * 6)
    for e in itertools.islice(traffic.events(), events):
        if e["type"] != "click" or not e["identified"] or e["install_id"] not in kept:
            continue
        for subset in ("all", "box") if e["box"] != "none" else ("all",):
            key = (e["engine"], subset, e["install_id"], e["arm"])
            units[key] += 1
            if e["element_type"] == "organic" and e["original_rank"] <= 6:
                clicks[key][e["original_rank"] - 1] += 1

    def rows(engine: str, subset: str) -> list[InstallArmCounts]:
        return [
            InstallArmCounts(i, a, u, clicks[(g, s, i, a)])
            for (g, s, i, a), u in units.items()
            if (g, s) == (engine, subset)
        ]

    checked, missed = 0, []

    def check(
        table: list[ArmRow], engine: str, subset: str, baseline: str, arms: tuple[str, ...], ranks: int
    ) -> None:
        nonlocal checked
        by_arm = {row.arm: row for row in table}
        for arm in arms:
            for quantity in ("ctr", "delta", "beta"):
                if quantity != "ctr" and arm == baseline:
                    continue
                for rank in range(1, ranks + 1):
                    est = getattr(by_arm[arm], quantity)[rank - 1]
                    key: Key = (engine, subset, baseline, arm, quantity, rank)
                    checked += 1
                    if not est.ci_low <= planted[key] <= est.ci_high:
                        missed.append([*key, planted[key], est.value, est.ci_low, est.ci_high])

    for engine, arms in FIGURE3.items():
        check(figure3(rows(engine, "all"), ranks=6), engine, "all", "control", arms, 6)
    for baseline, arms in FIGURE5.items():
        check(figure3(rows("google", "box"), ranks=3, baseline=baseline), "google", "box", baseline, arms, 3)
    return {"seed": seed, "events": events, "checked": checked, "missed": len(missed), "which": missed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("seeds", type=int, nargs="+")
    parser.add_argument("--events", type=int, default=200_000)
    args = parser.parse_args()
    for seed in args.seeds:
        print(json.dumps(run(seed, args.events)), flush=True)


if __name__ == "__main__":
    main()
