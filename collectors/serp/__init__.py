"""Personalization audits: lock-step SERP snapshots (Hannak et al.; DESIGN.md §2.2, §3.2).

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
- ``fetchers``: per-profile HTTP (aiohttp) and browser (Playwright) fetchers.
- ``events``: schema-validated snapshots with deterministic ids.
- ``state``: per-study journal (resume) and cookie jars.
- ``crawler``: the lock-step rounds; ``reparse``: rebuild events from the archive.

Shared with the autocomplete collector (``collectors.common``): archive, journal,
sinks, backoff.
"""
