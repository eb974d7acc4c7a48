"""The cluster layout: the migrations' DDL rendered for a sharded, replicated ClickHouse.

``db migrate --cluster NAME`` applies the same migration and view files as on one server,
each statement through ``cluster_statements`` (text in, text out), so a cluster never has
a second, hand-kept copy of the schema. Every table the migrations create is named in
``LAYOUT`` (a new one is refused until it is):

- *sharded* (every raw and derived table): ``<table>_local``, the table's ``Replicated*``
  twin on every node, replicated within its shard, and ``<table>``, a ``Distributed``
  table with the original name over them that routes rows by ``cityHash64`` of the
  layout's columns. The views and all the code's statements keep reading and writing the
  original names.
- *everywhere* (small control tables: registry, plans, alerts, erasures, the ledger): one
  ``Replicated*`` table with a replica on every node, so every node reads it locally and
  a shard's part of a query can join it without going to another shard.

A table's sharding columns are part of its sorting key (a raw table's: part of its event
family's Kafka partition key, which every copy of an event repeats), so all copies and
recomputed versions of a row land on one shard, the only place where ReplacingMergeTree
and ``FINAL`` can collapse them. deploy/README.md ("Beyond one machine") says why these
keys and what stays local.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise

from schemas.sql import quote


@dataclass(frozen=True)
class Sharded:
    """Rows spread over the shards by ``cityHash64`` of ``columns``."""

    columns: tuple[str, ...]

    @property
    def key(self) -> str:
        return f"cityHash64({', '.join(self.columns)})"


@dataclass(frozen=True)
class Everywhere:
    """One replicated table whose replicas are all the nodes of the cluster."""


BY_INSTALL = Sharded(("install_id",))
"""An install's events and every per-install row on one shard: its recomputes read and
write that shard only."""
BY_EXPERIMENT = Sharded(("experiment_id", "engine"))
"""Rows summed over installs (slices, hours, the decision line): they are recomputed from
every shard's events whatever their key, so they go where their study's other sums are."""
BY_STUDY = Sharded(("study_id",))
"""A personalization study's snapshots and rows: a round's profiles, and a profile's days,
compared on one shard."""
BY_ROOT = Sharded(("engine", "root"))
"""An autocomplete root's crawls (the family's Kafka key): a crawl's nodes with its marker,
and a root's consecutive crawls (churn, nmi), on one shard."""
EVERYWHERE = Everywhere()

LAYOUT: dict[str, Sharded | Everywhere] = {
    "raw_extension_events": BY_INSTALL,
    "raw_install_profiles": BY_INSTALL,
    "agg_arrangement_10s": BY_INSTALL,
    "agg_arrangement_day": BY_INSTALL,
    "agg_arrangement_install": BY_INSTALL,
    "agg_arrangement_install_subset": BY_INSTALL,
    "agg_arrangement_install_closed": BY_INSTALL,
    "agg_clicks_by_rank_10s": BY_EXPERIMENT,
    "agg_arrangement_replicates_1h": BY_EXPERIMENT,
    "agg_arrangement_looks": BY_EXPERIMENT,
    "agg_arrangement_look_totals": BY_EXPERIMENT,
    "agg_arrangement_look_forgets": BY_EXPERIMENT,
    "raw_serp_snapshots": BY_STUDY,
    "agg_personalization_pairs": BY_STUDY,
    "agg_personalization_link_pairs": BY_STUDY,
    "agg_personalization_rounds": BY_STUDY,
    "agg_personalization_consistency": BY_STUDY,
    "raw_autocomplete_events": BY_ROOT,
    "agg_autocomplete_edges": BY_ROOT,
    "agg_autocomplete_crawls": BY_ROOT,
    "agg_autocomplete_churn": BY_ROOT,
    "agg_autocomplete_associations": BY_ROOT,
    "agg_autocomplete_structure": BY_ROOT,
    "schema_migrations": EVERYWHERE,
    "experiments_log": EVERYWHERE,
    "alerts": EVERYWHERE,
    "dead_letters": EVERYWHERE,
    "erased_installs": EVERYWHERE,
    "erasure_log": EVERYWHERE,
    "planted_values": EVERYWHERE,
    "analysis_plans": EVERYWHERE,
    "plan_deviations": EVERYWHERE,
    "arrangement_quintile_bounds": EVERYWHERE,
}
"""Every table the migrations create (dropped ones too: old migrations still run)."""

