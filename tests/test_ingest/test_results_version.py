"""The board's data version moves with every recompute of a study's per-install rows."""

from __future__ import annotations

from pathlib import Path

from core.store.chdb_store import ChdbStore
from ingest.board.results import data_version
from schemas.migrate import migrate
from studies.arrangement.write.slice_rows import INSTALL_COLUMNS, subsets_sql


async def test_the_version_is_the_newest_stamp_of_every_subset_row(tmp_path: Path) -> None:
    """Read from the ``all`` rows alone, the version is still the newest stamp of all the
    study's per-subset rows, whichever subsets a recompute wrote, and it moves with each."""
    store = ChdbStore(tmp_path / "ch", read_lanes=1)
    try:
        await migrate(store)

        async def recompute(install: str, box: int) -> None:
            row = (
                f"('e', 'google', '{install}', 'control', 5, 1, 0, {box}, 0, 1, 1, "
                "[1,0,0,0,0,0,0,0,0,0], 0, 0, 0, 0, 0, 0, now(), now(), now64(6))"
            )
            await store.execute(f"INSERT INTO agg_arrangement_install ({INSTALL_COLUMNS}) VALUES {row}")
            await store.execute(subsets_sql([("e", "google", install)]))

        async def newest() -> tuple[str, int]:
            rows = (
                await store.query(
                    "SELECT toString(max(computed_at)), uniqExact(subset) "
                    "FROM agg_arrangement_install_subset WHERE experiment_id = 'e' AND engine = 'google'"
                )
            ).rows
            return str(rows[0][0]), int(rows[0][1])

        seen = []
        for install, box in (("a", 0), ("b", 1), ("a", 1)):
            await recompute(install, box)
            stamp, subsets = await newest()
            assert subsets > 1  # the recomputes wrote other subsets beside "all"
            version = await data_version(store, "e", "google", profiles=False, dated=False)
            assert version == ((stamp,),)
            seen.append(version)
        assert len(set(seen)) == 3  # it moved with every recompute
    finally:
        await store.close()
