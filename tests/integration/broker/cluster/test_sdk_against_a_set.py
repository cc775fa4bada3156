"""The SDK given every node's URL: it finds the leader and keeps sending across a kill -9 of it."""

from __future__ import annotations

import pytest

from halfmq.client import Producer
from tests.support.broker_set import BrokerSet
from tests.support.set_load import read_back

pytestmark = pytest.mark.slow


def test_a_producer_with_the_list_of_nodes_finds_the_leader_and_survives_its_kill(broker_set: BrokerSet) -> None:
    leader = broker_set.leader()
    followers_first = ",".join([u for n, u in zip(broker_set.nodes, broker_set.urls, strict=True) if n != leader]
                               + [broker_set.nodes[leader].url])
    with Producer(followers_first, retries=30, timeout=5) as producer:
        assert producer.send("orders", "one").status == "SEND_OK"
        broker_set.nodes[leader].kill9()
        assert producer.send("orders", "two").status == "SEND_OK"  # retried across the failover
    new = broker_set.leader(not_=leader)
    assert read_back(broker_set.nodes[new].url, "orders") == {"one": 1, "two": 1}
