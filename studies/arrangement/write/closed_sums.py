"""Study-wide per-install statistics from a batch's slices, not from the install's history.

``agg_arrangement_install`` holds, per install and page context (arm, age capped at 7,
identified, ads, box, SSR at c1/c2), sums over every 10-second slice of that install.
Recomputed whole after each batch, a touched install's rows read its whole history, so the
worker's work per batch grew with the study's age (issue 34). ``agg_arrangement_install_closed``
(migration 0034) keeps each install's sums over its slices before ``through``, a UTC day
boundary. A batch recomputes the study-wide rows of only the page contexts it touched, each
as those closed sums plus the install's slices from ``through`` on (a day or two of them),
and moves ``through`` forward a day at a time (an *advance*: the old sums plus the slices of
the days it closes).

Exactness. One install's closed sums are one set of rows written by one statement, every row
with the set's ``through`` and ``computed_at``; the row with ``arm = ''`` is the set's header.
A set is used only if it is whole (every row carries the header's stamp), its header is not
``stale``, and the batch touched none of the install's slices before ``through``
(``Plan.of``). Otherwise the install is recomputed whole from its slices, every page context
of it, and its set rebuilt: the old way, for that install alone. Slices before ``through``
change in two ways only, both covered: a batch of old events (a replay after an outage; the
batch's own slices say so) and a bulk import, which marks the installs of every day it
recomputes stale (``stale_sql``) before and after recomputing that day's slices, then
rebuilds the stale installs (``stale_installs_sql``). Sets are rewritten whole and
ReplacingMergeTree keeps the newest, so a crash half-way leaves a set that is not whole,
never a wrong one; keys only gain rows (raw rows are only added) and ``through`` never goes
back, so a new set covers every key of the one before it.

A recompute reads the installs' sets first (``state_sql``) and plans in Python. Each
statement that writes from a set reads that set again itself, checks it is still the one
planned for, and refuses to run otherwise (``GUARD``: another writer, an import or a second
worker, changed it meanwhile; the recompute of those installs starts again); the check comes
before any row is written. Rows carry their statement's time, so of two recomputes of one
row the one that read later wins, as in every derived table here. Recomputing is idempotent:
a replayed batch writes the same rows.

Frozen quintiles (issue 38, ``quintile_context.py``). For an experiment whose plan froze its
``n_candidates`` quintile boundaries, a page context also holds the page's quintile in each
family, and every row the plan version of those boundaries (``quintiles_version``). A
recompute reads the boundaries once per chunk, before the state (the touched contexts'
hashes depend on them); its statements refuse to write when newer boundaries were stored
since (``BOUNDS_GUARD``, retried as ``GUARD`` is), a set whose rows follow another version is
not used (the install is recomputed whole), and the per-subset rows are derived from the
current version's rows only. New boundaries recompute the whole experiment once
(``quintile_rekey.py``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from core.store import Store, StoreError
from schemas.sql import quote
from studies.arrangement.tables import CLOSED as TABLE
from studies.arrangement.tables import DAY_S, GRACE_S, SLICE_S
from studies.arrangement.write import slice_rows
from studies.arrangement.write.quintile_context import BOUNDS_GUARD, NO_QUINTILES, QuintileContext
from studies.arrangement.write.slice_rows import AGE_CAP, SUBSET_COLUMNS, subsets_select_sql

# A day is closed GRACE_S after it ends, by the newest slice seen (migration 0034 says the
# same): live events land in the slice of their arrival, so only a replay or an import adds
# to a closed day.

INSTALL_CHUNK = 1000
"""Installs per recompute (keeps each statement well inside max_query_size)."""
MAX_ROUNDS = 5
"""Recomputes of a chunk whose sets other writers keep changing, before giving up."""
GUARD = "arrangement closed sums changed while they were recomputed"

InstallKey = tuple[str, str, str]  # experiment_id, engine, install_id
SliceKey = tuple[str, str, int]  # experiment_id, engine, slice start (unix seconds)

KEY = "experiment_id, engine, install_id"
CONTEXT = (
    "arm, install_age_days, identified, ads_present, box_present, ssr_c1_c2, n_candidates_quintile, "
    "no_ads_no_box_quintile"
)
"""A page context: the frozen quintiles' columns are 0 unless the experiment's plan froze them
(``quintile_context.py``); a set's rows follow one version of the boundaries."""
SUMS = (
    "units, impressions, clicks, clicks_ad, clicks_box, clicks_ssr, clicks_other, later_units, "
    "later_impressions"
)
CLOSED_COLUMNS = (
    f"{KEY}, {CONTEXT}, {SUMS}, first_slice, last_slice, through, stale, computed_at, quintiles_version"
)
INSTALL_COLUMNS = f"{KEY}, {CONTEXT}, {SUMS}, first_slice, last_slice, computed_at, quintiles_version"
"""The study-wide rows' columns as this module writes them."""
NO_STAMP = "1970-01-01 00:00:00.000000"
NEVER = 2**32 - 1
"""The newest DateTime (2106): "no slice touched"."""

