from __future__ import annotations

from schemas.sql import load_migrations, load_views, quote, split_statements


def test_quote_escapes() -> None:
    assert quote("it's a \\ test") == "'it\\'s a \\\\ test'"


def test_split_statements_drops_comments() -> None:
    script = "-- header\nCREATE TABLE a (x Int8);\n\n-- note\nCREATE VIEW b AS SELECT 1;\n"
    assert split_statements(script) == ("CREATE TABLE a (x Int8)", "CREATE VIEW b AS SELECT 1")


def test_migrations_are_versioned_in_order() -> None:
    migrations = load_migrations()
    versions = [m.version for m in migrations]
    assert versions == sorted(set(versions)) and versions[0] == 1
    ddl = " ".join(s for m in migrations for s in m.statements)
    assert "IF NOT EXISTS" in ddl


def test_only_the_migrations_that_only_created_views_are_empty() -> None:
    """Their views are defined in views/ now; the files stay, comments only, so the versions
    recorded in schema_migrations keep naming a file."""
    assert {m.version for m in load_migrations() if not m.statements} == {5, 6, 10, 11, 15, 17, 18, 20, 21}


def test_view_bootstrap_weights_match_the_python_reference() -> None:
    """The bootstrap views use ``uniform_sql`` and the Poisson(1) thresholds; the SQL and
    Python weights agree (tests/integration/test_bootstrap_sql.py)."""
    from analytics.stats.bootstrap import MAX_WEIGHT, POISSON1_CDF, uniform_sql

    views = {v.name: v.statement for v in load_views()}
    for name in ("experiment_ctr", "experiment_gap", "experiment_ctr_windows"):
        text = views[name]
        assert text.count(uniform_sql("install_id", "b", "{seed:UInt32}") + " AS u01") == 1
        for k, cdf in enumerate(POISSON1_CDF):
            assert text.count(f"u01 < {cdf!r}, {k}") == 1
        assert f", {MAX_WEIGHT})" in text and text.count("range(200)") == 1
