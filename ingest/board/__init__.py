"""The built-in live board (embedded mode): ``GET /board`` and its JSON under ``/v1/board``.

- ``queries``: the SQL, built from the reports' query builders (pure);
- ``panels``: query rows -> the JSON each panel draws (pure, unit-tested);
- ``routes``: the aiohttp handlers (the I/O) and ``add_routes``;
- ``static/``: the page, vanilla JS drawing inline SVG; no third-party code.
"""

from ingest.board.routes import add_routes

__all__ = ["add_routes"]
