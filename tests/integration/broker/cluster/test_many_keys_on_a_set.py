"""A many-keys message sent to a set's leader is refused at once: the leader keeps its lease (issue 42)."""

from __future__ import annotations

import concurrent.futures

import httpx
import pytest

from tests.support.big_messages import SLOW, many_keys, worst_allowed
from tests.support.liveness import HealthProbe

pytestmark = pytest.mark.slow

SET_ENV = {"HALFMQ_BROKER_SEGMENT_BYTES": str(64 << 20)}  # the broker_set fixture's env: segments that hold these batches


def test_many_keys_sent_to_a_set_leave_its_leader_in_place(broker_set) -> None:
    """On a set, the 40k-keys message made the leader lose its lease; now the leader keeps its term throughout."""
    leader = broker_set.leader()
    url = broker_set.nodes[leader].url
    term = broker_set.view(leader)["term"]
    batch = {"messages": [worst_allowed(256 * 1024) for _ in range(4)]}
    with HealthProbe(url) as probe, httpx.Client(base_url=url, timeout=120) as client:
        refused = client.post("/v1/topics/orders/messages", json={"messages": [{"body": "x", "keys": many_keys(40_000)}]})
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(lambda _: client.post("/v1/topics/orders/messages", json=batch).status_code, range(6)))
    assert (refused.status_code, refused.json()["code"]) == (413, "PROPERTIES_TOO_LARGE")
    assert answers == [200] * 6
    assert broker_set.leader() == leader and broker_set.view(leader)["term"] == term
    assert probe.slowest < SLOW, f"the leader's /healthz waited {probe.slowest:.1f} s"
