"""What every figure's caption says, from the answers themselves: the study, the selection,
the preprocessing, the interval method and n. Read from the report JSON (never restated
from defaults here), so a caption cannot claim a burn-in or interval the numbers lack."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def selection(report: dict[str, Any]) -> str:
    """Engine, subset and baseline the report was asked for (its ``request``)."""
    asked = report.get("request", {})
    text = f"Engine {asked.get('engine', 'google')}, subset {asked.get('subset', 'all')}"
    if fallback := report.get("fallback_from"):
        text += f" (the service has no subset {fallback!r}; drawn from {asked.get('subset')!r} instead)"
    return text + f", baseline {report.get('baseline', 'control')}"


def preprocessing(report: dict[str, Any]) -> str:
    identified = (
        "all pages" if report.get("request", {}).get("include_unidentified") else "identified pages only"
    )
    return (
        f"Preprocessing: each install's first {report['burn_in_days']} days dropped, "
        f"units = {report['unit_mode']}s, {identified}"
    )


def intervals(report: dict[str, Any]) -> str:
    return f"Error bars: {report['interval_guarantee']} ({report['intervals']})"


def n_of(arms: Iterable[dict[str, Any]]) -> str:
    """n per arm: units and installs."""
    return "; ".join(f"{a['arm']} {a['units']} units / {a['installs']} installs" for a in arms)


def experiment(study: str, reports: list[dict[str, Any]], arms: Iterable[str] | None = None) -> str:
    """A Powermeter figure's caption from the reports it drew (first one's preprocessing:
    every request of one run asks the same preprocessing)."""
    first = reports[0]
    wanted = set(arms) if arms is not None else None
    parts = [f"Study {study}"]
    for report in reports:
        shown = [a for a in report["arms"] if wanted is None or a["arm"] in wanted]
        parts.append(f"{selection(report)}: n = {n_of(shown)}")
    parts += [preprocessing(first), intervals(first)]
    return ". ".join(parts) + "."


def plain(study: str, what: str, n: str, method: str) -> str:
    """A caption for the studies whose reports are tables of means (no intervals)."""
    return f"Study {study}. {what}. n = {n}. {method}."
