"""Policies in the spirit of RocketMQ ACL 2.0 and Kafka ACLs, and the pure decision over them.

A policy grants actions on resource patterns (``topic:ORDER_*``,
``group:credit_group``, ``transactional-id:tx-1``, ``cluster:*``, ``*``).
Nothing is allowed unless a policy says so. ``admin`` implies every action
on its resources; ``publish`` and ``subscribe`` imply ``describe`` (reading
metadata), which is never granted on its own. System topics (half, op, check
max, retry and DLQ) need ``admin`` whatever the asked action.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from halfmq.broker.store.topics import is_system_topic


class Action(str, Enum):
    PUBLISH = "publish"
    SUBSCRIBE = "subscribe"
    ADMIN = "admin"
    DESCRIBE = "describe"  # implied only, never granted


GRANTABLE = frozenset({Action.PUBLISH, Action.SUBSCRIBE, Action.ADMIN})
_IMPLIES = {
    Action.ADMIN: frozenset(Action),
    Action.PUBLISH: frozenset({Action.PUBLISH, Action.DESCRIBE}),
    Action.SUBSCRIBE: frozenset({Action.SUBSCRIBE, Action.DESCRIBE}),
}


class Kind(str, Enum):
    TOPIC = "topic"
    GROUP = "group"  # producer and consumer groups alike, as RocketMQ's Group resource
    TRANSACTIONAL_ID = "transactional-id"
    CLUSTER = "cluster"  # broker-wide operations: listings, producers, metrics


@dataclass(frozen=True, slots=True)
class Resource:
    kind: Kind
    name: str

    def __str__(self) -> str:
        return f"{self.kind.value}:{self.name}"

    @classmethod
    def topic(cls, name: str) -> Resource:
        return cls(Kind.TOPIC, name)

    @classmethod
    def group(cls, name: str) -> Resource:
        return cls(Kind.GROUP, name)


CLUSTER = Resource(Kind.CLUSTER, "broker")


@dataclass(frozen=True, slots=True)
class ResourcePattern:
    """``kind:name`` where kind may be ``*`` and name is literal, a ``prefix*`` or ``*``."""

    kind: Kind | None  # None: any kind
    name: str

    @classmethod
    def parse(cls, text: str) -> ResourcePattern:
        if text == "*":
            return cls(None, "*")
        kind, sep, name = text.partition(":")
        if not sep or not name:
            raise ValueError(f"resource pattern {text!r} is not kind:name (kinds: {', '.join(k.value for k in Kind)} or *)")
        if "*" in name[:-1]:
            raise ValueError(f"resource pattern {text!r}: '*' may only end the name")
        try:
            return cls(None if kind == "*" else Kind(kind), name)
        except ValueError:
            raise ValueError(f"resource pattern {text!r}: unknown kind {kind!r}") from None

    def matches(self, resource: Resource) -> bool:
        if self.kind is not None and self.kind is not resource.kind:
            return False
        if self.name.endswith("*"):
            return resource.name.startswith(self.name[:-1])
        return resource.name == self.name

    def __str__(self) -> str:
        return f"{'*' if self.kind is None else self.kind.value}:{self.name}"


@dataclass(frozen=True, slots=True)
class Policy:
    actions: frozenset[Action]
    resources: tuple[ResourcePattern, ...]

    @classmethod
    def parse(cls, actions: list[str], resources: list[str]) -> Policy:
        parsed = frozenset(Action(a) for a in actions)
        if not parsed or not parsed <= GRANTABLE:
            raise ValueError(f"policy actions must be some of {sorted(a.value for a in GRANTABLE)}, not {actions}")
        if not resources:
            raise ValueError("a policy names at least one resource pattern")
        return cls(parsed, tuple(ResourcePattern.parse(r) for r in resources))

    def allows(self, action: Action, resource: Resource) -> bool:
        return any(action in _IMPLIES[a] for a in self.actions) and any(p.matches(resource) for p in self.resources)


@dataclass(frozen=True, slots=True)
class Principal:
    name: str
    policies: tuple[Policy, ...] = ()


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    action: Action  # the action actually required (system topics escalate to admin)
    resource: Resource


def required_action(action: Action, resource: Resource) -> Action:
    if resource.kind is Kind.TOPIC and is_system_topic(resource.name):
        return Action.ADMIN
    return action


def decide(principal: Principal, action: Action, resource: Resource) -> Decision:
    """Allow iff one of the principal's policies grants the (possibly escalated) action; default deny."""
    needed = required_action(action, resource)
    return Decision(any(p.allows(needed, resource) for p in principal.policies), needed, resource)


def may_publish_somewhere(principal: Principal) -> bool:
    """Whether any policy lets the principal publish (to something): enough to get an idempotent producer id."""
    return any(Action.PUBLISH in _IMPLIES[a] for p in principal.policies for a in p.actions)
