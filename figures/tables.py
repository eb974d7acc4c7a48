"""The sections of the table reports (personalization, autocomplete) as CSV rows: the
columns a figure draws, copied from the answer's rows in their order."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure as MplFigure
from matplotlib.ticker import MaxNLocator

from figures.bars import no_data
from figures.render import BLUE, GREY, ORANGE, Figure

ENGINE_COLOURS = {"google": BLUE, "bing": ORANGE}
"""RAI's colours: Google blue, Bing yellow-orange."""


def rows_of(
    answer: dict[str, Any], columns: list[str], keep: Callable[[dict[str, Any]], bool] | None = None
) -> list[list[Any]]:
    return [[r[c] for c in columns] for r in answer["rows"] if keep is None or keep(r)]


def section_figure(
    name: str, title: str, text: str, fig: MplFigure, section: dict[str, Any], columns: list[str]
) -> Figure:
    """A figure drawn from one report section, its CSV the section's ``columns``."""
    return Figure(name, title, text, fig, columns, rows_of(section, columns))


def colour(name: str, i: int = 0) -> str:
    palette = (BLUE, ORANGE, "#2ca02c", "#9467bd", "#8c564b", "#e377c2")
    return ENGINE_COLOURS.get(name, palette[i % len(palette)] if i >= 0 else GREY)


def by(answer: dict[str, Any], column: str) -> dict[Any, list[dict[str, Any]]]:
    """The answer's rows grouped by one column, in order of first appearance."""
    groups: dict[Any, list[dict[str, Any]]] = {}
    for row in answer["rows"]:
        groups.setdefault(row[column], []).append(row)
    return groups


def integer_x(ax: Axes, values: list[Any]) -> None:
    """Depths, ranks, days and word counts are whole numbers: tick them as such (each value
    when there are few, else whole-number steps), never 0.5 or 3.95."""
    shown = sorted(set(values))
    if len(shown) <= 15:
        ax.set_xticks(shown, [str(v) for v in shown])
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def empty(ax: Axes, answer: dict[str, Any], what: str) -> bool:
    """True (and the panel says ``what``) when the section has no rows."""
    if answer["rows"]:
        return False
    no_data(ax, what)
    return True