LOCAL = "_local"
SHARD_PATH = "/clickhouse/tables/{shard}/{database}/{table}"
SHARD_REPLICA = "{replica}"
EVERYWHERE_PATH = "/clickhouse/tables/all/{database}/{table}"
EVERYWHERE_REPLICA = "{shard}-{replica}"
"""All nodes share one path, so a replica's name must be unique across the cluster, not
only within its shard: shard and replica together are, whatever the macros' convention."""
INSERT_SETTINGS = {"distributed_foreground_insert": "1", "distributed_product_mode": "'global'"}
"""What a migration's INSERT into a Distributed table needs whatever the server's profile
says: rows on their shards before the next statement reads them, and an IN or JOIN over
another Distributed table run once for the whole cluster instead of refused."""

_CLUSTER_NAME = re.compile(r"[A-Za-z0-9_.{}-]+")
_FLAGS = re.IGNORECASE | re.DOTALL
_NAME = r"`?(?P<name>\w+)`?"
_CREATE_TABLE = re.compile(rf"CREATE\s+TABLE\s+(?P<ine>IF\s+NOT\s+EXISTS\s+)?{_NAME}\s*(?=\()", _FLAGS)
_CREATE_VIEW = re.compile(
    rf"CREATE\s+(?P<orr>OR\s+REPLACE\s+)?VIEW\s+(?P<ine>IF\s+NOT\s+EXISTS\s+)?{_NAME}\s+(?P<rest>AS\b.*)",
    _FLAGS,
)
_CREATE_MV = re.compile(
    rf"CREATE\s+MATERIALIZED\s+VIEW\s+(?P<ine>IF\s+NOT\s+EXISTS\s+)?{_NAME}\s+(?P<rest>.*)", _FLAGS
)
_MV_TO = re.compile(r"TO\s+`?(?P<target>\w+)`?(?P<rest>\W.*)", _FLAGS)
_ALTER = re.compile(rf"ALTER\s+TABLE\s+{_NAME}\s+(?P<rest>.*)", _FLAGS)
_DROP = re.compile(rf"DROP\s+(?P<kind>TABLE|VIEW)\s+(?P<ie>IF\s+EXISTS\s+)?{_NAME}(?:\s+SYNC)?\Z", _FLAGS)
_TRUNCATE = re.compile(rf"TRUNCATE\s+(?:TABLE\s+)?(?P<ie>IF\s+EXISTS\s+)?{_NAME}\Z", _FLAGS)
_INSERT = re.compile(rf"INSERT\s+INTO\s+(?:TABLE\s+)?{_NAME}(?P<rest>\W.*)", _FLAGS)
_DELETE = re.compile(rf"DELETE\s+FROM\s+{_NAME}\s+(?P<rest>WHERE\b.*)", _FLAGS)
_OPTIMIZE = re.compile(rf"OPTIMIZE\s+TABLE\s+{_NAME}(?P<rest>(?:\s.*)?)", _FLAGS)
_ENGINE = re.compile(r"\s*ENGINE\s*=\s*(?P<engine>\w+)\s*", _FLAGS)
_COLUMN_COMMAND = re.compile(r"\s*(ADD|DROP|MODIFY|RENAME|COMMENT)\s+COLUMN\b", _FLAGS)
_NOT_A_COLUMN = re.compile(r"\s*(INDEX|PROJECTION|CONSTRAINT)\b", _FLAGS)
_LEADING_COMMENTS = re.compile(r"(\s*(--[^\n]*(\n|\Z)|/\*.*?\*/))*", _FLAGS)


