"""AsyncTransactionProducer's coalesced halves and ends against a real broker: each caller its own outcome."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from halfmq.client import AsyncTransactionProducer, LocalTransactionState, Message, OutgoingMessage, Producer
from halfmq.errors import SystemTopicForbidden
from tests.support.processes import BrokerProcess

COMMIT, ROLLBACK = LocalTransactionState.COMMIT_MESSAGE, LocalTransactionState.ROLLBACK_MESSAGE


class ByBody:
    """Commits ``c-*``, rolls back ``r-*``, raises on ``x-*``."""

    async def execute_local_transaction(self, msg: OutgoingMessage, arg: Any) -> LocalTransactionState:
        if msg.body.startswith("x-"):
            raise RuntimeError(f"local failure for {msg.body}")
        return COMMIT if msg.body.startswith("c-") else ROLLBACK

    async def check_local_transaction(self, msg: Message) -> LocalTransactionState:
        return LocalTransactionState.UNKNOW


def counting(producer: AsyncTransactionProducer) -> list[str]:
    """The paths of the HTTP requests ``producer`` makes from now on."""
    paths: list[str] = []
    real = producer._transport.call

    async def call(c: Any) -> Any:
        paths.append(c.path)
        return await real(c)

    producer._transport.call = call  # type: ignore[method-assign]
    if producer._batches is not None:
        producer._batches._transport = call
    producer._send_call = call if producer._batches is None else producer._batches.call
    return paths


@pytest.fixture
def topic(broker: BrokerProcess) -> str:
    name = f"TX_{uuid.uuid4().hex[:8]}"
    with Producer(broker.url) as p:
        p.create_topic(name, queues=2)
    return name


def committed_bodies(broker: BrokerProcess, topic: str) -> list[str]:
    with Producer(broker.url) as p:
        return sorted(m.body for q in range(2) for m in p.read(topic, q, 0, 1000).messages)


async def test_64_concurrent_callers_share_batches_and_each_gets_its_own_outcome(broker: BrokerProcess, topic: str) -> None:
    bodies = [f"{'crx'[i % 3]}-{i:02d}" for i in range(63)]
    async with AsyncTransactionProducer(broker.url, "pg", ByBody(), check_backs=False) as producer:
        paths = counting(producer)
        sends = [producer.send_in_transaction(topic, b) for b in bodies]
        sends.append(producer.send_in_transaction("RMQ_SYS_TRANS_HALF_TOPIC", "c-system"))  # refused: raises for this caller only
        outcomes = await asyncio.gather(*sends, return_exceptions=True)
    assert isinstance(outcomes[-1], SystemTopicForbidden)
    results = outcomes[:-1]
    for body, result in zip(bodies, results, strict=True):
        assert not isinstance(result, BaseException), (body, result)
        assert result.message.body == body
        expected = {"c": ("committed", COMMIT), "r": ("rolled_back", ROLLBACK), "x": ("rolled_back", ROLLBACK)}[body[0]]
        assert (result.end["state"], result.local_state) == expected, body
        assert (result.local_error is not None) == body.startswith("x-")
    assert len({r.transaction_id for r in results}) == 63
    assert committed_bodies(broker, topic) == sorted(b for b in bodies if b.startswith("c-"))
    halves, ends = paths.count("/v1/transaction-batches/half"), paths.count("/v1/transaction-batches/end")
    assert 1 <= halves < 16 and 1 <= ends < 16, paths
    assert "/v1/transactions" not in paths


async def test_a_lone_call_goes_out_at_once_through_the_batch_routes(broker: BrokerProcess, topic: str) -> None:
    async with AsyncTransactionProducer(broker.url, "pg", ByBody(), check_backs=False) as producer:
        paths = counting(producer)
        result = await asyncio.wait_for(producer.send_in_transaction(topic, "c-alone"), timeout=5)
    assert result.end["state"] == "committed"
    assert [p for p in paths if p != "/v1/producer-ids"] == ["/v1/transaction-batches/half", "/v1/transaction-batches/end"]


@pytest.mark.parametrize("idempotent", [True, False])
async def test_coalesce_false_sends_each_half_and_end_on_its_own(broker: BrokerProcess, topic: str, idempotent: bool) -> None:
    async with AsyncTransactionProducer(broker.url, "pg", ByBody(), check_backs=False, coalesce=False,
                                        idempotent=idempotent) as producer:
        paths = counting(producer)
        results = await asyncio.gather(*(producer.send_in_transaction(topic, f"c-{i}") for i in range(8)))
    assert all(r.end["state"] == "committed" for r in results)
    assert paths.count("/v1/transactions") == 8 and sum(p.endswith("/end") for p in paths) == 8
    assert not any(p.startswith("/v1/transaction-batches") for p in paths)


async def test_a_coalesced_numbered_half_retried_after_a_lost_answer_is_stored_once(
        broker: BrokerProcess, topic: str, monkeypatch: pytest.MonkeyPatch) -> None:
    async with AsyncTransactionProducer(broker.url, "pg", ByBody(), check_backs=False, retries=2) as producer:
        real: Callable[..., Any] = producer._transport.call
        lost = []

        async def lose_first_answer(call: Any) -> Any:
            answer = await real(call)
            if call.path == "/v1/transaction-batches/half" and not lost:
                lost.append(call)
                from halfmq.errors import BrokerUnavailable
                raise BrokerUnavailable("answer lost", sent=True)
            return answer

        assert producer._batches is not None
        producer._batches._transport = lose_first_answer
        result = await producer.send_in_transaction(topic, "c-retried")
    assert lost and result.end["state"] == "committed"
    assert committed_bodies(broker, topic) == ["c-retried"]