HASH_SQL = f"cityHash64({KEY}, {CONTEXT})"
"""An install's page context as one number: a batch's touched contexts travel as these."""
SUBSET_HASH_SQL = f"cityHash64({KEY}, arm, install_age_days, identified)"
"""An install's (arm, age, identified), the key of its per-subset rows, as one number."""

WHOLE_SQL = (
    "toUInt8(countIf(arm = '') = 1 AND maxIf(stale, arm = '') = 0 AND min(computed_at) = max(computed_at))"
)
"""Per install, over its rows read with FINAL: 1 when its set can be used."""


def closed_through(newest_slice: int) -> int:
    """The day boundary an install's sums may close through, given the newest slice seen
    (unix seconds): the start of the day that was under way ``GRACE_S`` before it."""
    moment = newest_slice - GRACE_S
    return moment - moment % DAY_S


def targets_of(slices: Iterable[SliceKey]) -> dict[tuple[str, str], int]:
    """Per experiment and engine, the day boundary its sets may close through."""
    newest: dict[tuple[str, str], int] = {}
    for experiment_id, engine, start in slices:
        key = (experiment_id, engine)
        newest[key] = max(newest.get(key, start), start)
    return {key: closed_through(start) for key, start in newest.items()}


@dataclass(frozen=True)
class Plan:
    """What a recompute does for one install, from its set as ``state_sql`` read it.

    ``valid``: the set is used (the contexts the batch touched are its sums plus the slices
    from ``through`` on); otherwise every context is recomputed from all of the install's
    slices. ``action``: the set is written anew through ``t_new`` (advanced from the old one,
    or rebuilt from the slices when not valid). An install without a set (``has_set``) is
    valid, all of its slices being after ``through`` = 0; it gets one once it has slices
    before ``t_new`` (``older_slices_sql``), or earlier whenever sets of its chunk are
    written, so that it reads at most a day or two of slices meanwhile."""

    key: InstallKey
    through: int
    valid: bool
    t_new: int
    action: bool
    has_set: bool
    touched: tuple[int, ...] = ()
    """The page contexts of the install in the slices the batch touched, hashed (``HASH_SQL``):
    a context a hash names by chance is recomputed too, as exactly."""
    subsets: tuple[int, ...] = ()
    """Their (arm, age, identified), hashed (``SUBSET_HASH_SQL``): the per-subset rows to
    recompute."""
    sums: bool = False
    """The set has rows besides its header."""

    @classmethod
    def of(
        cls,
        key: InstallKey,
        target: int,
        *,
        through: int = 0,
        has_rows: bool = False,
        whole: bool = False,
        oldest_touch: int = NEVER,
        touched: Iterable[int] = (),
        subsets: Iterable[int] = (),
        sums: bool = True,
    ) -> Plan:
        """``has_rows``: the install has rows in the table (a set, or part of one);
        ``whole``: they are a whole set, not stale, following the experiment's current
        quintile boundaries; ``oldest_touch``: the oldest of its slices the batch touched;
        ``touched`` and ``subsets``: its contexts there; ``sums``: its set has rows besides
        the header."""
        valid = (not has_rows or whole) and oldest_touch >= through
        action = not valid or (has_rows and through < target)
        return cls(
            key,
            through,
            valid,
            max(through, target),
            action,
            has_rows,
            tuple(sorted(touched)),
            tuple(sorted(subsets)),
            has_rows and sums,
        )


