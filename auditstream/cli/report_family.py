"""The tables ``report experiment`` prints under Figure 3 for a family of tests corrected
for their number, and for variance-reduced estimates (issue 38)."""

from __future__ import annotations

from typing import Any

from auditstream.cli.data import print_result


def _num(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _ci(low: float | None, high: float | None) -> str:
    return "—" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"


def print_corrections(corrections: dict[str, Any] | None) -> None:
    """Each member's estimate, unadjusted interval and p-value beside the family's."""
    if not corrections:
        return
    level = corrections["tests"][0]["family_level"] if corrections["tests"] else None
    sequence = corrections.get("family_sequence")
    columns = ["test", "estimate", "CI", "p", "adjusted p", "family CI", "rejected"]
    columns += ["family sequence"] if sequence else []
    rows = [
        [
            f"{t['quantity']} c{t['rank']} {t['arm']}",
            _num(t["estimate"]),
            _ci(t["ci_low"], t["ci_high"]),
            _num(t["p_value"], 4),
            _num(t["adjusted_p_value"], 4),
            _ci(t["family_ci_low"], t["family_ci_high"]),
            "yes" if t["rejected"] else "no",
            *([_ci(t.get("family_sequence_low"), t.get("family_sequence_high"))] if sequence else []),
        ]
        for t in corrections["tests"]
    ]
    at = f" (family CI at {level:.4g})" if level is not None else ""
    if sequence:
        at += f"; family sequence: each at alpha {sequence['alpha_each']:.4g}, valid at every moment"
    title = f"family of {len(rows)} tests ({corrections['family']}): {corrections['description']}{at}"
    print_result({"columns": columns, "rows": rows}, "table", title=title)


def print_reduced(reduced: dict[str, Any] | None) -> None:
    """Variance-reduced estimates beside the plain ones, with their width ratio."""
    if not reduced:
        return
    columns = ["quantity", "arm", "reduced", "CI", "plain", "plain CI", "width ratio"]
    rows = [
        [
            f"{e['quantity']} c{e['rank']}",
            e["arm"],
            _num(e["estimate"]),
            _ci(e["ci_low"], e["ci_high"]),
            _num(e["plain_estimate"]),
            _ci(e["plain_ci_low"], e["plain_ci_high"]),
            _num(e["width_ratio"], 2),
        ]
        for e in reduced["estimates"]
    ]
    print_result({"columns": columns, "rows": rows}, "table", title=f"variance-reduced: {reduced['method']}")
