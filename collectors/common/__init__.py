"""Pieces every collector needs, so the autocomplete and SERP crawlers behave alike.

- ``exceptions``: the collectors' error tree, each error a message for the operator.
- ``archive``: content-addressed raw responses (``raw_ref``), for later re-parsing.
- ``journal``: one process's append-only, fsynced JSON Lines journal (resume state).
- ``sinks``: where events go, ingest over HTTP or a JSON Lines file.
- ``http``: one HTTP exchange as a record, and the retry rules for it.
- ``politeness``: rate limiter, backoff, circuit breaker.
- ``endpoints``: base-URL overrides, so tests can point a crawler at a local fake.
"""
