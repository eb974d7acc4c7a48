"""URL normalization, so the same result is the same string on every profile's page.

``normalize_url(href, base)``:

- resolves ``href`` against ``base`` and keeps only http(s) links ("" otherwise, and
  for an in-page ``#`` link);
- unwraps the engines' click redirects: Google ``/url?q=`` (or ``url=``) and
  ``/aclk?...&adurl=``, Bing ``/ck/a?...&u=a1<base64url>`` and ``/aclk?...&u=``;
- lowercases scheme and host, drops user info, default ports and the fragment, and
  turns an empty path into ``/``;
- drops tracking parameters everywhere (``utm_*``, ``gclid``, ``fbclid``, ...) and the
  engines' per-request parameters (``ved``, ``ei``, ``sa``, ``usg``, ``cvid``,
  ``FORM``, ...) on the engines' own hosts only: ``form=`` on a shop's page may mean
  something. Kept parameters keep their order and their original encoding.
"""

from __future__ import annotations

import base64
import binascii
import re
from urllib.parse import parse_qsl, unquote, urljoin, urlsplit, urlunsplit

TRACKING_PARAMS = frozenset(
    {
        "gclid",
        "gclsrc",
        "dclid",
        "gbraid",
        "wbraid",
        "fbclid",
        "msclkid",
        "yclid",
        "igshid",
        "mc_cid",
        "mc_eid",
        "_hsenc",
        "_hsmkt",
        "srsltid",
        "gad_source",
        "wprov",
    }
)
"""Dropped on every host (plus every ``utm_*``)."""
ENGINE_PARAMS = frozenset(
    {
        "ved",
        "ei",
        "sa",
        "usg",
        "cvid",
        "form",
        "sxsrf",
        "oq",
        "aqs",
        "gs_lcrp",
        "sourceid",
        "ie",
        "uact",
        "sca_esv",
        "sca_upv",
        "rlz",
        "biw",
        "bih",
        "dpr",
        "iflsig",
        "pq",
        "sc",
        "qs",
        "sk",
        "sp",
        "ghc",
        "lq",
        "ntb",
    }
)
"""Dropped on the engines' own hosts (compared case-insensitively: Bing sends ``FORM``)."""
ENGINE_HOST = re.compile(r"(^|\.)(google\.[a-z]{2,3}(\.[a-z]{2})?|googleadservices\.com|bing\.com)$")
DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_UNWRAP = 4


def is_engine_host(host: str) -> bool:
    return bool(ENGINE_HOST.search(host))


def _b64(text: str) -> str:
    """Bing's ``u=a1<base64url>`` payload, or "" when it does not decode to text."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        return raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return ""


def _redirect_target(host: str, path: str, query: str) -> str | None:
    """Where an engine's click redirect points, or None when it is not one."""
    if not is_engine_host(host):
        return None
    params = dict(parse_qsl(query, keep_blank_values=True))
    if "google" in host:
        if path in ("/url", "/interstitial"):
            return params.get("q") or params.get("url") or ""
        if path.endswith("/aclk"):
            return params.get("adurl") or ""
        return None
    if path in ("/ck/a", "/aclk"):
        u = params.get("u", "")
        if u.startswith("a1"):
            return _b64(u[2:])
        return u if u.startswith(("http://", "https://")) else _b64(u)
    return None


def _keep(segment: str, engine: bool) -> bool:
    key = unquote(segment.split("=", 1)[0]).lower()
    if key.startswith("utm_") or key in TRACKING_PARAMS:
        return False
    return not (engine and key in ENGINE_PARAMS)


def normalize_url(href: str, base: str = "", _depth: int = 0) -> str:
    """The canonical form of a result link, or "" when it is not a web link (never raises)."""
    href = href.strip()
    if not href or href.startswith("#") or _depth > MAX_UNWRAP:  # "#...": this page, not a link out
        return ""
    try:
        parts = urlsplit(urljoin(base, href) if base else href)
        host = (parts.hostname or "").rstrip(".")
        port = parts.port
    except ValueError:  # a malformed IPv6 host or port
        return ""
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not host:
        return ""
    target = _redirect_target(host, parts.path, parts.query)
    if target is not None:
        return normalize_url(target, "", _depth + 1) if target else ""
    engine = is_engine_host(host)
    query = "&".join(s for s in parts.query.split("&") if s and _keep(s, engine))
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != DEFAULT_PORTS[scheme]:
        netloc += f":{port}"
    return urlunsplit((scheme, netloc, parts.path or "/", query, ""))
