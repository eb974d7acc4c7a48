"""The one write that runs where the board computes: after past days were written (an
import, an erasure), a study's decision-line looks are stored anew
(``studies/arrangement/write/looks.restore_looks``). It is numpy work over every day of the
study, so it runs in the board's compute process, never in the ingest process; it is a
job of its own, not a panel: panels only read.
"""

from __future__ import annotations

from core.store import Store, StoreError
from ingest.board import compute
from ingest.board.compute import PanelFailed
from studies.arrangement.write.looks import restore_looks


async def restore(store: Store, experiment_id: str, engine: str) -> None:
    """The study's looks stored anew (``PanelFailed`` when the store refuses a statement)."""
    try:
        await restore_looks(store, experiment_id, engine)
    except StoreError as exc:
        raise PanelFailed(str(exc)[:500]) from None


def restore_in_child(experiment_id: str, engine: str) -> None:
    """``restore`` in the compute process (submitted by ``ComputeProcess.run``)."""
    compute.run_in_child(restore, experiment_id, engine)
