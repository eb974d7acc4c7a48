"""The board's data as pure functions over query rows (lists of dicts); no I/O here.

Each function returns the JSON one panel draws. The experiment panels are drawn
from ``studies.arrangement.read.report.run_experiment_report``, the same function behind
``auditstream report experiment``, with the same seed, so they agree to the last digit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson

from analytics.stats.srm import SRM_ALPHA, srm_test
from studies.arrangement.answers import clean

Row = Mapping[str, Any]


# --------------------------------------------------------------------------- index


def experiment_index(activity: Iterable[Row], registry: Iterable[Row]) -> list[dict[str, Any]]:
    """Experiments with data or a registry entry, the most recently active first."""
    found: dict[str, dict[str, Any]] = {}
    for row in activity:
        found[row["experiment_id"]] = {
            "experiment_id": row["experiment_id"],
            "engines": list(row["engines"]),
            "units": int(row["units"]),
            "last_day": row["last_day"],
            "registered": False,
            "status": None,
        }
    for row in registry:
        entry = found.setdefault(
            row["experiment_id"],
            {
                "experiment_id": row["experiment_id"],
                "engines": [],
                "units": 0,
                "last_day": "",
                "registered": True,
                "status": None,
            },
        )
        entry["registered"] = True
        entry["status"] = row["status"]
        entry["engines"] = sorted(set(entry["engines"]) | set(row["engines"]))
    return sorted(found.values(), key=lambda e: (e["last_day"], e["units"], e["experiment_id"]), reverse=True)


CRAWLER_ID = re.compile(r"(?P<study>.+-)\d{8}T\d{6}Z-[0-9a-f]+")
"""The ids ``crawl autocomplete`` makes: ``<study>-<UTC time>-<hex>`` (``runner.new_crawl_id``)."""


def study_prefix(crawl_id: str) -> str:
    """A crawl's study as ``report autocomplete --study`` takes it: ``<study>-`` of an id the
    crawler made (``realac-20261127T125015Z-1a2b`` -> ``realac-``; cutting at the last '-'
    made each round a study of its own), else the id up to and including its last '-'
    (``--crawl-id mystudy-r0003`` -> ``mystudy-``)."""
    if made := CRAWLER_ID.fullmatch(crawl_id):
        return made["study"]
    head, sep, _ = crawl_id.rpartition("-")
    return head + sep if head else crawl_id


def autocomplete_index(crawls: Iterable[Row]) -> list[dict[str, Any]]:
    """Autocomplete studies (crawl id prefixes) with their rounds (crawl ids), the rounds in
    which some root fetched something, and their engines, newest first.

    ``rounds_with_data`` lets the board open on a study it can draw (churn and nmi compare
    rounds): one failed crawl, the newest, must not replace the panels with empty ones.
    """
    studies: dict[str, dict[str, Any]] = {}
    for row in crawls:
        prefix = study_prefix(row["crawl_id"])
        entry = studies.setdefault(
            prefix, {"study": prefix, "rounds": set(), "with_data": set(), "engines": set(), "last": ""}
        )
        entry["rounds"].add(row["crawl_id"])
        if int(row["fetched_roots"]):
            entry["with_data"].add(row["crawl_id"])
        entry["engines"].add(row["engine"])
        entry["last"] = max(entry["last"], row["completed_at"])
    out = [
        {
            "study": s["study"],
            "rounds": len(s["rounds"]),
            "rounds_with_data": len(s["with_data"]),
            "engines": sorted(s["engines"]),
            "last": s["last"],
        }
        for s in studies.values()
    ]
    return sorted(out, key=lambda s: (s["last"], s["study"]), reverse=True)


def personalization_index(studies: Iterable[Row]) -> list[dict[str, Any]]:
    rows = [
        {"study_id": r["study_id"], "rounds": int(r["rounds"]), "last_round": r["last_round"]}
        for r in studies
    ]
    return sorted(rows, key=lambda s: (s["last_round"], s["study_id"]), reverse=True)


# --------------------------------------------------------------------------- experiment


def shares_json(shares: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: (clean(v) if isinstance(v, float) else v) for k, v in s.items()} for s in shares]


def drops_panel(rows: Iterable[Row]) -> list[dict[str, Any]]:
    """Units per arm before preprocessing, dropped by each rule, and kept (and the clicks
    kept, which the SRM check counts, where the rows have them)."""
    out = []
    for r in rows:
        total, burn, unident = int(r["all_units"]), int(r["burn_in_dropped"]), int(r["unidentified_dropped"])
        row = {
            "arm": r["arm"],
            "all_units": total,
            "burn_in_dropped": burn,
            "unidentified_dropped": unident,
            "kept": total - burn - unident,
        }
        if "kept_clicks" in r:
            row["kept_clicks"] = int(r["kept_clicks"])
        out.append(row)
    return out


def srm_panel(
    drops: Sequence[Mapping[str, Any]],
    allocation: Mapping[str, float] | None,
    alerts: Iterable[Row],
) -> dict[str, Any]:
    """Units per arm after preprocessing against the registered allocation, the live
    chi-square test (as the worker's SRM check runs it) and any SRM alert raised.

    ``drops`` is the output of ``drops_panel``: its ``kept_clicks`` (``kept`` where there
    are none, as in click mode) are exactly what the SRM check counts: click units,
    identified, past the burn-in, whatever the report's unit mode.
    """
    units = {d["arm"]: int(d.get("kept_clicks", d["kept"])) for d in drops}
    alert_list = [
        {**{k: v for k, v in a.items() if k != "details"}, "details": _details(a.get("details"))}
        for a in alerts
    ]
    total_units = sum(units.values())
    weights = dict(allocation or {})
    total_w = sum(weights.values())
    arms = sorted(set(units) | set(weights), key=lambda a: (a != "control", a))
    rows = [
        {
            "arm": a,
            "units": units.get(a, 0),
            "share": clean(units.get(a, 0) / total_units) if total_units else None,
            "expected_share": clean(weights[a] / total_w) if a in weights and total_w else None,
        }
        for a in arms
    ]
    result = srm_test(units, weights) if weights else None
    if alert_list:
        status = "alert"
    elif allocation is None:
        status = "unregistered"
    elif result is None or result.units == 0:
        status = "no_units"
    else:
        status = "mismatch" if result.mismatch else "ok"
    return {
        "status": status,
        "registered": allocation is not None,
        "alpha": SRM_ALPHA,
        "units": total_units,
        "chi2": clean(result.chi2) if result else None,
        "p_value": clean(result.p_value) if result else None,
        "arms": rows,
        "alerts": alert_list,
    }


def clean_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows whose floats are JSON numbers: NaN and infinities become null."""
    return [{k: clean(v) if isinstance(v, float) else v for k, v in r.items()} for r in rows]


def _details(text: Any) -> Any:
    if not isinstance(text, str) or not text:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


# --------------------------------------------------------------------------- autocomplete


def churn_panel(rows: Iterable[Row]) -> list[dict[str, Any]]:
    """Mean churn as a depth x rank grid per engine (RAI Figure 5); absent cells are None."""
    cells: dict[str, dict[tuple[int, int], tuple[float, int]]] = {}
    for r in rows:
        cells.setdefault(r["engine"], {})[(int(r["depth"]), int(r["rank"]))] = (
            float(r["mean_churn"]),
            int(r["pairs"]),
        )
    out = []
    for engine in sorted(cells):
        grid = cells[engine]
        ranks = sorted({rank for _, rank in grid})
        depths = sorted({depth for depth, _ in grid})
        out.append(
            {
                "engine": engine,
                "ranks": ranks,
                "depths": depths,
                "churn": [[_cell(grid.get((d, r)), 0) for r in ranks] for d in depths],
                "pairs": [[_cell(grid.get((d, r)), 1) for r in ranks] for d in depths],
            }
        )
    return out


def _cell(value: tuple[float, int] | None, index: int) -> float | int | None:
    if value is None:
        return None
    item = value[index]
    return clean(item) if isinstance(item, float) else item


def nmi_panel(rows: Iterable[Row]) -> list[dict[str, Any]]:
    """nmi per crawl round and engine, oldest first, with the rounds an alert called a shock."""
    series: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        details = _details(r.get("shock_details")) if r.get("shock") else None
        series.setdefault(r["engine"], []).append(
            {
                "crawl_id": r["crawl_id"],
                "completed_at": r["completed_at"],
                "roots": int(r["roots"]),
                "mean_nmi": _num(r["mean_nmi"]),
                "min_nmi": _num(r["min_nmi"]),
                "shock": bool(r["shock"]),
                "shock_details": details,
            }
        )
    return [
        {"engine": engine, "rounds": sorted(points, key=lambda p: (p["completed_at"], p["crawl_id"]))}
        for engine, points in sorted(series.items())
    ]


def _num(value: Any) -> float | None:
    return None if value is None else clean(float(value))


# --------------------------------------------------------------------------- personalization


def personalization_panel(by_rank: Iterable[Row], rounds: Iterable[Row]) -> dict[str, Any]:
    """Share of results changed per rank and treatment against the noise floor (control vs twin)."""
    treatments: dict[str, list[dict[str, Any]]] = {}
    for r in by_rank:
        treatments.setdefault(r["treatment"], []).append(
            {
                "rank": int(r["rank"]),
                "changed": _num(r["changed"]),
                "noise": _num(r["noise"]),
                "personalization": _num(r["personalization"]),
            }
        )
    summary = next(iter(rounds), None)
    return {
        "treatments": [
            {"treatment": t, "ranks": sorted(points, key=lambda p: p["rank"])}
            for t, points in sorted(treatments.items())
        ],
        "rounds": dict(summary) if summary and int(summary.get("rounds", 0)) else None,
    }


# --------------------------------------------------------------------------- alerts


def alerts_panel(rows: Iterable[Row]) -> list[dict[str, Any]]:
    """Alerts as stored, newest first (the query orders them; kept stable here)."""
    return sorted((dict(r) for r in rows), key=lambda a: a["created_at"], reverse=True)
