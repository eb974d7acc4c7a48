"""Content-addressed archive of raw responses, so a parser fix can re-parse old crawls.

A record is canonical JSON ``{"meta": {...}, "body": str}`` (or ``"body_base64"`` when
the body is not UTF-8), stored gzip-compressed at ``<root>/<h[:2]>/<h>.json.gz`` where
``h`` is the SHA-256 of the uncompressed record. The address is ``raw_ref =
"sha256:<h>"``: the same record is stored once, and a read checks the hash.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from collectors.common.exceptions import ArchiveError

PREFIX = "sha256:"


@dataclass(frozen=True)
class ArchivedResponse:
    body: bytes
    meta: dict[str, Any]
    """engine, format, url, query, status (HTTP), fetched_at, content_type, charset."""


class Archive:
    """A directory of archived responses; writes are atomic, so a crash leaves no torn file."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, raw_ref: str) -> Path:
        if not raw_ref.startswith(PREFIX) or len(raw_ref) != len(PREFIX) + 64:
            raise ArchiveError(f"not an archive reference: {raw_ref!r}")
        digest = raw_ref[len(PREFIX) :]
        return self.root / digest[:2] / f"{digest}.json.gz"

    def put(self, body: bytes, meta: Mapping[str, Any]) -> str:
        """Store one response and return its ``raw_ref``."""
        record: dict[str, Any] = {"meta": dict(meta)}
        try:
            record["body"] = body.decode("utf-8")
        except UnicodeDecodeError:
            record["body_base64"] = base64.b64encode(body).decode("ascii")
        data = orjson.dumps(record, option=orjson.OPT_SORT_KEYS)
        raw_ref = PREFIX + hashlib.sha256(data).hexdigest()
        target = self.path(raw_ref)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(gzip.compress(data, mtime=0))
                os.replace(tmp, target)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        return raw_ref

    def get(self, raw_ref: str) -> ArchivedResponse:
        target = self.path(raw_ref)
        try:
            data = gzip.decompress(target.read_bytes())
        except FileNotFoundError:
            raise ArchiveError(f"{raw_ref} is not in the archive at {self.root}") from None
        if PREFIX + hashlib.sha256(data).hexdigest() != raw_ref:
            raise ArchiveError(f"{target} does not match its address (corrupted?)")
        record = orjson.loads(data)
        text = record.get("body")
        body = text.encode("utf-8") if text is not None else base64.b64decode(record["body_base64"])
        return ArchivedResponse(body, record["meta"])
