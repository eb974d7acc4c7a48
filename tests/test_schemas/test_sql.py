from __future__ import annotations

from schemas.sql import load_migrations, quote, split_statements


def test_quote_escapes() -> None:
    assert quote("it's a \\ test") == "'it\\'s a \\\\ test'"


def test_split_statements_drops_comments() -> None:
    script = "-- header\nCREATE TABLE a (x Int8);\n\n-- note\nCREATE VIEW b AS SELECT 1;\n"
    assert split_statements(script) == ("CREATE TABLE a (x Int8)", "CREATE VIEW b AS SELECT 1")


def test_migrations_are_versioned_in_order() -> None:
    migrations = load_migrations()
    versions = [m.version for m in migrations]
    assert versions == sorted(set(versions)) and versions[0] == 1
    assert all(m.statements for m in migrations)
    ddl = " ".join(s for m in migrations for s in m.statements)
    assert "IF NOT EXISTS" in ddl


def test_view_bootstrap_weights_match_the_python_reference() -> None:
    """The views in force (0015 replaced those of 0005 and 0006, 0020 those of 0015) use
    ``uniform_sql`` and the Poisson(1) thresholds; the SQL and Python weights agree
    (tests/integration/test_bootstrap_sql.py)."""
    from importlib import resources

    from analytics.stats.bootstrap import MAX_WEIGHT, POISSON1_CDF, uniform_sql

    migrations = resources.files("schemas") / "clickhouse" / "migrations"
    for name in ("0015_counter_bootstrap_weights.sql", "0020_more_subsets.sql"):
        text = (migrations / name).read_text()
        assert text.count(uniform_sql("install_id", "b", "{seed:UInt32}") + " AS u01") == 3
        for k, cdf in enumerate(POISSON1_CDF):
            assert text.count(f"u01 < {cdf!r}, {k}") == 3  # once per view
        assert f", {MAX_WEIGHT})" in text and text.count("range(200)") == 3
