"""Autocomplete crawls by recursive algorithm interrogation (RAI; docs/method.md, "Autocomplete audits").

Breadth-first search from each root, submitting every suggestion as the next query,
one ``autocomplete_node`` event per submitted node between ``crawl_started`` and
``crawl_completed`` markers. Modules, from pure to I/O:

- ``parsers``: response body -> suggestions, by format name (``PARSERS``); never raise.
- ``bfs``: the frontier of one root's crawl; pure, deterministic, replayable.
- ``engines``: the (engine, format, URL builder) table and endpoint overrides.
- ``politeness``: the per-engine limits (rate, jitter, backoff, breaker settings).
- ``fetch``: aiohttp session and the polite per-engine client.
- ``state``: per-crawl parameters and append-only journal (resume).
- ``events``: schema-validated events.
- ``crawler``: one round; ``schedule``: rounds at UTC times; ``reparse``: rebuild events.

Shared with the SERP collector, in ``collectors.common``: the content-addressed
archive (``raw_ref``), the journal, the sinks (ingest or a JSON Lines file), the
rate limiter, backoff and circuit breaker.
"""
