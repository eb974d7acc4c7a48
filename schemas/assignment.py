"""Reference arm assignment: a deterministic, weight-respecting hash.

The extension computes it client-side from (install_id, query, salt), so a reload
never reassigns a page and the query never leaves the browser. The server and
simulators use this same function; its test vectors are published for clients.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence


def unit_interval(install_id: str, query: str, salt: str) -> float:
    """A uniform number in [0, 1) from SHA-256 of ``salt:install_id:query``."""
    digest = hashlib.sha256(f"{salt}:{install_id}:{query}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def assign_arm(install_id: str, query: str, salt: str, arms: Sequence[tuple[str, float]]) -> str:
    """Pick an arm with probability proportional to its weight."""
    total = sum(w for _, w in arms)
    if total <= 0 or any(w < 0 for _, w in arms):
        raise ValueError("arm weights must be non-negative with a positive sum")
    point = unit_interval(install_id, query, salt) * total
    for name, weight in arms:
        point -= weight
        if point < 0:
            return name
    return arms[-1][0]
