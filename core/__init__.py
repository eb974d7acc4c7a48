"""The bottom of the house: settings, errors and the ClickHouse store every other package uses.

``core`` imports no other auditstream package; every other package may import it
(``docs/architecture.md`` has the import directions, ``tests/test_architecture.py``
checks them).
"""
