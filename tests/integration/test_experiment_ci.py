"""The streamed CIs against an offline bootstrap of the raw events, and their 1/sqrt(n) shrinkage.

"Streamed" means what the service reports: Poisson(1)-weighted sums of the stored
per-install pieces (``report experiment`` and the ``experiment_gap`` view). The
offline reference ignores those pieces: it recounts clicks per install from the
deduplicated raw events and resamples installs 2,000 times with numpy.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from analytics.stats.bootstrap import percentile_interval, replicate_ratios, resample_installs
from collectors.simulate.extension_traffic import TrafficConfig
from tests.helpers import Service, post_study, report_json

pytestmark = pytest.mark.integration
RANKS = 3
SMALL, LARGE = "ci-small", "ci-large"


@pytest.fixture(scope="module")
def studies(service: Service) -> Service:
    """Two studies of one design, the second four times the installs and events."""
    post_study(service, TrafficConfig(experiment_id=SMALL, seed=32, installs=150), 15_000, batch=250)
    post_study(service, TrafficConfig(experiment_id=LARGE, seed=31, installs=600), 60_000, batch=250)
    return service


def offline_intervals(service: Service, experiment: str) -> dict[str, dict[str, tuple[float, float]]]:
    """95% intervals from 2,000 resamples of installs, recounted from raw first-page click events."""
    rows = service.sql(
        "SELECT install_id, arm, original_rank, element_type, page_index FROM extension_events "
        f"WHERE experiment_id = '{experiment}' AND engine = 'google' AND type = 'click' AND page_index = 0 "
        "AND identified AND dateDiff('day', install_day, toDate(received_at)) >= 4"
    )
    installs = sorted({r["install_id"] for r in rows})
    arms = sorted({r["arm"] for r in rows})
    index = {i: n for n, i in enumerate(installs)}
    units = {a: np.zeros(len(installs)) for a in arms}
    clicks = {a: np.zeros((len(installs), RANKS)) for a in arms}
    for r in rows:
        units[r["arm"]][index[r["install_id"]]] += 1
        rank = r["original_rank"]
        if r["element_type"] == "organic" and r["page_index"] == 0 and rank is not None and rank <= RANKS:
            clicks[r["arm"]][index[r["install_id"]], rank - 1] += 1

    draws = resample_installs(len(installs), 2000, seed=2026)  # [install, replicate]
    ctr = {
        a: np.column_stack([replicate_ratios(draws, clicks[a][:, i], units[a]) for i in range(RANKS)])
        for a in arms
    }
    out: dict[str, dict[str, tuple[float, float]]] = defaultdict(dict)
    for a in arms:
        for i in range(RANKS):
            out[a][f"ctr_c{i + 1}"] = percentile_interval(ctr[a][:, i])
            if a != "control":
                delta = ctr[a][:, i] - ctr["control"][:, i]
                out[a][f"delta_c{i + 1}"] = percentile_interval(delta)
                out[a][f"beta_c{i + 1}"] = percentile_interval(-delta / ctr["control"][:, i])
    return out


PAPER_BETAS = {("swap_1_2", "beta_c1"), ("swap_1_3", "beta_c1"), ("swap_2_3", "beta_c2")}
"""The distortions Figure 3 reports. Every CTR and gap is compared at every position; a
beta elsewhere is a ratio with a small denominator and a wide interval (0.2-0.6 here),
where the Monte Carlo error of a 2.5% percentile from 200 replicates, about 0.19 sigma,
exceeds 0.01 on its own: there the bounds agree to about 0.03."""


def test_streamed_ci_matches_offline_2000_resample_bootstrap(studies: Service) -> None:
    report = {a["arm"]: a for a in report_json(studies, LARGE, "--ranks", str(RANKS))["arms"]}
    offline = offline_intervals(studies, LARGE)
    assert set(report) == set(offline)
    compared = 0
    for arm, stats in offline.items():
        for name, (low, high) in stats.items():
            if name.startswith("beta") and (arm, name) not in PAPER_BETAS:
                continue
            got = (report[arm][f"{name}_ci_low"], report[arm][f"{name}_ci_high"])
            assert got == pytest.approx((low, high), abs=0.01), (arm, name, got, (low, high))
            compared += 1
    assert compared == 6 * RANKS + 5 * RANKS + len(PAPER_BETAS)  # ctr: every arm; delta: the other five

    # The analyst view assembles the same intervals in SQL from the same stored pieces.
    view = studies.sql(
        f"SELECT * FROM experiment_gap(experiment = '{LARGE}', engine = 'google', subset = 'all', "
        "since = '2000-01-01', until = '2100-01-01', burn_in_days = 4, seed = 0, baseline = 'control') "
        f"WHERE position <= {RANKS}"
    )
    assert len(view) == 5 * RANKS
    for row in view:
        low, high = offline[row["arm"]][f"delta_c{row['position']}"]
        assert (row["delta_ci_low"], row["delta_ci_high"]) == pytest.approx((low, high), abs=0.01)


def test_ci_width_shrinks_as_one_over_sqrt_n(studies: Service) -> None:
    """Four times the installs and units: intervals about half as wide.

    Each width is itself estimated from 200 replicates (relative error about 7%), and each
    study's installs are a draw of their own (the simulator's installs differ in activity,
    position sensitivity and commercial propensity, issue 37), so a single ratio of two
    widths is noisy at well over 10%: with these seeds swap_1_2's delta_1 and beta_1 are
    1.33 and 1.38 times sqrt(n ratio). The scaling is checked on the geometric mean over ten
    statistics (within 20% of sqrt(n ratio); 1.04 here), and each single ratio within a
    noise band of 45% (35% before the heterogeneous installs).
    """
    small = {a["arm"]: a for a in report_json(studies, SMALL, "--ranks", "2")["arms"]}
    large = {a["arm"]: a for a in report_json(studies, LARGE, "--ranks", "2")["arms"]}
    checks = [("control", "ctr_c1"), ("control", "ctr_c2")]
    checks += [(arm, f"{s}_c1") for arm in ("swap_1_2", "swap_1_3") for s in ("ctr", "delta", "beta")]
    checks += [("swap_2_3", "delta_c2"), ("swap_2_3", "beta_c2")]
    relative = []
    for arm, name in checks:
        width_small = small[arm][f"{name}_ci_high"] - small[arm][f"{name}_ci_low"]
        width_large = large[arm][f"{name}_ci_high"] - large[arm][f"{name}_ci_low"]
        units_ratio = large[arm]["units"] / small[arm]["units"]
        if not name.startswith("ctr"):  # a gap also carries the control arm's variance
            units_ratio = min(units_ratio, large["control"]["units"] / small["control"]["units"])
        observed = width_small / width_large
        relative.append(observed / units_ratio**0.5)
        assert observed == pytest.approx(units_ratio**0.5, rel=0.45), (arm, name, observed, units_ratio)
    assert float(np.exp(np.mean(np.log(relative)))) == pytest.approx(1.0, rel=0.2), relative
