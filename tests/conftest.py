"""Suite-wide settings."""

from __future__ import annotations

from hypothesis import settings

# No per-example deadline: on a loaded two-core CI machine one example can be descheduled
# for longer than hypothesis's default 200 ms, which fails a correct test as "Flaky".
settings.register_profile("auditstream", deadline=None)
settings.load_profile("auditstream")
