"""Check real answers against the OpenAPI document the service serves.

``declared_schema`` finds the schema an operation declares for a status; ``Api`` makes
real HTTP requests to a running service, checks each answer's status is the expected one
and declared in its media type, validates its body against the declared schema (OpenAPI 3.1
dialect, formats checked) and records which (method, path, status) it saw.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass, field
from typing import Any

import orjson
from openapi_schema_validator import OAS31Validator

from tests.helpers import Response, Service, http

JSON = "application/json"


def declared_schema(
    doc: dict[str, Any], method: str, path: str, status: int, media_type: str = JSON
) -> dict[str, Any]:
    """The JSON schema ``doc`` declares for ``status`` of ``method path`` in ``media_type``
    (AssertionError if none)."""
    operation = doc["paths"].get(path, {}).get(method.lower())
    assert operation is not None, f"{method} {path} is not in the document"
    answer = operation["responses"].get(str(status))
    assert answer is not None, f"{method} {path} answered {status}, which the document does not declare"
    content = answer["content"].get(media_type)
    assert content is not None, (
        f"{method} {path} answered {status} as {media_type}, not {list(answer['content'])}"
    )
    schema: dict[str, Any] = content["schema"]
    return schema


def assert_valid(
    doc: dict[str, Any], method: str, path: str, status: int, body: Any, media_type: str = JSON
) -> None:
    """``body`` is valid against what ``doc`` declares for the answer (refs into ``doc``)."""
    schema = {**declared_schema(doc, method, path, status, media_type), "components": doc["components"]}
    validator = OAS31Validator(schema, format_checker=OAS31Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(body), key=lambda e: list(e.absolute_path))
    assert not errors, f"{method} {path} {status}: " + "; ".join(
        f"at {'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message[:300]}" for e in errors[:5]
    )


@dataclass
class Api:
    """Requests to ``svc`` whose answers are checked against ``doc``."""

    svc: Service
    doc: dict[str, Any]
    seen: set[tuple[str, str, int]] = field(default_factory=set)

    def call(
        self,
        method: str,
        path: str,
        expect: int,
        *,
        key: str | None = None,
        params: dict[str, str] | None = None,
        query: dict[str, str] | None = None,
        json: Any = None,
        raw: bytes | None = None,
        content_type: str | None = None,
        timeout: float = 120.0,
    ) -> Response:
        """``key``: None for the service's own key, "" for none. ``path`` is the document's
        template, filled from ``params``."""
        url = self.svc.url + path.format(**(params or {}))
        if query:
            url += "?" + urllib.parse.urlencode(query)
        headers: dict[str, str] = {}
        if key != "":
            headers["Authorization"] = f"Bearer {key or self.svc.api_key}"
        body = raw if raw is not None else (orjson.dumps(json) if json is not None else None)
        if body is not None or content_type:
            headers["Content-Type"] = content_type or "application/json"
        resp = http(method, url, body, headers, timeout=timeout)
        assert resp.status == expect, (method, url, resp.status, resp.body)
        media_type = resp.headers.get("Content-Type", "").split(";")[0].strip()
        assert_valid(self.doc, method, path, resp.status, resp.body, media_type)
        for name in declared_headers(self.doc, method, path, resp.status):
            assert name in resp.headers, (method, path, resp.status, f"no {name} header")
        self.seen.add((method, path, resp.status))
        return resp

    def missing(self, want_errors: bool = True) -> list[str]:
        """Operations whose success was not seen, or (``want_errors``) none of whose errors."""
        out = []
        for path, item in self.doc["paths"].items():
            for method, operation in item.items():
                statuses = {int(s) for s in operation["responses"]}
                seen = {s for m, p, s in self.seen if (m, p) == (method.upper(), path)}
                ok = {s for s in statuses if s < 300}
                if not ok & seen:
                    out.append(f"{method.upper()} {path}: no success")
                if want_errors and statuses - ok - {500} and not (seen - ok):
                    out.append(f"{method.upper()} {path}: no error")
        return out


def declared_headers(doc: dict[str, Any], method: str, path: str, status: int) -> list[str]:
    """The headers ``doc`` says an answer always has."""
    answer = doc["paths"][path][method.lower()]["responses"][str(status)]
    return [name for name, header in answer.get("headers", {}).items() if header.get("required")]
