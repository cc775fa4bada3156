"""Partition: SIGSTOP the leader until another is elected, then SIGCONT it.

To give it a divergent tail, both followers are paused first and the leader takes
one write it cannot replicate; then the leader is paused and the followers go on.
Once resumed, the old leader acknowledges nothing (its lease fence has passed),
steps down, cuts the tail at the point its term ends in the new leader's log and
follows: its log ends up byte for byte the new leader's.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import httpx
import pytest

from tests.support.broker_set import BrokerSet
from tests.support.set_load import read_back
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow


def _send(url: str, body: str, timeout: float = 30) -> httpx.Response:
    return httpx.post(f"{url}/v1/topics/orders/messages", json={"messages": [{"body": body}]}, timeout=timeout)


def test_a_paused_leader_acknowledges_nothing_after_losing_leadership_and_rejoins_with_its_tail_cut(broker_set: BrokerSet) -> None:
    old = broker_set.leader()
    old_url = broker_set.nodes[old].url
    assert _send(old_url, "before").json()["results"][0]["status"] == "SEND_OK"
    broker_set.caught_up()
    followers = [n for n in broker_set.nodes if n != old]
    for n in followers:
        os.kill(broker_set.nodes[n].pid, signal.SIGSTOP)  # type: ignore[arg-type]
    time.sleep(1.5)  # their pending fetches are answered (empty) before the next write
    answers: list[httpx.Response | Exception] = []

    def unreplicated() -> None:
        try:
            answers.append(_send(old_url, "divergent"))
        except httpx.HTTPError as exc:
            answers.append(exc)

    sender = threading.Thread(target=unreplicated)
    sender.start()
    time.sleep(1.0)  # appended and fsynced on the old leader, waiting for a quorum it cannot get
    os.kill(broker_set.nodes[old].pid, signal.SIGSTOP)  # type: ignore[arg-type]
    for n in followers:
        os.kill(broker_set.nodes[n].pid, signal.SIGCONT)  # type: ignore[arg-type]
    new = broker_set.leader(timeout=30, not_=old)
    new_url = broker_set.nodes[new].url
    assert _send(new_url, "after").json()["results"][0]["status"] == "SEND_OK"
    os.kill(broker_set.nodes[old].pid, signal.SIGCONT)  # type: ignore[arg-type]
    late = _send(old_url, "late", timeout=10)
    sender.join(timeout=30)
    assert late.status_code == 421 and late.json()["code"] == "NOT_LEADER"
    answer = answers[0]
    assert isinstance(answer, Exception) or answer.status_code != 200 or answer.json()["results"][0]["status"] != "SEND_OK", answer
    wait_for(lambda: (v := broker_set.view(old)) and v["role"] == "follower", timeout=30)
    broker_set.caught_up()
    assert broker_set.log_bytes(old) == broker_set.log_bytes(new)
    stored = read_back(new_url, "orders")
    assert stored["before"] == 1 and stored["after"] == 1 and stored["divergent"] == 0 and stored["late"] == 0
    assert "truncating the commit log" in broker_set.nodes[old].tail(400)
