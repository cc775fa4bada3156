"""The etcd JSON-gateway client against a real etcd."""

from __future__ import annotations

import pytest

from halfmq.broker.cluster.etcd import ClusterAddress, EtcdClient, EtcdUnavailable, absent
from tests.support.etcd import EtcdProcess


async def test_put_get_and_a_compare_and_put_that_only_the_first_caller_wins(etcd: EtcdProcess) -> None:
    client = EtcdClient(etcd.url)
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
