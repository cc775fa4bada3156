"""A long poll's answer leaves only from a node that may still hand it out: the delivery fence is checked as the
deliveries are taken and again after the hang-up probe's await (a set's leader can be paused in either)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from halfmq.broker.config import BrokerSettings
from halfmq.broker.protocol import ReceiveRequest
from halfmq.broker.runtime import BrokerRuntime
from halfmq.broker.store.message_store import PutItem
from halfmq.errors import NotLeader
from tests.support.grants import subscribed
from tests.support.loop_steps import run_ready


class Lease:
    """Whether this node may hand out deliveries: the fence a set's node sets on its delivery service."""

    def __init__(self) -> None:
        self.held = True

    def fence(self) -> None:
        if not self.held:
            raise NotLeader("this node leads but cannot renew its lease in etcd")


class Caller:
    """A consumer still connected; ``during_probe`` runs inside the hang-up probe's await (where a pause may land)."""

    def __init__(self, during_probe: Callable[[], None]) -> None:
        self.during_probe = during_probe

    async def is_disconnected(self) -> bool:
        self.during_probe()
        return False


@pytest.fixture
async def rt(tmp_path: Path) -> AsyncIterator[BrokerRuntime]:
    runtime = BrokerRuntime.open(BrokerSettings(data_dir=tmp_path, grpc_port=0))
    runtime.store.create_topic("T", 1)
    try:
        yield runtime
    finally:
        runtime.store.close()


async def test_a_long_poll_paused_past_its_lease_during_the_hang_up_probe_answers_not_leader_and_gives_its_messages_back(
        rt: BrokerRuntime) -> None:
    lease = Lease()
    rt.delivery.fence = lease.fence
    lost_the_lease = Caller(lambda: setattr(lease, "held", False))
    poll = asyncio.create_task(rt.usecases.receiving.receive(subscribed(rt, "g", "T"), ReceiveRequest(wait_seconds=30), lost_the_lease))
    await run_ready()
    assert not poll.done()  # the poll waits for a message
    rt.store.put([PutItem("T", 0, b"a")])
    with pytest.raises(NotLeader):
        await poll
    lease.held = True
    [again] = await rt.delivery.receive("g", "T", 16, invisible=30, wait=0)
    assert again.message.body == b"a" and again.delivery_attempt == 1  # handed back, the attempt not counted


async def test_a_long_poll_of_a_node_that_keeps_its_lease_answers_as_before(rt: BrokerRuntime) -> None:
    lease = Lease()
    rt.delivery.fence = lease.fence
    poll = asyncio.create_task(rt.usecases.receiving.receive(subscribed(rt, "g", "T"), ReceiveRequest(wait_seconds=30), Caller(lambda: None)))
    await run_ready()
    assert not poll.done()  # the poll waits for a message
    rt.store.put([PutItem("T", 0, b"a")])
    answer = await poll
    assert [m.body for m in answer.messages] == ["a"]
