"""What a report says about its own numbers (issue 37): a reader of a table or of the JSON
should not have to know that the arms were not randomised as registered, that a targets
file raked nobody, or that an arm is too thin for an interval. Pure functions of what the
report already read; ``run_experiment_report`` calls ``report_warnings``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from analytics.stats.arrangement_table import MIN_INSTALLS, MIN_UNITS, ArmRow, too_few
from analytics.stats.srm import SRM_ALPHA, srm_test


def warning(code: str, message: str) -> dict[str, str]:
    """One warning as the answer carries it (``answers.ReportWarning``)."""
    return {"code": code, "message": message}


def srm_warning(
    drops: Sequence[Mapping[str, Any]], allocation: Mapping[str, float] | None
) -> dict[str, str] | None:
    """The SRM test of the selection the report shows: the clicks each arm kept after
    preprocessing (``kept_clicks`` of the drops, as the board's SRM panel and the worker's
    check count them) against the arms' registered weights on this engine. None when it
    passes, when the experiment is not registered, or when nothing was kept."""
    if not allocation:
        return None
    units = {str(d["arm"]): int(d["kept_clicks"]) for d in drops}
    result = srm_test(units, allocation)
    if result.units == 0 or not result.mismatch:
        return None
    kept = ", ".join(f"{arm} {n}" for arm, n in sorted(units.items()))
    return warning(
        "srm_mismatch",
        f"sample ratio mismatch: the clicks kept per arm ({kept}) do not fit the registered "
        f"allocation (chi-square p = {result.p_value:.3g} < {SRM_ALPHA}); arms may differ for "
        "reasons other than their arrangement",
    )


def unweighted_warning(reweighting: Mapping[str, Any] | None) -> dict[str, str] | None:
    """Asked to reweight, but no install was raked (no profiles, or none with an answer in
    the targets' dimensions): every weight is 1, so the "weighted" numbers are the panel's own."""
    if reweighting is None or reweighting.get("installs_raked"):
        return None
    return warning(
        "unweighted",
        f"reweighting raked {reweighting.get('installs_raked', 0)} of "
        f"{reweighting.get('installs_with_profile', 0)} profiled installs: the numbers are unweighted",
    )


def thin_warnings(tables: Mapping[str, Sequence[ArmRow]]) -> list[dict[str, str]]:
    """One warning per arm of each named table with too few installs or units for an
    interval (``arrangement_table.too_few``): its intervals are null, its values stand."""
    out = []
    for name, table in tables.items():
        for row in table:
            if too_few(row):
                out.append(
                    warning(
                        "too_few_units",
                        f"{name}, arm {row.arm}: {row.units} units from {row.installs} installs, "
                        f"fewer than {MIN_UNITS} units or {MIN_INSTALLS} installs: no interval "
                        "(nor for its gaps and distortions; against it as baseline, none for any arm)",
                    )
                )
    return out


def report_warnings(
    tables: Mapping[str, Sequence[ArmRow]],
    drops: Sequence[Mapping[str, Any]],
    allocation: Mapping[str, float] | None,
    reweighting: Mapping[str, Any] | None,
) -> list[dict[str, str]]:
    """Every warning of a report, SRM first."""
    found = [srm_warning(drops, allocation), unweighted_warning(reweighting)]
    return [w for w in found if w is not None] + thin_warnings(tables)