def cluster_statements(statement: str, cluster: str) -> list[str]:
    """The statements that give cluster ``cluster`` what ``statement`` gives one server.

    ``CREATE TABLE`` and ``DROP`` run ``ON CLUSTER`` (on every node); an ``ALTER``,
    ``TRUNCATE``, ``DELETE`` or ``OPTIMIZE`` of a sharded table runs ``ON CLUSTER`` on its
    ``_local`` tables (once per shard; replication carries it to the shard's replicas),
    one of an everywhere table unchanged (replication carries it to every node, where
    ``ON CLUSTER`` would apply it once per shard to the same table). An ``INSERT`` runs
    once, through the Distributed table. Raises ``ValueError`` for a statement it has no
    cluster form for, or one naming a table ``LAYOUT`` does not know.
    """
    if not _CLUSTER_NAME.fullmatch(cluster):
        raise ValueError(f"not a cluster name: {cluster!r}")
    sql = statement.strip().rstrip(";").strip()
    depths = _depths(sql)
    if _top_level(sql, depths, r"\bON\s+CLUSTER\b", anywhere=True):
        raise ValueError(f"already ON CLUSTER: {_head(sql)}")
    on = f"ON CLUSTER {quote(cluster)}"
    for pattern, render in _RENDERERS:
        match = pattern.match(sql)
        if match:
            return render(match, sql, on, quote(cluster))
    raise ValueError(f"no cluster form for: {_head(sql)}")


_MUTATIONS = (_DELETE, _OPTIMIZE, _TRUNCATE, _ALTER)


def runtime_statements(statement: str, cluster: str) -> list[str]:
    """A statement the running service executes (not a migration), as cluster ``cluster``
    runs it. A ``DELETE``, ``OPTIMIZE``, ``TRUNCATE`` or ``ALTER`` of a table with a layout
    gets its cluster form (a ``Distributed`` table takes no mutation: a sharded table's go
    to its ``_local`` tables ``ON CLUSTER``); everything else is sent as it is: inserts and
    reads through the ``Distributed`` tables, and an import's scratch tables, which live on
    the node that runs it."""
    sql = statement.strip().rstrip(";").strip()
    for pattern in _MUTATIONS:
        match = pattern.match(sql)
        if match is not None and match["name"] in LAYOUT:
            return cluster_statements(statement, cluster)
    return [statement]


def layout_of(table: str) -> Sharded | Everywhere:
    try:
        return LAYOUT[table]
    except KeyError:
        raise ValueError(
            f"table {table} has no cluster layout: add it to LAYOUT in schemas/cluster_ddl.py"
        ) from None


def _create_table(m: re.Match[str], sql: str, on: str, cluster: str) -> list[str]:
    name, ine = m["name"], "IF NOT EXISTS " if m["ine"] else ""
    layout = layout_of(name)
    close = _close_paren(sql, m.end())
    columns, rest = sql[m.end() : close + 1], sql[close + 1 :]
    engine = _ENGINE.match(rest)
    if engine is None:
        raise ValueError(f"{name}: no ENGINE clause")
    kind, rest = engine["engine"], rest[engine.end() :]
    args = ""
    if rest.startswith("("):
        end = _close_paren(rest, 0)
        args, rest = rest[1:end].strip(), rest[end + 1 :]
    if not kind.endswith("MergeTree") or kind.startswith(("Replicated", "Shared")):
        raise ValueError(f"{name}: engine {kind} is not a plain MergeTree-family engine")
    tail = "\n" + rest.strip() if rest.strip() else ""
    if isinstance(layout, Everywhere):
        engine_sql = _replicated(kind, EVERYWHERE_PATH, EVERYWHERE_REPLICA, args)
        return [f"CREATE TABLE {ine}{name} {on}\n{columns}\nENGINE = {engine_sql}{tail}"]
    local = name + LOCAL
    engine_sql = _replicated(kind, SHARD_PATH, SHARD_REPLICA, args)
    return [
        f"CREATE TABLE {ine}{local} {on}\n{columns}\nENGINE = {engine_sql}{tail}",
        f"CREATE TABLE {ine}{name} {on}\n{_distributed_columns(columns)}\n"
        f"ENGINE = Distributed({cluster}, currentDatabase(), {local}, {layout.key})",
    ]


def _replicated(engine: str, path: str, replica: str, args: str) -> str:
    return f"Replicated{engine}({', '.join([quote(path), quote(replica), *([args] if args else [])])})"


def _distributed_columns(columns: str) -> str:
    """The column list without skip indexes, projections and constraints (a Distributed
    table stores nothing to index)."""
    inner = columns[1:-1]
    kept = [part.strip() for part in _split_top(inner) if not _NOT_A_COLUMN.match(_code(part))]
    return "(\n    " + ",\n    ".join(kept) + "\n)"


