"""The Powermeter paper's world: the values the simulator plants, and the click model that
plants them (docs/method.md, "Reference values from the papers"). Pure: no I/O, no sampling.

Targets are read off the paper (`papers/000_7c9ca5cb83061f8a.txt`): Figure 3 (all pages,
Google and Bing), Figures 4 and 5 (pages with a shopping box) and §5.2's shares. The bars of
Figure 3 the text gives no number for (c3..c6, the promoted results) are the model's, made to
agree with what §5.1 says of them; the paper's text holds no bar heights to read them from.
Figure 9's onboarding margins are assumed, plausible for the panel §4.3 describes: the text
has no number for them either (only the figure, which is not in the text).

The click model (``outcome_distribution``). Every unit is one click (click mode); its outcome
is an organic result by its *original* rank ``c1..c10``, an ``ad``, the ``shopping_box``, a
specialized block (``ssr``) or ``other``. For a page of one type (engine, ads shown, box shown,
a specialized block at main-column position 2, the "About N results" class) and one behaviour:

1. base organic shares ``c1`` (engine level x behaviour x [0.8 with a specialized block at 2]),
   ``c2``, and a tail ``c3..c10`` that takes what ``other`` and ``ssr`` leave;
2. a swap ``swap_i_j`` moves the share ``1 - (1 - rho_ij) ** e`` of ``c_i``'s clicks down with
   it: to ``c_j``, and with a gap of two or more ``SPILL`` of it to the results in between. The
   exponent ``e`` is the behaviour's position sensitivity x the candidate class's x 1.2 with a
   specialized block between c1 and c2 (for swaps of c1) x ``box_rho_exp`` with a box shown;
3. shown ads multiply each outcome by ``g_ads_1`` at display position 1, ``g_ads_rest``
   elsewhere, and take the rest; a shown box does the same with ``g_box_1``, ``g_box_rest``.

Per-install heterogeneity: an install's clicks are a mixture of two behaviours, position-driven
(``position``) with probability ``position_share`` ~ Beta(3, 2), else relevance-driven
(``relevance``); its commercial propensity ~ 2 x Beta(2, 2) scales its chances of ads and a
box; its activity ~ Gamma(1.5) weights how many of the panel's searches are its own. Being a
mixture, the expectation is linear in each install's ``position_share``: ``planted.py`` sums
it exactly over the installs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

Behaviour = Literal["position", "relevance"]
BEHAVIOURS: tuple[Behaviour, ...] = ("position", "relevance")
OUTCOMES = (*(f"c{r}" for r in range(1, 11)), "ssr", "other", "ad", "shopping_box")

# --------------------------------------------------------------------------- the paper's numbers

GOOGLE_CONTROL_C1 = 0.43
"""Figure 3 (all Google queries), §5.1: "decreases average click through rate of c1 from 43%"."""
GOOGLE_SWAP_1_2_C1 = 0.24
"""§5.1: "... to 24%, resulting in delta_1(a1) = -0.19 and ... beta = 0.44"."""
GOOGLE_SWAP_1_2_DELTA_1 = -0.19
GOOGLE_SWAP_1_2_BETA_1 = 0.44
GOOGLE_SWAP_1_3_DELTA_1 = -0.27
"""Figure 3 middle: delta_1 = -0.27, beta = 0.63."""
GOOGLE_SWAP_1_3_BETA_1 = 0.63
GOOGLE_SWAP_2_3_DELTA_2 = -0.06
"""Figure 3 right: delta_2 = -0.06, beta = 0.39."""
GOOGLE_SWAP_2_3_BETA_2 = 0.39
GOOGLE_CONTROL_C2 = -GOOGLE_SWAP_2_3_DELTA_2 / GOOGLE_SWAP_2_3_BETA_2
"""0.154: the control CTR of c2 that delta_2 and beta_2 of swap 2-3 imply."""
BING_SWAP_1_2_DELTA_1 = -0.26
"""Figure 3 (all Bing queries): delta_1 = -0.26, beta = 0.53."""
BING_SWAP_1_2_BETA_1 = 0.53
BING_CONTROL_C1 = -BING_SWAP_1_2_DELTA_1 / BING_SWAP_1_2_BETA_1
"""0.491: Bing's control CTR of c1 that its delta_1 and beta_1 imply."""

