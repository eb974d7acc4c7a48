"""The analyst SQL guard, table-driven: what reads the documented tables passes, as
sqlglot renders it; everything that reaches files, servers, settings or other tables
is refused, whatever the case, quoting or comments."""

from __future__ import annotations

from importlib import resources

import pytest

from schemas.analyst_sql import FORBIDDEN_FUNCTIONS, documented_tables, guard_analyst_sql
from schemas.sql import ReadOnlyViolation

ALLOWED = [
    ("SELECT 1", "SELECT 1"),
    ("  with x as (select 1 AS a) select * from x;", "WITH x AS (SELECT 1 AS a) SELECT * FROM x"),
    ("SHOW TABLES", "SHOW TABLES"),
    ("DESCRIBE TABLE alerts", "DESCRIBE TABLE alerts"),
    ("desc extension_events", "DESCRIBE TABLE extension_events"),
    ("EXPLAIN SELECT 1", "EXPLAIN SELECT 1"),
    ("explain ast select count() from alerts", "EXPLAIN AST SELECT count() FROM alerts"),
    ("SELECT count() FROM numbers(1e12)", "SELECT count() FROM numbers(1e12)"),
    (
        "SELECT * FROM experiment_ctr(experiment='x', engine='google')",
        "SELECT * FROM experiment_ctr(experiment = 'x', engine = 'google')",
    ),
    ("SELECT arrayMap(r -> r.3, results) FROM serp_snapshots FINAL", None),
    ("SELECT * FROM default.clicks_by_rank_1m AS c JOIN raw_extension_events USING (event_id)", None),
    ("SELECT kind FROM alerts LIMIT 1 BY kind UNION ALL SELECT 'x'", None),
    ("SELECT 1 /* /* */ FROM file('/etc/passwd') */", "SELECT 1"),  # what runs is what was checked
    ("SELECT arm FROM extension_events WHERE arm IN ('control', 'swap_1_2')", None),
    ("SELECT count() FROM alerts WHERE subject IN (SELECT subject FROM alerts)", None),
    ("SELECT 'a' IN (kind) FROM alerts", None),  # a plain name: the column
    ("SELECT 1 IN default.alerts", None),
    ("WITH s AS (SELECT 1) SELECT 1 IN s", None),
    ("WITH 5 AS k SELECT k + 1", "WITH 5 AS k SELECT k + 1"),
    ("SELECT 1 IN ((1, 2), 3)", None),
    ("SELECT dateDiff('day', toDate('2026-11-01'), toDate('2026-11-27'))", None),
    ("SELECT EXTRACT(DAY FROM now())", None),
    ("WITH recent AS (SELECT * FROM alerts) SELECT count() FROM recent", None),
    ("SELECT 'café \u2018quoted\u2019 \u200b' AS \"naïve\" FROM alerts", None),  # inside quotes: any text
]

