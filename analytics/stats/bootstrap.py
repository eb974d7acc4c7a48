"""A clustered bootstrap that can be assembled from stored pieces.

Each install gets a deterministic Poisson(1) weight per replicate, so a replicate's
sums are weighted sums of per-install counts and merge across any time range: CIs for
any window come from per-install sufficient statistics, with no resampling pass over
raw events. With many installs the Poisson bootstrap agrees with the classic
resampling of installs (checked against ``resample_installs`` in the tests).

The weight is counter-based so that it vectorizes: one xxHash64 per install
(``seed:install_id``, the install's key), then SplitMix64's finalizer of
``key + (replicate + 1) * golden`` gives the replicate's uniform. A 200-replicate
weight matrix for 100k installs is then 100k hashes and a few numpy passes, not 20M
Python hash calls, and ClickHouse computes the very same number (``weight_sql``) with
wrapping UInt64 arithmetic, so the SQL views and the reports agree weight for weight.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence

import numpy as np
import xxhash

MAX_WEIGHT = 9
POISSON1_CDF: tuple[float, ...] = tuple(
    sum(math.exp(-1) / math.factorial(j) for j in range(k + 1)) for k in range(MAX_WEIGHT)
)
"""P(W <= k) for W ~ Poisson(1), k = 0..8; anything beyond counts as 9."""

GOLDEN = 0x9E3779B97F4A7C15
MIX1 = 0xBF58476D1CE4E5B9
MIX2 = 0x94D049BB133111EB
_MASK = (1 << 64) - 1


def install_key(install_id: str, seed: int) -> int:
    """xxHash64 of ``seed:install_id``: the install's stream of replicate uniforms."""
    return xxhash.xxh64_intdigest(f"{int(seed)}:{install_id}".encode())


def _splitmix(x: int) -> int:
    x = ((x ^ (x >> 30)) * MIX1) & _MASK
    x = ((x ^ (x >> 27)) * MIX2) & _MASK
    return x ^ (x >> 31)


def unit_uniform(install_id: str, replicate: int, seed: int) -> float:
    """Uniform in [0, 1): the scalar reference for ``weights`` and ``weight_sql``."""
    x = (install_key(install_id, seed) + (replicate + 1) * GOLDEN) & _MASK
    return float(_splitmix(x)) / 2.0**64


def poisson1(u: float) -> int:
    """Inverse CDF of Poisson(1) at ``u``."""
    for k, cdf in enumerate(POISSON1_CDF):
        if u < cdf:
            return k
    return MAX_WEIGHT


