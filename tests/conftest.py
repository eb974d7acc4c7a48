"""Suite-wide settings."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

from tests.helpers import STARTED, stop_leftovers

# pytest-xdist's workers get COLUMNS=80, a plain run none (the CLI's consoles are then 1000
# wide off a terminal): a CLI message that names a temporary path would wrap in one and not
# the other. Workers print nothing to the terminal themselves.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["COLUMNS"] = "1000"

# No per-example deadline: on a loaded two-core CI machine one example can be descheduled
# for longer than hypothesis's default 200 ms, which fails a correct test as "Flaky".
settings.register_profile("auditstream", deadline=None)
settings.load_profile("auditstream")


@pytest.fixture(autouse=True)
def no_service_left_behind() -> Iterator[None]:
    """A service a test started and did not stop (it failed first) is stopped after it;
    services of wider-scoped fixtures were started before and are left to their fixture."""
    before = len(STARTED)
    yield
    stop_leftovers(before)