def plans_of(
    installs: Iterable[InstallKey],
    rows: Iterable[Sequence[object]],
    targets: Mapping[tuple[str, str], int],
    quintiles: QuintileContext = NO_QUINTILES,
) -> list[Plan]:
    """The plans of ``installs`` from the rows of ``state_sql``: a set whose rows follow
    other quintile boundaries than ``quintiles`` (an older version's) is not used."""
    found = {(str(r[0]), str(r[1]), str(r[2])): r[3:] for r in rows}
    plans = []
    for key in installs:
        target = targets.get((key[0], key[1]), 0)
        if key not in found:
            plans.append(Plan.of(key, target))
            continue
        through, has_rows, whole, oldest, sums = (int(str(v)) for v in found[key][:5])
        touched, subsets = ([int(str(h)) for h in v] if isinstance(v, list) else [] for v in found[key][5:7])
        lowest, highest = (int(str(v)) for v in found[key][7:9]) if len(found[key]) > 8 else (0, 0)
        current = lowest == highest == quintiles.version_of(key[0])
        plans.append(
            Plan.of(
                key,
                target,
                through=through,
                has_rows=bool(has_rows),
                whole=bool(whole) and current,
                oldest_touch=oldest,
                touched=touched,
                subsets=subsets,
                sums=bool(sums),
            )
        )
    return plans


def _grouped(keys: Iterable[InstallKey]) -> dict[tuple[str, str], list[str]]:
    out: dict[tuple[str, str], list[str]] = defaultdict(list)
    for experiment_id, engine, install_id in sorted(keys):
        out[experiment_id, engine].append(install_id)
    return out


class _Lists:
    """Install ids as named arrays in a statement's WITH clause (each list written once),
    and conditions matching them: per experiment and engine, ``install_id IN <name>``, which
    the primary keys of the slices and of the sets both serve."""

    def __init__(self) -> None:
        self.arrays: list[str] = []
        self.conditions: list[str] = []
        self.rows: list[str] = []  # the keys of the last ``match``, as a query

    def match(self, keys: Iterable[InstallKey]) -> str:
        parts, self.rows = [], []
        for (experiment_id, engine), ids in _grouped(keys).items():
            name = f"ids_{len(self.arrays)}"
            self.arrays.append(f"[{', '.join(quote(i) for i in ids)}] AS {name}")
            study = f"experiment_id = {quote(experiment_id)} AND engine = {quote(engine)}"
            parts.append(f"({study} AND install_id IN {name})")
            self.rows.append(
                f"SELECT {quote(experiment_id)} AS experiment_id, {quote(engine)} AS engine, "
                f"arrayJoin({name}) AS install_id"
            )
        self.conditions += parts
        return "(" + " OR ".join(parts) + ")" if parts else "0"

    def everyone(self) -> str:
        """Every install matched so far (the arrays again, not new ones)."""
        return "(" + " OR ".join(self.conditions) + ")" if self.conditions else "0"

    def with_clause(self, *more: str) -> str:
        return "WITH " + ",\n     ".join([*self.arrays, *more])


def _guard(lists: _Lists, since: str) -> str:
    """A scalar of the WITH clause that fails the statement before it writes anything when a
    set of an install ``lists`` matched was written after ``since`` (the time ``state_sql``
    read them)."""
    return (
        f"(SELECT throwIf(max(computed_at) > toDateTime64({quote(since)}, 6, 'UTC'), {quote(GUARD)}) "
        f"FROM {TABLE} WHERE {lists.everyone()}) AS refused"
    )


