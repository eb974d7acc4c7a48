"""Crawler metrics (served with ``--metrics-port`` while a crawl runs; see docs/metrics.md)."""

from __future__ import annotations

from prometheus_client import Counter, start_http_server

REQUESTS = Counter(
    "auditstream_crawler_requests_total",
    "Requests the crawlers sent, by engine and outcome (ok, empty, blocked, error, retry)",
    ["engine", "outcome"],
)
BLOCKS = Counter("auditstream_crawler_blocks_total", "Times the circuit breaker paused an engine", ["engine"])
SERP_PAGES = Counter(
    "auditstream_crawler_serp_pages_total",
    "Result pages parsed, by engine and layout: known, or unknown when the rules claimed less than "
    "schemas.events.KNOWN_LAYOUT of the page's blocks (a rising share: the engine changed its markup)",
    ["engine", "layout"],
)
BACKOFFS = Counter(
    "auditstream_crawler_backoffs_total", "Retries after an exponential backoff delay", ["engine"]
)


def serve(port: int) -> None:
    """Expose the metrics on ``port`` (0 = not at all) for Prometheus to scrape."""
    if port:
        start_http_server(port)
