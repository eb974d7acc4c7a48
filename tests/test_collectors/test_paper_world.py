"""The simulator's world (collectors/simulate/paper_world.py, planted.py): the paper's numbers
are what a perfect estimator converges to on the simulated panel, and the generator draws
from that same expectation."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from datetime import date

import pytest

from collectors.simulate import paper_world as pw
from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig, with_registered
from collectors.simulate.planted import InstallTraits, cell_weights, expected_shares

SEVEN_ARMS = (
    ("control", 4.0),
    ("swap_1_2", 1.0),
    ("swap_1_3", 1.0),
    ("swap_2_3", 1.0),
    ("hide_box", 1.0),
    ("hide_ads_box", 1.0),
    ("hide_ads_box_swap_1_2", 1.0),
)
PAPER = TrafficConfig(arms=SEVEN_ARMS, engine_arms={"bing": ["control", "swap_1_2"]})
"""docs/reproducing.md's seven-arm experiment."""


def planted_of(traffic: ExtensionTraffic) -> dict[tuple[str, str, str, str, str, int], float]:
    return {(p.engine, p.subset, p.baseline, p.arm, p.quantity, p.rank): p.value for p in traffic.planted()}


@pytest.mark.parametrize("arm", [a for a, _ in SEVEN_ARMS])
@pytest.mark.parametrize(("ads", "box"), [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("behaviour", pw.BEHAVIOURS)
def test_distributions_sum_to_one(arm: str, ads: bool, box: bool, behaviour: pw.Behaviour) -> None:
    world = ExtensionTraffic(PAPER).world
    for engine, ssr2, n_class in itertools.product(("google", "bing"), (False, True), range(5)):
        dist = pw.outcome_distribution(world, engine, behaviour, arm, ads, box, ssr2, ssr2, n_class)
        assert set(dist) == set(pw.OUTCOMES)
        assert sum(dist.values()) == pytest.approx(1.0)
        assert min(dist.values()) >= 0
        assert (dist["ad"] > 0) == (ads and "ads" not in arm)
        assert (dist["shopping_box"] > 0) == (box and not arm.startswith("hide"))


@pytest.mark.parametrize(("seed", "installs"), [(1, 500), (2, 500), (7, 85), (11, 2000)])
def test_planted_values_are_the_papers(seed: int, installs: int) -> None:
    """Figure 3 (all pages, Google and Bing) and Figure 5 (box subset) to 0.005, whatever the
    panel drawn: the world is calibrated on its installs."""
    traffic = ExtensionTraffic(
        TrafficConfig(seed=seed, installs=installs, arms=PAPER.arms, engine_arms=PAPER.engine_arms)
    )
    planted = planted_of(traffic)
    for t in pw.PAPER_TARGETS:
        got = planted[(t.engine, t.subset, t.baseline, t.arm, t.quantity, t.rank)]
        assert got == pytest.approx(t.value, abs=0.005), t
    # and the shares of §5.2
    weights = cell_weights(traffic.world, traffic.traits, ["google"])
    assert expected_shares(traffic.world, weights, "google", "control", "box")[
        "shopping_box"
    ] == pytest.approx(pw.BOX_CLICK_SHARE, abs=1e-4)
    assert expected_shares(traffic.world, weights, "google", "control", "ads")["ad"] == pytest.approx(
        pw.AD_CLICK_SHARE, abs=1e-4
    )


def test_every_planted_row_is_stored_shape() -> None:
    """ctr for every arm and rank 1..6 of subset all per engine, delta and beta for every other
    arm; subset box against both hide baselines, ranks 1..3 (Bing runs neither)."""
    planted = ExtensionTraffic(PAPER).planted()
    keys = Counter((p.engine, p.subset, p.baseline, p.quantity) for p in planted)
    assert keys[("google", "all", "control", "ctr")] == 7 * 6
    assert keys[("google", "all", "control", "delta")] == keys[("google", "all", "control", "beta")] == 6 * 6
    assert keys[("bing", "all", "control", "ctr")] == 2 * 6
    assert keys[("bing", "all", "control", "beta")] == 6
    for baseline in ("hide_box", "hide_ads_box"):
        assert keys[("google", "box", baseline, "ctr")] == 7 * 3
        assert keys[("google", "box", baseline, "delta")] == 6 * 3
    assert not any(p.engine == "bing" and p.subset == "box" for p in planted)
    assert all(math.isfinite(p.value) and 1 <= p.rank <= 10 for p in planted)


def test_paper_shape_of_figure3_and_figure6() -> None:
    """What the text says of the bars it gives no number for: the result shown first gets
    most clicks, c1 more than a promoted c2 or c3 (§5.1), c2 gains under swap 1-3; Figure 6:
    with a specialized block between c1 and c2 about the same delta and a larger beta, beta
    grows with the number of candidate results."""
    traffic = ExtensionTraffic(PAPER)
    planted = planted_of(traffic)

    def ctr(arm: str, rank: int) -> float:
        return planted[("google", "all", "control", arm, "ctr", rank)]

    assert ctr("swap_1_2", 2) > ctr("swap_1_2", 1) and ctr("swap_1_3", 3) > ctr("swap_1_3", 1)
    assert ctr("control", 1) > ctr("swap_1_2", 2) and ctr("control", 1) > ctr("swap_1_3", 3)
    assert ctr("swap_1_3", 2) > ctr("control", 2)
    weights = cell_weights(traffic.world, traffic.traits, ["google"])

    def delta_beta(subset: str) -> tuple[float, float]:
        c = expected_shares(traffic.world, weights, "google", "control", subset)["c1"]
        s = expected_shares(traffic.world, weights, "google", "swap_1_2", subset)["c1"]
        return s - c, (c - s) / c

    (d_ssr, b_ssr), (d_no, b_no) = delta_beta("ssr_c1_c2"), delta_beta("no_ssr_c1_c2")
    assert d_ssr == pytest.approx(d_no, abs=0.03) and b_ssr > b_no + 0.03
    m = traffic.world.engine("google")
    per_class = [
        1 - (1 - m.rho_of(1, 2)) ** (pw.RHO_BEHAVIOUR["position"] * pw.N_CLASS_RHO[k]) for k in range(5)
    ]
    assert per_class == sorted(per_class) and per_class[-1] > per_class[0] + 0.1


def test_monte_carlo_agrees_with_the_expectation() -> None:
    """The generator's kept clicks: per page, the probability it was drawn with averages to the
    planted CTR (the page mix is the expectation's), and the clicks agree with it."""
    traffic = ExtensionTraffic(
        TrafficConfig(
            seed=21, installs=300, arms=SEVEN_ARMS, emit_views=False, p_click=1.0, engines=(("google", 1.0),)
        )
    )
    planted = planted_of(traffic)
    kept = {i["install_id"] for i, t in zip(traffic.installs, traffic.traits, strict=True) if t.kept}
    units: Counter[str] = Counter()
    hits: Counter[tuple[str, int]] = Counter()
    for e in itertools.islice(traffic.events(), 120_000):
        if e["identified"] and e["install_id"] in kept:
            units[e["arm"]] += 1
            if e["element_type"] == "organic":
                hits[e["arm"], e["original_rank"]] += 1
    assert sum(units.values()) > 90_000
    for arm, _ in SEVEN_ARMS:
        for rank in (1, 2, 3):
            want = planted[("google", "all", "control", arm, "ctr", rank)]
            got = hits[arm, rank] / units[arm]
            se = math.sqrt(want * (1 - want) / units[arm])
            assert abs(got - want) < 4.5 * se, (arm, rank, got, want)


def test_page_mix_of_the_expectation() -> None:
    """The share of kept units on box pages is what the expectation weighs (3.2% of pages on
    Google, more for commercial installs)."""
    traffic = ExtensionTraffic(
        TrafficConfig(seed=4, installs=400, emit_views=False, p_click=1.0, engines=(("google", 1.0),))
    )
    weights = cell_weights(traffic.world, traffic.traits, ["google"])
    cells = weights.of("google")
    want = sum(w0 for (_, box), w0, _ in cells if box) / sum(w0 for _, w0, _ in cells)
    assert want == pytest.approx(pw.BOX_PAGE_SHARE, abs=0.006)
    kept = {i["install_id"] for i, t in zip(traffic.installs, traffic.traits, strict=True) if t.kept}
    pages = [e for e in itertools.islice(traffic.events(), 60_000) if e["install_id"] in kept]
    got = sum(e["box"] != "none" for e in pages) / len(pages)
    assert got == pytest.approx(want, abs=4.5 * math.sqrt(want * (1 - want) / len(pages)))


def test_generated_events_are_valid() -> None:
    from ingest.validation import validate_batch

    traffic = ExtensionTraffic(TrafficConfig(seed=9, p_first_page=0.8))
    events = next(traffic.batches(500, 500)) + traffic.profiles()
    accepted, rejected = validate_batch(events)
    assert not rejected and len(accepted) == 500 + 500


def test_install_profiles_follow_figure9_margins() -> None:
    profiles = ExtensionTraffic(TrafficConfig(seed=3, installs=2000)).profiles()
    assert len({p["install_id"] for p in profiles}) == 2000
    given = [p for p in profiles if p["consent"] == "given"]
    assert 0.9 < len(given) / len(profiles) < 1
    ages = Counter(p["age_band"] for p in given)
    for band, share in pw.AGE_BANDS.items():
        assert ages[band] / len(given) == pytest.approx(share, abs=0.04)
    english = sum("en" in p["search_languages"] for p in given) / len(given)
    assert english == pytest.approx(pw.SEARCH_LANGUAGES["en"], abs=0.04)
    assert all(p["search_languages"] for p in given)


def test_unidentified_and_later_pages_are_unmodified_control_pages() -> None:
    """As the extension reports them: later result pages and pages it cannot identify are
    left as they are and sent with arm control, so the report drops them whatever the arm."""
    traffic = ExtensionTraffic(TrafficConfig(seed=6, p_first_page=0.7, p_unidentified=0.1))
    events = list(itertools.islice(traffic.events(), 5_000))
    unidentified = [e for e in events if not e["identified"]]
    assert unidentified and all(e["arm"] == "control" for e in unidentified)
    assert all(not e["identified"] for e in events if e["page_index"] > 0)
    assert all(e.get("display_rank") == e.get("original_rank") for e in unidentified)


def test_same_seed_same_traffic_but_fresh_event_ids() -> None:
    a = next(ExtensionTraffic(TrafficConfig(seed=3)).batches(50, 50))
    b = next(ExtensionTraffic(TrafficConfig(seed=3)).batches(50, 50))
    strip = [{k: v for k, v in e.items() if k not in ("event_id", "sent_at")} for e in a]
    assert strip == [{k: v for k, v in e.items() if k not in ("event_id", "sent_at")} for e in b]
    assert not {e["event_id"] for e in a} & {e["event_id"] for e in b}


def test_follows_the_registered_experiment() -> None:
    """Arms, weights, engine arms and salt as registered: Bing only control and swap_1_2, and
    the assignment is the registry's (so SRM holds)."""
    registered = {
        "experiment_id": "paper",
        "engines": ["google", "bing"],
        "arms": dict(SEVEN_ARMS),
        "engine_arms": {"bing": ["control", "swap_1_2"]},
        "salt": "paper-salt-01",
        "burn_in_days": 5,
    }
    config = with_registered(TrafficConfig(experiment_id="paper", seed=8), registered)
    assert dict(config.engines) == {"google": 0.95, "bing": 0.05}
    traffic = ExtensionTraffic(config)
    assert traffic.arms_by_engine()["bing"] == ["control", "swap_1_2"]
    events = [
        e for e in itertools.islice(traffic.events(), 30_000) if e["type"] == "click" and e["identified"]
    ]
    assert {e["arm"] for e in events if e["engine"] == "bing"} == {"control", "swap_1_2"}
    google = Counter(e["arm"] for e in events if e["engine"] == "google")
    assert set(google) == {a for a, _ in SEVEN_ARMS}
    total = sum(google.values())
    for arm, weight in SEVEN_ARMS:
        assert google[arm] / total == pytest.approx(weight / 10, abs=0.02)
    for inst, traits in zip(traffic.installs, traffic.traits, strict=True):
        age = (traffic.config.today - date.fromisoformat(inst["install_day"])).days
        assert age >= 5 if traits.kept else 0 <= age < 5
    # the public config's form (normalised weights as a list) gives the same arms
    public = {**registered, "arms": [{"arm": a, "weight": w / 10} for a, w in SEVEN_ARMS]}
    public["engine_arms"] = {"bing": [{"arm": "control", "weight": 0.8}, {"arm": "swap_1_2", "weight": 0.2}]}
    assert with_registered(TrafficConfig(), public).engine_arms == {"bing": ["control", "swap_1_2"]}


def test_display_rank_is_where_the_arm_shows_the_result() -> None:
    """A swap arm shows the results it swaps at each other's place (the paper's c_i is the
    result the engine ranked i; the page shows it elsewhere); other arms keep the order."""
    assert [pw.display_rank("swap_1_2", r) for r in (1, 2, 3)] == [2, 1, 3]
    assert [pw.display_rank("swap_1_3", r) for r in (1, 2, 3)] == [3, 2, 1]
    assert [pw.display_rank("swap_2_3", r) for r in (1, 2, 3, 4)] == [1, 3, 2, 4]
    assert [pw.display_rank("hide_ads_box_swap_1_2", r) for r in (1, 2)] == [2, 1]
    assert all(
        pw.display_rank(arm, r) == r for arm in ("control", "hide_box", "hide_ads_box") for r in range(1, 11)
    )
    assert pw.parse_arm("swap_3_1") is None and pw.parse_arm("shuffle") is None
    assert pw.parse_arm("hide_ads_swap_2_5") == pw.Plan(hide_ads=True, swap=(2, 5))


def test_simulated_clicks_carry_the_display_rank_of_their_arm() -> None:
    clicks = [
        e
        for e in itertools.islice(ExtensionTraffic(TrafficConfig(seed=4)).events(), 20_000)
        if e["type"] == "click" and e.get("element_type") == "organic"
    ]
    swapped = [e for e in clicks if e["arm"] == "swap_1_2" and e["original_rank"] in (1, 2)]
    assert swapped and all(e["display_rank"] == 3 - e["original_rank"] for e in swapped)
    assert all(e["display_rank"] == pw.display_rank(e["arm"], e["original_rank"]) for e in clicks)


def test_install_traits_weigh_the_expectation() -> None:
    """Only installs past the burn-in count, each by its activity."""
    world = pw.UNCALIBRATED
    a = InstallTraits(activity=1.0, position_share=1.0, commercial=1.0, kept=True)
    b = InstallTraits(activity=3.0, position_share=0.0, commercial=1.0, kept=True)
    young = InstallTraits(activity=50.0, position_share=0.5, commercial=1.0, kept=False)
    weights = cell_weights(world, [a, b, young], ["google"])
    total = sum(w0 for _, w0, _ in weights.of("google"))
    position = sum(w1 for _, _, w1 in weights.of("google"))
    assert total == pytest.approx(4.0) and position == pytest.approx(1.0)


def test_panels_without_box_pages_or_kept_installs_still_work() -> None:
    """No box pages: the box subset has no number and is left out; no install past the
    burn-in: the world is calibrated on all of them, and the traffic is drawn."""
    no_box = ExtensionTraffic(TrafficConfig(seed=2, installs=30, p_box=0.0, arms=SEVEN_ARMS)).planted()
    assert no_box and not any(p.subset == "box" for p in no_box)
    assert all(math.isfinite(p.value) for p in no_box)
    young = ExtensionTraffic(TrafficConfig(seed=2, installs=5, p_new_install=1.0))
    assert not any(t.kept for t in young.traits)
    assert len(list(itertools.islice(young.events(), 200))) == 200


def test_arms_the_model_cannot_parse_change_nothing() -> None:
    """A load test may name arms anything (``constructor``): they are sent as assigned, and
    planted as control is."""
    arms = (("control", 1.0), ("constructor", 1.0))
    traffic = ExtensionTraffic(TrafficConfig(seed=5, installs=50, arms=arms, engines=(("google", 1.0),)))
    sent = {e["arm"] for e in itertools.islice(traffic.events(), 2_000) if e["identified"]}
    assert sent == {"control", "constructor"}
    planted = planted_of(traffic)
    for rank in range(1, 7):
        assert planted[("google", "all", "control", "constructor", "ctr", rank)] == pytest.approx(
            planted[("google", "all", "control", "control", "ctr", rank)]
        )