def _integer_threshold(cdf: float) -> int:
    """The least 64-bit ``x`` with ``float64(x) / 2**64 >= cdf``: comparing the integers then
    decides exactly as comparing the uniforms would (``unit_uniform``, ``uniform_sql``),
    without converting 20M of them to float."""
    target = cdf * 2.0**64  # a float above 2**53: an integer, exact (scaling by 2**64 is exact)
    lo, hi = int(target) - 2**13, int(target)  # float64 spacing here is at most 2**12

    def meets(x: int) -> bool:
        return float(np.array([x], dtype=np.uint64).astype(np.float64)[0]) >= target

    while lo < hi:  # meets() is monotone in x
        mid = (lo + hi) // 2
        if meets(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


THRESHOLDS = np.array([_integer_threshold(cdf) for cdf in POISSON1_CDF], dtype=np.uint64)
ROWS_AT_ONCE = 4096
"""Installs whose weights are computed in one block (200 replicates: 6.5 MB of uint64, so
the block stays in cache through its passes)."""


def _weight_rows(keys: np.ndarray, replicates: int) -> np.ndarray:
    """uint8 matrix [install, replicate] of weights from install keys."""
    keys = np.asarray(keys, dtype=np.uint64)
    steps = np.arange(1, replicates + 1, dtype=np.uint64) * np.uint64(GOLDEN)
    w = np.empty((keys.size, replicates), dtype=np.uint8)
    for start in range(0, keys.size, ROWS_AT_ONCE):
        with np.errstate(over="ignore"):
            x = keys[start : start + ROWS_AT_ONCE, None] + steps[None, :]
            x ^= x >> np.uint64(30)
            x *= np.uint64(MIX1)
            x ^= x >> np.uint64(27)
            x *= np.uint64(MIX2)
            x ^= x >> np.uint64(31)
        # W = number of thresholds the uniform is at or above
        w[start : start + ROWS_AT_ONCE] = np.searchsorted(THRESHOLDS, x, side="right")
    return w


class _CachedRows:
    """One (seed, replicates)'s cached weight rows. Rows are appended as installs arrive (the
    buffer doubles when full) and found through a sorted index of their keys, so a new
    install costs re-sorting the 16-byte index entries, not copying every 200-byte row
    (at 1M cached installs a copy was 200 MB per report that met a new install)."""

    def __init__(self, replicates: int) -> None:
        self.keys = np.zeros(0, np.uint64)  # sorted
        self.slots = np.zeros(0, np.int64)  # the row of each key in ``rows``
        self.rows = np.zeros((0, replicates), np.uint8)
        self.size = 0  # rows in use

    def find(self, keys: np.ndarray) -> np.ndarray:
        """The row of each key, -1 where it is not cached."""
        if not self.keys.size:
            return np.full(keys.size, -1, np.int64)
        at = np.minimum(np.searchsorted(self.keys, keys), self.keys.size - 1)
        return np.where(self.keys[at] == keys, self.slots[at], -1)

    def add(self, keys: np.ndarray, rows: np.ndarray, capacity: int) -> None:
        """Append ``rows`` of ``keys`` (unique, not cached yet; at most ``capacity`` in all)."""
        end = self.size + keys.size
        if end > self.rows.shape[0]:
            grown = np.zeros((min(max(2 * self.rows.shape[0], end), capacity), rows.shape[1]), np.uint8)
            grown[: self.size] = self.rows[: self.size]
            self.rows = grown
        self.rows[self.size : end] = rows
        merged = np.concatenate([self.keys, keys])
        order = np.argsort(merged, kind="stable")
        self.keys = merged[order]
        self.slots = np.concatenate([self.slots, np.arange(self.size, end, dtype=np.int64)])[order]
        self.size = end


class WeightCache:
    """Weight rows computed once per install and reused: a live board refreshes the same
    installs every few seconds, and one report reads several tables over one panel.
    Installs are known by their key (``install_key``), which ClickHouse can compute too.
    When more than ``max_installs`` would be kept, the cache starts again from the installs
    asked for (and keeps none when they alone are more)."""

    def __init__(self, max_installs: int = 1_000_000) -> None:
        self.max_installs = max_installs
        self._rows: dict[tuple[int, int], _CachedRows] = {}
        self._lock = threading.Lock()

    def get(self, install_ids: Sequence[str], replicates: int, seed: int) -> np.ndarray:
        keys = np.fromiter(
            (install_key(i, seed) for i in install_ids), dtype=np.uint64, count=len(install_ids)
        )
        return self.for_keys(keys, replicates, seed)

    def for_keys(self, keys: np.ndarray, replicates: int, seed: int) -> np.ndarray:
        """uint8 [install, replicate] for installs given by their ``install_key`` under ``seed``
        (looked up by binary search: no Python work per install)."""
        keys = np.asarray(keys, dtype=np.uint64)
        with self._lock:  # imports compute weights in a thread beside an in-process board
            cached = self._rows.setdefault((seed, replicates), _CachedRows(replicates))
            at = cached.find(keys)
            if (at < 0).any():
                missing = np.unique(keys[at < 0])
                if cached.size + missing.size > self.max_installs:
                    cached = self._rows[(seed, replicates)] = _CachedRows(replicates)
                    missing = np.unique(keys)
                    if missing.size > self.max_installs:  # more than the cache keeps: not kept
                        return _weight_rows(keys, replicates)
                cached.add(missing, _weight_rows(missing, replicates), self.max_installs)
                at = cached.find(keys)
            return cached.rows[at]

    def cached(self, replicates: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """The cached keys (sorted) and their weight rows, in that order."""
        found = self._rows.get((seed, replicates)) or _CachedRows(replicates)
        return found.keys, found.rows[found.slots]


_CACHE = WeightCache()


def weights(install_ids: Sequence[str], replicates: int, seed: int) -> np.ndarray:
    """Matrix [install, replicate] of deterministic Poisson(1) weights (uint8), vectorized
    and cached per install."""
    return _CACHE.get(install_ids, replicates, seed)


def weights_for_keys(keys: np.ndarray, replicates: int, seed: int) -> np.ndarray:
    """``weights`` for installs given by ``install_key`` (as ClickHouse's
    ``xxHash64(concat('<seed>:', install_id))`` returns it)."""
    return _CACHE.for_keys(keys, replicates, seed)


def sorted_unique(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, return_inverse=True)``, in one pass when ``keys`` come sorted (the
    report's statements order their rows by install key): no hash table, no sort."""
    keys = np.asarray(keys)
    if keys.size and bool(np.all(keys[1:] >= keys[:-1])):
        first = np.r_[True, keys[1:] != keys[:-1]]
        return keys[first], np.cumsum(first) - 1
    return np.unique(keys, return_inverse=True)


def _unique_sorted(keys: np.ndarray) -> np.ndarray:
    """``np.unique(keys)`` by a sort (numpy's hashing unique was slower on a large study's
    keys; bench/README.md, "Figures behind the code"), and no sort at all when they come
    sorted and distinct already."""
    if keys.size > 1 and not bool(np.all(keys[1:] > keys[:-1])):
        keys = np.sort(keys)
        keys = keys[np.r_[True, keys[1:] != keys[:-1]]]
    return keys


class ReplicateWeights:
    """The weights [install, replicate] of one set of installs as float64, computed once and
    shared by every table of a report (and by the next report over the same installs).

    ``sums`` gives every replicate's weighted column sums, ``W[installs].T @ values``, as one
    matrix product over the whole set: the caller's rows are scattered into the set's order
    (a small matrix) instead of gathering weight rows (a large one)."""

    def __init__(self, keys: np.ndarray, replicates: int, seed: int) -> None:
        self.keys = _unique_sorted(np.asarray(keys, dtype=np.uint64))
        self.seed, self.replicates = seed, replicates
        self.matrix = weights_for_keys(self.keys, replicates, seed).astype(np.float64)

    def __call__(self, installs: np.ndarray) -> np.ndarray:
        """The weight rows of ``installs`` (keys of this set)."""
        return self.matrix[self._at(installs)]

    def _at(self, installs: np.ndarray) -> np.ndarray:
        at = np.searchsorted(self.keys, installs)
        if at.size and (at.max() >= self.keys.size or np.any(self.keys[at] != installs)):
            raise KeyError("an install outside this weight set")
        return at

    def sums(self, installs: np.ndarray, values: np.ndarray) -> np.ndarray:
        """[replicate, column]: sum over ``installs`` (unique keys) of weight x ``values`` row."""
        if installs.size == self.keys.size and np.array_equal(installs, self.keys):
            return self.matrix.T @ values
        full = np.zeros((self.keys.size, values.shape[1]))
        full[self._at(installs)] = values
        return self.matrix.T @ full


_SETS: dict[tuple[int, int, bytes], ReplicateWeights] = {}
SETS_KEPT = 4


def replicate_weights(keys: np.ndarray, replicates: int, seed: int) -> ReplicateWeights:
    """``ReplicateWeights`` for this set of installs, reused while the set is unchanged (a
    board refreshing a finished study, reports of its subsets): the float matrix is the
    costly part (bench/README.md, "Figures behind the code")."""
    unique = _unique_sorted(np.asarray(keys, dtype=np.uint64))
    name = (replicates, seed, xxhash.xxh3_128_digest(unique.tobytes()))
    found = _SETS.pop(name, None) or ReplicateWeights(unique, replicates, seed)
    _SETS[name] = found  # most recently used last
    while len(_SETS) > SETS_KEPT:
        del _SETS[next(iter(_SETS))]
    return found


def install_key_sql(install_expr: str, seed: int) -> str:
    """ClickHouse expression for ``install_key``."""
    return f"xxHash64(concat('{int(seed)}:', {install_expr}))"


def uniform_sql(install_expr: str, replicate_expr: str, seed_expr: str) -> str:
    """ClickHouse expression for ``unit_uniform`` (UInt64 arithmetic wraps, as in numpy)."""
    x = (
        f"(xxHash64(concat(toString({seed_expr}), ':', {install_expr})) "
        f"+ (toUInt64({replicate_expr}) + 1) * {GOLDEN})"
    )
    x = f"(bitXor({x}, bitShiftRight({x}, 30)) * {MIX1})"
    x = f"(bitXor({x}, bitShiftRight({x}, 27)) * {MIX2})"
    return f"(bitXor({x}, bitShiftRight({x}, 31)) / 18446744073709551616.0)"


def poisson_sql(u_expr: str) -> str:
    """``poisson1`` in ClickHouse for a uniform expression (best an alias, it is repeated)."""
    branches = ", ".join(f"{u_expr} < {cdf!r}, {k}" for k, cdf in enumerate(POISSON1_CDF))
    return f"multiIf({branches}, {MAX_WEIGHT})"


def weight_sql(install_expr: str, replicate_expr: str, seed: int) -> str:
    """ClickHouse expression giving the same weight as ``poisson1(unit_uniform(...))``."""
    return poisson_sql(uniform_sql(install_expr, replicate_expr, str(int(seed))))


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