HOSTILE = [
    "",
    ";",
    "SELECT 'x' INTO OUTFILE '/tmp/f'",
    "SELECT 'x' INTO/**/OUTFILE '/tmp/f' FORMAT RawBLOB",
    "SELECT 'x' into  outfile '/tmp/f' APPEND",
    "SELECT 'x' INTO OUTFILE '/tmp/f' TRUNCATE",
    "DESCRIBE file('/etc/passwd', 'TSVWithNames')",
    "DESC TABLE file('/etc/passwd')",
    "SHOW CREATE TABLE alerts",
    "SHOW TABLES FROM system",
    "SELECT * FROM file('/etc/passwd', 'LineAsString')",
    "SeLeCt * FrOm FiLe('/etc/passwd')",
    "SELECT * FROM `file`('/etc/passwd')",
    "SELECT file('/etc/passwd')",
    "SELECT length(file('/etc/passwd'))",
    "SELECT * FROM (SELECT * FROM url('http://example.com/x', CSV))",
    "SELECT 1 UNION ALL SELECT * FROM s3('http://x/y.csv')",
    "WITH t AS (SELECT * FROM remote('127.0.0.1', system.one)) SELECT * FROM t",
    "SELECT * FROM remoteSecure('127.0.0.1', default.alerts)",
    "SELECT * FROM cluster('default', system.one)",
    "SELECT * FROM executable('x.sh', 'TSV', 'a String')",
    "SELECT * FROM mysql('h:3306', 'db', 't', 'u', 'p')",
    "SELECT * FROM postgresql('h:5432', 'db', 't', 'u', 'p')",
    "SELECT * FROM jdbc('jdbc:x', 't')",
    "SELECT * FROM hdfs('hdfs://h/x', 'TSV', 'a String')",
    "SELECT * FROM input('a String')",
    "SELECT * FROM system.users",
    'SELECT * FROM "system"."users"',
    "SELECT name FROM system.tables",
    "SELECT * FROM information_schema.tables",
    "SELECT * FROM other_db.alerts",
    "SELECT * FROM schema_migrations",
    "SELECT * FROM not_a_table",
    "SELECT 1 SETTINGS max_execution_time = 100000",
    "SELECT * FROM alerts SETTINGS readonly = 0",
    "SELECT * FROM (SELECT 1 SETTINGS max_memory_usage = 0)",
    "SELECT 1 FORMAT TSV",
    "SELECT getSetting('max_execution_time')",
    "SELECT sleepEachRow(3) FROM numbers(100)",
    "SELECT 1; DROP TABLE alerts",
    "DROP TABLE alerts",
    "INSERT INTO alerts SELECT * FROM alerts",
    "ALTER TABLE alerts DELETE WHERE 1",
    "SYSTEM SHUTDOWN",
    "KILL QUERY WHERE 1",
    "CREATE TABLE x (a Int8) ENGINE = Memory",
    "SET readonly = 0",
    "EXPLAIN/**/SELECT * FROM file('/etc/passwd')",
    "EXPLAIN SELECT * FROM file('/etc/passwd')",
    "EXPLAIN PIPELINE SELECT * FROM url('http://x', CSV)",
    "EXISTS TABLE alerts",
    # a table after IN is read as a table (an outside probe found these)
    "SELECT 0 IN system.one",
    "SELECT 0 IN `system`.`one`",
    'SELECT 0 IN "system"."users"',
    "SELECT 0 GLOBAL IN system.one",
    "SELECT 0 NOT IN system.one",
    "SELECT 0 GLOBAL NOT IN system.numbers",
    "SELECT 0 IN (system.one)",
    "SELECT 1 IN system.one.dummy",
    "SELECT 1 IN schema_migrations",
    "SELECT count() FROM alerts WHERE kind IN other_db.alerts",
    "SELECT notIn(1, system.one)",
    "SELECT globalIn(0, system.one)",
    "SELECT nullIn(0, system.one)",
    "SELECT hasColumnInTable('system', 'users', 'name')",
    "SELECT getSettingOrDefault('readonly', 0)",
    "SELECT tcpPort()",
    # a red-team of the guard: text sqlglot copies raw into its rendering
    "SELECT toString(`1) AS a, getSetting('readonly') AS r --` => 1)",
    "SELECT toString(`1) AS a; CREATE TABLE leak ENGINE = Memory AS SELECT 1; SELECT 1 --` => 1)",
    "SELECT toString(`'x') AS x INTO OUTFILE '/tmp/guard-evil.txt' TRUNCATE FORMAT RawBLOB --` => 1)",
    'SELECT toString("1) AS a, hostName() AS h --" => 1)',
    "SELECT EXTRACT(`DAY FROM NOW()); CREATE DATABASE PROBE_UPPER; SELECT EXTRACT(DAY` FROM now())",
    "SELECT DATE_DIFF(`DAY, now(), now()); DROP TABLE ALERTS; SELECT DATE_DIFF(DAY`, now(), now())",
    # brackets and tuples after IN
    "SELECT 1 IN ((system.one))",
    "SELECT 1 GLOBAL NOT IN (((system.one)))",
    "SELECT 1 IN (((system.one)), 2)",
    "SELECT (999, 'x', t) IN ((schema_migrations)) FROM alerts",
    "SELECT 'x' IN ((`/etc/passwd`))",
    # a scalar WITH, or a CTE in another scope, named like a table outside the documented set
    "WITH 1 AS schema_migrations SELECT * FROM schema_migrations",
    'WITH 1 AS "/etc/passwd" SELECT * FROM "/etc/passwd"',
    "SELECT * FROM schema_migrations WHERE 1 IN (WITH schema_migrations AS (SELECT 1) "
    "SELECT * FROM schema_migrations)",
    # one call that runs far past the time limit, and the rest of the deny-list
    "SELECT editDistance(repeat('a', 65530), repeat('b', 65530))",
    "SELECT arraySum(arrayMap(x -> levenshteinDistance('a', toString(x)), range(60)))",
    "SELECT jaroWinklerSimilarity('a', 'b')",
    "SELECT fullHostName()",
    "SELECT logTrace('x')",
    # a second red-team: characters ClickHouse skips or reads as quotes, sqlglot as letters
    "SELECT line\u200bFROM\u200bfile('/etc/passwd', 'LineAsString')",
    "SELECT name, value\u200bFROM\u200bsystem.settings\u200bWHERE\u200bchanged",
    "SELECT name\u2060FROM\u2060system.tables",
    "SELECT name\ufeffFROM\ufeffsystem.tables",
    "SELECT name\u180eFROM\u180esystem.tables",
    "SELECT getServerSetting\u200b('path')",
    "WITH 'x' AS x SELECT x\u200bINTO\u200bOUTFILE\u200b\u2018pwn.py\u2019\u200bTRUNCATE"
    "\u200bFORMAT\u200bTSVRaw",
    "SELECT \u2018appended\u2019\u200bINTO\u200bOUTFILE\u200b\u2018f\u2019\u200bAPPEND",
    "SELECT arrayLevenshteinDistance(range(150000), range(1, 150001))",
    "SELECT arraySimilarity([1], [2], [1.], [1.])",
    "SELECT count() FROM alerts |> UNION ALL SELECT 1 FROM system.one",  # sqlglot asserted: a 500
]


