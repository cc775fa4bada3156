"""A long poll's answer leaves only from a node that may still hand it out: the delivery fence is checked as the
deliveries are taken and again after the hang-up probe's await (a set's leader can be paused in either)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from halfmq.broker.config import BrokerSettings
from halfmq.broker.observability.metrics import create_metrics
from halfmq.broker.runtime import BrokerRuntime
from halfmq.broker.security.access import ANONYMOUS, Access
from halfmq.broker.store.message_store import PutItem
from halfmq.broker.usecases.receiving import Receiving
from halfmq.errors import InvalidTagFilter, NotLeader
from halfmq.wire import MAX_TAG_LENGTH, ReceiveRequest
from halfmq.wire.messages import MAX_FILTER_TAGS
from tests.support.grants import subscribed
from tests.support.loop_steps import run_ready
from tests.unit.broker.usecases.fakes import SCOPE as FAKE_SCOPE


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


# --- Receiving built from fakes -----------------------------------------------------------------------------------


class FakeMessage:
    def __init__(self, tag: str | None) -> None:
        self.properties = {"TAGS": tag} if tag else {}


class FakeDelivery:
    def __init__(self, handle: str, tag: str | None = None) -> None:
        self.receipt_handle = handle
        self.message = FakeMessage(tag)


class HeldPollDeliveries:
    """``Deliveries``: nothing at once, ``held`` once a poll waits; a fence that raises ``fence_error``; calls recorded."""

    def __init__(self, held: list[FakeDelivery], fence_error: Exception | None = None) -> None:
        self.held, self.fence_error = held, fence_error
        self.waits: list[float] = []
        self.released: list[str] = []
        self.acked: list[str] = []

    async def receive(self, group: str, topic: str, max_messages: int, invisible: float, wait: float) -> list[FakeDelivery]:
        self.waits.append(wait)
        return self.held if wait > 0 else []

    def release(self, group: str, topic: str, handles: list[str]) -> None:
        self.released.extend(handles)

    def fence(self) -> None:
        if self.fence_error is not None:
            raise self.fence_error

    def ack(self, group: str, topic: str, handles: list[str]) -> list[tuple[str, bool]]:
        self.acked.extend(handles)
        return [(h, True) for h in handles]


class FakeCaller:
    def __init__(self, gone: bool) -> None:
        self.gone = gone

    async def is_disconnected(self) -> bool:
        return self.gone


SUBSCRIBER = Access(None).subscriber(ANONYMOUS, FAKE_SCOPE, "G", "ORDERS")


async def test_a_long_poller_that_hung_up_gets_nothing_and_its_deliveries_are_handed_back() -> None:
    deliveries = HeldPollDeliveries([FakeDelivery("h1"), FakeDelivery("h2")])
    use_case = Receiving(deliveries, create_metrics())  # type: ignore[arg-type]
    answer = await use_case.receive(SUBSCRIBER, ReceiveRequest(wait_seconds=5), FakeCaller(gone=True))
    assert answer.messages == []
    assert deliveries.waits == [0.0, 5] and deliveries.released == ["h1", "h2"]


async def test_a_leader_that_lost_its_lease_during_the_poll_hands_the_deliveries_back_and_answers_not_leader() -> None:
    deliveries = HeldPollDeliveries([FakeDelivery("h1")], fence_error=NotLeader("another node leads"))
    use_case = Receiving(deliveries, create_metrics())  # type: ignore[arg-type]
    with pytest.raises(NotLeader):
        await use_case.receive(SUBSCRIBER, ReceiveRequest(wait_seconds=5), FakeCaller(gone=False))
    assert deliveries.released == ["h1"]


async def test_a_receive_without_a_wait_asks_once_and_holds_no_poll() -> None:
    deliveries = HeldPollDeliveries([FakeDelivery("h1")])
    use_case = Receiving(deliveries, create_metrics())  # type: ignore[arg-type]
    assert (await use_case.receive(SUBSCRIBER, ReceiveRequest(), FakeCaller(gone=True))).messages == []
    assert deliveries.waits == [0.0] and deliveries.released == []


def test_deliveries_a_subscription_does_not_want_by_tag_are_consumed_for_it() -> None:
    deliveries = HeldPollDeliveries([])
    use_case = Receiving(deliveries, create_metrics())  # type: ignore[arg-type]
    wanted = use_case.wanted(SUBSCRIBER, [FakeDelivery("a", "A"), FakeDelivery("b", "B"), FakeDelivery("n")], {"A"})  # type: ignore[list-item]
    assert [d.receipt_handle for d in wanted] == ["a"]
    assert deliveries.acked == ["b", "n"]


def _tagged(rt: BrokerRuntime, *tags: str) -> None:
    rt.store.put([PutItem("T", 0, f"m{i}".encode(), {"TAGS": tag}, tag=tag) for i, tag in enumerate(tags)])


async def _bodies(rt: BrokerRuntime, group: str, **request: object) -> list[str]:
    answer = await rt.usecases.receiving.receive(subscribed(rt, group, "T"), ReceiveRequest(**request), Caller(lambda: None))
    return [m.body for m in answer.messages]


async def test_a_tag_filter_delivers_only_its_tags_and_consumes_the_others_for_that_group_alone(rt: BrokerRuntime) -> None:
    _tagged(rt, "a", "b", "c", "a")
    assert await _bodies(rt, "g", tags="a || c") == ["m0", "m2", "m3"]
    assert await _bodies(rt, "g", invisible_seconds=0.01) == []  # "b" was filtered out for g: never delivered to it later
    assert await _bodies(rt, "other", tags=["b"]) == ["m1"]


async def test_a_filter_finds_its_tag_behind_batches_it_does_not_want(rt: BrokerRuntime) -> None:
    _tagged(rt, "b", "b", "b", "a")
    assert await _bodies(rt, "g", tags=["a"], max_messages=1) == ["m3"]


async def test_a_filter_of_star_or_nothing_delivers_every_message(rt: BrokerRuntime) -> None:
    _tagged(rt, "a", "b")
    assert await _bodies(rt, "g", tags="*") == ["m0", "m1"]
    assert await _bodies(rt, "other", tags=[]) == ["m0", "m1"]


async def test_a_filter_past_its_bounds_is_invalid_tag_filter_and_delivers_nothing(rt: BrokerRuntime) -> None:
    _tagged(rt, "a")
    for tags in ([f"t{i}" for i in range(MAX_FILTER_TAGS + 1)], "x" * (MAX_TAG_LENGTH + 1)):
        with pytest.raises(InvalidTagFilter):
            await _bodies(rt, "g", tags=tags)
    assert await _bodies(rt, "g") == ["m0"]


async def test_a_held_poll_answers_empty_at_once_when_the_broker_stops_instead_of_asking_again_until_its_wait_ends(
        rt: BrokerRuntime) -> None:
    asked: list[float] = []
    receive = rt.delivery.receive

    async def counted(group: str, topic: str, max_messages: int, invisible: float, wait: float) -> list:
        asked.append(wait)
        return await receive(group, topic, max_messages, invisible, wait)

    rt.delivery.receive = counted  # type: ignore[method-assign]
    poll = asyncio.create_task(rt.usecases.receiving.receive(subscribed(rt, "g", "T"), ReceiveRequest(wait_seconds=30), Caller(lambda: None)))
    await run_ready()
    assert not poll.done()  # the poll waits for a message
    rt.delivery.close()  # what a stop signal does
    answer = await poll
    assert answer.messages == []
    assert len(asked) == 2  # once at once, once held: a stopped broker's empty answers are not asked for again
