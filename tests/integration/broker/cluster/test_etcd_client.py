"""The etcd JSON-gateway client against a real etcd."""

from __future__ import annotations

import pytest

from halfmq.broker.cluster.etcd import ClusterAddress, EtcdClient, EtcdRefused, EtcdUnavailable, absent
from halfmq.broker.cluster.etcd_auth import EtcdAuthPlan, EtcdRootRefused, secure
from tests.support.etcd import EtcdProcess


async def test_put_get_and_a_compare_and_put_that_only_the_first_caller_wins(etcd: EtcdProcess) -> None:
    client = EtcdClient(etcd.url, credentials=etcd.root)
    try:
        revision = await client.put("/t/a", "one")
        kv = await client.get("/t/a")
        assert kv is not None and kv.value == b"one" and kv.mod_revision == revision
        lease = await client.grant(5)
        first = await client.put_if("/t/leader", "n1", lease, [absent("/t/leader")])
        second = await client.put_if("/t/leader", "n2", lease, [absent("/t/leader")])
        assert first is not None and first > revision and second is None
        assert await client.keepalive(lease) == 5
        await client.revoke(lease)
        assert await client.get("/t/leader") is None  # the key went with its lease
        assert [kv.key for kv in await client.get_prefix("/t/")] == ["/t/a"]
    finally:
        await client.aclose()


async def test_an_etcd_that_is_down_raises_etcd_unavailable(etcd: EtcdProcess) -> None:
    etcd.stop(grace=5)
    client = EtcdClient(etcd.url, timeout=0.5)
    try:
        with pytest.raises(EtcdUnavailable):
            await client.get("/t/a")
    finally:
        await client.aclose()


def test_a_cluster_address_names_the_gateway_and_the_prefix() -> None:
    address = ClusterAddress.parse("etcd://10.0.0.5:2379/orders")
    assert (address.endpoint, address.key("leader")) == ("http://10.0.0.5:2379", "/orders/leader")
    with pytest.raises(ValueError):
        ClusterAddress.parse("http://10.0.0.5:2379/orders")


async def test_with_auth_on_a_client_without_credentials_is_refused_and_the_sets_user_writes_only_its_prefix(etcd: EtcdProcess) -> None:
    anonymous = EtcdClient(etcd.url)
    member = EtcdClient(etcd.url, credentials=etcd.credentials)
    try:
        with pytest.raises(EtcdRefused):
            await anonymous.put("/set/leader", '{"node_id":"evil","url":"http://127.0.0.1:23999"}')
        assert await member.get("/set/leader") is None
        await member.put("/set/nodes/n1", "x")
        with pytest.raises(EtcdRefused):
            await member.put("/elsewhere", "x")
    finally:
        await anonymous.aclose()
        await member.aclose()


async def test_a_client_logs_in_again_when_a_restarted_etcd_no_longer_knows_its_token(etcd: EtcdProcess) -> None:
    client = EtcdClient(etcd.url, credentials=etcd.credentials)
    try:
        await client.put("/set/a", "one")
        token = client._token
        etcd.stop(grace=5)
        etcd.start(timeout=30)  # secures again: nothing to change, auth stays on
        kv = await client.get("/set/a")
        assert kv is not None and kv.value == b"one" and client._token not in (None, token)
    finally:
        await client.aclose()


async def test_securing_an_etcd_again_changes_nothing(etcd: EtcdProcess) -> None:
    assert etcd.root is not None and etcd.credentials is not None
    assert await secure(etcd.url, EtcdAuthPlan(etcd.root.password, etcd.credentials, "/set/")) is False
    with pytest.raises(EtcdRootRefused):
        await secure(etcd.url, EtcdAuthPlan("not-the-root-password", etcd.credentials, "/set/"))
