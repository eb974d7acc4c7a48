"""API keys, stored hashed in a small JSON file that ingest re-reads when it changes.

A key has scopes: ``ingest`` (post the extension's events and read experiment configs; the
key shipped inside an extension, so effectively public), ``crawler`` (post crawl events:
SERP snapshots and autocomplete crawls, which an extension key must not be able to plant),
``read`` (run SQL, reports, the board), ``admin`` (experiments, imports) and ``metrics``
(scrape ``/metrics``, which names keys and counts per key). Only SHA-256 hashes are
stored; the key itself is shown once, at creation.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import secrets
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import orjson

from core.errors import AuditstreamError

SCOPES = ("ingest", "crawler", "read", "admin", "metrics")

PUBLIC_SCOPES = frozenset({"ingest"})
"""The scopes a key shipped to volunteers may have: anyone who installs the extension reads it."""


MIN_KEY_LENGTH = len("as_" + secrets.token_urlsafe(24))
"""A key given by hand (``up --api-key``) is at least as long as the keys made here (35)."""

KEY_NAME = re.compile(r"[\w .:@/-]{1,64}")
"""What a key's name may hold."""


class KeyError_(AuditstreamError):
    """A key operation failed (unknown id, bad scope)."""


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class ApiKey:
    id: str
    name: str
    sha256: str
    scopes: tuple[str, ...]
    created_at: str
    revoked_at: str | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


class KeyFile:
    """The key file. Writers take a lock and replace the file atomically."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._version: tuple[int, int, int] | None = None
        self._by_hash: dict[str, ApiKey] = {}

    def load(self) -> list[ApiKey]:
        if not self.path.exists():
            return []
        doc = orjson.loads(self.path.read_bytes() or b"{}")
        return [ApiKey(**{**k, "scopes": tuple(k.get("scopes", SCOPES))}) for k in doc.get("keys", [])]

    @contextlib.contextmanager
    def _locked(self) -> Iterator[list[ApiKey]]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            keys = self.load()
            yield keys
            doc = {"keys": [k.__dict__ | {"scopes": list(k.scopes)} for k in keys]}
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".keys-")
            with os.fdopen(fd, "wb") as f:
                f.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)

    def create(
        self, name: str, scopes: tuple[str, ...] = ("ingest",), key: str | None = None
    ) -> tuple[ApiKey, str]:
        """Add a key; return it with its secret (generated unless given)."""
        bad = set(scopes) - set(SCOPES)
        if bad or not scopes:
            raise KeyError_(f"unknown scopes {sorted(bad)}; choose from {SCOPES}")
        if not KEY_NAME.fullmatch(name):
            # the name is a metrics label and a line in `keys list`: no control characters
            raise KeyError_("a key's name is 1-64 printable characters (letters, digits, space, . _ - : @ /)")
        secret = key or "as_" + secrets.token_urlsafe(24)
        digest = hash_key(secret)
        with self._locked() as keys:
            for i, existing in enumerate(keys):
                if existing.sha256 == digest:  # re-registering the same key: update it
                    keys[i] = ApiKey(existing.id, name, digest, scopes, existing.created_at)
                    return keys[i], secret
            api_key = ApiKey(
                id="k_" + digest[:10],
                name=name,
                sha256=digest,
                scopes=tuple(scopes),
                created_at=datetime.now(UTC).isoformat(timespec="seconds"),
            )
            keys.append(api_key)
        return api_key, secret

    def revoke(self, key_id: str) -> ApiKey:
        with self._locked() as keys:
            for i, k in enumerate(keys):
                if k.id == key_id:
                    keys[i] = ApiKey(
                        k.id,
                        k.name,
                        k.sha256,
                        k.scopes,
                        k.created_at,
                        k.revoked_at or datetime.now(UTC).isoformat(timespec="seconds"),
                    )
                    return keys[i]
        raise KeyError_(f"no key with id {key_id}")

    def lookup(self, secret: str) -> ApiKey | None:
        """The active key for ``secret``; re-reads the file when it changed.

        Writers replace the file, so its inode changes with every write; the mtime alone
        can repeat within one kernel timestamp tick (a create and a revoke in a row).
        """
        try:
            st = self.path.stat()
            version: tuple[int, int, int] | None = (st.st_ino, st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            version = None
        if version != self._version:
            self._by_hash = {k.sha256: k for k in self.load() if k.active}
            self._version = version
        return self._by_hash.get(hash_key(secret))
