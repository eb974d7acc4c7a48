"""What an analyst's SQL may do: read the documented tables and views, nothing else.

chDB runs inside our own process, so whatever ClickHouse would refuse as a
client-side feature (``INTO OUTFILE``) or allow to a server user (the ``file``,
``url`` or ``remote`` table functions, ``system.users``) would act on this machine.
A pattern check is not enough (``INTO/**/OUTFILE`` slipped past one), so every
statement is parsed with sqlglot's ClickHouse dialect and its whole tree is checked:

- one statement: ``SELECT`` (``WITH``, ``UNION`` ...), ``EXPLAIN [AST|SYNTAX|PLAN|
  PIPELINE|ESTIMATE] SELECT ...``, ``DESCRIBE <table>`` or ``SHOW TABLES``;
- every table is a documented table or view (``schemas/clickhouse/README.md``; the
  names the migrations and views/ create) or a CTE of the statement; the only table functions
  are the documented parameterised views and a few generators (``numbers``, ``zeros``);
- no function anywhere that reaches files, URLs, processes or other servers, and no
  dictionary function at all (the ``dict`` family);
- no ``SETTINGS`` or ``FORMAT`` clause: the service sets the limits and the format.

What runs is sqlglot's own rendering of the checked tree, never the text as sent, so
a comment or quirk that the two parsers read differently cannot smuggle anything in.
A statement sqlglot cannot parse is refused: this fails closed. So is one longer than
``MAX_STATEMENT_BYTES``, before it is parsed: sqlglot's CPU time grows with the text, to
many seconds for a long ``1+1+...`` (bench/README.md, "Figures behind the code"; the
endpoint also runs the guard in processes of its own).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

from schemas.sql import ReadOnlyViolation, StatementTooLarge, load_migrations, load_views

GENERATORS = frozenset({"numbers", "numbers_mt", "zeros", "zeros_mt", "generate_series", "generateseries"})
"""Table functions that only generate rows."""

FORBIDDEN_FUNCTIONS = frozenset(
    name.lower()
    for name in (
        "file", "url", "urlCluster", "s3", "s3Cluster", "gcs", "oss", "cosn", "azureBlobStorage",
        "azureBlobStorageCluster", "hdfs", "hdfsCluster", "remote", "remoteSecure", "cluster",
        "clusterAllReplicas", "executable", "executablePool", "mysql", "postgresql", "jdbc",
        "odbc", "mongodb", "redis", "sqlite", "iceberg", "icebergS3", "icebergAzure",
        "icebergHDFS", "deltaLake", "hudi", "input", "fileCluster", "dictionary", "merge",
        "loop", "fuzzJSON", "fuzzQuery", "ytsaurus", "arrowFlight", "prometheusQuery",
        "filesystem", "getSetting", "getServerSetting", "getMergeTreeSetting",
        "joinGet", "joinGetOrNull",
        "currentProfiles", "currentRoles", "enabledProfiles", "enabledRoles", "defaultRoles",
        "throwIf", "sleep", "sleepEachRow",
        # settings, server and file-system facts, and models read from files
        "getSettingOrDefault", "globalVariable", "hasColumnInTable", "tcpPort", "getServerPort",
        "hostName", "fqdn", "getMacro", "serverUUID", "uptime", "getOSKernelVersion",
        "filesystemAvailable", "filesystemCapacity", "filesystemFree", "filesystemUnreserved",
        "getClientHTTPHeader", "displayName", "buildId", "addressToLine", "addressToLineWithInlines",
        "addressToSymbol", "demangle", "catboostEvaluate", "naiveBayesClassifier",
        # the functional IN family: its second argument may be any table (system.users)
        "in", "notIn", "globalIn", "globalNotIn", "nullIn", "notNullIn", "globalNullIn",
        "globalNotNullIn", "inIgnoreSet", "notInIgnoreSet", "globalInIgnoreSet",
        "globalNotInIgnoreSet", "nullInIgnoreSet", "notNullInIgnoreSet", "globalNullInIgnoreSet",
        "globalNotNullInIgnoreSet",
        "fullHostName", "defaultProfiles", "pgGetUserById", "logTrace", "showCertificate",
        # a single call can run far past max_execution_time (checked between blocks): one
        # editDistance of two long strings takes seconds, many of them in an array minutes
        # (bench/README.md, "Figures behind the code")
        "editDistance", "editDistanceUTF8", "levenshteinDistance", "levenshteinDistanceUTF8",
        "damerauLevenshteinDistance", "jaroSimilarity", "jaroWinklerSimilarity",
        "stringJaccardIndex", "stringJaccardIndexUTF8",
        "levenshtein", "jarowinkler_similarity",  # sqlglot's names for editDistance, jaroWinkler...
        "arrayLevenshteinDistance", "arrayLevenshteinDistanceWeighted", "arraySimilarity",
    )
)  # fmt: skip
"""Functions refused wherever they appear (table or scalar): they leave the documented
tables, read settings, server facts or files, or stall the store."""

FORBIDDEN_PREFIXES = ("dict",)
"""Function families refused by the start of their lower-cased name. Every dictionary
function reads a dictionary, whose source may be a file, a URL or another server, and the
family keeps growing (``dictGet``, the typed ``dictGetString``, ``dictGetUInt64`` ...,
``dictGetOrDefault``, ``dictHas``, ``dictIsIn``, ``dictGetHierarchy``, ``dictGetChildren``,
``dictGetDescendants``, the ``dictionary`` table function): a list of names always lagged."""

MAX_STATEMENT_BYTES = 262_144
"""The longest statement (UTF-8 bytes) the guard parses: ClickHouse's own default
``max_query_size``. The endpoint's limit is the setting ``sql_max_statement_bytes``."""

