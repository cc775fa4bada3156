"""Issue 15's idempotent producer against a broker set: sends retried across a kill -9 of the leader are stored once.

Its producer sequences live in the commit log (HALFMQ_TXN_STATE), so the new leader has them byte for byte.
"""

from __future__ import annotations

import threading
import time

import pytest

from halfmq.client import Producer
from tests.support.broker_set import BrokerSet
from tests.support.set_load import read_back

pytestmark = pytest.mark.slow


def test_numbered_sends_retried_across_a_leader_kill_are_stored_exactly_once(broker_set: BrokerSet) -> None:
    leader = broker_set.leader()
    statuses: list[str] = []
    with Producer(",".join(broker_set.urls), idempotent_id="copier-1", retries=40, timeout=5) as producer:
        killer = threading.Timer(1.0, broker_set.nodes[leader].kill9)
        killer.start()
        deadline = time.monotonic() + 30
        i = 0
        while time.monotonic() < deadline and (i < 300 or killer.is_alive()):
            statuses.append(producer.send("orders", f"m{i}").status)
            i += 1
        killer.join()
    assert set(statuses) == {"SEND_OK"} and not broker_set.nodes[leader].alive
    stored = read_back(broker_set.nodes[broker_set.leader(not_=leader)].url, "orders")
    duplicated = {body: n for body, n in stored.items() if n > 1}
    print(f"\nidempotent sends across a leader kill: {i} sent, {len(stored)} stored, duplicated {len(duplicated)}")
    assert set(stored) == {f"m{k}" for k in range(i)} and not duplicated
