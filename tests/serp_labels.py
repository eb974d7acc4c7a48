"""Real result pages and their expected parses (``tests/fixtures/serp/real``), and a scorer.

A score compares one parse with one label the way a personalization audit uses a page:
the organic links in order (the longest common subsequence of the two lists, so one
dropped or invented result costs one, not the rest of the page), extra organic links, the
result estimate, and which kinds of boxes are on the page.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from collectors.serp.parser import ParsedSerp
from collectors.serp.urls import normalize_url

REAL = Path(__file__).resolve().parent / "fixtures" / "serp" / "real"
BASE = {"google": "https://www.google.com/", "bing": "https://www.bing.com/"}
BOXES = {
    # label key -> parser component type (ads are counted by section instead)
    "shopping": "shopping",
    "knowledge_panel": "knowledge_panel",
    "ai_overview": "ai_overview",
    "featured_snippet": "featured_snippet",
    "top_stories": "top_stories",
    "videos": "videos",
    "images": "images",
    "local_pack": "local",
    "people_also_ask": "people_also_ask",
    "related_searches": "related_searches",
}


@dataclass(frozen=True)
class Label:
    name: str
    engine: str
    organic: tuple[str, ...]
    result_estimate: int | None
    components: dict[str, Any]

    def html(self) -> bytes:
        return gzip.decompress((REAL / f"{self.name}.html.gz").read_bytes())


def labels(engine: str | None = None) -> list[Label]:
    out = []
    for path in sorted((REAL / "labels").glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        if engine and doc["engine"] != engine:
            continue
        base = BASE[doc["engine"]]
        out.append(
            Label(
                path.stem,
                doc["engine"],
                tuple(normalize_url(u, base) for u in doc["organic"]),
                doc["result_estimate"],
                doc["components"],
            )
        )
    return out


def in_order(found: list[str] | tuple[str, ...], expected: tuple[str, ...]) -> int:
    """How many expected links appear in ``found`` in the same order (longest common subsequence)."""
    row = [0] * (len(expected) + 1)
    for f in found:
        prev = 0
        for j, e in enumerate(expected):
            keep = row[j + 1]
            row[j + 1] = prev + 1 if f == e else max(row[j + 1], row[j])
            prev = keep
    return row[-1]


@dataclass(frozen=True)
class Score:
    name: str
    expected: int
    found: int
    """Expected organic links found in order."""
    extra: int
    """Organic links in the parse that the page does not have as organic results."""
    estimate_ok: bool
    boxes_wrong: tuple[str, ...]
    """Label keys (box kinds, ``ads_top``, ``ads_bottom``) where parse and label disagree."""

    @property
    def recall(self) -> float:
        return self.found / self.expected if self.expected else 1.0


def organic_of(parsed: ParsedSerp) -> list[str]:
    return [c.url for c in parsed.components if c.type == "organic"]


def score(parsed: ParsedSerp, label: Label) -> Score:
    organic = organic_of(parsed)
    expected = set(label.organic)
    wrong = []
    types = {c.type for c in parsed.components}
    for key, type_ in BOXES.items():
        if bool(label.components.get(key)) != (type_ in types):
            wrong.append(key)
    for key, section in (("ads_top", "top"), ("ads_bottom", "bottom")):
        ads = sum(1 for c in parsed.components if c.type == "ad" and c.section == section)
        if ads != label.components.get(key, 0):
            wrong.append(key)
    return Score(
        label.name,
        len(label.organic),
        in_order(organic, label.organic),
        sum(1 for u in organic if u not in expected),
        parsed.result_estimate == label.result_estimate,
        tuple(wrong),
    )