_EXPLAIN = re.compile(r"^\s*EXPLAIN(?:\s+(?:AST|SYNTAX|PLAN|PIPELINE|ESTIMATE))?\s+(?=[(A-Za-z])", re.I)
_SHOW_TABLES = re.compile(r"^\s*SHOW\s+TABLES\s*;?\s*$", re.I)
_MIGRATION_OBJECT = re.compile(
    r"^\s*(CREATE|DROP)\s+(?:OR\s+REPLACE\s+)?(?:TABLE|VIEW|MATERIALIZED\s+VIEW)\s+"
    r"(?:IF\s+(?:NOT\s+)?EXISTS\s+)?([A-Za-z_][A-Za-z0-9_]*)",
    re.I,
)
_INTERNAL = frozenset({"schema_migrations"})
_TOKENIZER = Dialect.get_or_raise("clickhouse")


@cache
def documented_tables() -> frozenset[str]:
    """Every table the migrations leave in place and every view (they are all documented)."""
    names: set[str] = set()
    for migration in load_migrations():
        for statement in migration.statements:
            match = _MIGRATION_OBJECT.match(statement)
            if match:
                verb, name = match.groups()
                (names.add if verb.upper() == "CREATE" else names.discard)(name)
    names.update(view.name for view in load_views())  # created after the migrations
    return frozenset(names - _INTERNAL)


def forbidden_function(name: str) -> bool:
    """Whether the function ``name`` (any case) is refused wherever it appears."""
    lower = name.lower()
    return lower in FORBIDDEN_FUNCTIONS or lower.startswith(FORBIDDEN_PREFIXES)