def _touched_sql(slices: Collection[SliceKey], match: str, quintiles: QuintileContext) -> str:
    """The rows of the installs ``match`` selects in the ``slices`` a batch touched (an
    empty query without slices), with the page context capped."""
    if not slices:
        return f"SELECT {KEY}, {_slice_context(quintiles)}, slice_start FROM agg_arrangement_10s WHERE 0"
    lo = min(s for _, _, s in slices)
    hi = max(s for _, _, s in slices) + SLICE_S
    listed = ", ".join(f"({quote(e)}, {quote(g)}, {int(s)})" for e, g, s in sorted(slices))
    return f"""
    SELECT {KEY}, {_slice_context(quintiles)}, slice_start
    FROM agg_arrangement_10s
    WHERE {match} AND slice_start >= toDateTime({lo}, 'UTC') AND slice_start < toDateTime({hi}, 'UTC')
      AND (experiment_id, engine, toUInt32(slice_start)) IN ({listed})"""


def _slice_context(quintiles: QuintileContext) -> str:
    """A slice row's page context as the study-wide rows key it (age capped, the frozen
    quintiles of its bucket)."""
    return (
        f"arm, toUInt8(least(install_age_days, {AGE_CAP})) AS install_age_days, identified, ads_present, "
        f"box_present, ssr_c1_c2, {quintiles.context_sql()}"
    )


def _set_rows(match: str) -> str:
    """The rows of the sets ``match`` selects, headers left out."""
    return f"""
        SELECT {KEY}, {CONTEXT}, {SUMS}, first_slice, last_slice
        FROM {TABLE} FINAL WHERE {match} AND arm != ''"""


def _slice_rows(match: str, quintiles: QuintileContext) -> str:
    """The slices (read with FINAL) ``match`` selects, as rows of a set: context capped,
    sums as UInt64."""
    return f"""
        SELECT {KEY}, {_slice_context(quintiles)}, toUInt64(units) AS units,
               toUInt64(impressions) AS impressions,
               arrayMap(x -> toUInt64(x), clicks) AS clicks, toUInt64(clicks_ad) AS clicks_ad,
               toUInt64(clicks_box) AS clicks_box, toUInt64(clicks_ssr) AS clicks_ssr,
               toUInt64(clicks_other) AS clicks_other, toUInt64(later_units) AS later_units,
               toUInt64(later_impressions) AS later_impressions, slice_start AS first_slice,
               slice_start AS last_slice
        FROM agg_arrangement_10s FINAL WHERE {match}"""


def _between(lo: int | None, hi: int | None) -> str:
    """Slices from ``lo`` (if given) and before ``hi`` (if given)."""
    bounds = [f"slice_start >= toDateTime({lo}, 'UTC')"] if lo is not None else []
    bounds += [f"slice_start < toDateTime({hi}, 'UTC')"] if hi is not None else []
    return " AND ".join(bounds) or "1"


def state_sql(
    installs: Sequence[InstallKey], slices: Collection[SliceKey], quintiles: QuintileContext = NO_QUINTILES
) -> str:
    """Per install of ``installs`` with rows in the table or in the ``slices`` a batch
    touched: its set's ``through``, whether it has rows and is a whole set (``WHOLE_SQL``),
    the oldest of those slices (``NEVER``: none), whether its set has rows besides the header,
    its page contexts in those slices (``HASH_SQL``, ``SUBSET_HASH_SQL``, with the
    ``quintiles``) and the lowest and highest quintile version of its set's rows; with the
    store's time as a last column (taken before anything the recompute writes)."""
    lists = _Lists()
    match = lists.match(installs)
    none = "CAST([], 'Array(UInt64)')"
    return f"""
{lists.with_clause()}
SELECT {KEY}, toUInt32(max(through)), max(has_rows), min(whole), toUInt32(min(oldest)), max(sums),
       groupArrayArray(touched), groupArrayArray(subsets), min(lowest), max(highest),
       toString(now64(6, 'UTC'))
FROM (
    SELECT {KEY}, max(through) AS through, toUInt8(1) AS has_rows, {WHOLE_SQL} AS whole,
           toDateTime({NEVER}, 'UTC') AS oldest, toUInt8(countIf(arm != '') > 0) AS sums,
           {none} AS touched, {none} AS subsets, min(quintiles_version) AS lowest,
           max(quintiles_version) AS highest
    FROM {TABLE} FINAL WHERE {match} GROUP BY {KEY}
    UNION ALL
    SELECT {KEY}, toDateTime(0, 'UTC'), toUInt8(0), toUInt8(1), min(slice_start), toUInt8(0),
           groupUniqArray({HASH_SQL}), groupUniqArray({SUBSET_HASH_SQL}), toUInt32({NEVER}), toUInt32(0)
    FROM ({_touched_sql(slices, match, quintiles)}) GROUP BY {KEY}
)
GROUP BY {KEY}
"""


