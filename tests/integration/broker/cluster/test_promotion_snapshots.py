"""A promotion replays the state records since a snapshot, not the set's history (broker/cluster/promotion_snapshots.py).

Only a leader writes state snapshots; each follower takes the leader's newer one about once a snapshot interval
(0.2 s here). Three real processes on etcd: acks, one request each, write state records; the followers come to hold
a snapshot counting them; the leader is killed; the new leader's services are built from that snapshot, and what the
acks settled still holds.
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from halfmq.broker.cluster.promotion_snapshots import own_entries
from tests.support.broker_set import BrokerSet
from tests.support.waiting import wait_for

from ..http_helpers import receive, send, settle

pytestmark = pytest.mark.slow

SET_ENV = {"HALFMQ_BROKER_STATE_SNAPSHOT_INTERVAL": "0.2"}
ACKS = 120
REPLAYED = re.compile(r"(\d+) records read after the state snapshot's entry (\d+)")


def test_a_promoted_follower_replays_from_the_leaders_snapshot_not_from_the_first_entry(broker_set: BrokerSet) -> None:
    leader = broker_set.leader()
    with httpx.Client(base_url=broker_set.nodes[leader].url, timeout=15) as client:
        client.post("/v1/topics", json={"name": "PAID", "queues": 2}).raise_for_status()
        send(client, "PAID", *(f"m{i}" for i in range(ACKS)))
        acked: set[str] = set()
        while len(acked) < ACKS:
            for message in receive(client, "g", "PAID", n=32, wait=1):
                assert settle(client, "ack", "g", "PAID", [message["receipt_handle"]]) == ["OK"]  # a state record each
                acked.add(message["body"])
    leaders_dir: Path = broker_set.nodes[leader].data_dir
    wait_for(lambda: (own_entries(leaders_dir) or 0) >= ACKS, timeout=30)
    followers = [n for n in broker_set.nodes if n != leader]
    wait_for(lambda: all(own_entries(broker_set.nodes[n].data_dir) == own_entries(leaders_dir) for n in followers), timeout=30)

    before = {n: len(REPLAYED.findall(broker_set.nodes[n].tail(400))) for n in followers}  # their starts' own replays

    broker_set.nodes[leader].kill9()
    promoted = broker_set.leader(timeout=30, not_=leader)
    replays = wait_for(lambda: (found := REPLAYED.findall(broker_set.nodes[promoted].tail(400)))[before[promoted]:] and found,
                       timeout=30)
    records_read, entry = (int(x) for x in replays[-1])
    assert entry >= ACKS  # its services started from a snapshot counting the acks...
    assert records_read < 10  # ...and read only what came after it (without one: every entry, > ACKS)
    with httpx.Client(base_url=broker_set.nodes[promoted].url, timeout=15) as client:
        assert receive(client, "g", "PAID", n=32, wait=2) == []  # and every ack still holds
