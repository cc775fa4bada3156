"""The one place a request meets the policies: bearer token -> principal -> ``decide``; and the grants only it makes.

Hot routes and FastAPI routes both hand over their ASGI scope. With auth off
(no auth file: the loopback-only default) every request acts as an anonymous
superuser. Every decision is counted by result; admin actions and every
refusal get an audit line (principal, action, resource, result).

A grant (``Publisher``, ``Subscriber``, ``ClusterAdmin``, ``TransactionalIdActor``) is the proof that a check ran:
only ``Access`` makes one, and a use case that acts for a principal takes one. So a front cannot forget the check (it
has nothing to pass without it), and it can make the check before it reads a request's body (who may not send to a
topic learns nothing of what the body should look like).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from halfmq.broker.security.auth_file import Authenticator
from halfmq.broker.security.policy import (
    CLUSTER,
    Action,
    Decision,
    Kind,
    Policy,
    Principal,
    Resource,
    ResourcePattern,
    decide,
    may_publish_somewhere,
)
from halfmq.errors import AccessDenied, Unauthenticated

audit = logging.getLogger("halfmq.audit")

ANONYMOUS = Principal("anonymous", (Policy(frozenset({Action.ADMIN}), (ResourcePattern(None, "*"),)),))
_BEARER = "bearer "
_MAX_REMEMBERED = 65_536
_SEAL = object()  # what only this module passes: a grant made anywhere else is a TypeError
Scope = Mapping[str, Any]


@dataclass(frozen=True, kw_only=True)
class Grant:
    """What a principal was allowed, made only by ``Access`` (see the module's docstring). ``scope`` is the request's,
    named by the audit lines of the checks made later with it (a half's companions, a transaction's topics)."""

    principal: Principal
    scope: Scope = field(repr=False, compare=False)
    seal: object = field(repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.seal is not _SEAL:
            raise TypeError(f"only halfmq.broker.security.access.Access makes a {type(self).__name__}")


@dataclass(frozen=True, kw_only=True)
class Publisher(Grant):
    """May publish to ``topic``."""

    topic: str


@dataclass(frozen=True, kw_only=True)
class Subscriber(Grant):
    """May consume ``topic`` as ``group``: receive, ack, nack, change a delivery's invisible time, dead-letter it."""

    group: str
    topic: str


@dataclass(frozen=True, kw_only=True)
class ClusterAdmin(Grant):
    """May administer the whole broker: listings, operators' actions, the console."""


@dataclass(frozen=True, kw_only=True)
class GroupAdmin(Grant):
    """May administer ``group``: its DLQ, and the transactions of a producer group of that name."""

    group: str


@dataclass(frozen=True, kw_only=True)
class TransactionalIdActor(Grant):
    """May take the steps of ``transactional_id``'s transactions (publish on it)."""

    transactional_id: str


def transactional_id(tid: str) -> Resource:
    return Resource(Kind.TRANSACTIONAL_ID, tid)


class Access:
    def __init__(self, authenticator: Authenticator | None, count: Callable[[str], None] = lambda result: None) -> None:
        self._auth = authenticator
        self._count = count
        # decide() is pure, so its answers are kept per (principal, action, resource): ~6 us less per hot request.
        self._decisions: dict[tuple[int, Action, Resource], Decision] = {}

    def use(self, authenticator: Authenticator) -> None:
        """Swap in a re-read auth file (new and revoked tokens take effect at once)."""
        self._auth = authenticator
        self._decisions = {}

    @property
    def enabled(self) -> bool:
        return self._auth is not None

    def principal(self, scope: Mapping[str, Any]) -> Principal:
        """Who is asking: Unauthenticated (401) without a known bearer token."""
        if self._auth is None:
            return ANONYMOUS
        token = _bearer(scope)
        found = self._auth.principal_for(token) if token else None
        return self._known(found, scope.get("path"), "send 'Authorization: Bearer <token>' with a token the broker knows")

    def rocketmq_principal(self, access_key: str, signed: str, signature: str, path: str) -> Principal:
        """Who signed a RocketMQ 5 request (the gRPC front): Unauthenticated unless the signature is a principal's."""
        if self._auth is None:
            return ANONYMOUS
        found = self._auth.rocketmq_principal(access_key, signed, signature) if access_key and signature else None
        return self._known(found, path, "sign RocketMQ requests with a principal's name as access key and its RocketMQ secret")

    def _known(self, found: Principal | None, path: str | None, how: str) -> Principal:
        """The principal a front's credentials named, or the one refusal every front gives without one: counted,
        audited with the request's path, and ``Unauthenticated`` saying ``how`` to authenticate on that front."""
        if found is None:
            self._count("unauthenticated")
            audit.warning("principal=- action=- resource=- result=unauthenticated path=%s", path)
            raise Unauthenticated(how)
        return found

    def authorize(self, principal: Principal, action: Action, resource: Resource, scope: Mapping[str, Any]) -> None:
        """AccessDenied (403) unless the principal's policies allow ``action`` on ``resource``."""
        if self._auth is None:
            return
        key = (id(principal), action, resource)  # principals live as long as their authenticator
        decision = self._decisions.get(key)
        if decision is None:
            decision = decide(principal, action, resource)
            if len(self._decisions) >= _MAX_REMEMBERED:
                self._decisions.clear()
            self._decisions[key] = decision
        result = "allow" if decision.allowed else "deny"
        self._count(result)
        if not decision.allowed or decision.action is Action.ADMIN:
            path = scope.get("path")
            # a set's nodes fetch from their leader many times a second: their allowed calls (the table's ``peer``
            # routes, named in the scope by the front) are DEBUG, refusals stay INFO
            level = logging.DEBUG if decision.allowed and getattr(scope.get("route"), "peer", False) else logging.INFO
            audit.log(level, "principal=%s action=%s resource=%s result=%s path=%s",
                      principal.name, decision.action.value, resource, result, path)
        if not decision.allowed:
            raise AccessDenied(f"principal {principal.name!r} may not {decision.action.value} {resource}",
                               action=decision.action.value, resource=str(resource))

    def require_publisher(self, principal: Principal, scope: Mapping[str, Any]) -> Principal:
        """AccessDenied (403) unless the principal may publish to something (an idempotent producer id's guard)."""
        if self._auth is not None and not may_publish_somewhere(principal):
            self._count("deny")
            audit.info("principal=%s action=publish resource=* result=deny path=%s", principal.name, scope.get("path"))
            raise AccessDenied(f"principal {principal.name!r} may not publish anywhere", action="publish", resource="*")
        return principal

    def require(self, scope: Mapping[str, Any], action: Action, *resources: Resource) -> Principal:
        principal = self.principal(scope)
        for resource in resources:
            self.authorize(principal, action, resource, scope)
        return principal

    # --- grants --------------------------------------------------------------------------------------------
    def publisher(self, who: Principal, scope: Scope, topic: str) -> Publisher:
        self.authorize(who, Action.PUBLISH, Resource.topic(topic), scope)
        return Publisher(principal=who, scope=scope, seal=_SEAL, topic=topic)

    def subscriber(self, who: Principal, scope: Scope, group: str, topic: str) -> Subscriber:
        self.authorize(who, Action.SUBSCRIBE, Resource.group(group), scope)
        self.authorize(who, Action.SUBSCRIBE, Resource.topic(topic), scope)
        return Subscriber(principal=who, scope=scope, seal=_SEAL, group=group, topic=topic)

    def cluster_admin(self, who: Principal, scope: Scope) -> ClusterAdmin:
        self.authorize(who, Action.ADMIN, CLUSTER, scope)
        return ClusterAdmin(principal=who, scope=scope, seal=_SEAL)

    def group_admin(self, who: Principal, scope: Scope, group: str) -> GroupAdmin:
        self.authorize(who, Action.ADMIN, Resource.group(group), scope)
        return GroupAdmin(principal=who, scope=scope, seal=_SEAL, group=group)

    def transactional_id_actor(self, who: Principal, scope: Scope, tid: str) -> TransactionalIdActor:
        self.authorize(who, Action.PUBLISH, transactional_id(tid), scope)
        return TransactionalIdActor(principal=who, scope=scope, seal=_SEAL, transactional_id=tid)

    def allows(self, principal: Principal, action: Action, resource: Resource) -> bool:
        """For filtering listings: no count, no audit line."""
        return self._auth is None or decide(principal, action, resource).allowed

    def check_secret(self, producer_group: str) -> bytes | None:
        return None if self._auth is None else self._auth.check_secret(producer_group)


def _bearer(scope: Mapping[str, Any]) -> str | None:
    for name, value in scope["headers"]:
        if name == b"authorization":
            text = value.decode("latin-1")
            if text[:7].lower() == _BEARER:
                return text[7:].strip() or None
            return None
    return None