def installs_sql(plans: Sequence[Plan], since: str, quintiles: QuintileContext = NO_QUINTILES) -> str:
    """The study-wide rows of the page contexts a batch touched (``Plan.touched``) of the
    installs with valid ``plans``: each their set's sums plus their slices from ``through``
    on (one branch per ``through``). Fails with ``GUARD`` before writing if one of the sets
    was written after ``since`` (``BOUNDS_GUARD``: new quintile boundaries since
    ``quintiles`` were read)."""
    if not all(p.valid for p in plans) or not any(p.touched for p in plans):
        raise ValueError("installs_sql takes valid plans with the contexts a batch touched")
    lists = _Lists()
    by_through: dict[int, list[InstallKey]] = defaultdict(list)
    for plan in plans:
        by_through[plan.through].append(plan.key)
    sources = []
    for through, keys in sorted(by_through.items()):
        sources.append(_slice_rows(f"{lists.match(keys)} AND {_between(through, None)}", quintiles))
    if with_sums := [p.key for p in plans if p.sums]:
        sources.append(_set_rows(lists.match(with_sums)))
    touched = ", ".join(str(h) for p in plans for h in p.touched)
    guard = _guard(lists, since)
    return f"""
INSERT INTO agg_arrangement_install ({INSTALL_COLUMNS})
{lists.with_clause(guard, *quintiles.guard_with(), f"[{touched}] AS touched")}
SELECT {KEY}, {CONTEXT}, sum(units), sum(impressions), sumForEach(clicks), sum(clicks_ad), sum(clicks_box),
       sum(clicks_ssr), sum(clicks_other), sum(later_units), sum(later_impressions), min(first_slice),
       max(last_slice), now64(6), {quintiles.version_sql()}
FROM ({" UNION ALL ".join(sources)})
WHERE refused = 0 AND {quintiles.guard_where()} AND {HASH_SQL} IN touched
GROUP BY {KEY}, {CONTEXT}
"""


def closed_sql(plans: Sequence[Plan], since: str, quintiles: QuintileContext = NO_QUINTILES) -> str:
    """The new sets of the ``plans`` that say so (``action``), each with its header: a valid
    set plus the install's slices from its ``through`` up to ``t_new`` (an advance), or all of
    the install's slices before ``t_new`` (a rebuild). Fails with ``GUARD`` before writing if
    one of the sets was written after ``since``."""
    groups: dict[tuple[bool, int, int], list[InstallKey]] = defaultdict(list)
    for plan in plans:
        if plan.action:
            groups[plan.valid, plan.through, plan.t_new].append(plan.key)
    if not groups:
        raise ValueError("no sets to write")
    lists = _Lists()
    sources = []
    for (advance, through, t_new), keys in sorted(groups.items()):
        match = lists.match(keys)
        new = f"toDateTime({t_new}, 'UTC') AS t_new"
        if advance:
            sources.append(f"SELECT *, {new} FROM ({_set_rows(match)})")
        slices = _slice_rows(f"{match} AND {_between(through if advance else None, t_new)}", quintiles)
        sources.append(f"SELECT *, {new} FROM ({slices})")
        sources.append(
            f"""
        SELECT {KEY}, '', 0, 0, 0, 0, 0, 0, 0, 0, 0, CAST([], 'Array(UInt64)'), 0, 0, 0, 0, 0, 0,
               toDateTime(0, 'UTC'), toDateTime(0, 'UTC'), {new}
        FROM ({" UNION ALL ".join(lists.rows)})"""
        )
    guard = _guard(lists, since)
    return f"""
INSERT INTO {TABLE} ({CLOSED_COLUMNS})
{lists.with_clause(guard, *quintiles.guard_with())}
SELECT {KEY}, {CONTEXT}, sum(units), sum(impressions), sumForEach(clicks), sum(clicks_ad), sum(clicks_box),
       sum(clicks_ssr), sum(clicks_other), sum(later_units), sum(later_impressions), min(first_slice),
       max(last_slice), any(t_new), toUInt8(0), now64(6), {quintiles.version_sql()}
FROM ({" UNION ALL ".join(sources)})
WHERE refused = 0 AND {quintiles.guard_where()}
GROUP BY {KEY}, {CONTEXT}
"""


