"""Raking the panel to a target population: margins met, the effective sample size as its
formula, and a biased panel's estimate corrected with honest intervals."""

from __future__ import annotations

import numpy as np
import pytest

from analytics.stats.arrangement_table import PerInstallArrays, figure3_arrays
from analytics.stats.reweight import TargetError, effective_sample_size, rake, read_targets

TARGETS = "dimension,bin,share\nage_band,18-24,0.5\nage_band,55-64,0.5\ncountry,CH,0.7\ncountry,DE,0.3\n"
EFFECT = {"18-24": -0.20, "55-64": -0.05}  # swap_1_2 lowers CTR_1 more for the young
POPULATION_EFFECT = 0.5 * EFFECT["18-24"] + 0.5 * EFFECT["55-64"]


def test_target_files_are_checked() -> None:
    targets = read_targets(TARGETS)
    assert targets == {"age_band": {"18-24": 0.5, "55-64": 0.5}, "country": {"CH": 0.7, "DE": 0.3}}
    for bad in (
        "dim,bin,share\nage_band,18-24,1\n",
        "dimension,bin,share\nheight,tall,1\n",
        "dimension,bin,share\nage_band,18-24,0.4\n",
        "dimension,bin,share\nage_band,18-24,x\n",
    ):
        with pytest.raises(TargetError):
            read_targets(bad)


def test_raking_meets_every_margin_and_leaves_non_respondents_alone() -> None:
    rng = np.random.default_rng(1)
    age = rng.choice(["18-24", "55-64"], 3000, p=[0.8, 0.2]).astype(object)
    country = rng.choice(["CH", "DE"], 3000, p=[0.4, 0.6]).astype(object)
    age[:100] = None  # declined the questionnaire
    w = rake({"age_band": age, "country": country}, read_targets(TARGETS))
    answered = slice(100, None)
    for column, bins in ((age, ("18-24", "55-64")), (country, ("CH", "DE"))):
        shares = {b: w[answered][column[answered] == b].sum() / w[answered].sum() for b in bins}
        wanted = read_targets(TARGETS)["age_band" if column is age else "country"]
        assert shares == pytest.approx(wanted, abs=1e-6)
    assert (w[:100] == 1).all() and w[answered].mean() == pytest.approx(1)
    assert effective_sample_size(w) == pytest.approx(w.sum() ** 2 / (w**2).sum())
    assert effective_sample_size(np.ones(50)) == 50


def simulate_panel(seed: int, installs: int = 3000) -> tuple[PerInstallArrays, np.ndarray]:
    """A panel 80% young where the target is 50/50; per install 20 queries, 50/50 arms."""
    rng = np.random.default_rng(seed)
    age = rng.choice(["18-24", "55-64"], installs, p=[0.8, 0.2])
    base = rng.uniform(0.3, 0.8, installs)  # never clipped by the effect: it is exactly EFFECT
    queries = 20
    arm = rng.integers(0, 2, (installs, queries))
    effect = np.where(age == "18-24", EFFECT["18-24"], EFFECT["55-64"])
    rate = np.clip(base[:, None] + effect[:, None] * arm, 0, 1)
    hit = rng.random((installs, queries)) < rate
    keys, codes, units, clicks = [], [], [], []
    for a in (0, 1):
        keys.append(np.arange(installs, dtype=np.uint64) + np.uint64(seed) * np.uint64(1 << 32))
        codes.append(np.full(installs, a))
        units.append((arm == a).sum(axis=1).astype(float))
        clicks.append(((arm == a) & hit).sum(axis=1).astype(float))
    rows = PerInstallArrays(
        np.concatenate(keys), np.concatenate(codes), ["control", "swap_1_2"],
        np.concatenate(units), np.concatenate(clicks)[:, None],
    )  # fmt: skip
    weights = rake({"age_band": age.astype(object)}, {"age_band": {"18-24": 0.5, "55-64": 0.5}})
    return rows, np.concatenate([weights, weights])


def test_reweighting_recovers_the_population_effect() -> None:
    """Over 40 simulated panels: the raw estimate is biased towards the young's larger
    effect and its interval misses the population effect; the reweighted estimate is
    centred on it and its 95% interval covers it in 35 of these 40 (at least 34 asked;
    60 seeds: 55, mean -0.1251 for -0.125: the bootstrap of a weighted ratio undercovers
    a little with 600 heavily weighted installs)."""
    covered, missed_raw, estimates = 0, 0, []
    for seed in range(40):
        rows, weights = simulate_panel(seed)
        raw = {r.arm: r for r in figure3_arrays(rows, ranks=1)}["swap_1_2"].delta[0]
        weighted_rows = PerInstallArrays(
            rows.keys, rows.arm_codes, rows.arm_names, rows.units, rows.clicks, weights
        )
        fixed = {r.arm: r for r in figure3_arrays(weighted_rows, ranks=1)}["swap_1_2"].delta[0]
        missed_raw += not raw.ci_low <= POPULATION_EFFECT <= raw.ci_high
        covered += fixed.ci_low <= POPULATION_EFFECT <= fixed.ci_high
        estimates.append(fixed.value)
        assert fixed.ci_high - fixed.ci_low > raw.ci_high - raw.ci_low  # weighting costs precision
    assert missed_raw == 40
    assert covered >= 34
    assert float(np.mean(estimates)) == pytest.approx(POPULATION_EFFECT, abs=0.003)
