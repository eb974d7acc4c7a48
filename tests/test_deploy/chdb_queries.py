"""Run SQL against a fresh chDB with the project's migrations and views, as a read-only user.

Used by test_grafana.py in a subprocess (chDB allows one session per process, and the
test process may hold another). Reads {"queries": {id: sql}, "setup": [sql]} as JSON on
stdin (setup runs before the session turns read-only: stub views, fixture rows); prints
{id: {"error": str | null, "columns": [...], "types": [...], "rows": [...]}}.
"""

from __future__ import annotations

import json
import sys
import tempfile

from chdb import session

from schemas.sql import load_migrations, load_views


def main() -> None:
    request = json.load(sys.stdin)
    with tempfile.TemporaryDirectory() as path:
        db = session.Session(path)
        for migration in load_migrations():
            for statement in migration.statements:
                db.query(statement)
        for view in load_views():  # as schemas/migrate.py does, after the migrations
            db.query(view.statement)
        for sql in request.get("setup", []):
            db.query(sql)
        db.query("SET readonly = 1")  # what the grafana user of deploy/clickhouse/users.d has
        results = {}
        for key, sql in request["queries"].items():
            try:
                raw = db.query(sql, "JSONCompact").bytes()
                doc = json.loads(raw) if raw.strip() else {"meta": [], "data": []}
                results[key] = {
                    "error": None,
                    "columns": [m["name"] for m in doc["meta"]],
                    "types": [m["type"] for m in doc["meta"]],
                    "rows": doc["data"][:100],
                }
            except Exception as exc:
                results[key] = {"error": str(exc)[:1000], "columns": [], "types": [], "rows": []}
        try:
            db.query("INSERT INTO alerts (kind) VALUES ('x')")
            results["__write_refused__"] = {"error": None}
        except Exception as exc:
            results["__write_refused__"] = {"error": str(exc)[:200]}
        db.close()
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
