"""Reweighting the panel to a target population: raking on the questionnaire's bins.

Volunteers are not the population. The onboarding questionnaire (``install_profile``)
gives each install coarse bins (age band, country, search frequency); a target file gives
the population's share of each bin, one margin per question. Raking (iterative
proportional fitting) finds install weights whose weighted bin shares equal every margin
at once, changing the weights as little as possible in the multiplicative sense. Weights
are then trimmed (at most ``cap`` times the mean) and renormalised to mean 1.

Installs without an answer for a raked question (declined consent, skipped question) are
not raked: they keep weight 1 and stand for themselves, and the report says how many there
were. The ``balance`` package (PyPI) rakes too, but pins numpy below 2 on this Python and
pulls in plotting and notebook packages, so the ~30 lines are written here.

The effective sample size ``(sum w)^2 / sum w^2`` says how many equally weighted installs
the weighted panel is worth.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from typing import Any

import numpy as np

Targets = dict[str, dict[str, float]]
"""dimension -> bin -> population share (each dimension's shares sum to 1)."""

DIMENSIONS = ("age_band", "country", "search_frequency")
"""The questionnaire's answers a target file may rake on (columns of ``install_profiles``)."""


class TargetError(ValueError):
    """The target file is not a set of margins over the questionnaire's bins."""


def read_targets(text: str) -> Targets:
    """``dimension,bin,share`` rows (a header line first); shares of a dimension sum to 1."""
    rows = list(csv.DictReader(io.StringIO(text)))
    if not rows or set(rows[0]) != {"dimension", "bin", "share"}:
        raise TargetError("a target file has the header dimension,bin,share")
    return targets_from_rows(rows, first_line=2)


def targets_from_rows(rows: list[dict[str, Any]], first_line: int = 1) -> Targets:
    """Margins from ``{dimension, bin, share}`` records (a target file's rows, or JSON)."""
    targets: Targets = {}
    for n, row in enumerate(rows, start=first_line):
        dimension, bin_ = str(row.get("dimension", "")).strip(), str(row.get("bin", "")).strip()
        if dimension not in DIMENSIONS:
            raise TargetError(f"line {n}: dimension must be one of {', '.join(DIMENSIONS)}")
        try:
            value = float(row.get("share"))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise TargetError(f"line {n}: share must be a number") from None
        if not 0 <= value <= 1:
            raise TargetError(f"line {n}: share must lie between 0 and 1")
        if bin_ in targets.setdefault(dimension, {}):
            raise TargetError(f"line {n}: {dimension}={bin_} is given twice")
        targets[dimension][bin_] = value
    for dimension, shares in targets.items():
        if abs(sum(shares.values()) - 1) > 0.01:
            raise TargetError(f"the shares of {dimension} sum to {sum(shares.values()):.3f}, not 1")
    return targets


def rake(
    answers: Mapping[str, np.ndarray],
    targets: Targets,
    cap: float = 5.0,
    max_iter: int = 200,
    tol: float = 1e-10,
) -> np.ndarray:
    """Install weights (mean 1) matching every margin of ``targets`` among the installs that
    answered every raked question; ``answers[dimension]`` holds each install's bin (None or
    '' when not answered). Bins a target lists that no install has are left out of the
    fit (their share cannot be reached) and the other shares of that margin rescaled."""
    n = len(next(iter(answers.values()))) if answers else 0
    weights = np.ones(n)
    if not targets or n == 0:
        return weights
    columns = {d: np.asarray(answers[d], dtype=object) for d in targets}
    answered = np.ones(n, dtype=bool)
    for column in columns.values():
        answered &= np.array([v not in (None, "") for v in column])
    if not answered.any():
        return weights
    w = np.ones(int(answered.sum()))
    # each margin's bins as masks, found once (comparing object arrays each pass was most
    # of the cost at 100k installs); the passes below are unchanged
    margins = []
    for dimension, shares in targets.items():
        bins = columns[dimension][answered]
        masks = {b: mask for b in shares if (mask := bins == b).any()}
        scale = sum(shares[b] for b in masks)
        margins.append([(mask, shares[b] / scale) for b, mask in masks.items()])
    for _ in range(max_iter):
        before = w.copy()
        for margin in margins:
            for mask, share in margin:
                w[mask] *= share * w.sum() / w[mask].sum()
        w = np.minimum(w / w.mean(), cap)
        if np.abs(w - before).max() < tol:
            break
    weights[answered] = w / w.mean()
    return weights


def effective_sample_size(weights: np.ndarray) -> float:
    """(sum w)^2 / sum w^2: the equally weighted installs the weighted panel is worth."""
    total = float(weights.sum())
    return total * total / float((weights**2).sum()) if total > 0 else 0.0
