"""A report's tests of its family of comparisons, corrected for their number, and its
variance-reduced estimates (issue 38), from the same per-install counts as Figure 3.

Both use ``analytics/stats/family_tests.py``: a leave-one-install-out jackknife standard
error with Bell-McCaffrey degrees of freedom, the pair that kept Holm's family-wise error
and BH's false discovery rate at or below alpha at the paper's 85 uneven installs
(``bench/README.md``, "Issue 38"). They stand beside Figure 3's bootstrap intervals, which
are unchanged: the family's intervals answer "which of these gaps are real, all at once",
Figure 3's "where is each gap".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from analytics.stats.arrangement_table import (
    PerInstallArrays,
    arms_present,
    hull,
    install_matrix,
    json_number,
    sequential_bounds,
)
from analytics.stats.family_tests import FamilyTest, family_tests, reduced_estimates
from analytics.stats.multiplicity import sequence_alpha

METHOD = "leave-one-install-out jackknife SE, Student t with Bell-McCaffrey df"
FAMILY_METHODS = {
    "holm": "Holm (family-wise error); intervals: Bonferroni's simultaneous",
    "bonferroni": "Bonferroni (family-wise error); intervals: simultaneous",
    "bh": "Benjamini-Hochberg (false discovery rate); intervals: Benjamini-Yekutieli FCR, selected only",
}


def _matrix(rows: PerInstallArrays, ranks: int) -> tuple[Any, dict[str, int], int]:
    _, _, per_install = install_matrix(rows, ranks)
    return per_install, arms_present(rows), ranks + 1


def corrections_json(
    rows: PerInstallArrays | None,
    ranks: int,
    baseline: str,
    family: Sequence[tuple[str, str, int]] | None,
    method: str,
    level: float,
    sequential: bool = False,
) -> dict[str, Any] | None:
    """``ExperimentReport.corrections``: each member's estimate, p-value, adjusted p-value,
    decision and both intervals; None for ``method`` "none" or a selection without the
    baseline. ``family`` None: delta of every arm at every rank shown; members whose arm the
    selection lacks, or past ``ranks``, are left out (``untested`` lists them).

    ``sequential`` (a report of confidence sequences, watched as the study runs): each
    member also gets its family's always-valid interval (``family_sequence``)."""
    if method == "none" or rows is None:
        return None
    per_install, index, width = _matrix(rows, ranks)
    if baseline not in index:
        return None
    arms = [a for a in sorted(index) if a != baseline]
    asked = list(family) if family is not None else [("delta", a, r) for a in arms for r in range(1, width)]
    members = [m for m in asked if m[1] in arms and 1 <= m[2] < width and m[0] in ("delta", "beta")]
    tests = family_tests(per_install, index, width, baseline, members, method, level) if members else []
    tested = max(sum(1 for t in tests if t.p_value == t.p_value), 1)  # members with a p-value
    alpha_each = sequence_alpha(1 - level, tested)
    sequences = None
    if sequential:
        sequences = _family_sequences(per_install, index, width, baseline, tests, alpha_each)
    return {
        "method": method,
        "family": "plan" if family is not None else "delta of every arm at every rank shown",
        "description": f"{FAMILY_METHODS[method]}; each test: {METHOD}",
        "level": level,
        "tests": [
            {
                "quantity": t.quantity,
                "arm": t.arm,
                "rank": t.rank,
                "estimate": json_number(t.estimate),
                "p_value": json_number(t.p_value),
                "adjusted_p_value": json_number(t.adjusted_p),
                "rejected": t.rejected,
                "ci_low": json_number(t.low),
                "ci_high": json_number(t.high),
                "family_ci_low": json_number(t.family_low),
                "family_ci_high": json_number(t.family_high),
                "family_level": json_number(t.family_level),
                **(
                    {}
                    if sequences is None
                    else {
                        "family_sequence_low": json_number(sequences[i][0]),
                        "family_sequence_high": json_number(sequences[i][1]),
                    }
                ),
            }
            for i, t in enumerate(tests)
        ],
        **({} if sequences is None else {"family_sequence": _sequence_note(alpha_each, tested)}),
        "untested": [list(m) for m in asked if m not in members],
    }


def _family_sequences(
    per_install: Any,
    index: dict[str, int],
    width: int,
    baseline: str,
    tests: list[FamilyTest],
    alpha_each: float,
) -> list[tuple[float, float]]:
    """Each member's confidence sequence at ``alpha_each`` = alpha / m
    (``multiplicity.sequence_alpha``), m the members with a p-value: by the union bound all
    m cover at once *and* at every moment, so a family watched as the study runs may be
    stopped at will. It is widened to hold the member's family interval where there is one
    (a superset of a sequence is one too), as Figure 3's sequences hold its bootstrap's
    intervals."""
    bounds = sequential_bounds(per_install, index, width, baseline, alpha_each)
    out = []
    for t in tests:
        own = bounds[(t.quantity, t.arm)][t.rank - 1]
        out.append(hull(own, (t.family_low, t.family_high)) if t.family_low == t.family_low else own)
    return out


def _sequence_note(alpha_each: float, members: int) -> dict[str, Any]:
    return {
        "alpha_each": alpha_each,
        "members": members,
        "description": (
            "Bonferroni across the family: each member's confidence sequence at alpha/m, so all "
            "cover at once and at every moment (the always-valid counterpart of the family's "
            "correction; for BH too, as e-BH needs e-values these sequences do not give)"
        ),
    }


def reduced_json(
    rows: PerInstallArrays | None,
    ranks: int,
    baseline: str,
    arm_weights: Mapping[str, float] | None,
    level: float,
) -> dict[str, Any] | None:
    """``ExperimentReport.variance_reduction``: per arm, rank and quantity the
    variance-reduced estimate and interval beside the plain one by the same method (design
    control variates: ``docs/variance-reduction.md``), and their width ratio. None when the
    registered weights of the arms present are not known (an unregistered experiment): the
    control variates need the design's assignment probabilities."""
    if rows is None:
        return None
    per_install, index, width = _matrix(rows, ranks)
    if baseline not in index or arm_weights is None or not set(index) <= set(arm_weights):
        return None
    weights = {a: float(arm_weights[a]) for a in index}
    reduced = reduced_estimates(per_install, index, width, weights, baseline, level)
    plain = {
        (t.quantity, t.arm, t.rank): t
        for t in family_tests(per_install, index, width, baseline, list(reduced), "none", level)
    }
    out = []
    for (quantity, arm, rank), (estimate, low, high) in sorted(reduced.items()):
        p = plain[(quantity, arm, rank)]
        ratio = (high - low) / (p.high - p.low) if p.high > p.low else float("nan")
        out.append(
            {
                "quantity": quantity,
                "arm": arm,
                "rank": rank,
                "estimate": json_number(estimate),
                "ci_low": json_number(low),
                "ci_high": json_number(high),
                "plain_estimate": json_number(p.estimate),
                "plain_ci_low": json_number(p.low),
                "plain_ci_high": json_number(p.high),
                "width_ratio": json_number(ratio),
            }
        )
    return {
        "method": f"design control variates (docs/variance-reduction.md); intervals: {METHOD}",
        "level": level,
        "estimates": out,
    }
