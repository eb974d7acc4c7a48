"""A position-based click model calibrated to the Powermeter figures (docs/method.md,
"Reference values from the papers").

Each unit is one click: its outcome is an organic result by its *original* rank,
an ad, the shopping box, or something else. Arms move click mass between the
results they swap, and hidden elements give their share back to the rest.
"""

from __future__ import annotations

CONTROL_ORGANIC = (0.43, 0.17, 0.10, 0.06, 0.045, 0.035, 0.025, 0.02, 0.015, 0.01)
OTHER_SHARE = 1.0 - sum(CONTROL_ORGANIC)
AD_SHARE = 0.30  # share of clicks on ads where ads are shown
BOX_SHARE = 0.224  # share of clicks on the shopping box where it is shown

# Rank pairs each arm swaps, and the CTR it moves from the first to the second.
SWAP_EFFECTS: dict[str, tuple[int, int, float]] = {
    "swap_1_2": (1, 2, 0.19),
    "swap_1_3": (1, 3, 0.27),
    "swap_2_3": (2, 3, 0.06),
}
SWAP_DAMPING_WITH_BOX = 0.17 / 0.19
"""A shown shopping box draws attention from the organic list, so a swap moves less click
mass (0.17 instead of 0.19 for swap 1-2). Together with ads on most box pages
(``TrafficConfig.p_ads_given_box``) this reproduces Figure 5's box-subset distortions of
c1: add box 0.224, add ads and box 0.44, swap plus box 0.53, swap plus ads and box 0.66."""

ARMS = (
    "control",
    "swap_1_2",
    "swap_1_3",
    "swap_2_3",
    "hide_ads_box",
    "hide_ads_box_swap_1_2",
    "hide_box",
)


def _swap_of(arm: str) -> str | None:
    for name in SWAP_EFFECTS:
        if arm.endswith(name):
            return name
    return None


def display_rank(arm: str, original_rank: int) -> int:
    """Where the arm shows the result the engine ranked ``original_rank``: a swap arm shows
    the two results it swaps at each other's place, every other arm leaves the order."""
    swap = _swap_of(arm)
    if swap is None:
        return original_rank
    a, b, _ = SWAP_EFFECTS[swap]
    return {a: b, b: a}.get(original_rank, original_rank)


def click_distribution(arm: str, ads_shown: bool, box_shown: bool) -> dict[str, float]:
    """Probabilities of each outcome (``c1``..``c10``, ``ad``, ``shopping_box``, ``other``)."""
    organic = list(CONTROL_ORGANIC)
    swap = _swap_of(arm)
    if swap:
        a, b, moved = SWAP_EFFECTS[swap]
        if box_shown:
            moved *= SWAP_DAMPING_WITH_BOX
        organic[a - 1] -= moved
        organic[b - 1] += moved
    hides_ads = "ads" in arm
    hides_box = "box" in arm and arm.startswith("hide")
    ad = AD_SHARE if ads_shown and not hides_ads else 0.0
    box = BOX_SHARE if box_shown and not hides_box else 0.0
    scale = (1 - ad) * (1 - box)
    dist = {f"c{i + 1}": p * scale for i, p in enumerate(organic)}
    dist["other"] = OTHER_SHARE * scale
    dist["ad"] = ad * (1 - box)
    dist["shopping_box"] = box
    return dist
