"""Recorded answers of a running service (the seven-arm Google+Bing study of
docs/reproducing.md simulated with 30k events, ``simulate personalization`` and ``simulate
autocomplete``), as ``figures.sources.gather`` returns them: the figure functions are pure,
so their tests need no service."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from figures.render import Figure, write

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "figures"


def load(name: str) -> Any:
    return json.loads((FIXTURES / f"{name}.json").read_text())


@pytest.fixture
def powermeter_answers() -> dict[str, Any]:
    return dict(load("powermeter"))


@pytest.fixture
def personalization_answers() -> dict[str, Any]:
    return dict(load("personalization"))


@pytest.fixture
def autocomplete_answers() -> dict[str, Any]:
    return dict(load("autocomplete"))


def written(fig: Figure, folder: Path) -> str:
    """Write the figure; check its three files; return the SVG's text."""
    svg, png, csv_path = write(fig, folder)
    ET.fromstring(svg.read_bytes())  # parses as XML
    assert png.read_bytes().startswith(b"\x89PNG")
    assert csv_path.read_text().splitlines()[0] == ",".join(fig.columns)
    return svg.read_text()
