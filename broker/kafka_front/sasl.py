"""SASL/PLAIN on the Kafka front: a connection says who it is once, as a halfmq principal and its bearer token.

Kafka's clients send SaslHandshake (the mechanism) then SaslAuthenticate (``authzid NUL user NUL password``); the
password is the principal's token and the user its name, checked by the same Access the HTTP front asks (the token
names the principal; a user that is not that principal's name is refused). The principal is the connection's from then
on (a context variable of the connection's task: every request of the connection is answered in that task). With auth
on, a connection that asks for anything else first is closed, as Kafka's broker does.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from kafka import errors as kafka_errors
from kafka.protocol.api_key import ApiKey
from kafka.protocol.sasl import SaslAuthenticateResponse, SaslHandshakeResponse

from halfmq.broker.usecases.caller import Principal
from halfmq.errors import Unauthenticated

from .request_header import RequestHeader, audit_scope

MECHANISMS = ["PLAIN"]
BEFORE_AUTH = frozenset({int(ApiKey.ApiVersions), int(ApiKey.SaslHandshake), int(ApiKey.SaslAuthenticate)})
"""What a connection may ask before it authenticated (with auth on)."""

connection_principal: ContextVar[Principal | None] = ContextVar("kafka_connection_principal", default=None)
connection_token: ContextVar[str | None] = ContextVar("kafka_connection_token", default=None)
"""The connection's bearer token (its PLAIN password), in memory for the connection's life and never logged: a set's
follower asks the leader for a producer id as the connection's principal with it (leader_producer_ids.py)."""


class SaslFailed(Exception):
    pass


class NotAuthenticated(Exception):
    """A request before SASL on a broker with auth on: its connection is closed (nothing is answered)."""


def plain_credentials(auth_bytes: bytes) -> tuple[str, str]:
    """(user, password) of a PLAIN message (RFC 4616); SaslFailed for any other shape."""
    parts = bytes(auth_bytes).split(b"\x00")
    if len(parts) != 3 or not parts[1] or not parts[2]:
        raise SaslFailed("PLAIN credentials are 'authzid NUL user NUL password'")
    try:
        return parts[1].decode("utf-8"), parts[2].decode("utf-8")
    except UnicodeDecodeError:
        raise SaslFailed("PLAIN credentials must be UTF-8") from None


class SaslHandlers:
    """``current``: the runtime of the moment (its ``access``)."""

    def __init__(self, current: Callable[[], Any]) -> None:
        self.current = current

    async def handshake(self, request: Any, header: RequestHeader) -> Any:
        known = request.mechanism in MECHANISMS
        return SaslHandshakeResponse(error_code=0 if known else int(kafka_errors.UnsupportedSaslMechanismError.errno),
                                     mechanisms=MECHANISMS)

    async def authenticate(self, request: Any, header: RequestHeader) -> Any:
        try:
            user, token = plain_credentials(request.auth_bytes)
            scope = audit_scope(header, "SaslAuthenticate") | {
                "headers": [(b"authorization", f"Bearer {token}".encode("latin-1", "replace"))]}
            principal = self.current().access.principal(scope)
            if principal.name != user:
                raise SaslFailed(f"the token is not {user!r}'s")
        except (SaslFailed, Unauthenticated) as exc:
            return SaslAuthenticateResponse(error_code=int(kafka_errors.SaslAuthenticationFailedError.errno),
                                            error_message=f"authentication failed: {exc}", auth_bytes=b"", session_lifetime_ms=0)
        connection_principal.set(principal)
        connection_token.set(token)
        return SaslAuthenticateResponse(error_code=0, error_message=None, auth_bytes=b"", session_lifetime_ms=0)


def must_authenticate_first(api_key: int, auth_on: bool) -> bool:
    """Whether a request must close its connection: auth is on, it is not authenticated yet and asks for more."""
    return auth_on and connection_principal.get() is None and api_key not in BEFORE_AUTH