def subsets_sql(plans: Sequence[Plan], quintiles: QuintileContext = NO_QUINTILES) -> str:
    """The per-subset rows of the ``plans``' installs, from their study-wide rows (run right
    after those): every (arm, age, identified) of an install recomputed whole, those of the
    contexts the batch touched (``Plan.subsets``) of the others."""
    lists = _Lists()
    parts = []
    if whole := [p.key for p in plans if not p.valid]:
        parts.append(lists.match(whole))
    if valid := [p for p in plans if p.valid and p.subsets]:
        parts.append(f"({lists.match(p.key for p in valid)} AND {SUBSET_HASH_SQL} IN subsets)")
    if not parts:
        raise ValueError("no per-subset rows to recompute")
    subsets = ", ".join(str(h) for p in valid for h in p.subsets)
    select = subsets_select_sql(" OR ".join(parts), quintiles)
    more = [*quintiles.guard_with(), *([f"[{subsets}] AS subsets"] if valid else [])]
    with_clause = lists.with_clause(*more)
    return f"INSERT INTO agg_arrangement_install_subset ({SUBSET_COLUMNS})\n{with_clause}" + select


def older_slices_sql(plans: Sequence[Plan]) -> str:
    """The installs of ``plans`` (installs without a set) with slices before ``t_new``: their
    first set is due (the others have all of their slices after it, a day's at most)."""
    lists = _Lists()
    by_target: dict[int, list[InstallKey]] = defaultdict(list)
    for plan in plans:
        by_target[plan.t_new].append(plan.key)
    parts = [f"({lists.match(keys)} AND {_between(None, t)})" for t, keys in sorted(by_target.items())]
    return f"{lists.with_clause()}\nSELECT DISTINCT {KEY} FROM agg_arrangement_10s WHERE {' OR '.join(parts)}"


def stale_sql(experiment_id: str, engine: str, lo: int, hi: int) -> str:
    """Mark stale the set of every install with raw rows of one experiment and engine in
    [lo, hi) (unix seconds): a header newer than its rows, with ``stale = 1``."""
    return f"""
INSERT INTO {TABLE} ({CLOSED_COLUMNS})
SELECT DISTINCT experiment_id, engine, install_id, '', 0, 0, 0, 0, 0, 0, 0, 0, 0, CAST([], 'Array(UInt64)'),
       0, 0, 0, 0, 0, 0, toDateTime(0, 'UTC'), toDateTime(0, 'UTC'), toDateTime(0, 'UTC'), 1, now64(6), 0
FROM raw_extension_events
WHERE experiment_id = {quote(experiment_id)} AND engine = {quote(engine)}
  AND received_at >= toDateTime64({int(lo)}, 3, 'UTC') AND received_at < toDateTime64({int(hi)}, 3, 'UTC')
"""


def stale_slices_sql(experiment_id: str, engine: str, install_ids: Collection[str] | None = None) -> str:
    """Mark stale the set of every install (of ``install_ids``; None: every one) with slices of
    one experiment and engine: what new quintile boundaries do (``quintile_rekey.py``)."""
    only = ""
    if install_ids is not None:
        only = f" AND install_id IN ({', '.join(quote(i) for i in sorted(install_ids)) or quote('')})"
    return f"""
INSERT INTO {TABLE} ({CLOSED_COLUMNS})
SELECT DISTINCT experiment_id, engine, install_id, '', 0, 0, 0, 0, 0, 0, 0, 0, 0, CAST([], 'Array(UInt64)'),
       0, 0, 0, 0, 0, 0, toDateTime(0, 'UTC'), toDateTime(0, 'UTC'), toDateTime(0, 'UTC'), 1, now64(6), 0
FROM agg_arrangement_10s
WHERE experiment_id = {quote(experiment_id)} AND engine = {quote(engine)}{only}
"""


