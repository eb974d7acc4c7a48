"""A figure and its writing: SVG, PNG and the CSV of the numbers drawn, deterministically.

The backend is set to Agg before pyplot is imported (no display, and the same output on
every machine); the SVG's ids are salted with a constant and its date left out, so the
same answers draw byte-identical files and a review sees only real changes.
"""

from __future__ import annotations

import csv
import html
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

from matplotlib.figure import Figure as MplFigure

matplotlib.rcParams.update(
    {
        "svg.hashsalt": "auditstream-figures",
        "svg.fonttype": "none",  # text stays text: searchable, and a test can find the legends
        "font.size": 8,
        "axes.titlesize": 8,
        "axes.labelsize": 8,
        "legend.fontsize": 7,
        "xtick.labelsize": 7,
        "ytick.labelsize": 7,
        "axes.spines.top": False,
        "axes.spines.right": False,
    }
)

BLUE, ORANGE, RED, GREY = "#1f77b4", "#ff7f0e", "#d62728", "#7f7f7f"
"""The papers' colours: control blue, the counterfactual orange (Powermeter's Figure 5 adds red)."""


@dataclass
class Figure:
    """One drawn figure: ``name`` is its file stem, ``columns``/``rows`` its CSV (the numbers
    drawn, as the report gave them)."""

    name: str
    title: str
    caption: str
    figure: MplFigure
    columns: list[str]
    rows: list[list[Any]] = field(default_factory=list)


def new_figure(width: float, height: float) -> MplFigure:
    """A figure not registered with pyplot (no global state, safe in a worker thread)."""
    return MplFigure(figsize=(width, height), layout="constrained")


def svg_bytes(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.figure.savefig(buf, format="svg", metadata={"Date": None})
    return buf.getvalue()


def png_bytes(fig: Figure, dpi: int = 150) -> bytes:
    buf = io.BytesIO()
    fig.figure.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()


def csv_text(fig: Figure) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(fig.columns)
    writer.writerows(["" if v is None else v for v in row] for row in fig.rows)
    return buf.getvalue()


def write(fig: Figure, folder: Path) -> list[Path]:
    """``folder/<name>.svg``, ``.png`` and ``.csv``; the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"{fig.name}.{ext}" for ext in ("svg", "png", "csv")]
    paths[0].write_bytes(svg_bytes(fig))
    paths[1].write_bytes(png_bytes(fig))
    paths[2].write_text(csv_text(fig))
    return paths


def index_html(title: str, figures: dict[str, list[Figure]]) -> str:
    """A page listing every figure by paper, each image with its title, caption and CSV."""
    parts = [
        "<!doctype html><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title><h1>{html.escape(title)}</h1>",
    ]
    for paper, drawn in figures.items():
        parts.append(f"<h2>{html.escape(paper)}</h2>")
        for fig in drawn:
            stem = html.escape(f"{paper}/{fig.name}")
            parts.append(
                f"<figure><img src='{stem}.svg' alt='{html.escape(fig.title)}' style='max-width:100%'>"
                f"<figcaption><b>{html.escape(fig.title)}.</b> {html.escape(fig.caption)} "
                f"(<a href='{stem}.csv'>data</a>, <a href='{stem}.png'>PNG</a>)</figcaption></figure>"
            )
    return "\n".join(parts) + "\n"