BOX_ADD_BOX_BETA_1 = 0.23
"""Figure 5's table (pages with a box): add box, control against hide_box."""
BOX_ADD_ADS_BOX_BETA_1 = 0.44
"""add ads/box: control against hide_ads_box."""
BOX_SWAP_ADD_BOX_BETA_1 = 0.53
"""swap + add box: swap_1_2 against hide_box (implied by the other three: 0.5325)."""
BOX_SWAP_ADD_ADS_BOX_BETA_1 = 0.66
"""swap + add ads/box: swap_1_2 against hide_ads_box."""

BOX_CLICK_SHARE = 0.224
"""§5.2 / Figure 4: boxes absorb 22.4% of the clicks where present (control)."""
AD_CLICK_SHARE = 0.30
"""§5.2: ads absorb close to 30% of the clicks where present (control)."""
BOX_PAGE_SHARE = 0.032
"""§5.2: the box is present on 3.2% of the events."""


@dataclass(frozen=True)
class Target:
    """One value the paper reports, as the report names it."""

    engine: str
    subset: str
    baseline: str
    arm: str
    quantity: Literal["ctr", "delta", "beta"]
    rank: int
    value: float
    source: str


PAPER_TARGETS: tuple[Target, ...] = (
    Target("google", "all", "control", "control", "ctr", 1, GOOGLE_CONTROL_C1, "Fig. 3, §5.1"),
    Target("google", "all", "control", "swap_1_2", "ctr", 1, GOOGLE_SWAP_1_2_C1, "Fig. 3, §5.1"),
    Target("google", "all", "control", "swap_1_2", "delta", 1, GOOGLE_SWAP_1_2_DELTA_1, "Fig. 3"),
    Target("google", "all", "control", "swap_1_2", "beta", 1, GOOGLE_SWAP_1_2_BETA_1, "Fig. 3"),
    Target("google", "all", "control", "swap_1_3", "delta", 1, GOOGLE_SWAP_1_3_DELTA_1, "Fig. 3"),
    Target("google", "all", "control", "swap_1_3", "beta", 1, GOOGLE_SWAP_1_3_BETA_1, "Fig. 3"),
    Target("google", "all", "control", "swap_2_3", "delta", 2, GOOGLE_SWAP_2_3_DELTA_2, "Fig. 3"),
    Target("google", "all", "control", "swap_2_3", "beta", 2, GOOGLE_SWAP_2_3_BETA_2, "Fig. 3"),
    Target("bing", "all", "control", "swap_1_2", "delta", 1, BING_SWAP_1_2_DELTA_1, "Fig. 3 (Bing)"),
    Target("bing", "all", "control", "swap_1_2", "beta", 1, BING_SWAP_1_2_BETA_1, "Fig. 3 (Bing)"),
    Target("google", "box", "hide_box", "control", "beta", 1, BOX_ADD_BOX_BETA_1, "Fig. 5"),
    Target("google", "box", "hide_ads_box", "control", "beta", 1, BOX_ADD_ADS_BOX_BETA_1, "Fig. 5"),
    Target("google", "box", "hide_box", "swap_1_2", "beta", 1, BOX_SWAP_ADD_BOX_BETA_1, "Fig. 5"),
    Target("google", "box", "hide_ads_box", "swap_1_2", "beta", 1, BOX_SWAP_ADD_ADS_BOX_BETA_1, "Fig. 5"),
)
"""What ``planted.calibrate`` makes the panel's exact expectation equal (to 0.005)."""

# --------------------------------------------------------------------------- Figure 9 margins

AGE_BANDS: dict[str, float] = {
    "18-24": 0.15,
    "25-34": 0.40,
    "35-44": 0.18,
    "45-54": 0.11,
    "55-64": 0.10,
    "65+": 0.06,
}
"""Figure 9 left (age): assumed (the text gives no numbers), a panel of mostly younger adults."""
SEARCH_LANGUAGES: dict[str, float] = {"en": 0.85, "de": 0.62, "fr": 0.12, "es": 0.08, "it": 0.06, "nl": 0.03}
"""Figure 9 right (languages of online search, several per person): assumed (the text gives no
numbers), the share of participants naming each language. An install names at least one."""
COUNTRIES: dict[str, float] = {"DE": 0.70, "CH": 0.10, "US": 0.06, "FR": 0.05, "IT": 0.04, "NL": 0.05}
"""Not in Figure 9 (the paper has no country): assumed, for the raking dimension."""
SEARCH_FREQUENCIES: dict[str, float] = {
    "several_daily": 0.60,
    "daily": 0.28,
    "weekly": 0.10,
    "less_often": 0.02,
}
"""Not in Figure 9: assumed, for the raking dimension."""
P_CONSENT_DECLINED = 0.03
"""Installs whose onboarding declined the questions (they answer nothing)."""

