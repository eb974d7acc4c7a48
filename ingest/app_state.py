"""The ingest application's typed state keys (aiohttp's AppKey: its "no singletons" pattern).

Not to be confused with ``api_keys.py``, the clients' API keys."""

from collections.abc import Callable

from aiohttp import web

from core.settings import Settings
from core.store import Store
from ingest.api_keys import KeyFile
from ingest.erased_installs import ErasedInstalls
from ingest.metrics import IngestMetrics
from ingest.producer import EventProducer
from ingest.ratelimit import RateLimiter
from ingest.registered_arms import RegisteredArms
from ingest.sql_guard_pool import SqlGuard

CONFIG = web.AppKey("config", Settings)
KEYS = web.AppKey("keys", KeyFile)
LIMITER = web.AppKey("limiter", RateLimiter)
METRICS = web.AppKey("metrics", IngestMetrics)
PRODUCER = web.AppKey("producer", EventProducer)
STORE = web.AppKey("store", Store)
ARMS = web.AppKey("arms", RegisteredArms)
ERASED = web.AppKey("erased_installs", ErasedInstalls)
SQL_GUARD = web.AppKey("sql_guard", SqlGuard)
BOARD_STATE: web.AppKey[Callable[[], str]] = web.AppKey("board_state")
"""The board's compute process, as ``/readyz`` reports it: "starting" until it has started
and warmed its caches (the first board or report answer waits for that), then "ready", or
"failed" when it could not start (``compute_process.board_state``)."""
