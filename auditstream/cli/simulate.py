"""``auditstream simulate``: load generators that post realistic traffic."""

from __future__ import annotations

import asyncio
import enum
import os
from typing import Annotated, Any, NamedTuple

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from auditstream.cli.common import base_url, console, fail

app = typer.Typer(help="Generate realistic traffic against a running service.", no_args_is_help=True)


class Paper(enum.StrEnum):
    powermeter = "powermeter"


@app.command()
def extension(
    url: Annotated[str, typer.Option(help="Base URL of ingest", callback=base_url)] = "http://127.0.0.1:8080",
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
    paper: Annotated[
        Paper, typer.Option(help="The world simulated: the paper whose numbers are planted")
    ] = Paper.powermeter,
    profiles: Annotated[
        bool, typer.Option(help="Send one install_profile (onboarding answers) per install first")
    ] = True,
) -> None:
    """Browser-extension traffic of the paper's world: follows the registered experiment (arms,
    weights, engine arms, salt, burn-in), plants the paper's Figure 3 and 5 values, prints them
    and stores them (PUT /v1/experiments/{id}/planted) so reports can show them beside the
    estimates."""
    from collectors.simulate.extension_traffic import TrafficConfig
    from collectors.simulate.poster import post_batches

    key = _key(api_key)
    _answering(url)
    traffic = _paper_world(url, key, TrafficConfig(experiment_id=experiment, installs=installs, seed=seed))
    if profiles:
        _post_profiles(url, key, traffic, min(batch_size, 500), concurrency)
    with Progress(
        TextColumn("[bold]extension traffic"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
    ) as progress:
        task = progress.add_task("post", total=events)
        try:
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
        except RuntimeError as exc:  # ingest refused a batch, or kept answering 503
            raise fail(str(exc)) from None
    console.print(
        f"accepted {stats.accepted}, rejected {stats.rejected}, "
        f"requests {stats.requests}, retries {stats.retries}"
    )


def _paper_world(url: str, key: str, config: Any) -> Any:
    """The traffic of the registered experiment (else the built-in arms, with a note), its
    planted values printed and stored."""
    from collectors.simulate.extension_traffic import ExtensionTraffic, with_registered

    experiment, seed = config.experiment_id, config.seed
    registered, unit_mode = _registered(url, key, experiment)
    if registered is None:
        console.print(
            f"[yellow]experiment {experiment!r} is not registered: simulating the built-in arms "
            f"({', '.join(a for a, _ in config.arms)}); register it to have them followed"
        )
    else:
        config = with_registered(config, registered)
    traffic = ExtensionTraffic(config)
    planted = traffic.planted(unit_mode=unit_mode)
    _print_planted(planted, traffic.world.model, seed, unit_mode)
    if registered is not None:
        _store_planted(url, key, experiment, seed, traffic.world.model, planted)
    return traffic


def _post_profiles(url: str, key: str, traffic: Any, batch_size: int, concurrency: int) -> None:
    from collectors.simulate.poster import post_batches

    batches = _chunks(traffic.profiles(), batch_size)
    try:
        stats = asyncio.run(post_batches(url, key, batches, concurrency=concurrency))
    except RuntimeError as exc:
        raise fail(str(exc)) from None
    console.print(f"install profiles accepted {stats.accepted} of {len(traffic.installs)}")


class _Answer(NamedTuple):
    status: int
    body: Any


def _call(method: str, url: str, key: str, body: Any = None) -> _Answer:
    import urllib.error
    import urllib.request

    import orjson

    request = urllib.request.Request(
        url,
        method=method,
        data=None if body is None else orjson.dumps(body),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as resp:
            return _Answer(resp.status, orjson.loads(resp.read() or b"null"))
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            return _Answer(exc.code, orjson.loads(raw))
        except orjson.JSONDecodeError:
            return _Answer(exc.code, raw.decode(errors="replace"))


def _registered(url: str, key: str, experiment: str) -> tuple[dict[str, Any] | None, str]:
    """The registered experiment (the registry's config with a read key, else the public one
    an ingest key may fetch) and its unit mode; None when it is not registered."""
    from urllib.parse import quote

    base = f"{url.rstrip('/')}/v1/experiments/{quote(experiment, safe='')}"
    full = _call("GET", base, key)
    if full.status == 200:
        return full.body, str(full.body.get("unit_mode", "click"))
    public = _call("GET", base + "/config", key)
    if public.status == 200:
        return public.body, "click"
    if 404 in (full.status, public.status):
        return None, "click"
    raise fail(f"could not read experiment {experiment!r}: {public.status} {public.body}")


def _print_planted(planted: list[Any], model: str, seed: int, unit_mode: str) -> None:
    """The planted Figure 3 (all pages, against control), one row per engine, arm and quantity,
    ranks across; the rest (the box subset's Figure 5 against hide_box and hide_ads_box) is
    counted, not listed: it is stored and ``report experiment`` shows each beside its estimate."""
    from rich.table import Table

    shown = [p for p in planted if p.subset == "all" and p.baseline == "control"]
    ranks = max((p.rank for p in shown), default=0)
    table = Table(title=f"planted Figure 3, all pages ({model}, seed {seed}, {unit_mode} units)")
    for name in ("engine", "arm", "quantity"):
        table.add_column(name)
    for r in range(1, ranks + 1):
        table.add_column(f"c{r}", justify="right")
    rows: dict[tuple[str, ...], dict[int, float]] = {}
    for p in shown:
        rows.setdefault((p.engine, p.arm, p.quantity), {})[p.rank] = p.value
    for keys, values in rows.items():
        table.add_row(*keys, *(f"{values[r]:.4f}" if r in values else "" for r in range(1, ranks + 1)))
    console.print(table)
    if rest := len(planted) - len(shown):
        console.print(
            f"and {rest} more planted values (the box subset, Figure 5): `report experiment "
            "--subset box --baseline hide_box` (or hide_ads_box) shows them beside the estimates"
        )


def _store_planted(url: str, key: str, experiment: str, seed: int, model: str, planted: list[Any]) -> None:
    from urllib.parse import quote

    body = {"seed": seed, "model": model, "values": [p.row() for p in planted]}
    answer = _call("PUT", f"{url.rstrip('/')}/v1/experiments/{quote(experiment, safe='')}/planted", key, body)
    if answer.status == 200:
        console.print(f"stored {len(answer.body['values'])} planted values for {experiment}")
    elif answer.status == 403:
        console.print(
            "[yellow]the planted values are not stored: storing them needs a key with the admin scope"
        )
    else:
        raise fail(f"storing the planted values failed: {answer.status} {answer.body}")


def _chunks(items: list[dict[str, Any]], size: int) -> list[list[dict[str, Any]]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def _post_in_order(url: str, key: str, batches: list[list[dict]], label: str) -> int:
    """Post batches one after the other (crawl rounds arrive in order, as from a crawler)."""
    from collectors.simulate.poster import post_batches

    accepted = 0
    _answering(url)
    with Progress(
        TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(), console=console
    ) as progress:
        task = progress.add_task("post", total=len(batches))
        for batch in batches:
            try:
                accepted += asyncio.run(post_batches(url, key, [batch], concurrency=1)).accepted
            except RuntimeError as exc:  # ingest refused a batch, or kept answering 503
                raise fail(str(exc)) from None
            progress.advance(task)
    return accepted


def _answering(url: str) -> None:
    """Fail at once when nothing answers at ``url``: the poster's retries are for a service
    that restarts, and would wait minutes on a wrong URL."""
    from collectors.common.http import ServiceUnreachable, ensure_answers

    try:
        asyncio.run(ensure_answers(url))
    except ServiceUnreachable as exc:
        raise fail(str(exc)) from None


def _key(api_key: str | None) -> str:
    key = api_key or os.environ.get("AUDITSTREAM_API_KEY", "")
    if not key:
        raise fail("pass --api-key or set AUDITSTREAM_API_KEY", 2)
    return key


@app.command()
def autocomplete(
    url: Annotated[str, typer.Option(help="Base URL of ingest", callback=base_url)] = "http://127.0.0.1:8080",
    api_key: Annotated[str | None, typer.Option(help="Ingest key \\[env: AUDITSTREAM_API_KEY]")] = None,
    rounds: Annotated[int, typer.Option(help="Crawl rounds (each crawls every root)")] = 12,
    shock: Annotated[
        list[int] | None, typer.Option(help="Rounds with a root-wide shock (repeatable)")
    ] = None,
    study: Annotated[str, typer.Option(help="Crawl id prefix")] = "demo-ac",
    max_depth: Annotated[int, typer.Option(help="Breadth-first depth")] = 2,
    seed: Annotated[int, typer.Option(help="Random seed")] = 1,
) -> None:
    """Autocomplete crawl rounds with slow drift and planted shocks (default: a shock in round 8)."""
    from collectors.simulate.autocomplete_traffic import AutocompleteSimulation, CrawlConfig

    shocks = frozenset(shock if shock is not None else [8])
    sim = AutocompleteSimulation(
        CrawlConfig(study=study, max_depth=max_depth, shock_rounds=shocks, seed=seed)
    )
    batches = []
    for r in range(rounds):
        events = list(sim.crawl_round(r))
        batches += [events[i : i + 500] for i in range(0, len(events), 500)]
    console.print(f"accepted {_post_in_order(url, _key(api_key), batches, 'autocomplete rounds')}")


@app.command()
def personalization(
    url: Annotated[str, typer.Option(help="Base URL of ingest", callback=base_url)] = "http://127.0.0.1:8080",
    api_key: Annotated[str | None, typer.Option(help="Ingest key \\[env: AUDITSTREAM_API_KEY]")] = None,
    rounds: Annotated[int, typer.Option(help="Lock-step rounds (one query, every profile)")] = 200,
    study: Annotated[str, typer.Option(help="Study id")] = "demo-pers",
    noise: Annotated[float, typer.Option(help="Per-rank chance a page differs by itself")] = 0.05,
    personalization: Annotated[
        float, typer.Option(help="Per-rank chance the logged_in profile is personalized")
    ] = 0.12,
    seed: Annotated[int, typer.Option(help="Random seed")] = 1,
) -> None:
    """Lock-step SERP snapshots of four profiles with planted personalization for logged_in."""
    from collectors.simulate.serp_traffic import SerpSimulation, SerpStudyConfig

    sim = SerpSimulation(
        SerpStudyConfig(study=study, noise=noise, personalization=personalization, seed=seed)
    )
    events = [e for r in range(rounds) for e in sim.round(r)]
    batches = [events[i : i + 400] for i in range(0, len(events), 400)]
    console.print(f"accepted {_post_in_order(url, _key(api_key), batches, 'personalization rounds')}")


@app.command()
def demo(
    url: Annotated[str, typer.Option(help="Base URL of ingest", callback=base_url)] = "http://127.0.0.1:8080",
    api_key: Annotated[str | None, typer.Option(help="Ingest key \\[env: AUDITSTREAM_API_KEY]")] = None,
    events: Annotated[int, typer.Option(help="Extension events to send")] = 20_000,
    rate: Annotated[float, typer.Option(help="Extension events per second")] = 200.0,
) -> None:
    """All three study kinds: autocomplete rounds with a shock, personalization rounds, then
    extension traffic for the 'demo' experiment (what `auditstream up --demo` runs)."""
    _register_demo_experiment(url, api_key)
    autocomplete(url=url, api_key=api_key, rounds=12, shock=None, study="demo-ac", max_depth=2, seed=1)
    personalization(
        url=url, api_key=api_key, rounds=200, study="demo-pers", noise=0.05, personalization=0.12, seed=1
    )
    extension(
        url=url,
        api_key=api_key,
        events=events,
        rate=rate,
        batch_size=100,
        installs=500,
        experiment="demo",
        seed=1,
        concurrency=4,
        duration=0.0,
        paper=Paper.powermeter,
        profiles=True,
    )


def _register_demo_experiment(url: str, api_key: str | None) -> None:
    """Register the 'demo' experiment with the simulator's arms and salt, so the board's SRM
    panel has an allocation to test (a key without the admin scope skips this)."""
    import urllib.error
    import urllib.request
    from datetime import UTC, datetime

    import orjson

    from collectors.simulate.extension_traffic import TrafficConfig

    config = TrafficConfig(experiment_id="demo")
    body = {
        "experiment_id": "demo",
        "engines": [engine for engine, _ in config.engines],
        "arms": dict(config.arms),
        "salt": config.salt,
        "start": datetime.now(UTC).date().isoformat(),
    }
    request = urllib.request.Request(
        url.rstrip("/") + "/v1/experiments",
        method="POST",
        data=orjson.dumps(body),
        headers={"Authorization": f"Bearer {_key(api_key)}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30):
            console.print("registered the demo experiment")
    except urllib.error.HTTPError as exc:  # 409: already registered (a second demo run)
        if exc.code != 409:
            console.print(
                f"[yellow]the demo experiment is not registered ({exc.code}); SRM has nothing to test"
            )
