"""A leader whose process is gone: with ack=quorum a follower removes its key instead of waiting for its lease (issue 32, F4).

Behaviour, not durations: which node says it removed the key, and that the set leads on.
With ack=leader the lease is the only way a term ends, so no node removes the key.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.broker_set import BrokerSet
from tests.support.etcd import EtcdProcess

pytestmark = pytest.mark.slow
REMOVED = "refuses connections (its process is gone): removed its key"


def _said(brokers: BrokerSet, text: str) -> list[str]:
    return [n for n, p in brokers.nodes.items() if p.log_path is not None and p.log_path.exists() and text in p.log_path.read_text()]


@pytest.fixture(params=["quorum", "leader"])
def ack_set(request: pytest.FixtureRequest, etcd: EtcdProcess, tmp_path: Path) -> Iterator[tuple[str, BrokerSet]]:
    brokers = BrokerSet(etcd, tmp_path, env={"HALFMQ_BROKER_ACK": request.param}).start()
    try:
        yield request.param, brokers
    finally:
        brokers.stop()


@pytest.mark.timeout(180)
def test_after_kill_9_of_the_leader_a_follower_ends_its_term_only_with_ack_quorum(ack_set: tuple[str, BrokerSet]) -> None:
    ack, brokers = ack_set
    leader = brokers.leader(timeout=60)
    brokers.nodes[leader].kill9()
    new = brokers.leader(timeout=60, not_=leader)
    removed_by = _said(brokers, REMOVED)
    if ack == "quorum":
        assert removed_by and leader not in removed_by, removed_by
    else:
        assert removed_by == []  # the lease ended the term
    assert new != leader