def _create_view(m: re.Match[str], sql: str, on: str, cluster: str) -> list[str]:
    orr, ine = "OR REPLACE " if m["orr"] else "", "IF NOT EXISTS " if m["ine"] else ""
    return [f"CREATE {orr}VIEW {ine}{m['name']} {on} {m['rest']}"]


def _create_mv(m: re.Match[str], sql: str, on: str, cluster: str) -> list[str]:
    """A materialized view fires on the inserts of the node it lives on, which reach the
    ``_local`` tables: it reads those and writes its shard's ``_local`` target, which is right
    only when the target is sharded as every sharded table it reads."""
    to = _MV_TO.match(m["rest"])
    if to is None:
        raise ValueError(f"materialized view {m['name']}: give it a TO table (one with a layout)")
    target, body = to["target"], to["rest"]
    layout = layout_of(target)
    depths = _depths(body)
    read = {
        w.group(0)
        for w in re.finditer(r"\b\w+\b", body)
        if depths[w.start()] >= 0 and isinstance(LAYOUT.get(w.group(0)), Sharded)
    }
    for source in read:
        if isinstance(layout, Sharded) and LAYOUT[source] != layout:
            raise ValueError(f"materialized view {m['name']}: {source} and {target} are sharded differently")
    body = re.sub(
        r"\b\w+\b",
        lambda w: w.group(0) + LOCAL if w.group(0) in read and depths[w.start()] >= 0 else w.group(0),
        body,
    )
    if isinstance(layout, Sharded):
        target += LOCAL
    ine = "IF NOT EXISTS " if m["ine"] else ""
    return [f"CREATE MATERIALIZED VIEW {ine}{m['name']} {on} TO {target}{body}"]


def _alter(m: re.Match[str], sql: str, on: str, cluster: str) -> list[str]:
    name, commands = m["name"], m["rest"]
    if isinstance(layout_of(name), Everywhere):
        return [sql]
    out = [f"ALTER TABLE {name}{LOCAL} {on}\n    {commands}"]
    columns = [c.strip() for c in _split_top(commands) if _COLUMN_COMMAND.match(_code(c))]
    if columns:  # a Distributed table has columns but no sorting key, index or data to change
        out.append(f"ALTER TABLE {name} {on}\n    " + ",\n    ".join(columns))
    return out


def _drop(m: re.Match[str], sql: str, on: str, cluster: str) -> list[str]:
    """Tables are dropped ``SYNC``: a dropped replicated table's Keeper path must be gone at
    once, or a migration that creates it again (0022 does) fails on the path still taken."""
    name, ie = m["name"], "IF EXISTS " if m["ie"] else ""
    if m["kind"].upper() == "VIEW":
        return [f"DROP VIEW {ie}{name} {on}"]
    if isinstance(layout_of(name), Everywhere):
        return [f"DROP TABLE {ie}{name} {on} SYNC"]
    return [f"DROP TABLE {ie}{name} {on} SYNC", f"DROP TABLE {ie}{name}{LOCAL} {on} SYNC"]


def _truncate(m: re.Match[str], sql: str, on: str, cluster: str) -> list[str]:
    name, ie = m["name"], "IF EXISTS " if m["ie"] else ""
    if isinstance(layout_of(name), Everywhere):
        return [sql]
    return [f"TRUNCATE TABLE {ie}{name}{LOCAL} {on}"]


def _insert(m: re.Match[str], sql: str, on: str, cluster: str) -> list[str]:
    if isinstance(layout_of(m["name"]), Everywhere):
        return [sql]
    return [_with_insert_settings(sql)]


def _delete(m: re.Match[str], sql: str, on: str, cluster: str) -> list[str]:
    name = m["name"]
    if isinstance(layout_of(name), Everywhere):
        return [sql]
    return [f"DELETE FROM {name}{LOCAL} {on} {m['rest']}"]


def _optimize(m: re.Match[str], sql: str, on: str, cluster: str) -> list[str]:
    name = m["name"]
    if isinstance(layout_of(name), Everywhere):
        return [sql]
    return [f"OPTIMIZE TABLE {name}{LOCAL} {on}{m['rest']}"]


_RENDERERS = (
    (_CREATE_TABLE, _create_table),
    (_CREATE_VIEW, _create_view),
    (_CREATE_MV, _create_mv),
    (_ALTER, _alter),
    (_DROP, _drop),
    (_TRUNCATE, _truncate),
    (_INSERT, _insert),
    (_DELETE, _delete),
    (_OPTIMIZE, _optimize),
)


