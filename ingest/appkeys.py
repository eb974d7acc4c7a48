"""Typed application keys (aiohttp's "no singletons" pattern)."""

from aiohttp import web

from core.settings import Settings
from core.store import Store
from ingest.api_keys import KeyFile
from ingest.metrics import IngestMetrics
from ingest.producer import EventProducer
from ingest.ratelimit import RateLimiter

CONFIG = web.AppKey("config", Settings)
KEYS = web.AppKey("keys", KeyFile)
LIMITER = web.AppKey("limiter", RateLimiter)
METRICS = web.AppKey("metrics", IngestMetrics)
PRODUCER = web.AppKey("producer", EventProducer)
STORE = web.AppKey("store", Store)