# --------------------------------------------------------------------------- arms


@dataclass(frozen=True)
class Plan:
    """What an arm does to the page (``extension/lib/arms.js``: ``parseArm``)."""

    hide_ads: bool = False
    hide_box: bool = False
    swap: tuple[int, int] | None = None


ARM_PATTERN = re.compile(r"^(?:(hide_ads_box|hide_box|hide_ads)(?:_(?=swap)|$))?(?:swap_([1-9])_([1-9]))?$")


@lru_cache(maxsize=4096)
def parse_arm(arm: str) -> Plan | None:
    """The arm's plan, or None for a name the extension does not know (it leaves such pages
    unmodified and unidentified)."""
    if arm == "control":
        return Plan()
    m = ARM_PATTERN.match(arm)
    if not m or (not m[1] and not m[2]):
        return None
    swap = (int(m[2]), int(m[3])) if m[2] else None
    if swap and swap[0] >= swap[1]:
        return None
    return Plan(
        hide_ads=m[1] in ("hide_ads_box", "hide_ads"),
        hide_box=m[1] in ("hide_ads_box", "hide_box"),
        swap=swap,
    )


def display_rank(arm: str, original_rank: int) -> int:
    """Where the arm shows the result the engine ranked ``original_rank``."""
    plan = parse_arm(arm)
    if plan is None or plan.swap is None:
        return original_rank
    i, j = plan.swap
    return {i: j, j: i}.get(original_rank, original_rank)


# --------------------------------------------------------------------------- the model


@dataclass(frozen=True)
class EngineModel:
    c1: float
    """Base share of c1 (no ads, no box, no specialized block at 2; calibrated)."""
    c2: float
    tail: tuple[float, ...]
    """Relative shape of c3..c10 (what other and ssr leave after c1 and c2)."""
    rho: tuple[tuple[str, float], ...]
    """swap_i_j -> the share of c_i's clicks it loses when moved to j (calibrated where the
    paper has a value); other swaps follow ``EXAMINATION``."""
    p_ads: float
    """Pages with top ads (over all pages)."""
    p_box: float
    p_ssr2: float
    """Pages with a specialized block at main-column position 2."""
    p_ssr_elsewhere: float
    """Pages with specialized blocks further down only."""

    def rho_of(self, i: int, j: int) -> float:
        for swap, rho in self.rho:
            if swap == f"swap_{i}_{j}":
                return rho
        return 1 - EXAMINATION[j - 1] / EXAMINATION[i - 1]


EXAMINATION = (1.0, 0.56, 0.37, 0.29, 0.24, 0.2, 0.17, 0.15, 0.13, 0.12)
"""Relative attention by display position, for swaps the paper did not run."""

C1_BEHAVIOUR = {"position": 1.15, "relevance": 0.8}
"""c1's base share by behaviour: position-driven clicks favour the first result."""
RHO_BEHAVIOUR = {"position": 1.3, "relevance": 0.55}
"""Exponent of a swap's retention by behaviour: position-driven clicks follow the result's place."""
N_CLASS_RHO = (0.75, 0.875, 1.0, 1.125, 1.25)
"""Exponent by "About N results" class (fifths of log10 N from 4 to 9.5): Figure 6 right,
distortion grows with the number of candidate results."""
SSR_C1 = 0.8
"""c1's share with a specialized block between c1 and c2 (Figure 6 middle: lower base c1) ..."""
SSR_RHO = 1.2
"""... and the exponent of a swap of c1 there (about the same delta, a larger beta)."""
OTHER_SHARE = 0.06
SSR_CLICK_SHARE = 0.05
SPILL = 0.15
P_ADS_GIVEN_BOX = 0.93
"""Shopping boxes come with commercial queries, which carry ads."""


@dataclass(frozen=True)
class World:
    """Every parameter of the click model and the page mix."""

    engines: tuple[tuple[str, EngineModel], ...]
    g_ads_1: float = 0.72
    g_ads_rest: float = 0.7
    g_box_1: float = 0.77
    g_box_rest: float = 0.78
    box_rho_exp: float = 0.8
    """A shown box draws attention from the organic list: a swap moves less."""
    engine_shares: tuple[tuple[str, float], ...] = (("google", 0.95), ("bing", 0.05))
    """Bing has 1.1% of the paper's clicks; 5% here, so that 200k events give Figure 3 for Bing."""
    model: str = "powermeter-v1"
    """Names the click model and its version (stored with the planted values)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "_models", dict(self.engines))

    def engine(self, name: str) -> EngineModel:
        """An engine's model; engines the paper did not study behave as Google."""
        models: dict[str, EngineModel] = self._models  # type: ignore[attr-defined]
        return models.get(name) or models["google"]

    def with_engine(self, name: str, **changes: object) -> World:
        from dataclasses import replace

        models = dict(self.engines)
        models[name] = replace(models[name], **changes)  # type: ignore[arg-type]
        return replace(self, engines=tuple(models.items()))


