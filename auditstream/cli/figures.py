"""``auditstream figures``: the papers' figures from a running service, as SVG, PNG and CSV.

Each paper's requests (``figures.sources``) are asked once each, with a progress bar; the
figures are drawn by ``figures.<paper>`` and written to ``OUT/<paper>/<figure>.svg|png|csv``
with an ``index.html`` listing them with their captions.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from auditstream.cli.common import console, fail
from auditstream.cli.data import ApiKeyOpt, Url

if TYPE_CHECKING:
    from figures.render import Figure
    from figures.sources import Need

PAPERS = ("powermeter", "personalization", "autocomplete")


def figures(
    target: Annotated[
        str,
        typer.Argument(help="The experiment id (powermeter), or the study (personalization, autocomplete)"),
    ],
    out: Annotated[Path, typer.Option(help="Folder for <paper>/<figure>.svg|png|csv and index.html")],
    paper: Annotated[
        str, typer.Option(help="powermeter, personalization, autocomplete or all")
    ] = "powermeter",
    study: Annotated[
        str | None, typer.Option(help="With --paper all: the personalization study (none: not drawn)")
    ] = None,
    crawls: Annotated[
        str | None, typer.Option(help="With --paper all: the autocomplete crawl id prefix (none: not drawn)")
    ] = None,
    url: Url = "http://127.0.0.1:8080",
    api_key: ApiKeyOpt = None,
) -> None:
    """Draw each paper's figures (Powermeter 3-6, 8, 9; Hannak 5-16 as the data allows; RAI
    2-7, 9) from the service's reports, with the numbers beside each as CSV."""
    if paper not in (*PAPERS, "all"):
        raise fail(f"--paper must be one of {', '.join(PAPERS)} or all", 2)
    key = api_key or os.environ.get("AUDITSTREAM_API_KEY", "")
    if not key:
        raise fail("pass --api-key or set AUDITSTREAM_API_KEY", 2)
    targets = _targets(paper, target, study, crawls)
    drawn: dict[str, list[Figure]] = {}
    for name, subject in targets.items():
        drawn[name] = _paper(name, subject, url, key)
    written = _write(drawn, out, target)
    console.print(f"wrote {written} figures to {out} (index.html lists them)")


def _targets(paper: str, target: str, study: str | None, crawls: str | None) -> dict[str, str]:
    """The papers to draw and what each is drawn for."""
    if paper != "all":
        return {paper: target}
    chosen = {"powermeter": target, "personalization": study, "autocomplete": crawls}
    return {name: subject for name, subject in chosen.items() if subject is not None}


def _paper(name: str, subject: str, url: str, key: str) -> list[Figure]:
    """One paper's requests, gathered with a progress bar, and its figures."""
    from figures import autocomplete, personalization, powermeter, sources

    if name == "powermeter":
        config = _config(url, key, subject)
        needs = sources.powermeter(config)
    elif name == "personalization":
        needs = sources.personalization(subject)
    else:
        needs = sources.autocomplete(subject)
    answers = _gather(name, needs, url, key)
    if name == "powermeter":
        if all(answers[f"{e}/all"] is None for e in config["engines"]):
            raise fail(f"no units for experiment {subject!r} (auditstream experiment list shows them)", 2)
        return powermeter.draw(config, answers)
    if name == "personalization":
        if not answers["by_treatment"]["rows"]:
            raise fail(f"no compared rounds for study {subject!r}", 1)
        return personalization.draw(subject, answers)
    if not any(answers[t]["rows"] for t in ("churn", "nmi", "depth")):
        raise fail(f"no completed autocomplete crawls start with {subject!r}", 1)
    return autocomplete.draw(subject, answers)


def _gather(name: str, needs: list[Need], url: str, key: str) -> dict[str, Any]:
    from figures.sources import Refused, gather

    columns = (
        TextColumn(f"[bold]{name}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
    )
    with Progress(*columns, console=console) as progress:
        task = progress.add_task("", total=len(needs))

        def ask(path: str, body: dict[str, Any]) -> Any:
            progress.update(task, description=str(body.get("subset", "")))
            return _request(url, key, "POST", path, body)

        try:
            return gather(needs, ask, lambda _: progress.advance(task))
        except Refused as exc:
            raise fail(f"{exc.status}: {exc.message}") from None


def _config(url: str, key: str, experiment_id: str) -> dict[str, Any]:
    """The experiment's registration; one with data but none is drawn from its reports' arms."""
    from figures.powermeter import unregistered
    from figures.sources import Refused

    try:
        return dict(_request(url, key, "GET", f"/v1/experiments/{experiment_id}", None))
    except Refused as exc:
        if exc.status == 404:
            return unregistered(experiment_id)
        raise fail(f"{exc.status}: {exc.message}") from None


def _request(url: str, key: str, method: str, path: str, body: Any) -> Any:
    """One JSON request (``data.request_json``, with a figure's longer deadline); a refusal is
    ``Refused`` (the caller decides)."""
    from auditstream.cli.data import ApiRefused, request_json
    from figures.sources import Refused

    try:
        return request_json(url, key, method, path, body, timeout=300)
    except ApiRefused as exc:
        raise Refused(exc.status, exc.message[:500]) from None


def _write(drawn: dict[str, list[Figure]], out: Path, title: str) -> int:
    from figures.render import index_html, write

    for paper, figs in drawn.items():
        for fig in figs:
            write(fig, out / paper)
    (out / "index.html").write_text(index_html(f"Figures: {title}", drawn))
    return sum(len(f) for f in drawn.values())
