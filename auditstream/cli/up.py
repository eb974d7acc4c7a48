"""``auditstream up``: the whole service on one machine, supervised (``supervisor/``)."""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated

import typer

from auditstream.cli.common import DataDir, data_dir_held, fail, load_settings
from core.settings import Settings
from ingest.api_keys import MIN_KEY_LENGTH, SCOPES, KeyFile
from supervisor.banner import BannerKey
from supervisor.broker import BrokerError
from supervisor.kafka_cluster import KafkaClusterError, KafkaDist, require_tools
from supervisor.service import Supervisor, run


def up(
    host: Annotated[str | None, typer.Option(help="Ingest bind address \\[env: AUDITSTREAM_HOST]")] = None,
    port: Annotated[int | None, typer.Option(help="Ingest port \\[env: AUDITSTREAM_PORT]")] = None,
    data_dir: DataDir = None,
    broker: Annotated[
        str | None,
        typer.Option(
            help="tansu (embedded, in memory) or kafka (a local Apache Kafka, on disk in "
            "DATA_DIR/kafka) \\[env: AUDITSTREAM_BROKER; default: tansu]"
        ),
    ] = None,
    api_key: Annotated[
        str | None, typer.Option("--api-key", help="Register this key (with every scope)")
    ] = None,
    workers: Annotated[int | None, typer.Option(help="Worker processes \\[env: AUDITSTREAM_WORKERS]")] = None,
    partitions: Annotated[
        int | None, typer.Option(help="Partitions per topic \\[env: AUDITSTREAM_PARTITIONS]")
    ] = None,
    ingest_processes: Annotated[
        int | None,
        typer.Option(help="Ingest processes sharing the port \\[env: AUDITSTREAM_INGEST_PROCESSES]"),
    ] = None,
    demo: Annotated[
        bool,
        typer.Option(
            "--demo",
            help="Also run the demo load: autocomplete rounds with a shock, personalization "
            "rounds, then extension traffic",
        ),
    ] = False,
    demo_events: Annotated[int, typer.Option(help="Extension events the demo sends")] = 20_000,
    demo_rate: Annotated[float, typer.Option(help="Demo extension events per second")] = 200.0,
) -> None:
    """Run the whole service on this machine until Ctrl-C (SIGINT) or SIGTERM."""
    settings = load_settings(
        host=host,
        port=port,
        data_dir=data_dir,
        broker=broker,
        workers=workers,
        partitions=partitions,
        ingest_processes=ingest_processes,
    )
    if api_key is not None and len(api_key) < MIN_KEY_LENGTH:
        raise fail(
            f"--api-key must be at least {MIN_KEY_LENGTH} characters, as long as the keys auditstream "
            "makes (leave it out and `up` makes one; or `python3 -c 'import secrets; "
            "print(secrets.token_urlsafe(32))'`)",
            2,
        )
    _check_broker(settings)
    with data_dir_held(settings, exclusive=True):  # before anything in it is touched
        _up(settings, api_key, demo, demo_events, demo_rate)


def _check_broker(settings: Settings) -> None:
    """A local Kafka needs Java (and Maven until fetched), and no other Kafka given."""
    if settings.broker != "kafka":
        return
    if settings.kafka_bootstrap:
        raise fail("--broker kafka starts a local Kafka; AUDITSTREAM_KAFKA_BOOTSTRAP names another", 2)
    try:
        require_tools(KafkaDist.default(settings))
    except KafkaClusterError as exc:
        raise fail(str(exc), 2) from None


def _up(settings: Settings, api_key: str | None, demo: bool, demo_events: int, demo_rate: float) -> None:
    keys = KeyFile(settings.resolved_keys_file)
    if api_key:
        keys.create("cli", SCOPES, key=api_key)
        shown = BannerKey(None, "the key given with --api-key (not shown)")  # not echoed into logs
    elif demo or not any(k.active for k in keys.load()):
        _, api_key = keys.create("demo", SCOPES)
        shown = BannerKey(api_key)
    else:
        api_key = ""  # no demo: nothing here needs a key
        shown = BannerKey(None, f"the keys in {settings.resolved_keys_file} (`auditstream keys list`)")
    # The supervisor only talks to Kafka to create topics; failures there raise. Keep
    # aiokafka's connection chatter (expected while tansu starts) off the console.
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    sup = Supervisor(settings, demo_events, demo_rate, api_key, shown_key=shown)
    try:
        asyncio.run(run(sup, demo))
    except (RuntimeError, BrokerError, KafkaClusterError, OSError) as exc:
        raise fail(str(exc)) from None
