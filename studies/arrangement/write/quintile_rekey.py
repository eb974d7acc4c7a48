"""New quintile boundaries for an experiment: its per-install rows recomputed with them, once.

When a plan version fixes other ``n_candidates`` quintile boundaries than the one before
(registration with boundaries, ``plan freeze-quintiles``, an amendment), the page contexts of
the experiment's study-wide rows change (``quintile_context.py``): every install is
recomputed whole, and the rows keyed by the old contexts are deleted. The worker does it on a
timer (``keep_quintiles``), so an interrupted one is finished after a restart:

1. Boundaries a plan states and no row of ``arrangement_quintile_bounds`` does yet (the
   plan route writes that row itself; this covers a crash between the two, and plans stored
   before migration 0042) get their row, ``ready = 0``.
2. For each experiment whose latest row is not ready: statements begun before the row was
   written are waited for (each chDB lane runs one statement at a time, so one statement on
   each lane is enough); every install's closed days' sums are marked stale and the install is
   recomputed whole (``closed_sums.recompute``, which reads the new boundaries itself).
   Recomputes planned with the old boundaries fail their guard (``BOUNDS_GUARD``) and are
   planned again.
3. The rows of the three per-install tables that follow another version are deleted. Rows
   of another version written after step 2 began can only come from a statement that began
   before it (a ClickHouse server runs statements side by side): their installs are
   recomputed again, and the check is repeated after ``settle_s`` until it finds none.
4. The same row with ``ready = 1``: reports of the quintiles now read the study-wide rows.

If a newer version's boundaries arrive meanwhile, this run stops before deleting anything;
the next tick recomputes with those.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection

from core.store import Store
from schemas.sql import quote
from studies.arrangement.quintiles import TABLE as BOUNDS
from studies.arrangement.quintiles import FrozenQuintiles, read_frozen, row_sql
from studies.arrangement.tables import CLOSED, INSTALL, INSTALL_SUBSET, SLICES
from studies.arrangement.write import closed_sums

log = logging.getLogger(__name__)

PLANS = "analysis_plans"
SETTLE_S = 5.0
"""How long a check waits for statements that began before the recompute (a server's)."""
MAX_PASSES = 4
TABLES = (INSTALL, INSTALL_SUBSET, CLOSED)
MARKERS = "NOT (arm = '' AND stale = 1)"
"""A closed set's stale marker is never one of the rows to delete: it only ever makes an
install recomputed (an import's marker must stay until the import recomputed it)."""


def planned_sql() -> str:
    """Per experiment with a plan: its latest version, hash and each family's kept cut points."""
    cut = "JSONExtract(plan, 'quintiles', '{}', 'kept', 'Array(Int16)')"
    return (
        "SELECT experiment_id, argMax(tuple(version, sha256, "
        f"{cut.format('n_candidates')}, {cut.format('no_ads_no_box_n_candidates')}), version) "
        f"FROM {PLANS} GROUP BY experiment_id ORDER BY experiment_id"
    )


async def keep_quintiles(store: Store, settle_s: float = SETTLE_S) -> list[str]:
    """The worker's timer: give every plan's boundaries their row, then recompute each
    experiment whose boundaries are not ready. The experiments recomputed."""
    _, frozen = await read_frozen(store)  # every 5 s: on a read lane, beside the batches
    due = [e for e, f in frozen.items() if not f.ready]
    for experiment_id, (version, sha, everything, plain) in (
        await store.query(planned_sql(), read_only=True)
    ).rows:
        wanted = (tuple(int(b) for b in everything), tuple(int(b) for b in plain))
        have = frozen.get(str(experiment_id))
        if (have is None and wanted == ((), ())) or (
            have is not None and (have.n_candidates, have.no_ads_no_box) == wanted
        ):
            continue
        cuts = {"n_candidates": wanted[0], "no_ads_no_box_n_candidates": wanted[1]}
        await store.execute(row_sql(str(experiment_id), int(version), str(sha), cuts, ready=False))
        due.append(str(experiment_id))
    done = []
    for experiment_id in sorted(set(due)):
        if await rekey(store, experiment_id, settle_s):
            done.append(experiment_id)
    return done


async def _now(store: Store) -> str:
    return str((await store.query("SELECT toString(now64(6, 'UTC'))")).rows[0][0])


async def _latest(store: Store, experiment_id: str) -> FrozenQuintiles | None:
    return (await read_frozen(store, [experiment_id], read_only=False))[1].get(experiment_id)


async def rekey(store: Store, experiment_id: str, settle_s: float = SETTLE_S) -> bool:
    """Recompute one experiment's per-install rows with its latest boundaries, delete the
    rows of older ones and mark the boundaries ready; False when newer ones came meanwhile
    (or there are none)."""
    latest = await _latest(store, experiment_id)
    if latest is None:
        return False
    version = latest.version
    await store.execute("SELECT 1", background=True)  # what the lanes ran before the boundaries
    await store.execute("SELECT 1")
    since = await _now(store)
    engines = await store.query(
        f"SELECT DISTINCT engine FROM {SLICES} WHERE experiment_id = {quote(experiment_id)} ORDER BY engine"
    )
    for (engine,) in engines.rows:
        await _recompute(store, experiment_id, str(engine), None)
    for attempt in range(MAX_PASSES):
        if attempt:
            await asyncio.sleep(settle_s)
        if (current := await _latest(store, experiment_id)) is None or current.version != version:
            return False
        suspects = await store.query(_written_since_sql(experiment_id, version, since))
        for table in TABLES:
            await store.execute(_delete_sql(table, experiment_id, version), background=True)
        if suspects.rows:
            log.warning(
                "quintiles of %s: %d installs written with old boundaries", experiment_id, len(suspects.rows)
            )
            since = await _now(store)
            by_engine: dict[str, set[str]] = {}
            for engine, install_id in suspects.rows:
                by_engine.setdefault(str(engine), set()).add(str(install_id))
            for engine, ids in sorted(by_engine.items()):
                await _recompute(store, experiment_id, engine, ids)
        elif attempt:
            break
    if (current := await _latest(store, experiment_id)) is None or current.version != version:
        return False
    await store.execute(
        row_sql(
            experiment_id,
            version,
            latest.sha256,
            {"n_candidates": latest.n_candidates, "no_ads_no_box_n_candidates": latest.no_ads_no_box},
            ready=True,
        )
    )
    for table in TABLES:  # reads with FINAL find one part per partition, none with deleted rows
        await store.execute(f"OPTIMIZE TABLE {table} FINAL", background=True)
    return True


async def _recompute(
    store: Store, experiment_id: str, engine: str, install_ids: Collection[str] | None
) -> None:
    """Mark the installs' sets stale and recompute them whole (every install with slices of
    the experiment and engine when ``install_ids`` is None)."""
    await store.execute(closed_sums.stale_slices_sql(experiment_id, engine, install_ids), background=True)
    found = await store.query(
        f"SELECT DISTINCT install_id FROM {SLICES} WHERE experiment_id = {quote(experiment_id)} "
        f"AND engine = {quote(engine)}"
    )
    ids = {str(r[0]) for r in found.rows}
    if install_ids is not None:
        ids &= set(install_ids)
    if not ids:
        return
    newest = await store.query(closed_sums.newest_slice_sql(experiment_id, engine))
    targets = {(experiment_id, engine): closed_sums.closed_through(int(newest.rows[0][0]))}
    keys = [(experiment_id, engine, i) for i in sorted(ids)]
    await closed_sums.recompute(store, keys, (), targets, background=True)


def _other_version(experiment_id: str, version: int) -> str:
    return f"experiment_id = {quote(experiment_id)} AND quintiles_version != {int(version)}"


def _written_since_sql(experiment_id: str, version: int, since: str) -> str:
    """The installs with rows of another version written after ``since``."""
    after = f"computed_at > toDateTime64({quote(since)}, 6, 'UTC')"
    parts = [
        f"SELECT engine, install_id FROM {table} WHERE {_other_version(experiment_id, version)} AND {after}"
        + (f" AND {MARKERS}" if table == CLOSED else "")
        for table in TABLES
    ]
    return f"SELECT DISTINCT engine, install_id FROM ({' UNION ALL '.join(parts)}) ORDER BY ALL"


def _delete_sql(table: str, experiment_id: str, version: int) -> str:
    """Delete the experiment's rows of another version, unless newer boundaries came."""
    latest = f"(SELECT max(plan_version) FROM {BOUNDS} WHERE experiment_id = {quote(experiment_id)})"
    markers = f" AND {MARKERS}" if table == CLOSED else ""
    where = f"{_other_version(experiment_id, version)}{markers} AND {latest} = {int(version)}"
    return f"DELETE FROM {table} WHERE {where}"