def check_statement_size(sql: str, max_bytes: int = MAX_STATEMENT_BYTES) -> None:
    """StatementTooLarge if ``sql`` is over ``max_bytes`` in UTF-8, else nothing."""
    size = len(sql.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise StatementTooLarge(f"the statement is {size} bytes; at most {max_bytes} are read")


def guard_analyst_sql(
    sql: str, tables: frozenset[str] | None = None, max_bytes: int = MAX_STATEMENT_BYTES
) -> str:
    """The statement to run for ``sql``, or ReadOnlyViolation saying what is not allowed
    (StatementTooLarge, before any parsing, when it is over ``max_bytes``)."""
    check_statement_size(sql, max_bytes)
    try:
        return _guard(sql, tables)
    except ReadOnlyViolation:
        raise
    except RecursionError:  # sqlglot parses and renders recursively: ~50 nested brackets
        raise ReadOnlyViolation("the statement nests too deeply to be checked") from None
    except Exception:  # sqlglot's own assertions on syntax it half knows ('|>' pipes): fail closed
        raise ReadOnlyViolation("the statement could not be checked as a ClickHouse SELECT") from None


def _guard(sql: str, tables: frozenset[str] | None) -> str:
    allowed = documented_tables() if tables is None else tables
    text = sql.strip()
    if not text.rstrip(";").strip():
        raise ReadOnlyViolation("empty statement")
    if _SHOW_TABLES.match(text):
        return "SHOW TABLES"
    prefix = ""
    explain = _EXPLAIN.match(text)
    if explain:
        prefix, text = explain.group(0).strip().upper() + " ", text[explain.end() :]
    try:
        statements = [s for s in sqlglot.parse(text, read="clickhouse") if s is not None]
    except SqlglotError:
        raise ReadOnlyViolation(
            "the statement could not be parsed as a ClickHouse SELECT (INTO OUTFILE and "
            "client-side clauses are not allowed)"
        ) from None
    if len(statements) != 1:
        raise ReadOnlyViolation("only one statement is allowed")
    tree = statements[0]
    if isinstance(tree, exp.Describe) and not prefix:
        target = tree.this
        if not (isinstance(target, exp.Table) and _plain_name(target) in allowed):
            raise ReadOnlyViolation("DESCRIBE works on a documented table or view only")
        return f"DESCRIBE TABLE {_plain_name(target)}"
    if not isinstance(tree, exp.Query):
        raise ReadOnlyViolation("only SELECT, WITH, EXPLAIN SELECT, DESCRIBE <table> and SHOW TABLES")
    _check_tree(tree, allowed)
    return prefix + _checked_rendering(tree, allowed)


def _checked_rendering(tree: exp.Query, allowed: frozenset[str]) -> str:
    """The text to run, checked as its own statement. sqlglot copies some parts into its
    rendering raw (a quoted name before ``=>``, a quoted date unit), so text the first tree
    held as one harmless name could come out as more SQL: more statements, ``INTO OUTFILE``,
    a comment hiding the rest. The rendering must parse to one statement that passes every
    check and renders to itself, else it is refused."""
    text = tree.sql(dialect="clickhouse", comments=False)
    _plain_text_outside_quotes(text)
    try:
        again = [s for s in sqlglot.parse(text, read="clickhouse") if s is not None]
    except SqlglotError:
        again = []
    if len(again) != 1 or not isinstance(again[0], exp.Query):
        raise ReadOnlyViolation("the statement does not read back as one SELECT once rendered")
    _check_tree(again[0], allowed)
    if again[0].sql(dialect="clickhouse", comments=False) != text:
        raise ReadOnlyViolation("the statement does not render the same twice (a quoting quirk)")
    return text


_QUOTED = frozenset({TokenType.STRING, TokenType.IDENTIFIER})


def _plain_text_outside_quotes(text: str) -> None:
    """Outside string literals and quoted names, the text is printable ASCII. ClickHouse's
    lexer skips zero-width spaces (U+200B, U+2060, U+FEFF ...) and reads curly quotes as
    string quotes, where sqlglot reads both as letters of a name: ``a<U+200B>FROM<U+200B>
    file(...)`` was one harmless name to the guard and a read of any file to ClickHouse."""
    plain, pos = [], 0
    for token in _TOKENIZER.tokenize(text):
        if token.token_type in _QUOTED:
            plain.append(text[pos : token.start])
            pos = token.end + 1
    plain.append(text[pos:])
    odd = {c for c in "".join(plain) if not (" " <= c <= "~" or c in "\n\t")}
    if odd:
        shown = ", ".join(f"U+{ord(c):04X}" for c in sorted(odd))
        raise ReadOnlyViolation(
            f"characters outside quotes must be printable ASCII ({shown}); quote names and text"
        )


def _plain_name(table: exp.Table) -> str | None:
    """The table's name if it is a plain (optionally ``default.``) name, else None."""
    if not isinstance(table.this, exp.Identifier) or table.args.get("catalog"):
        return None
    if table.db and table.db != "default":
        return None
    return table.name


def _function_name(node: exp.Expr) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.name)
    if isinstance(node, exp.Func):
        return node.sql_name()
    return ""


