"""Peeking: how often an A/A study's interval for delta_1 ever excludes zero when it is
looked at after every 1,000 click units, for the fixed-horizon bootstrap and for the
confidence sequence.

Run: ``.venv/bin/python -m bench.peeking [--studies 1000 --looks 30]``. A small version
runs in ``tests/test_analytics/test_sequential.py``. Each simulated study has installs that
join over time, each with its own click propensity (clicks of one person are correlated,
as in the panel), and queries randomised between control and swap_1_2 with no effect
(or with ``--effect``, a planted drop of CTR_1 in swap_1_2).
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass

import numpy as np

from analytics.stats.arrangement_table import PerInstallArrays, figure3_arrays

ARMS = ("control", "swap_1_2")


@dataclass
class PeekResult:
    studies: int
    ever_excluded: dict[str, int]
    first_exclusion_units: dict[str, list[int]]
    narrower: int  # looks where the sequence was narrower than the bootstrap interval

    def rate(self, method: str) -> tuple[float, float]:
        """Share of studies whose interval ever excluded zero, with its Monte Carlo sd."""
        p = self.ever_excluded[method] / self.studies
        return p, math.sqrt(p * (1 - p) / self.studies)


def simulate_study(
    rng: np.random.Generator, installs: int, looks: int, per_look: int, effect: float
) -> list[tuple[int, PerInstallArrays]]:
    """The per-install counts at every look of one study (cumulative), with its units."""
    propensity = rng.beta(0.45 * 8, 0.55 * 8, installs)  # each person's own CTR_1
    activity = rng.lognormal(0.0, 1.0, installs)  # uneven, as panels are: some search far more
    arrival = np.sort(rng.uniform(0, 0.7, installs))  # installs join during the first 70%
    units = np.zeros((installs, 2))
    clicks = np.zeros((installs, 2))
    total = looks * per_look
    # an install's bootstrap key, fixed for the study as the service's is (a hash of its id)
    keys = np.arange(installs, dtype=np.uint64) + np.uint64(rng.integers(0, 2**40)) * np.uint64(1 << 20)
    out = []
    for look in range(looks):
        t = (look + 1) / looks
        joined = np.flatnonzero(arrival <= t)
        p = activity[joined] / activity[joined].sum()
        who = joined[rng.choice(joined.size, per_look, p=p)]
        arm = rng.integers(0, 2, per_look)
        rate = np.clip(propensity[who] - effect * arm, 0, 1)
        hit = rng.random(per_look) < rate
        np.add.at(units, (who, arm), 1)
        np.add.at(clicks, (who, arm), hit)
        inst, arm_of = np.nonzero(units)
        rows = PerInstallArrays(
            keys=keys[inst],
            arm_codes=arm_of.astype(np.int64),
            arm_names=list(ARMS),
            units=units[inst, arm_of],
            clicks=clicks[inst, arm_of][:, None],
        )
        out.append((int(total * t), rows))
    return out


def peek(studies: int, installs: int, looks: int, per_look: int, effect: float, seed: int) -> PeekResult:
    rng = np.random.default_rng(seed)
    result = PeekResult(studies, {"bootstrap": 0, "sequential": 0}, {"bootstrap": [], "sequential": []}, 0)
    for _ in range(studies):
        first: dict[str, int | None] = {"bootstrap": None, "sequential": None}
        for units, rows in simulate_study(rng, installs, looks, per_look, effect):
            widths = {}
            for method in ("bootstrap", "sequential"):
                table = {r.arm: r for r in figure3_arrays(rows, ranks=1, intervals=method)}
                delta = table["swap_1_2"].delta[0]
                widths[method] = delta.ci_high - delta.ci_low
                if first[method] is None and (delta.ci_low > 0 or delta.ci_high < 0):
                    first[method] = units
            result.narrower += widths["sequential"] < widths["bootstrap"]
        for method, moment in first.items():
            if moment is not None:
                result.ever_excluded[method] += 1
                result.first_exclusion_units[method].append(moment)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--studies", type=int, default=1000)
    parser.add_argument("--installs", type=int, default=2000)
    parser.add_argument("--looks", type=int, default=30)
    parser.add_argument("--per-look", type=int, default=1000, help="click units between looks")
    parser.add_argument("--effect", type=float, default=0.0, help="planted drop of CTR_1 in swap_1_2")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    result = peek(args.studies, args.installs, args.looks, args.per_look, args.effect, args.seed)
    for method in ("bootstrap", "sequential"):
        p, sd = result.rate(method)
        firsts = result.first_exclusion_units[method]
        median = int(np.median(firsts)) if firsts else None
        print(
            f"{method:10s}: interval ever excluded zero in {p:.3f} +- {sd:.3f} of {args.studies} studies "
            f"(looked at {args.looks} times); median first exclusion at {median} units",
            file=sys.stderr,
        )
    print(f"looks where the sequence was narrower than the bootstrap: {result.narrower}", file=sys.stderr)


if __name__ == "__main__":
    main()
