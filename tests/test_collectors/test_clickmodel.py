from __future__ import annotations

import itertools

import pytest

from collectors.simulate.clickmodel import ARMS, click_distribution


@pytest.mark.parametrize("arm", ARMS)
@pytest.mark.parametrize(("ads", "box"), [(False, False), (True, False), (False, True), (True, True)])
def test_distributions_sum_to_one(arm: str, ads: bool, box: bool) -> None:
    dist = click_distribution(arm, ads, box)
    assert sum(dist.values()) == pytest.approx(1.0)
    assert min(dist.values()) >= 0


def test_calibrated_to_the_powermeter_figures() -> None:
    control = click_distribution("control", False, False)
    assert control["c1"] == pytest.approx(0.43)
    assert click_distribution("swap_1_2", False, False)["c1"] - control["c1"] == pytest.approx(-0.19)
    assert click_distribution("swap_1_3", False, False)["c1"] - control["c1"] == pytest.approx(-0.27)
    assert click_distribution("swap_2_3", False, False)["c2"] - control["c2"] == pytest.approx(-0.06)
    assert click_distribution("control", False, True)["shopping_box"] == pytest.approx(0.224)
    with_ads = click_distribution("control", True, False)
    assert with_ads["ad"] == pytest.approx(0.30)
    assert click_distribution("hide_ads_box", True, True)["ad"] == 0


def test_generated_events_are_valid() -> None:
    from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
    from ingest.validation import validate_batch

    events = next(ExtensionTraffic(TrafficConfig(seed=9)).batches(500, 500))
    accepted, rejected = validate_batch(events)
    assert not rejected and len(accepted) == 500


def test_same_seed_same_traffic_but_fresh_event_ids() -> None:
    from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig

    a = next(ExtensionTraffic(TrafficConfig(seed=3)).batches(50, 50))
    b = next(ExtensionTraffic(TrafficConfig(seed=3)).batches(50, 50))
    strip = [{k: v for k, v in e.items() if k not in ("event_id", "sent_at")} for e in a]
    assert strip == [{k: v for k, v in e.items() if k not in ("event_id", "sent_at")} for e in b]
    assert not {e["event_id"] for e in a} & {e["event_id"] for e in b}


def test_box_subset_calibrated_to_figure5() -> None:
    """c1 distortions on pages with a box (ads on 93% of them), against the hide arms."""
    from collectors.simulate.extension_traffic import TrafficConfig

    p_ads = TrafficConfig().p_ads_given(box=True)

    def c1(arm: str) -> float:
        return sum(
            (p_ads if ads else 1 - p_ads) * click_distribution(arm, ads, True)["c1"] for ads in (False, True)
        )

    def beta(arm: str, baseline: str) -> float:
        return 1 - c1(arm) / c1(baseline)

    assert beta("control", "hide_box") == pytest.approx(0.23, abs=0.01)
    assert beta("control", "hide_ads_box") == pytest.approx(0.44, abs=0.01)
    assert beta("swap_1_2", "hide_box") == pytest.approx(0.53, abs=0.01)
    assert beta("swap_1_2", "hide_ads_box") == pytest.approx(0.66, abs=0.01)


def test_page_mix_keeps_the_overall_ads_share() -> None:
    from collectors.simulate.extension_traffic import TrafficConfig

    config = TrafficConfig()
    overall = config.p_box * config.p_ads_given(True) + (1 - config.p_box) * config.p_ads_given(False)
    assert overall == pytest.approx(config.p_ads)


def test_display_rank_is_where_the_arm_shows_the_result() -> None:
    """A swap arm shows the results it swaps at each other's place (the paper's c_i is the
    result the engine ranked i; the page shows it elsewhere); other arms keep the order."""
    from collectors.simulate.clickmodel import display_rank

    assert [display_rank("swap_1_2", r) for r in (1, 2, 3)] == [2, 1, 3]
    assert [display_rank("swap_1_3", r) for r in (1, 2, 3)] == [3, 2, 1]
    assert [display_rank("swap_2_3", r) for r in (1, 2, 3, 4)] == [1, 3, 2, 4]
    assert [display_rank("hide_ads_box_swap_1_2", r) for r in (1, 2)] == [2, 1]
    assert all(
        display_rank(arm, r) == r for arm in ("control", "hide_box", "hide_ads_box") for r in range(1, 11)
    )


def test_simulated_clicks_carry_the_display_rank_of_their_arm() -> None:
    from collectors.simulate.clickmodel import display_rank
    from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig

    clicks = [
        e
        for e in itertools.islice(ExtensionTraffic(TrafficConfig(seed=4)).events(), 20_000)
        if e["type"] == "click" and e.get("element_type") == "organic"
    ]
    swapped = [e for e in clicks if e["arm"] == "swap_1_2" and e["original_rank"] in (1, 2)]
    assert swapped and all(e["display_rank"] == 3 - e["original_rank"] for e in swapped)
    assert all(e["display_rank"] == display_rank(e["arm"], e["original_rank"]) for e in clicks)
