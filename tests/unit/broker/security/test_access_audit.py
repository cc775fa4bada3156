"""The audit log names every admin action and every refusal, but not a set's node-to-node fetches, many a second
(the table's ``peer`` routes, which the front names in the scope)."""

from __future__ import annotations

import logging

import pytest

from halfmq.broker.api.router import Router
from halfmq.broker.api.routes import cluster as cluster_routes
from halfmq.broker.api.table import ROUTES
from halfmq.broker.security.access import Access
from halfmq.broker.security.auth_file import Authenticator, AuthFile, PolicyEntry, PrincipalEntry
from halfmq.broker.security.policy import Action, Kind, Policy, Principal, Resource, ResourcePattern
from halfmq.errors import AccessDenied

CLUSTER = Resource(Kind.CLUSTER, "broker")
TABLE = Router([*ROUTES, *cluster_routes.ROUTES])


def _scope(method: str, path: str) -> dict[str, object]:
    """The scope as the front hands it on: the path and the route it matched."""
    found = TABLE.resolve(method, path)
    assert isinstance(found, tuple)
    return {"path": path, "route": found[0]}


@pytest.fixture
def guard() -> Access:
    auth = AuthFile(principals=[PrincipalEntry(name="admin", policies=[PolicyEntry(actions=["admin"], resources=["*"])]),
                                PrincipalEntry(name="shop", policies=[PolicyEntry(actions=["publish"], resources=["topic:orders"])])])
    return Access(Authenticator(auth))


def test_an_admin_action_is_audited_at_info_and_a_peer_fetch_only_at_debug(guard: Access, caplog) -> None:
    admin = Principal("admin", (Policy(frozenset({Action.ADMIN}), (ResourcePattern(None, "*"),)),))
    caplog.set_level(logging.DEBUG, logger="halfmq.audit")
    guard.authorize(admin, Action.ADMIN, CLUSTER, _scope("GET", "/v1/transactions"))
    guard.authorize(admin, Action.ADMIN, CLUSTER, _scope("GET", "/v1/replication/snapshot"))
    levels = {r.getMessage().rsplit("path=", 1)[1]: r.levelno for r in caplog.records}
    assert levels == {"/v1/transactions": logging.INFO, "/v1/replication/snapshot": logging.DEBUG}


def test_a_refused_peer_fetch_is_audited_at_info(guard: Access, caplog) -> None:
    shop = Principal("shop", (Policy(frozenset({Action.PUBLISH}), (ResourcePattern(Kind.TOPIC, "orders"),)),))
    caplog.set_level(logging.DEBUG, logger="halfmq.audit")
    with pytest.raises(AccessDenied):
        guard.authorize(shop, Action.ADMIN, CLUSTER, _scope("GET", "/v1/replication/snapshot"))
    [record] = caplog.records
    assert record.levelno == logging.INFO and "result=deny" in record.getMessage()