_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _cte_names(tree: exp.Expr) -> set[str]:
    """Names of the statement's subquery CTEs (``WITH name AS (SELECT ...)``). A scalar
    ``WITH 1 AS name`` is a value, not a table: ``FROM name`` still reads the table of that
    name. A CTE name is a plain identifier and never an internal table's (a CTE in one
    subquery does not shadow a table read in another)."""
    names = set()
    for cte in tree.find_all(exp.CTE):
        name = str(cte.alias_or_name)
        if cte.args.get("scalar") or not isinstance(cte.this, exp.Query):
            continue
        if not _IDENTIFIER.match(name) or name in _INTERNAL:
            raise ReadOnlyViolation(f"a CTE may not be named {name!r}")
        names.add(name)
    return names


def _check_tree(tree: exp.Expr, allowed: frozenset[str]) -> None:
    ctes = _cte_names(tree)
    for node in tree.walk():
        if node.args.get("settings"):
            raise ReadOnlyViolation("SETTINGS are set by the service (limits are configurable there)")
        if node.args.get("format"):
            raise ReadOnlyViolation("FORMAT is set by the service (results come back as JSON)")
        if isinstance(node, exp.Into):
            raise ReadOnlyViolation("INTO is not allowed")
        name = _function_name(node)
        if forbidden_function(name):
            raise ReadOnlyViolation(f"the function {name.lower()}() is not allowed")
        if isinstance(node, exp.Table):
            _check_table(node, allowed, ctes)
        if isinstance(node, exp.In):
            _check_in_set(node, allowed)


def _check_in_set(node: exp.In, allowed: frozenset[str]) -> None:
    """``x IN name`` and ``x IN (name)``: ClickHouse reads a qualified name there as a table
    (``0 IN system.users``), which the table walk never sees, since sqlglot parses it as a
    column. A qualified name must be a documented ``default.`` table; a plain one is a
    documented table, a CTE or a column, unless it names an internal table."""
    items = node.expressions if node.args.get("expressions") else [node.args.get("field")]
    for item in _set_names(items):
        parts = [p.name for p in item.parts]
        if len(parts) == 1 and parts[0] not in _INTERNAL and _IDENTIFIER.match(parts[0]):
            continue
        if len(parts) == 2 and parts[0] == "default" and parts[1] in allowed:
            continue
        raise ReadOnlyViolation(
            f"IN {item.sql('clickhouse')}: after IN, a name must be a documented table or a CTE "
            "(a list of values is written IN (a, b))"
        )


def _set_names(items: list[Any]) -> list[exp.Column]:
    """The names on the right of IN, however deep in brackets and tuples (ClickHouse reads
    ``1 IN ((system.one))`` as the table too), leaving subqueries to the table walk."""
    found: list[exp.Column] = []
    stack = [i for i in items if isinstance(i, exp.Expr)]
    while stack:
        item = stack.pop()
        if isinstance(item, exp.Column):
            found.append(item)
        elif isinstance(item, exp.Paren | exp.Tuple):
            stack.extend(c for c in item.iter_expressions() if not isinstance(c, exp.Query | exp.Subquery))
    return found


def _check_table(table: exp.Table, allowed: frozenset[str], ctes: set[str]) -> None:
    source = table.this
    if isinstance(source, exp.Func):  # a table function: a generator or a parameterised view
        name = _function_name(source)
        if name.lower() in GENERATORS or name in allowed:
            return
        raise ReadOnlyViolation(f"the table function {name}() is not allowed")
    if not isinstance(source, exp.Identifier):  # e.g. a subquery: its own nodes are walked
        return
    plain = _plain_name(table)
    if plain is None:
        raise ReadOnlyViolation(f"only the documented tables can be read ({table.sql('clickhouse')})")
    if plain in allowed or (plain in ctes and not table.db):
        return
    raise ReadOnlyViolation(f"unknown table {plain!r}: see schemas/clickhouse/README.md for the tables")
