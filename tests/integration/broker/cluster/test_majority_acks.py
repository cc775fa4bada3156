"""ack=quorum: a majority acknowledges, and only a node that holds every acknowledged write is elected.

Follower B is stopped (SIGSTOP): the leader and the other follower A are a
majority, so quorum sends still answer SEND_OK. Then the leader is killed -9 and
B resumes, either at once (B is still in the in-sync set and may stand: it does
not, because A answers a later position) or once B has left the set (A stands
with B's answer counted towards the majority of the cluster). Either way the
node elected holds every acknowledged message, and B then copies them all.
"""

from __future__ import annotations

import os
import signal

import httpx
import pytest

from tests.support.broker_set import BrokerSet
from tests.support.set_load import read_back
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow


def _send(url: str, body: str) -> str:
    answer = httpx.post(f"{url}/v1/topics/orders/messages", json={"messages": [{"body": body}]}, timeout=30)
    assert answer.status_code == 200, answer.text
    return str(answer.json()["results"][0]["status"])


@pytest.mark.parametrize("b_leaves_the_set", [False, True], ids=["b-in-sync", "b-out-of-sync"])
def test_with_a_follower_stopped_quorum_sends_are_acknowledged_and_the_node_elected_after_the_leader_dies_holds_them_all(
        broker_set: BrokerSet, b_leaves_the_set: bool) -> None:
    leader = broker_set.leader()
    url = broker_set.nodes[leader].url
    assert _send(url, "before") == "SEND_OK"
    broker_set.caught_up()
    a, b = (n for n in broker_set.nodes if n != leader)
    os.kill(broker_set.nodes[b].pid, signal.SIGSTOP)  # type: ignore[arg-type]
    acknowledged = ["before"]
    for i in range(20):  # B is still in the in-sync set: the leader and A are a majority of it
        assert _send(url, f"b-in-sync-{i}") == "SEND_OK"
        acknowledged.append(f"b-in-sync-{i}")
    if b_leaves_the_set:
        wait_for(lambda: (v := broker_set.view(leader)) and b not in v["in_sync"], timeout=60)
        for i in range(20):  # the leader and A still hold every acknowledged write
            assert _send(url, f"b-out-{i}") == "SEND_OK"
            acknowledged.append(f"b-out-{i}")
    broker_set.nodes[leader].kill9()
    os.kill(broker_set.nodes[b].pid, signal.SIGCONT)  # type: ignore[arg-type]
    elected = broker_set.leader(timeout=90, not_=leader)
    assert elected == a  # B lacks the acknowledged messages and does not stand
    stored = read_back(broker_set.nodes[elected].url, "orders")
    assert [body for body in acknowledged if stored[body] != 1] == []
    assert _send(broker_set.nodes[elected].url, "after") == "SEND_OK"
    broker_set.caught_up()
    assert broker_set.log_bytes(b) == broker_set.log_bytes(a)
