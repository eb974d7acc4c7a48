"""Every table of an experiment report as one long table: what ``report experiment
--format csv`` writes (issue 37: the flat CSV held the CTR table alone, without the gaps,
distortions, shares and drops the JSON carries).

One row per (table, market, arm, quantity, rank) with ``value``, ``ci_low``, ``ci_high``
and, for a simulated study, ``planted``: one shape for every table, so a spreadsheet or a
data frame filters it instead of parsing several headers. ``table`` is the JSON key the
row comes from: ``arms`` (Figure 3), ``box_subset``, ``unweighted_arms``,
``element_shares``, ``preprocessing``, ``markets``, ``decisions``, ``summary`` and
``warnings`` (the warning's code as ``quantity``, its message as ``value``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from studies.arrangement.read.planted import planted_lookup

COLUMNS = ["table", "market", "arm", "quantity", "rank", "value", "ci_low", "ci_high", "planted"]
_ESTIMATE = re.compile(r"^(ctr|delta|beta)_c([0-9]+)$")

Row = list[Any]


def _row(table: str, arm: Any, quantity: str, value: Any, **more: Any) -> Row:
    cells = {"table": table, "arm": arm, "quantity": quantity, "value": value, **more}
    return [cells.get(c) for c in COLUMNS]


Planted = dict[tuple[str, str, int], float]


def _arms(table: str, arms: list[dict[str, Any]], planted: Planted) -> Iterator[Row]:
    """A flat Figure-3 table (``ReportArm`` records): its counts, then every estimate."""
    for record in arms:
        arm = record["arm"]
        yield _row(table, arm, "units", record["units"])
        yield _row(table, arm, "installs", record["installs"])
        for key, value in record.items():
            if m := _ESTIMATE.match(key):
                quantity, rank = m.group(1), int(m.group(2))
                yield _row(
                    table, arm, quantity, value, rank=rank, ci_low=record.get(f"{key}_ci_low"),
                    ci_high=record.get(f"{key}_ci_high"), planted=planted.get((arm, quantity, rank)),
                )  # fmt: skip


def _shares(shares: list[dict[str, Any]]) -> Iterator[Row]:
    for share in shares:
        yield _row("element_shares", share["arm"], "clicks", share["clicks"])
        for key, value in share.items():
            if key in ("arm", "clicks") or key.endswith(("_ci_low", "_ci_high")):
                continue
            low, high = share.get(f"{key}_ci_low"), share.get(f"{key}_ci_high")
            yield _row("element_shares", share["arm"], key, value, ci_low=low, ci_high=high)


def _markets(markets: list[dict[str, Any]]) -> Iterator[Row]:
    for m in markets:
        for key in ("events", "identified_share", "srm_chi2", "srm_p_value", "srm_mismatch"):
            yield _row("markets", None, key, m[key], market=m["market"])
        for arm, kept in m["units_by_arm"].items():
            yield _row("markets", arm, "kept_clicks", kept, market=m["market"])


def long_rows(doc: dict[str, Any]) -> list[Row]:
    """The rows of ``COLUMNS`` for a report's JSON (``answers.ExperimentReport``)."""
    planted = planted_lookup(doc.get("planted"))
    rows = [*_arms("arms", doc["arms"], planted)]
    rows += _arms("box_subset", doc["box_subset"]["arms"], {})
    rows += _arms("unweighted_arms", doc.get("unweighted_arms") or [], planted)
    rows += _shares(doc["element_shares"])
    for drop in doc["preprocessing"]:
        rows += [_row("preprocessing", drop["arm"], k, v) for k, v in drop.items() if k != "arm"]
    rows += _markets(doc.get("markets") or [])
    decisions = doc.get("decisions") or {}
    rows += [_row("decisions", arm, "delta_c1_excluded_zero", day) for arm, day in decisions.items()]
    power = doc.get("performative_power") or {"value": doc["performative_power_lower_bound"]}
    rows.append(
        _row("summary", power.get("arm"), "performative_power", power["value"], ci_low=power.get("ci_low"))
    )
    rows += [_row("warnings", None, w["code"], w["message"]) for w in doc.get("warnings") or []]
    return rows
