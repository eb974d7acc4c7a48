"""The HTTP intake, built by a factory from the settings."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

from aiohttp import web

from core.data_lock import HELD_ENV
from core.settings import Settings
from core.store import Store
from core.store.base import NoStore
from ingest import (
    board,
    experiments,
    export_routes,
    handlers,
    import_routes,
    key_info,
    openapi,
    participants,
    pilot,
    plans,
    planted,
    protocol_errors,
    reports,
    stop_deadline,
)
from ingest.api_keys import KeyFile
from ingest.app_state import ARMS, CONFIG, KEYS, LIMITER, METRICS, PRODUCER, SQL_GUARD, STORE
from ingest.board import figures as board_figures
from ingest.clock import CLOCK, Clock
from ingest.metrics import IngestMetrics
from ingest.middlewares import observe
from ingest.producer import EventProducer
from ingest.ratelimit import RateLimiter
from ingest.registered_arms import RegisteredArms
from ingest.sql_guard_pool import guard_from
from schemas.cluster_store import open_service_store
from schemas.topics import WORKER_GROUP


def create_app(settings: Settings, store: Store | None = None) -> web.Application:
    """Build the intake. ``store`` serves ``/v1/sql``; by default it follows the settings."""
    protocol_errors.install()  # aiohttp's own 400 page would quote the refused bytes (a key)
    app = web.Application(middlewares=[observe], client_max_size=settings.max_body_bytes)
    app[CONFIG] = settings
    app[KEYS] = KeyFile(settings.resolved_keys_file)
    app[LIMITER] = RateLimiter(settings.rate_limit_rps, settings.rate_limit_burst)
    app[METRICS] = IngestMetrics.create()
    app[CLOCK] = Clock(settings.clock_offset_file)
    app[PRODUCER] = EventProducer(
        settings.kafka_bootstrap,
        settings.produce_timeout_s,
        replay_window_s=settings.replay_window_s,
        replay_max_bytes=settings.replay_max_bytes,
        worker_group=WORKER_GROUP,
        unstored_limit_s=settings.unstored_limit_s,
        # the pause and state files are for the embedded supervisor's broker rotation only
        run_dir=settings.run_dir if os.environ.get(HELD_ENV) else None,
    )
    in_process = store is not None
    if store is None:
        has_store = settings.clickhouse_url or settings.store_url
        store = open_service_store(settings) if has_store else NoStore("ingest has no store configured")
    app[STORE] = store
    app[ARMS] = RegisteredArms(store)
    app[SQL_GUARD] = guard_from(settings)  # its processes start at the first statement

    async def resources(app: web.Application) -> AsyncIterator[None]:
        await app[PRODUCER].start()
        app[ARMS].start()
        await app[CLOCK].start()
        yield
        await stop_deadline.stage("clock", app[CLOCK].close)
        await stop_deadline.stage("registered arms", app[ARMS].close)
        await stop_deadline.stage("SQL guard processes", app[SQL_GUARD].shutdown)
        await stop_deadline.stage("Kafka producer", app[PRODUCER].stop)
        await stop_deadline.stage("store", app[STORE].close)

    app.cleanup_ctx.append(resources)
    app.router.add_post("/v1/events", handlers.post_events)
    app.router.add_post("/v1/sql", handlers.post_sql)
    app.router.add_get("/healthz", handlers.healthz)
    app.router.add_get("/readyz", handlers.readyz)
    app.router.add_get("/metrics", handlers.metrics)
    experiments.add_routes(app)
    key_info.add_routes(app)
    board.add_routes(app, settings, store, in_process=in_process or not has_store_settings(settings))
    import_routes.add_routes(app)
    export_routes.add_routes(app)
    participants.add_routes(app)
    planted.add_routes(app)
    plans.add_routes(app)
    pilot.add_routes(app)
    reports.add_routes(app)
    board_figures.add_routes(app)
    openapi.add_routes(app)
    return app


def has_store_settings(settings: Settings) -> bool:
    """Whether another process can reach the store from the settings alone."""
    return bool(settings.clickhouse_url or settings.store_url)
