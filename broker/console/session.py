"""Who is at the console: a bearer token kept in an HttpOnly cookie, and a CSRF token for every POST.

A browser cannot be told to send ``Authorization: Bearer``, so the console's
login form takes an admin token once and keeps it in an HttpOnly,
SameSite=Strict cookie scoped to /console; each request replays it through the
broker's own guard (the same principals, policies, audit lines). Every action
POST also carries a CSRF token, an HMAC of the session under a per-process key,
in the ``X-CSRF-Token`` header only (htmx sends it from the page's
``hx-headers``; no form field is read): a page on another site can make a
browser POST but can neither read the token nor, without a CORS preflight the
broker never grants, attach a custom header. With auth off (the loopback
default) there is no login, and the CSRF check still stands; the Host allow-list
(``serving.allowed_hosts``) keeps a rebinding page from reading the token.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from typing import Any

from halfmq.broker.security.access import Access, ClusterAdmin
from halfmq.errors import Unauthenticated

COOKIE = "halfmq_console"
_KEY = secrets.token_bytes(32)  # per process: a restart logs nobody out, it only renews the CSRF tokens


def cookie_token(scope: Mapping[str, Any]) -> str | None:
    for name, value in scope["headers"]:
        if name == b"cookie":
            for part in value.decode("latin-1").split(";"):
                key, _, val = part.strip().partition("=")
                if key == COOKIE and val:
                    return val
    return None


def as_bearer_scope(scope: Mapping[str, Any], token: str | None) -> dict[str, Any]:
    """The request's scope as the guard wants it: the cookie's token as the Authorization header."""
    headers = [(k, v) for k, v in scope["headers"] if k != b"authorization"]
    if token:
        headers.append((b"authorization", f"Bearer {token}".encode("latin-1")))
    return {**scope, "headers": headers}


def admin(access: Access, scope: Mapping[str, Any], token: str | None) -> ClusterAdmin:
    """The console's principal: Unauthenticated / AccessDenied unless the token may ``admin`` the cluster.

    A token is ASCII (it travels in a header): typed into the login form as other text, it is refused as none, never
    a 500 from encoding it."""
    if token is not None and not token.isascii():
        raise Unauthenticated("this is not a token of this broker: its tokens are ASCII text")
    bearer = as_bearer_scope(scope, token)
    return access.cluster_admin(access.principal(bearer), bearer)


def csrf_token(token: str | None) -> str:
    return hmac.new(_KEY, (token or "-").encode(), hashlib.sha256).hexdigest()


def csrf_ok(token: str | None, presented: str | None) -> bool:
    return presented is not None and hmac.compare_digest(csrf_token(token), presented)
