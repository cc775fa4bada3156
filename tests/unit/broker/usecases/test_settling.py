"""An ack is answered once the record of what it settled is durable: the same wait a send's answer makes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from halfmq.broker.config import BrokerSettings
from halfmq.broker.runtime import BrokerRuntime
from halfmq.broker.security.access import ANONYMOUS, Access
from halfmq.broker.store import state_records as state
from halfmq.broker.store.message_store import PutItem
from halfmq.broker.store.topics import TXN_STATE_TOPIC
from halfmq.broker.usecases.settling import Settling
from tests.support.grants import subscribed
from tests.support.loop_steps import run_ready
from tests.unit.broker.usecases.fakes import SCOPE as FAKE_SCOPE

Durable = Callable[[int], Awaitable[None]]


class HeldDurability:
    """A durable wait that returns only when the test lets it (a set's replicas that have not answered yet)."""

    def __init__(self) -> None:
        self.asked: list[int] = []
        self.waiting = asyncio.Event()  # set once a durable wait has its local fsync and waits for the release
        self.release = asyncio.Event()

    def wrap(self, local: Durable) -> Durable:
        async def durable(end: int) -> None:
            self.asked.append(end)
            await local(end)
            self.waiting.set()
            await self.release.wait()
        return durable


@pytest.fixture
async def held() -> HeldDurability:
    return HeldDurability()


@pytest.fixture
async def rt(tmp_path: Path, held: HeldDurability) -> AsyncIterator[BrokerRuntime]:
    runtime = BrokerRuntime.open(BrokerSettings(data_dir=tmp_path, grpc_port=0), durable_wrapper=held.wrap)
    try:
        yield runtime
    finally:
        runtime.store.close()


async def test_an_ack_is_answered_only_once_its_acks_record_is_durable(rt: BrokerRuntime, held: HeldDurability) -> None:
    rt.store.create_topic("T", 1)
    rt.store.put([PutItem("T", 0, b"a"), PutItem("T", 0, b"b")])
    got = await rt.delivery.receive("g", "T", 2, invisible=30, wait=0)
    answer = asyncio.ensure_future(rt.usecases.settling.ack(subscribed(rt, "g", "T"), [d.receipt_handle for d in got]))
    await asyncio.wait_for(held.waiting.wait(), 10)  # a hang guard, not a measurement
    await run_ready()
    assert not answer.done()
    [record] = [r for r in rt.store.reads.intact_records(TXN_STATE_TOPIC, 0, 0) if r.properties[state.TXN_OP] == "acks"]
    assert state.decode_acks(record.body) == [("g", "T", 0, 0), ("g", "T", 0, 1)]
    assert held.asked and held.asked[-1] >= record.commit_log_offset + record.size
    held.release.set()
    assert [r["status"] for r in (await answer)["results"]] == ["OK", "OK"]


async def test_an_ack_of_expired_handles_writes_nothing_and_waits_for_nothing(rt: BrokerRuntime, held: HeldDurability) -> None:
    rt.store.create_topic("T", 1)
    rt.store.put([PutItem("T", 0, b"a")])
    [d] = await rt.delivery.receive("g", "T", 1, invisible=30, wait=0)
    held.release.set()
    await rt.usecases.settling.ack(subscribed(rt, "g", "T"), [d.receipt_handle])
    end, asked = rt.store.commit_log.end_offset, len(held.asked)
    answer = await rt.usecases.settling.ack(subscribed(rt, "g", "T"), [d.receipt_handle, d.receipt_handle])
    assert [r["status"] for r in answer["results"]] == ["EXPIRED", "EXPIRED"]
    assert (rt.store.commit_log.end_offset, len(held.asked)) == (end, asked)


# --- Settling built from fakes ------------------------------------------------------------------------------------


class FakeDeliveries:
    """``Deliveries`` as settling calls it: handles named "ok-..." are held, others expired; each call is recorded."""

    def __init__(self) -> None:
        self.acks_end = 0
        self.calls: list[tuple[str, str, str, list[str]]] = []

    def _settle(self, verb: str, group: str, topic: str, handles: list[str]) -> list[tuple[str, bool]]:
        self.calls.append((verb, group, topic, handles))
        held = [h for h in handles if h.startswith("ok")]
        if verb == "ack" and held:
            self.acks_end += 100  # the acks record written
        return [(h, h.startswith("ok")) for h in handles]

    def ack(self, group: str, topic: str, handles: list[str]) -> list[tuple[str, bool]]:
        return self._settle("ack", group, topic, handles)

    def nack(self, group: str, topic: str, handles: list[str], reason: str | None = None) -> list[tuple[str, bool]]:
        return self._settle("nack", group, topic, handles)


class GatedDurability:
    """A durable wait that returns only when the test opens it."""

    def __init__(self) -> None:
        self.asked: list[int] = []
        self.open = asyncio.Event()

    async def __call__(self, end: int) -> None:
        self.asked.append(end)
        await self.open.wait()


def settling(durable: Durable | None) -> tuple[Settling, FakeDeliveries]:
    deliveries = FakeDeliveries()
    return Settling(deliveries, durable), deliveries  # type: ignore[arg-type]


SUBSCRIBER = Access(None).subscriber(ANONYMOUS, FAKE_SCOPE, "G", "ORDERS")


async def test_an_ack_built_from_fakes_is_answered_only_once_its_acks_record_is_durable() -> None:
    gate = GatedDurability()
    use_case, deliveries = settling(gate)
    answer = asyncio.ensure_future(use_case.ack(SUBSCRIBER, ["ok-1", "gone-2"]))
    await run_ready()
    assert gate.asked == [deliveries.acks_end] and not answer.done()
    gate.open.set()
    assert await answer == {"results": [{"receipt_handle": "ok-1", "status": "OK"}, {"receipt_handle": "gone-2", "status": "EXPIRED"}]}
    assert deliveries.calls == [("ack", "G", "ORDERS", ["ok-1", "gone-2"])]


async def test_an_ack_that_settled_nothing_waits_for_nothing() -> None:
    gate = GatedDurability()
    use_case, _ = settling(gate)
    assert await use_case.ack(SUBSCRIBER, ["gone-1"]) == {"results": [{"receipt_handle": "gone-1", "status": "EXPIRED"}]}
    assert await use_case.ack_one(SUBSCRIBER, "gone-2") is False
    assert gate.asked == []


async def test_one_broker_answers_an_ack_once_written_without_a_durable_wait() -> None:
    use_case, deliveries = settling(None)
    assert await use_case.ack_one(SUBSCRIBER, "ok-1") is True
    assert deliveries.calls == [("ack", "G", "ORDERS", ["ok-1"])]


def test_a_nack_changes_nothing_durable_and_answers_each_handle() -> None:
    gate = GatedDurability()
    use_case, deliveries = settling(gate)
    assert use_case.nack(SUBSCRIBER, ["ok-1"], "bad")["results"] == [{"receipt_handle": "ok-1", "status": "OK"}]
    assert deliveries.calls == [("nack", "G", "ORDERS", ["ok-1"])] and gate.asked == []
