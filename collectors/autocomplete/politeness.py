"""The autocomplete crawler's politeness settings (the machinery is ``collectors.common.politeness``).

The paper notes that "submitting queries too quickly increased the risk of being rate
limited"; a blocked crawler records nothing useful.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Politeness:
    """Per-engine limits (defaults: about one request per second, as in the paper's crawls)."""

    rate: float = 1.0
    """Requests per second per engine (0 = no limit)."""
    jitter: float = 0.5
    """Each gap is ``1/rate`` times a uniform factor in [1, 1 + jitter]: never faster than ``rate``."""
    concurrency: int = 2
    """Requests in flight per engine."""
    max_retries: int = 4
    """Retries of a 429, 5xx, timeout or connection error before the node is recorded as failed."""
    backoff_base: float = 1.0
    backoff_max: float = 60.0
    timeout_s: float = 10.0
    breaker_threshold: int = 5
    """Consecutive blocked responses that pause the engine."""
    breaker_cooldown_s: float = 300.0
    breaker_max_cooldown_s: float = 3600.0
    max_body_bytes: int = 1024 * 1024
    user_agent: str = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
    seed: int | None = None
    """Seed of the jitter (None = from the OS)."""
