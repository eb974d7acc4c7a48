"""The planner: monotone where it must be, its inverses consistent with it, a pilot's
parameters recovered, and its half-width close to a small simulation's."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from analytics.stats import planner
from analytics.stats import variance_reduction as vr
from bench.stats_validation import ARM_WEIGHTS, PaperWorld, factors, simulate

WORLD = planner.World(installs=200, days=30, clicks_per_day=4.0, ctr=0.43, delta=-0.19, ctr_sd=0.2)


def test_half_width_is_monotone() -> None:
    for adjusted in (False, True):
        for stat in ("delta", "beta"):
            hw = [planner.half_width(replace(WORLD, installs=n), stat, adjusted) for n in (50, 100, 400)]
            assert hw[0] > hw[1] > hw[2]
            hw = [planner.half_width(replace(WORLD, days=d), stat, adjusted) for d in (5, 20, 80)]
            assert hw[0] > hw[1] > hw[2]
            hw = [planner.half_width(replace(WORLD, activity_cv=c), stat, adjusted) for c in (0.0, 1.0, 2.0)]
            if stat == "delta":  # uneven installs weigh their own gaps more
                assert hw[0] < hw[1] < hw[2]
            else:  # proportional world: every install has the same beta, nothing to weigh
                assert hw[0] == pytest.approx(hw[2])
    # more between-install spread: the plain gap widens (installs' gaps differ more)...
    spread = [planner.half_width(replace(WORLD, ctr_sd=s)) for s in (0.05, 0.15, 0.25)]
    assert spread[0] < spread[1] < spread[2]
    # ...and the adjustment gains more; it never loses in an A/A world
    for s in (0.05, 0.15, 0.3):
        aa = replace(WORLD, ctr_sd=s, delta=0.0)
        assert planner.half_width(aa, adjusted=True) < planner.half_width(aa)
    # additive effects: the plain gap does not depend on the spread at all
    add = [planner.half_width(replace(WORLD, ctr_sd=s, model="additive")) for s in (0.05, 0.25)]
    assert add[0] == pytest.approx(add[1])


def test_an_arm_factor_given_replaces_the_models() -> None:
    """k_a given as it is: the proportional model's R_a / R_0 and the additive model's 1 give
    their models' variances; a slope below both (installs that click c1 more under control
    lose more of it to the swap) widens delta's interval, the spread of gaps being larger."""
    k_prop = (0.43 - 0.19) / 0.43
    for stat in ("delta", "beta"):
        for adjusted in (False, True):
            assert planner.variance(replace(WORLD, arm_factor=k_prop), stat, adjusted) == pytest.approx(
                planner.variance(WORLD, stat, adjusted)
            )
            additive = replace(WORLD, model="additive")
            assert planner.variance(replace(WORLD, arm_factor=1.0), stat, adjusted) == pytest.approx(
                planner.variance(additive, stat, adjusted)
            )
    assert planner.half_width(replace(WORLD, arm_factor=0.1)) > planner.half_width(WORLD)
    # between-install term: (k_a - 1)^2 s^2 (1 + cv^2) mu^2, by hand
    w = replace(WORLD, arm_factor=0.1)
    mu = w.units_per_install
    q0 = 0.24 * 0.76 / 0.1 + 0.43 * 0.57 / 0.4
    by_hand = (mu * q0 + mu**2 * 2 * 0.9**2 * 0.2**2) / (200 * mu**2)
    assert planner.variance(w) == pytest.approx(by_hand)


def test_aa_additive_formula_by_hand() -> None:
    """delta's plain variance with no spread of gaps: (R(1-R)/pi_a + R(1-R)/pi_0)/(N mu)."""
    w = replace(WORLD, delta=0.0, model="additive")
    mu = 120.0
    by_hand = 0.43 * 0.57 * (10 + 2.5) / (200 * mu)
    assert planner.variance(w) == pytest.approx(by_hand)


def test_inverses() -> None:
    target = 0.02
    n = planner.installs_needed(WORLD, target)
    assert planner.half_width(replace(WORLD, installs=n)) <= target
    assert planner.half_width(replace(WORLD, installs=n - 1)) > target
    days = planner.days_needed(WORLD, target)
    assert planner.half_width(replace(WORLD, days=days)) == pytest.approx(target, rel=1e-6)
    # the spread of installs' gaps is a floor only more installs lower
    assert math.isinf(planner.days_needed(replace(WORLD, installs=20), 0.01))
    # MDE at power 0.8: (1.96 + 0.84) / 1.96 of the half-width
    mde = planner.minimum_detectable_effect(WORLD)
    assert mde == pytest.approx(planner.half_width(WORLD) * (1.959964 + 0.841621) / 1.959964, rel=1e-5)
    n_power = planner.installs_needed(WORLD, 0.05, power=0.8)
    assert planner.minimum_detectable_effect(replace(WORLD, installs=n_power)) <= 0.05
    assert planner.installs_needed(WORLD, target, adjusted=True) <= n


def test_paper_world() -> None:
    w = planner.paper_world()
    assert w.units_per_install == pytest.approx(45_625 / 85)
    assert w.pooled_factor == pytest.approx((4 + 3 + 2 * 0.24 / 0.43 + 0.16 / 0.43) / 10)
    hw = planner.half_width(w)
    assert 0.02 < hw < 0.04  # well inside the 0.19 gap: the paper's study was large enough
    with pytest.raises(ValueError):
        planner.variance(replace(w, model="nope"))


def test_pilot_parameters_are_recovered() -> None:
    rng = np.random.default_rng(21)
    world = PaperWorld(installs=4000, units_per_install=60.0, kappa=3.0)
    units, clicks = simulate(rng, world)
    pilot = planner.world_from_pilot(units, clicks, ARM_WEIGHTS, arm=1, rank=0, days=20)
    assert pilot.clicks_per_day == pytest.approx(3.0, rel=0.05)
    assert pilot.ctr == pytest.approx(0.43, abs=0.01)
    assert pilot.delta == pytest.approx(-0.19, abs=0.02)
    assert pilot.activity_cv == pytest.approx(1.0, rel=0.1)
    kbar = float((ARM_WEIGHTS * factors(True)[:, 0]).sum() / ARM_WEIGHTS.sum())
    assert pilot.pooled_factor == pytest.approx(kbar, rel=0.05)
    assert pilot.ctr_sd == pytest.approx(world.ctr_sd, rel=0.12)


def test_planner_agrees_with_a_small_simulation() -> None:
    rng = np.random.default_rng(22)
    world = PaperWorld(installs=150, units_per_install=80.0)
    kbar = float((ARM_WEIGHTS * factors(True)[:, 0]).sum() / ARM_WEIGHTS.sum())
    plan = planner.World(
        installs=150,
        days=1,
        clicks_per_day=80.0,
        ctr=0.43,
        delta=-0.19,
        ctr_sd=world.ctr_sd,
        pooled_factor=kbar,
    )
    plain, adjusted = [], []
    for _ in range(300):
        units, clicks = simulate(rng, world)
        t = vr.adjusted_table(units, clicks, ARM_WEIGHTS)
        plain.append(t.plain["delta"][1, 0])
        adjusted.append(t.adjusted["delta"][1, 0])
    assert math.sqrt(planner.variance(plan)) == pytest.approx(np.std(plain), rel=0.12)
    assert math.sqrt(planner.variance(plan, adjusted=True)) == pytest.approx(np.std(adjusted), rel=0.12)
