"""The component types a result page is cut into: one frozen table, the single source of truth.

Rules files may only name these types (a test ties them), the parser falls back to
``unknown``, and every name fits ``SerpResult.type`` (``^[a-z][a-z0-9_]{0,31}$``).
Sections say where on the page a component sits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Section = Literal["top", "main", "bottom", "side"]
SECTIONS: tuple[Section, ...] = ("top", "main", "bottom", "side")


@dataclass(frozen=True)
class ComponentType:
    name: str
    description: str


COMPONENT_TYPES: tuple[ComponentType, ...] = (
    ComponentType("organic", "a web result: primary link and title"),
    ComponentType("ad", "a sponsored text result, above (top) or below (bottom) the results"),
    ComponentType("shopping", "product listings with prices (Google Shopping, Bing product ads)"),
    ComponentType("knowledge_panel", "the entity panel, usually in the side column"),
    ComponentType("top_stories", "news carousel: Top stories / News"),
    ComponentType("videos", "video carousel"),
    ComponentType("images", "image strip"),
    ComponentType("local", "map and local business pack"),
    ComponentType("people_also_ask", "expandable related questions (no primary link)"),
    ComponentType("related_searches", "links to other queries (no primary link)"),
    ComponentType("unknown", "a block no rule recognized: a new or changed layout"),
)
BY_NAME: dict[str, ComponentType] = {t.name: t for t in COMPONENT_TYPES}
UNKNOWN = "unknown"