def _with_insert_settings(sql: str) -> str:
    """``sql`` (an INSERT) with ``INSERT_SETTINGS`` it does not set itself: before ``VALUES``
    or ``FORMAT`` in those forms, else added to (or as) the trailing ``SETTINGS`` clause,
    which ClickHouse applies to the INSERT of an ``INSERT ... SELECT``. The form is the
    first keyword after the table (a column list is in parentheses)."""
    depths = _depths(sql)
    body = next(iter(_top_level(sql, depths, r"\b(SELECT|WITH|VALUES|FORMAT|SETTINGS)\b")), len(sql))
    settings = [i for i in _top_level(sql, depths, r"\bSETTINGS\b") if i > body]
    clause = sql[settings[-1] :] if settings else ""
    added = ", ".join(f"{k} = {v}" for k, v in INSERT_SETTINGS.items() if not re.search(rf"\b{k}\b", clause))
    if re.match(r"VALUES|FORMAT", sql[body:], _FLAGS):
        return f"{sql[:body]}SETTINGS {added}\n{sql[body:]}"
    if not re.match(r"SELECT|WITH", sql[body:], _FLAGS):
        raise ValueError(f"an INSERT with SETTINGS before its data, or no data: {_head(sql)}")
    if not settings:
        return f"{sql}\nSETTINGS {added}"
    if not re.fullmatch(r"SETTINGS\s+\w+\s*=\s*[^,()]+(\s*,\s*\w+\s*=\s*[^,()]+)*", clause.strip(), _FLAGS):
        raise ValueError(f"an INSERT whose SETTINGS clause does not end it: {_head(sql)}")
    return f"{sql}, {added}" if added else sql


def _depths(sql: str) -> list[int]:
    """Each character's parenthesis depth; -1 inside a string literal, quoted identifier or
    comment, so that nothing written there is taken for SQL."""
    out = [0] * len(sql)
    depth, i, n = 0, 0, len(sql)
    while i < n:
        c = sql[i]
        if c in "'`\"":
            j = i + 1
            while j < n and sql[j] != c:
                j += 2 if sql[j] == "\\" else 1
            end = min(j, n - 1)
        elif sql.startswith("--", i):
            newline = sql.find("\n", i)
            end = newline - 1 if newline >= 0 else n - 1
        elif sql.startswith("/*", i):
            close = sql.find("*/", i + 2)
            end = close + 1 if close >= 0 else n - 1
        else:
            if c == ")":
                depth -= 1
                if depth < 0:
                    raise ValueError(f"unbalanced parentheses: {_head(sql)}")
            out[i] = depth
            if c == "(":
                depth += 1
            i += 1
            continue
        out[i : end + 1] = [-1] * (end + 1 - i)
        i = end + 1
    if depth:
        raise ValueError(f"unbalanced parentheses: {_head(sql)}")
    return out


def _top_level(sql: str, depths: list[int], pattern: str, anywhere: bool = False) -> list[int]:
    """Where ``pattern`` starts in code at depth 0 (with ``anywhere``: at any depth)."""
    return [
        m.start()
        for m in re.finditer(pattern, sql, _FLAGS)
        if (depths[m.start()] >= 0 if anywhere else depths[m.start()] == 0)
    ]


def _close_paren(sql: str, open_at: int) -> int:
    depths = _depths(sql)
    for i in range(open_at + 1, len(sql)):
        if sql[i] == ")" and depths[i] == depths[open_at]:
            return i
    raise ValueError(f"unbalanced parentheses: {_head(sql)}")


def _split_top(sql: str) -> list[str]:
    """``sql`` cut at its commas of depth 0."""
    depths = _depths(sql)
    cuts = [i for i, c in enumerate(sql) if c == "," and depths[i] == 0]
    bounds = [-1, *cuts, len(sql)]
    return [sql[a + 1 : b] for a, b in pairwise(bounds) if sql[a + 1 : b].strip()]


def _code(part: str) -> str:
    """``part`` from its first word of code (the comments before it dropped)."""
    comments = _LEADING_COMMENTS.match(part)
    return part[comments.end() :] if comments else part


def _head(sql: str) -> str:
    return " ".join(sql.split())[:80]