GOOGLE_TAIL = (0.085, 0.055, 0.04, 0.03, 0.02, 0.015, 0.01, 0.008)
BING_TAIL = (0.08, 0.05, 0.035, 0.025, 0.018, 0.012, 0.008, 0.006)

UNCALIBRATED = World(
    engines=(
        (
            "google",
            EngineModel(
                c1=0.48,
                c2=0.17,
                tail=GOOGLE_TAIL,
                rho=(("swap_1_2", 0.44), ("swap_1_3", 0.63), ("swap_2_3", 0.39)),
                p_ads=0.30,
                p_box=BOX_PAGE_SHARE,
                p_ssr2=0.15,
                p_ssr_elsewhere=0.15,
            ),
        ),
        (
            "bing",
            EngineModel(
                c1=0.57,
                c2=0.13,
                tail=BING_TAIL,
                rho=(("swap_1_2", 0.53),),
                p_ads=0.45,  # Bing pages carry more ads and specialized results (§5.1)
                p_box=0.02,
                p_ssr2=0.25,
                p_ssr_elsewhere=0.2,
            ),
        ),
    )
)
"""The world before ``planted.calibrate`` sets its levels to the paper's numbers."""


def outcome_distribution(
    world: World,
    engine: str,
    behaviour: Behaviour,
    arm: str,
    ads: bool,
    box: bool,
    ssr2: bool,
    has_ssr: bool,
    n_class: int,
) -> dict[str, float]:
    """Probabilities of each outcome (``OUTCOMES``) of one click on a page of this type."""
    m = world.engine(engine)
    plan = parse_arm(arm) or Plan()
    o1 = m.c1 * C1_BEHAVIOUR[behaviour] * (SSR_C1 if ssr2 else 1.0)
    ssr = SSR_CLICK_SHARE if has_ssr else 0.0
    rest = 1.0 - OTHER_SHARE - ssr - o1 - m.c2
    total_tail = sum(m.tail)
    organic = [o1, m.c2, *(rest * t / total_tail for t in m.tail)]
    box_shown = box and not plan.hide_box
    ads_shown = ads and not plan.hide_ads
    if plan.swap is not None:
        i, j = plan.swap
        exponent = RHO_BEHAVIOUR[behaviour] * N_CLASS_RHO[n_class]
        if ssr2 and i == 1:
            exponent *= SSR_RHO
        if box_shown:
            exponent *= world.box_rho_exp
        moved = organic[i - 1] * (1.0 - (1.0 - m.rho_of(i, j)) ** exponent)
        organic[i - 1] -= moved
        between = range(i + 1, j)
        for r in between:
            organic[r - 1] += moved * SPILL / len(between)
        organic[j - 1] += moved * (1.0 - SPILL) if between else moved
    dist = {f"c{r}": p for r, p in enumerate(organic, 1)}
    dist["ssr"], dist["other"], dist["ad"], dist["shopping_box"] = ssr, OTHER_SHARE, 0.0, 0.0
    for shown, first, rest_factor, absorbing in (
        (ads_shown, world.g_ads_1, world.g_ads_rest, "ad"),
        (box_shown, world.g_box_1, world.g_box_rest, "shopping_box"),
    ):
        if not shown:
            continue
        for r in range(1, 11):
            dist[f"c{r}"] *= first if _shown_at(plan, r) == 1 else rest_factor
        for k in ("ssr", "other", "ad"):
            dist[k] *= rest_factor
        dist[absorbing] = 1.0 - sum(v for k, v in dist.items() if k != absorbing)
    return dist


def _shown_at(plan: Plan, original_rank: int) -> int:
    if plan.swap is None:
        return original_rank
    i, j = plan.swap
    return {i: j, j: i}.get(original_rank, original_rank)


def candidates_bucket_range(n_class: int) -> tuple[float, float]:
    """log10 N of an "About N results" class: fifths of 4..9.5."""
    return 4.0 + 1.1 * n_class, 4.0 + 1.1 * (n_class + 1)
