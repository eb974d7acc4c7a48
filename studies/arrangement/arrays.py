"""Per-install rows read as Arrow columns, turned into the arrays the statistics take."""

from __future__ import annotations

from typing import Any

import numpy as np

from analytics.stats.arrangement_table import PerInstallArrays
from studies.arrangement.tables import ELEMENTS, MAX_RANKS


def arrays_from_arrow(table: Any, ranks: int, prefix: str = "c", units: str = "n_units") -> PerInstallArrays:
    """The columns of ``windows_keys_sql`` (an Arrow table) as ``PerInstallArrays`` (clicks
    on c_1..c_ranks; positions the query lacks count zero). ``prefix`` and ``units`` pick
    another set of columns of the same shape."""
    import pyarrow.compute as pc

    arm = pc.dictionary_encode(table.column("arm")).combine_chunks()
    clicks = np.zeros((table.num_rows, ranks), order="F")  # filled, and read, column by column
    for i in range(ranks):
        if f"{prefix}{i + 1}" in table.column_names:
            clicks[:, i] = table.column(f"{prefix}{i + 1}").to_numpy()
    return PerInstallArrays(
        keys=table.column("install_key").to_numpy(),
        arm_codes=arm.indices.to_numpy(zero_copy_only=False).astype(np.int64),
        arm_names=arm.dictionary.to_pylist(),
        units=table.column(units).to_numpy(),
        clicks=clicks,
    )


def report_arrays(
    table: Any, ranks: int, elements: bool = False
) -> tuple[PerInstallArrays, PerInstallArrays | None]:
    """The rows of ``per_install_keys_sql`` (an Arrow table) as ``PerInstallArrays``, sorted
    by install key (so ``sorted_unique`` finds the installs in one pass): clicks on
    c_1..c_ranks, and with ``elements`` the clicks per element type (``ELEMENTS`` order,
    their total as the units) as a second set."""
    import pyarrow.compute as pc

    keys = table.column("install_key").to_numpy()
    order: Any = slice(None)  # the statement sorts; rows from elsewhere may not come sorted
    if keys.size and not bool(np.all(keys[1:] >= keys[:-1])):
        order = np.argsort(keys, kind="stable")
    arm = pc.dictionary_encode(table.column("arm")).combine_chunks()
    codes = arm.indices.to_numpy(zero_copy_only=False).astype(np.int64)[order]
    names = arm.dictionary.to_pylist()
    lists = table.column("n_clicks").combine_chunks()
    width = len(lists[0]) if len(lists) else MAX_RANKS
    flat = lists.flatten().to_numpy(zero_copy_only=False)
    if flat.size != len(lists) * width:
        raise ValueError("per-install rows: clicks arrays of unequal length")
    stored = flat.reshape(len(lists), width)
    # one column at a time, gathered into key order and made float64 in one step, into a
    # column-major matrix (the bincounts read columns): cheaper than ordering the rows and
    # then transposing them (bench/README.md, "Figures behind the code")
    clicks = np.zeros((keys.size, ranks), order="F")  # positions the rows lack count zero
    for j in range(min(ranks, width)):
        clicks[:, j] = stored[:, j][order]
    positions = PerInstallArrays(keys[order], codes, names, table.column("n_units").to_numpy()[order], clicks)
    if not elements:
        return positions, None
    by_type = np.zeros((keys.size, len(ELEMENTS)), order="F")
    by_type[:, 0] = stored.sum(axis=1)[order]
    for j in range(1, len(ELEMENTS)):
        by_type[:, j] = table.column(f"e{j + 1}").to_numpy()[order]
    return positions, PerInstallArrays(keys[order], codes, names, by_type.sum(axis=1), by_type)


def element_totals(arrays: PerInstallArrays) -> list[dict[str, Any]]:
    """Clicks per element type and arm (the columns of ``element_shares_sql``), summed from
    the per-install element columns."""
    n = len(arrays.arm_names)
    sums = np.stack(
        [
            np.bincount(arrays.arm_codes, weights=arrays.clicks[:, j], minlength=n)
            for j in range(len(ELEMENTS))
        ],
        axis=1,
    )
    present = np.unique(arrays.arm_codes)
    rows = [
        {"arm": arrays.arm_names[a], **{k: int(v) for k, v in zip(ELEMENTS, sums[a], strict=True)}}
        for a in present
    ]
    return sorted(rows, key=lambda r: r["arm"])
