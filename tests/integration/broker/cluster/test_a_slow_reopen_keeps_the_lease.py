"""A node whose runtime takes longer than the lease TTL to open still becomes a leader that stays.

Found by the queue checker's long run (seed 32): opening the runtime replays HALFMQ_TXN_STATE from offset 0, which
grows with every ack record; run on the event loop it stopped the lease renewals, so once it took more than the
2 s TTL every new leader lost its lease while opening, the next candidate lost its own the same way, and the set
had no leader for good. Here every open is made 3 s longer (tests/support/slow_open); the set must elect a leader,
and elect another after kill -9 of it.
"""

from __future__ import annotations

import os

import pytest

from tests.support.broker_set import BrokerSet
from tests.support.processes import ROOT

pytestmark = pytest.mark.slow

SHIM = ROOT / "tests" / "support" / "slow_open"
SET_ENV = {"PYTHONPATH": os.pathsep.join(filter(None, (str(SHIM), os.environ.get("PYTHONPATH")))), "HALFMQ_TEST_SLOW_OPEN": "3"}


@pytest.mark.timeout(300)
def test_a_leader_whose_runtime_opens_slower_than_its_lease_ttl_keeps_its_lease(broker_set: BrokerSet) -> None:
    leader = broker_set.leader(timeout=90)
    broker_set.nodes[leader].kill9()
    assert broker_set.leader(timeout=60, not_=leader) != leader
