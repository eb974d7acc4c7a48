"""Grouped bars with 95% error bars, the one chart the papers draw most: shared by the
paper modules so every panel clips, labels and marks missing data the same way."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from matplotlib.axes import Axes

SWAP = re.compile(r"^swap_(\d+)_(\d+)$")
ARM_LABELS = {
    "hide_box": "hide box",
    "hide_ads_box": "hide box+Ads",
    "hide_ads_box_swap_1_2": "hide box+Ads, swap 1-2",
}


def estimate(row: dict[str, Any] | None, key: str) -> tuple[Any, Any, Any]:
    """(value, ci_low, ci_high) of a flat report key (``ctr_c1``), ``None``s where missing."""
    if row is None:
        return None, None, None
    return row.get(key), row.get(f"{key}_ci_low"), row.get(f"{key}_ci_high")


def grouped(
    ax: Axes,
    labels: Sequence[str],
    series: Sequence[tuple[str, str, Sequence[tuple[Any, Any, Any]]]],
    hatches: Sequence[str] | None = None,
) -> None:
    """Bars per label for each series (legend name, colour, (value, low, high) per label);
    a missing value draws no bar, a missing interval no error bar."""
    width = 0.8 / max(len(series), 1)
    for s, (name, colour, points) in enumerate(series):
        xs = [i + (s - (len(series) - 1) / 2) * width for i in range(len(labels))]
        values = [0.0 if p[0] is None else p[0] for p in points]
        errors: list[list[float]] | None = [
            [0.0 if p[0] is None or p[1] is None else max(p[0] - p[1], 0.0) for p in points],
            [0.0 if p[0] is None or p[2] is None else max(p[2] - p[0], 0.0) for p in points],
        ]
        if all(p[1] is None and p[2] is None for p in points):
            errors = None  # a mean without an interval: no error bar, no cap
        hatch = hatches[s] if hatches else None
        ax.bar(
            xs, values, width, yerr=errors, capsize=2, label=name, color=colour,
            hatch=hatch, edgecolor="white" if hatch else None, error_kw={"elinewidth": 0.8},
        )  # fmt: skip
    ax.set_xticks(range(len(labels)), labels)
    ax.axhline(0, color="black", linewidth=0.6)


def arm_label(arm: str) -> str:
    """The paper's name of an arm (``swap_1_2`` is "swap 1-2", ``hide_ads_box`` "hide box+Ads")."""
    if found := SWAP.match(arm):
        return f"swap {found.group(1)}-{found.group(2)}"
    return ARM_LABELS.get(arm, arm.replace("_", " "))


def same_y(*axes: Axes, room: float = 0.3) -> None:
    """Panels compared side by side share one y range, set once after every panel is drawn
    (so no bar or error bar is clipped), with ``room`` above for the legend."""
    low = min(ax.get_ylim()[0] for ax in axes)
    high = max(ax.get_ylim()[1] for ax in axes)
    for ax in axes:
        ax.set_ylim(low, high + (high - low) * room)


def no_data(ax: Axes, what: str) -> None:
    """A panel whose selection had no units says so instead of drawing empty axes."""
    ax.text(0.5, 0.5, what, ha="center", va="center", transform=ax.transAxes, color="grey")
    ax.set_xticks([])
    ax.set_yticks([])
