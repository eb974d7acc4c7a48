"""Consent walls: what the browser fetcher presses, per engine, for the study's ``consent`` action.

An engine may put a consent wall in front of its results (Google's "Before you continue
to Google", Bing's cookie banner). A study says what its profiles do about it
(``[study] consent``): ``accept`` or ``reject`` presses that button, ``leave`` presses
nothing (the page is then recorded as it is: a wall without results parses as
``blocked``). The wall is recognised by the engine's rules (``[page] consent`` in
``rules/<engine>.toml``, the selectors the parser uses) or by one of its buttons; the
buttons live here, one frozen table, so a redesign of the wall is a change of data.

What happened is one of :data:`OUTCOMES`, recorded per profile in the round journal
and the archived page's metadata, and counted by ``crawl serp``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Action = Literal["accept", "reject", "leave"]
ACTIONS: tuple[Action, ...] = ("accept", "reject", "leave")

NONE = ""
"""No wall on the page."""
OUTCOMES = {
    "accept": "accepted",
    "reject": "rejected",
    "leave": "left",
}
"""Action -> what is recorded when the wall was there and the action done."""
FAILED = "failed"
"""A wall was there but pressing the button did not take it away before the deadline."""


@dataclass(frozen=True)
class ConsentButtons:
    engine: str
    accept: tuple[str, ...]
    reject: tuple[str, ...]

    def of(self, action: Action) -> tuple[str, ...]:
        return {"accept": self.accept, "reject": self.reject}.get(action, ())

    @property
    def all(self) -> tuple[str, ...]:
        return (*self.accept, *self.reject)


CONSENT_BUTTONS: tuple[ConsentButtons, ...] = (
    ConsentButtons(
        "google",
        # the in-page dialog ("Accept all" / "Reject all"), then consent.google.com's forms
        accept=(
            "#L2AGLb",
            "form[action*='consent.google'] button[aria-label='Accept all']",
            "form[action*='consent.google'] input[name='set_eom'][value='false'] ~ button",
        ),
        reject=(
            "#W0wltc",
            "form[action*='consent.google'] button[aria-label='Reject all']",
            "form[action*='consent.google'] input[name='set_eom'][value='true'] ~ button",
        ),
    ),
    ConsentButtons("bing", accept=("#bnp_btn_accept",), reject=("#bnp_btn_reject",)),
)
BY_ENGINE: dict[str, ConsentButtons] = {b.engine: b for b in CONSENT_BUTTONS}


def buttons(engine: str) -> ConsentButtons:
    """The engine's consent buttons (none known: an empty entry, so the wall is only recorded)."""
    return BY_ENGINE.get(engine, ConsentButtons(engine, (), ()))