def stale_installs_sql(experiment_id: str, engine: str) -> str:
    """The installs of one experiment and engine whose sets are not whole or marked stale."""
    return (
        f"SELECT install_id FROM {TABLE} FINAL WHERE experiment_id = {quote(experiment_id)} "
        f"AND engine = {quote(engine)} GROUP BY install_id HAVING {WHOLE_SQL} = 0"
    )


def newest_slice_sql(experiment_id: str, engine: str) -> str:
    """The start of the newest slice of one experiment and engine (0 when it has none)."""
    return (
        "SELECT toUInt32(max(slice_start)) FROM agg_arrangement_10s "
        f"WHERE experiment_id = {quote(experiment_id)} AND engine = {quote(engine)}"
    )


async def recompute(
    store: Store,
    installs: Collection[InstallKey],
    slices: Collection[SliceKey],
    targets: Mapping[tuple[str, str], int],
    *,
    background: bool = False,
) -> None:
    """Recompute the study-wide and per-subset rows of ``installs`` after the ``slices`` a
    batch touched were recomputed (none: an import's, which recomputes every install it
    names whole), and their sets where due, ``INSTALL_CHUNK`` installs at a time
    (``background``: the writes on the store's background lane)."""
    ordered = sorted(installs)
    for start in range(0, len(ordered), INSTALL_CHUNK):
        chunk = ordered[start : start + INSTALL_CHUNK]
        for attempt in range(MAX_ROUNDS):
            try:
                await _recompute_chunk(store, chunk, slices, targets, background)
                break
            except StoreError as exc:
                refused = GUARD in str(exc) or BOUNDS_GUARD in str(exc)
                if not refused or attempt == MAX_ROUNDS - 1:
                    raise


MAX_HASHES = 4000
"""Hashes of touched contexts per statement (about 90 KiB of its text)."""


def _portions(plans: list[Plan], hashes: Callable[[Plan], int]) -> list[list[Plan]]:
    """``plans`` in runs of at most ``MAX_HASHES`` hashes each."""
    out: list[list[Plan]] = [[]]
    count = 0
    for plan in plans:
        if out[-1] and count + hashes(plan) > MAX_HASHES:
            out.append([])
            count = 0
        out[-1].append(plan)
        count += hashes(plan)
    return [part for part in out if part]


async def _recompute_chunk(
    store: Store,
    installs: Sequence[InstallKey],
    slices: Collection[SliceKey],
    targets: Mapping[tuple[str, str], int],
    background: bool,
) -> None:
    # the boundaries first: the touched contexts' hashes include the quintiles
    quintiles = await QuintileContext.read(store, {key[0] for key in installs})
    state = await store.query(state_sql(installs, slices, quintiles), read_only=True)  # beside the batches
    since = str(state.rows[0][-1]) if state.rows else None
    if since is None:
        since = str((await store.query("SELECT toString(now64(6, 'UTC'))", read_only=True)).rows[0][0])
    plans = plans_of(installs, (r[:-1] for r in state.rows), targets, quintiles)
    if fresh := [p for p in plans if not p.has_set and p.t_new > 0]:  # their first set, once due
        older = await store.query(older_slices_sql(fresh), read_only=True)
        older_keys = {(str(e), str(g), str(i)) for e, g, i in older.rows}
        plans = [replace(p, action=True) if p.key in older_keys else p for p in plans]
    for part in _portions([p for p in plans if p.valid and p.touched], lambda p: len(p.touched)):
        await store.execute(installs_sql(part, since, quintiles), background=background)
    if whole := [p.key for p in plans if not p.valid]:
        await store.execute(slice_rows.installs_sql(whole, quintiles), background=background)
    for part in _portions([p for p in plans if not p.valid or p.subsets], lambda p: len(p.subsets)):
        await store.execute(subsets_sql(part, quintiles), background=background)
    if any(p.action for p in plans):  # and a first set for every install without one
        due = [replace(p, action=True) if not p.has_set and p.t_new > 0 else p for p in plans]
        await store.execute(closed_sql(due, since, quintiles), background=background)
