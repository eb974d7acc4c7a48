"""auditstream: live measurement for search-engine audits.

This package holds only the command line and the settings; the service lives in
the sibling packages ``schemas``, ``ingest``, ``streams`` and ``collectors``.
"""

__version__ = "0.1.0"
