"""A clustered bootstrap that can be assembled from stored pieces.

Each install gets a deterministic Poisson(1) weight per replicate, derived from
xxHash64 of ``seed:install_id:replicate`` (the same function exists in ClickHouse
as ``xxHash64``). A replicate's sums are weighted sums of per-install counts, so
they merge across any time range: CIs for any window come from per-install
sufficient statistics, with no resampling pass over raw events. With many
installs the Poisson bootstrap agrees with the classic resampling of installs
(checked against ``resample_installs`` in the tests).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import xxhash

MAX_WEIGHT = 9
POISSON1_CDF: tuple[float, ...] = tuple(
    sum(math.exp(-1) / math.factorial(j) for j in range(k + 1)) for k in range(MAX_WEIGHT)
)
"""P(W <= k) for W ~ Poisson(1), k = 0..8; anything beyond counts as 9."""


def unit_uniform(install_id: str, replicate: int, seed: int) -> float:
    """Uniform in [0, 1) from xxHash64, identical to the SQL in ``weight_sql``."""
    return xxhash.xxh64_intdigest(f"{seed}:{install_id}:{replicate}".encode()) / 2.0**64


def poisson1(u: float) -> int:
    """Inverse CDF of Poisson(1) at ``u``."""
    for k, cdf in enumerate(POISSON1_CDF):
        if u < cdf:
            return k
    return MAX_WEIGHT


def weights(install_ids: Sequence[str], replicates: int, seed: int) -> np.ndarray:
    """Matrix [install, replicate] of deterministic Poisson(1) weights."""
    return np.array(
        [[poisson1(unit_uniform(i, b, seed)) for b in range(replicates)] for i in install_ids],
        dtype=np.float64,
    )


def weight_sql(install_expr: str, replicate_expr: str, seed: int) -> str:
    """ClickHouse expression giving the same weight as ``poisson1(unit_uniform(...))``."""
    u = (
        f"(xxHash64(concat('{int(seed)}:', {install_expr}, ':', toString({replicate_expr})))"
        " / 18446744073709551616.0)"
    )
    branches = ", ".join(f"{u} < {cdf!r}, {k}" for k, cdf in enumerate(POISSON1_CDF))
    return f"multiIf({branches}, {MAX_WEIGHT})"


def percentile_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of replicate statistics, ignoring NaN replicates."""
    finite = values[~np.isnan(values)]
    if finite.size == 0:
        return (math.nan, math.nan)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(finite, [alpha, 1 - alpha])
    return float(lo), float(hi)


def replicate_ratios(weight: np.ndarray, numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """sum_i w_ib * num_i / sum_i w_ib * den_i for every replicate b."""
    num = weight.T @ numerator
    den = weight.T @ denominator
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def resample_installs(n_installs: int, replicates: int, seed: int) -> np.ndarray:
    """Classic clustered bootstrap: how often each install is drawn, per replicate.

    The offline reference the streamed Poisson bootstrap is checked against.
    """
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_installs, size=(replicates, n_installs))
    counts = np.zeros((n_installs, replicates))
    for b in range(replicates):
        counts[:, b] = np.bincount(draws[b], minlength=n_installs)
    return counts
