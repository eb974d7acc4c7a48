"""The read side: the pure statistics of the three study kinds (``stats``) and the report
queries that assemble them from ClickHouse (``reports``).

Used by the worker (which stores derived rows), the CLI's reports, the live board and
the views' tests. Imports ``core`` and ``schemas`` only.
"""
