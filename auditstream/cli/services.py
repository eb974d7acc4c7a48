"""Run one component in the foreground: ``ingest``, ``worker`` or ``store``.

``auditstream up`` starts these for you; run them yourself to spread the
service over machines (production) or to restart one part on its own.
"""

from __future__ import annotations

import asyncio
import gc
from typing import TYPE_CHECKING, Annotated, Any

import typer

from auditstream.cli.common import DataDir, console, data_dir_held, fail, load_settings, setup_logging

if TYPE_CHECKING:
    from core.settings import Settings

Bootstrap = Annotated[
    str | None,
    typer.Option("--kafka-bootstrap", help="Kafka host:port \\[env: AUDITSTREAM_KAFKA_BOOTSTRAP]"),
]
StoreUrl = Annotated[
    str | None, typer.Option("--store-url", help="chDB owner URL \\[env: AUDITSTREAM_STORE_URL]")
]
ClickhouseUrl = Annotated[
    str | None,
    typer.Option("--clickhouse-url", help="ClickHouse server URL \\[env: AUDITSTREAM_CLICKHOUSE_URL]"),
]
LogLevel = Annotated[str, typer.Option("--log-level", help="DEBUG, INFO, WARNING or ERROR")]


def _use_uvloop() -> None:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - optional speed-up
        return
    uvloop.install()


def _freeze_startup_heap() -> None:
    """Keep the collector off what start-up built. A service imports a large heap (numpy,
    scipy, pydantic's schemas) that lives as long as it does; every full collection would
    walk it again, for objects per request that die young. Measured on ingest: CPU per
    event 40-45 us -> 31-37 us (bench/README.md, issue 39)."""
    gc.freeze()
    gc.set_threshold(20_000, 50, 100)


def _service_settings(name: str, log_level: str, **options: Any) -> Settings:
    """Logging set up and the settings of a service that needs Kafka."""
    setup_logging(log_level)
    settings = load_settings(**options)
    if not settings.kafka_bootstrap:
        raise fail(f"{name} needs --kafka-bootstrap (or use `auditstream up`)")
    return settings


def ingest(
    host: Annotated[str | None, typer.Option(help="Bind address \\[env: AUDITSTREAM_HOST]")] = None,
    port: Annotated[int | None, typer.Option(help="Port \\[env: AUDITSTREAM_PORT]")] = None,
    data_dir: DataDir = None,
    kafka_bootstrap: Bootstrap = None,
    store_url: StoreUrl = None,
    clickhouse_url: ClickhouseUrl = None,
    log_level: LogLevel = "INFO",
) -> None:
    """Serve the HTTP intake: POST /v1/events, POST /v1/sql, /healthz, /readyz, /metrics."""

    settings = _service_settings(
        "ingest",
        log_level,
        host=host,
        port=port,
        data_dir=data_dir,
        kafka_bootstrap=kafka_bootstrap,
        store_url=store_url,
        clickhouse_url=clickhouse_url,
    )
    _use_uvloop()
    with data_dir_held(settings, exclusive=False):
        _serve_ingest(settings)


def _serve_ingest(settings: Settings) -> None:
    from aiohttp import web

    from ingest import stop_deadline
    from ingest.app import create_app

    app = create_app(settings)
    stop_deadline.arm(app)
    _freeze_startup_heap()
    web.run_app(
        app,
        host=settings.host,
        port=settings.port,
        print=None,
        access_log=None,
        shutdown_timeout=10,
        reuse_port=True,
        handler_cancellation=True,  # an analyst who hangs up cancels their query in the store
    )


def worker(
    data_dir: DataDir = None,
    kafka_bootstrap: Bootstrap = None,
    store_url: StoreUrl = None,
    clickhouse_url: ClickhouseUrl = None,
    log_level: LogLevel = "INFO",
) -> None:
    """Consume the event topics and write raw rows and aggregates to ClickHouse."""

    settings = _service_settings(
        "worker",
        log_level,
        data_dir=data_dir,
        kafka_bootstrap=kafka_bootstrap,
        store_url=store_url,
        clickhouse_url=clickhouse_url,
    )
    with data_dir_held(settings, exclusive=False):
        _run_worker(settings, log_level)


def _run_worker(settings: Settings, log_level: str) -> None:
    from faust.worker import Worker

    from schemas.cluster_store import open_service_store
    from streams.app import create_app
    from streams.metrics import WorkerMetrics

    metrics = WorkerMetrics.create()
    if settings.worker_metrics_port:
        from prometheus_client import start_http_server

        start_http_server(settings.worker_metrics_port, registry=metrics.registry)
    _use_uvloop()  # faust's per-message overhead is the worker's limit; uvloop cuts it ~25%
    store = open_service_store(settings)
    app = create_app(settings, store, metrics)
    _freeze_startup_heap()
    Worker(app, loglevel=log_level, quiet=True, redirect_stdouts=False).execute_from_commandline()


def store(
    port: Annotated[int | None, typer.Option(help="Loopback port \\[env: AUDITSTREAM_STORE_PORT]")] = None,
    data_dir: DataDir = None,
    log_level: LogLevel = "INFO",
) -> None:
    """Own the chDB directory and serve it to the other processes on 127.0.0.1."""

    setup_logging(log_level)
    settings = load_settings(store_port=port, data_dir=data_dir)
    with data_dir_held(settings, exclusive=False):
        _serve_store(settings)


def _serve_store(settings: Settings) -> None:
    from aiohttp import web

    from core.store.chdb_store import ChdbStore
    from core.store.server import create_store_app
    from schemas.migrate import migrate

    try:
        chdb = ChdbStore(settings.chdb_path, read_lanes=settings.store_read_lanes)
    except Exception as exc:
        raise fail(f"{exc} (is another auditstream process using {settings.data_dir}?)") from None
    applied = asyncio.run(migrate(chdb))
    if applied:
        console.print(f"applied migrations: {', '.join(applied)}")
    _freeze_startup_heap()
    web.run_app(
        create_store_app(chdb, settings.store_token.get_secret_value()),
        host="127.0.0.1",
        port=settings.store_port,
        print=None,
        access_log=None,
        handler_cancellation=True,  # a read whose caller hung up is killed in chDB
    )
