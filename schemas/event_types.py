"""The one table of event types: everything else about a type is derived from it.

Each row names the type (the ``type`` field's value), its model (``schemas/events.py``),
its family (``schemas/topics.py``: topic, raw table, partition key, the fields the worker
needs) and whether it comes from the browser extension (the privacy rules apply: no
query text, URLs or titles). The pydantic union, the list of models, the extension
types, the family of each type and the validation tags are all computed from here;
``tests/test_schemas/test_event_types.py`` checks each row is wired end to end.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Union

from pydantic import BaseModel, Field

from schemas.events import (
    AutocompleteNode,
    Click,
    CrawlCompleted,
    CrawlStarted,
    InstallProfile,
    SerpSnapshot,
    SerpView,
)
from schemas.topics import AUTOCOMPLETE, EXTENSION, PANEL, SERP, Family


@dataclass(frozen=True)
class EventType:
    name: str
    model: type[BaseModel]
    family: Family
    from_extension: bool = False

    @property
    def scope(self) -> str:
        """The key scope that may post this type: the extension's key is public (it ships
        inside the extension), so it must not be able to plant crawl data."""
        return "ingest" if self.from_extension else "crawler"


EVENT_TYPES: tuple[EventType, ...] = (
    EventType("serp_view", SerpView, EXTENSION, from_extension=True),
    EventType("click", Click, EXTENSION, from_extension=True),
    EventType("install_profile", InstallProfile, PANEL, from_extension=True),
    EventType("serp_snapshot", SerpSnapshot, SERP),
    EventType("autocomplete_node", AutocompleteNode, AUTOCOMPLETE),
    EventType("crawl_started", CrawlStarted, AUTOCOMPLETE),
    EventType("crawl_completed", CrawlCompleted, AUTOCOMPLETE),
)

BY_NAME: dict[str, EventType] = {t.name: t for t in EVENT_TYPES}
EVENT_MODELS: tuple[type[BaseModel], ...] = tuple(t.model for t in EVENT_TYPES)
EXTENSION_TYPES: frozenset[str] = frozenset(t.name for t in EVENT_TYPES if t.from_extension)
FAMILY_BY_TYPE: dict[str, Family] = {t.name: t.family for t in EVENT_TYPES}
SCOPE_BY_TYPE: dict[str, str] = {t.name: t.scope for t in EVENT_TYPES}
POSTING_SCOPES: tuple[str, ...] = tuple(dict.fromkeys(t.scope for t in EVENT_TYPES))
"""The scopes that may post some event type (a key needs one of them for ``/v1/events``)."""

AnyEvent: Any = Annotated[Union[EVENT_MODELS], Field(discriminator="type")]  # noqa: UP007
"""Any event, told apart by its ``type`` (for ``pydantic.TypeAdapter``)."""


def types_of(family: Family) -> frozenset[str]:
    """The event types of one family."""
    return frozenset(t.name for t in EVENT_TYPES if t.family is family)
