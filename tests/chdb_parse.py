"""Parse statements with chDB's ClickHouse parser, executing none of them.

Reads a JSON list of statements on stdin; prints, for each, {"error": str | null, "ast": the
``EXPLAIN AST`` tree, "formatted": ``formatQuery`` of it (the statement as the parser read
it, ``ON CLUSTER`` included, which the tree does not show)}. Parsing is all a test can do
with cluster DDL here: there is no Keeper and no cluster to run it on. Run in a subprocess
(``python -m tests.chdb_parse``): chDB allows one session per process, and a test process
may hold another.
"""

from __future__ import annotations

import json
import sys
import tempfile

from chdb import session

from schemas.sql import quote


def main() -> None:
    statements = json.load(sys.stdin)
    out = []
    with tempfile.TemporaryDirectory() as path:
        db = session.Session(path)
        for statement in statements:
            try:
                ast = db.query(f"EXPLAIN AST {statement}", "TSVRaw").bytes().decode()
                formatted = db.query(f"SELECT formatQuery({quote(statement)})", "TSVRaw").bytes().decode()
                out.append({"error": None, "ast": ast, "formatted": formatted})
            except Exception as exc:
                out.append({"error": str(exc)[:1000], "ast": "", "formatted": ""})
        db.close()
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
