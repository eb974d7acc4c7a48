from __future__ import annotations

from pathlib import Path

import pytest

from ingest.api_keys import KeyError_, KeyFile
from ingest.ratelimit import TokenBucket


def test_bucket_allows_burst_then_paces() -> None:
    bucket = TokenBucket(rate=2.0, burst=3, stamp=0.0)
    assert [bucket.take(0.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.take(0.0) == pytest.approx(0.5)
    assert bucket.take(0.5) == 0.0  # one token refilled after 0.5 s at 2/s


def test_keys_are_hashed_revocable_and_reloaded(tmp_path: Path) -> None:
    keys = KeyFile(tmp_path / "keys.json")
    reader = KeyFile(tmp_path / "keys.json")  # another process's view
    key, secret = keys.create("lab", ("ingest", "read"))
    assert secret not in (tmp_path / "keys.json").read_text()
    assert reader.lookup(secret) == key
    keys.revoke(key.id)
    assert reader.lookup(secret) is None
    assert reader.lookup("wrong") is None
    with pytest.raises(KeyError_):
        keys.create("x", ("superuser",))
    with pytest.raises(KeyError_):
        keys.revoke("k_missing")


def test_registering_a_given_key_twice_keeps_one_entry(tmp_path: Path) -> None:
    keys = KeyFile(tmp_path / "keys.json")
    keys.create("cli", ("ingest",), key="fixed-key-123")
    keys.create("cli", ("ingest", "read"), key="fixed-key-123")
    assert len(keys.load()) == 1 and keys.load()[0].scopes == ("ingest", "read")


@pytest.mark.parametrize("name", ["", "x" * 65, "a\nb", "red\x1b[31m", "tab\tname"])
def test_a_key_name_that_would_garble_a_listing_or_a_label_is_refused(tmp_path: Path, name: str) -> None:
    from ingest.api_keys import KeyError_

    keys = KeyFile(tmp_path / "keys.json")
    with pytest.raises(KeyError_, match="1-64 printable"):
        keys.create(name, ("read",))
    assert keys.load() == []
    assert keys.create("lab reader: anna@example.org", ("read",))[0].name == "lab reader: anna@example.org"
