from __future__ import annotations

import datetime as dt
import decimal
import uuid

from core.store.server_store import _jsonable


def test_driver_values_become_what_chdb_json_would_give() -> None:
    moment = dt.datetime(2026, 11, 21, 10, 0, 30, 123000)
    assert _jsonable(moment) == "2026-11-21 10:00:30.123"
    assert _jsonable(dt.datetime(2026, 11, 21, 10, 0, 30)) == "2026-11-21 10:00:30"
    assert _jsonable(dt.date(2026, 11, 21)) == "2026-11-21"
    ident = uuid.uuid4()
    assert _jsonable(ident) == str(ident)
    assert _jsonable(decimal.Decimal("1.5")) == 1.5
    assert _jsonable((1, "a", [dt.date(2026, 1, 2)])) == [1, "a", ["2026-01-02"]]
