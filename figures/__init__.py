"""The papers' figures drawn from the answers the service already gives.

Each paper has one module (``powermeter``, ``personalization``, ``autocomplete``) of pure
functions: they take report answers (JSON dicts, as ``auditstream report ... --format json``
prints them) and return ``render.Figure``s, whose CSV rows are exactly the numbers drawn, so
a test can hold each figure against the report it came from. ``sources`` says which
requests each paper needs (asked once each, by the CLI or the board); ``render`` writes
SVG, PNG and CSV; ``caption`` says what every figure was computed from. Nothing here reads
the store: the service's reports are the one place numbers are computed.
"""
