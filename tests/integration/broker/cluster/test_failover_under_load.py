"""Failover under load: 64 sends in flight with ack=quorum while the leader is killed -9 and restarted, N times.

Nothing acknowledged may be lost. Through the SDK (every send numbered, issue 15's
idempotent producer) nothing is stored twice either; raw unnumbered HTTP sends, retried
by hand, may store a body twice, which the second case counts but allows.
HALFMQ_FAILOVER_KILLS (default 5 in CI) raises the number of kills, e.g. to 20.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time

import pytest

from tests.support.broker_set import BrokerSet
from tests.support.report import report
from tests.support.set_load import SetLoad, percentile, read_back

pytestmark = pytest.mark.slow
KILLS = int(os.environ.get("HALFMQ_FAILOVER_KILLS", "5"))


def _all_in_sync(brokers: BrokerSet, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        leader = next((n for n in brokers.nodes if (v := brokers.view(n)) and v["writable"]), None)
        view = brokers.view(leader) if leader else None
        if view and len(view["in_sync"]) == len(brokers.nodes):
            return
        time.sleep(0.2)
    raise AssertionError("the set did not get all nodes in sync again")


@pytest.mark.timeout(60 + 40 * KILLS)
@pytest.mark.parametrize("numbered", [True, False], ids=["sdk-numbered", "raw-unnumbered"])
def test_kill_9_of_the_leader_under_load_loses_no_acknowledged_message(broker_set: BrokerSet, numbered: bool) -> None:
    broker_set.leader()
    load = SetLoad(broker_set.urls, in_flight=64, numbered=numbered)
    loop = asyncio.new_event_loop()
    runner = threading.Thread(target=lambda: loop.run_until_complete(load.run()))
    runner.start()
    failovers: list[float] = []
    try:
        for _ in range(KILLS):
            time.sleep(2.0)
            leader = broker_set.leader(timeout=60)
            killed_at = time.monotonic()
            broker_set.nodes[leader].kill9()
            broker_set.leader(timeout=60, not_=leader)
            failovers.append(time.monotonic() - killed_at)
            broker_set.nodes[leader].start(timeout=60)
            _all_in_sync(broker_set)
        time.sleep(1.0)
    finally:
        loop.call_soon_threadsafe(load.stop)
        runner.join(timeout=120)
    result = load.result
    stored = read_back(broker_set.nodes[broker_set.leader()].url, "load")
    lost = result.acknowledged - set(stored)
    duplicated = sum(n - 1 for n in stored.values() if n > 1)
    kind = "SDK, numbered" if numbered else "raw HTTP, unnumbered"
    report(f"\nfailover under load ({kind}): {KILLS} kill -9 of the leader, {len(result.acknowledged)} acknowledged, "
          f"{len(stored)} distinct stored, acknowledged-but-lost={len(lost)}, duplicated={duplicated} "
          f"(retried sends {result.retried}; answers {dict(result.statuses)}); "
          f"failover p50={percentile(failovers, 0.5):.2f}s max={max(failovers):.2f}s")
    assert len(result.acknowledged) > 100
    assert not lost, f"acknowledged but lost: {sorted(lost)[:10]}"
    if numbered:
        assert duplicated == 0, {body: n for body, n in stored.items() if n > 1}
        assert set(result.statuses) == {"SEND_OK"}, result.statuses  # the SDK rode out every failover, nothing refused
    else:
        assert all(n == 1 for n in stored.values()) or duplicated <= result.retried  # only retries may duplicate