@pytest.mark.parametrize(("sql", "rendered"), ALLOWED)
def test_reads_of_documented_tables_pass_as_rendered(sql: str, rendered: str | None) -> None:
    text = guard_analyst_sql(sql)
    if rendered is not None:
        assert text == rendered
    assert guard_analyst_sql(text) == text  # the rendering is itself accepted unchanged


@pytest.mark.parametrize("sql", HOSTILE)
def test_hostile_statements_are_refused(sql: str) -> None:
    with pytest.raises(ReadOnlyViolation):
        guard_analyst_sql(sql)


@pytest.mark.parametrize("name", sorted(FORBIDDEN_FUNCTIONS))
def test_every_forbidden_function_is_refused_as_table_and_as_scalar(name: str) -> None:
    with pytest.raises(ReadOnlyViolation):
        guard_analyst_sql(f"SELECT * FROM {name}('x')")
    with pytest.raises(ReadOnlyViolation):
        guard_analyst_sql(f"SELECT {name}('x') FROM alerts")


def test_the_documented_tables_are_those_the_migrations_leave() -> None:
    tables = documented_tables()
    assert {"raw_extension_events", "alerts", "experiment_ctr", "personalization_rounds"} <= tables
    assert "agg_arrangement_day" not in tables  # dropped by migration 0012
    assert "schema_migrations" not in tables
    text = (resources.files("schemas") / "clickhouse" / "README.md").read_text()
    undocumented = sorted(name for name in tables if f"`{name}" not in text)
    assert not undocumented


@pytest.mark.parametrize("depth", [60, 400, 5000])
def test_a_statement_nested_too_deeply_to_parse_is_refused_not_an_error(depth: int) -> None:
    # sqlglot parses recursively: ~50 brackets exhausted Python's stack (a 500 before)
    with pytest.raises(ReadOnlyViolation, match="nests too deeply"):
        guard_analyst_sql("SELECT " + "(" * depth + "1" + ")" * depth)
