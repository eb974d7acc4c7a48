"""Personalization audits: lock-step SERP snapshots (Hannak et al.; docs/method.md, "Personalization audits").

All profiles of a study run the same query at the same moment, round after round on
a fixed clock grid; one ``serp_snapshot`` event per (round, profile). Modules, from
pure to I/O:

- ``types``: the component types (one table) and page sections.
- ``urls``: result URL normalization (redirect unwrapping, tracking parameters).
- ``rulebook`` and ``rules/<engine>.toml``: what is where on each engine's page.
- ``parser``: ``parse_serp(engine, html)``, pure and total, driven by the rules.
- ``engines``: search URL per engine, endpoint overrides.
- ``study``: the study file (TOML), validated; its format is in that module's docstring.
- ``schedule``: the grid of round slots.
- ``cookies``: a logged-in profile's ``cookies.txt`` export, read and checked.
- ``readiness``: what ``--check`` refuses: the examples' placeholder proxies, logged-in
  profiles without cookies.
- ``consent``: the consent buttons per engine and what a study does about a wall.
- ``page``: what a fetcher returns; ``fetchers``: per-profile HTTP (aiohttp) fetchers
  and the opening of a study's fetchers; ``browser``: the browser fetcher (a persistent
  Chromium profile per study profile, driven by Playwright).
- ``events``: schema-validated snapshots with deterministic ids.
- ``state``: per-study journal (resume), cookie jars and browser profiles.
- ``crawler``: the lock-step rounds; ``reparse``: rebuild events from the archive.

Shared with the autocomplete collector (``collectors.common``): archive, journal,
sinks, backoff.
"""
