"""The etcd JSON-gateway client against a real etcd."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from halfmq.broker.cluster.etcd import ClusterAddress, EtcdClient, EtcdRefused, EtcdUnavailable, WatchEvent, WatchKind, absent
from halfmq.broker.cluster.etcd_auth import EtcdAuthPlan, EtcdRootRefused, secure
from tests.support.etcd import EtcdProcess


async def test_put_get_and_a_compare_and_put_that_only_the_first_caller_wins(etcd: EtcdProcess) -> None:
    client = EtcdClient(etcd.url, credentials=etcd.root)
    try:
        revision = await client.put("/t/a", "one")
        kv = await client.get("/t/a")
        assert kv is not None and kv.value == b"one" and kv.mod_revision == revision
        lease = await client.grant(5)
        first = await client.put_if("/t/leader", "n1", lease.id, [absent("/t/leader")])
        second = await client.put_if("/t/leader", "n2", lease.id, [absent("/t/leader")])
        assert first is not None and first > revision and second is None
        assert lease.ttl == 5 and await client.keepalive(lease.id) == 5
        await client.revoke(lease.id)
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


async def test_a_lease_asked_for_1_s_on_a_default_etcd_is_granted_for_2_s_and_says_so(etcd: EtcdProcess) -> None:
    client = EtcdClient(etcd.url, credentials=etcd.credentials)
    try:
        lease = await client.grant(1)
        assert lease.ttl == 2  # etcd's minimum TTL: 1.5 election timeouts of 1,000 ms, rounded up
        assert await client.keepalive(lease.id) == 2
    finally:
        await client.aclose()


async def _next(events: AsyncIterator[WatchEvent]) -> WatchEvent:
    async with asyncio.timeout(30):
        return await anext(events)


async def test_a_watch_sees_a_put_and_the_deletion_when_the_keys_lease_is_revoked(etcd: EtcdProcess) -> None:
    client = EtcdClient(etcd.url, credentials=etcd.credentials)
    events = client.watch("/set/leader", start_revision=await client.put("/set/other", "x") + 1)
    try:
        lease = await client.grant(2)
        put = await client.put("/set/leader", "n1", lease.id)
        first = await _next(events)
        assert (first.kind, first.revision, first.kv and first.kv.value) == (WatchKind.PUT, put, b"n1")
        await client.revoke(lease.id)
        second = await _next(events)
        assert second.kind is WatchKind.DELETE and second.revision > put
    finally:
        await events.aclose()
        await client.aclose()


async def test_a_watch_broken_by_an_etcd_restart_resumes_from_the_next_revision_and_misses_no_event(etcd: EtcdProcess) -> None:
    client = EtcdClient(etcd.url, credentials=etcd.credentials)
    writer = EtcdClient(etcd.url, credentials=etcd.credentials)
    events = client.watch("/set/leader", start_revision=await writer.put("/set/leader", "1"))
    try:
        assert (await _next(events)).kv.value == b"1"  # type: ignore[union-attr]
        etcd.stop(grace=5)
        etcd.start(timeout=30)  # a new process: the watch's stream broke and its token is forgotten
        await writer.put("/set/leader", "2")
        await writer.put("/set/leader", "3")
        await writer.delete("/set/leader")
        seen = [await _next(events) for _ in range(3)]
        assert [(e.kind, e.kv.value if e.kv else None) for e in seen] == [
            (WatchKind.PUT, b"2"), (WatchKind.PUT, b"3"), (WatchKind.DELETE, b"")]
        assert [e.revision for e in seen] == sorted({e.revision for e in seen})  # in order, none twice
    finally:
        await events.aclose()
        await client.aclose()
        await writer.aclose()


async def test_a_watch_from_a_compacted_revision_says_so_then_goes_on(etcd: EtcdProcess) -> None:
    client = EtcdClient(etcd.url, credentials=etcd.root)
    try:
        first = await client.put("/set/leader", "1")
        last = await client.put("/set/leader", "2")
        await client.call("/v3/kv/compaction", {"revision": str(last)})
        events = client.watch("/set/leader", start_revision=first)
        compacted = await _next(events)
        assert compacted.kind is WatchKind.COMPACTED and compacted.revision == last
        again = await _next(events)
        assert again.kind is WatchKind.PUT and again.revision == last  # the oldest revision etcd still has
        await events.aclose()
    finally:
        await client.aclose()
