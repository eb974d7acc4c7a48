"""``auditstream simulate``: load generators that post realistic traffic."""

from __future__ import annotations

import asyncio
import os
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from auditstream.cli.common import console, fail

app = typer.Typer(help="Generate realistic traffic against a running service.", no_args_is_help=True)


@app.command()
def extension(
    url: Annotated[str, typer.Option(help="Base URL of ingest")] = "http://127.0.0.1:8080",
    api_key: Annotated[str | None, typer.Option(help="Ingest key \\[env: AUDITSTREAM_API_KEY]")] = None,
    events: Annotated[int, typer.Option(help="How many events to send")] = 10_000,
    rate: Annotated[float, typer.Option(help="Events per second (0 = as fast as possible)")] = 500.0,
    batch_size: Annotated[int, typer.Option(help="Events per request (max 500)")] = 100,
    installs: Annotated[int, typer.Option(help="Simulated browser installs")] = 500,
    experiment: Annotated[str, typer.Option(help="Experiment id")] = "demo",
    seed: Annotated[int, typer.Option(help="Random seed (same seed, same traffic)")] = 1,
    concurrency: Annotated[int, typer.Option(help="Requests in flight")] = 4,
    duration: Annotated[
        float, typer.Option(help="Stop after this many seconds (0 = when --events are sent)")
    ] = 0.0,
) -> None:
    """Browser-extension traffic: installs, arms, a calibrated click model, boxes and ads."""
    from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
    from collectors.simulate.poster import post_batches

    key = api_key or os.environ.get("AUDITSTREAM_API_KEY", "")
    if not key:
        raise fail("pass --api-key or set AUDITSTREAM_API_KEY", 2)
    traffic = ExtensionTraffic(TrafficConfig(experiment_id=experiment, installs=installs, seed=seed))
    with Progress(
        TextColumn("[bold]extension traffic"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
    ) as progress:
        task = progress.add_task("post", total=events)
        stats = asyncio.run(
            post_batches(
                url,
                key,
                traffic.batches(min(batch_size, 500), events),
                rate=rate or None,
                concurrency=concurrency,
                duration_s=duration or None,
                on_progress=lambda n: progress.advance(task, n),
            )
        )
    console.print(
        f"accepted {stats.accepted}, rejected {stats.rejected}, "
        f"requests {stats.requests}, retries {stats.retries}"
    )
