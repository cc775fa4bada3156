"""A retried send whose first answer was lost (dropped by a proxy between SDK and broker) is stored once."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from halfmq.client import AsyncProducer, LocalTransactionState, Producer, TransactionProducer
from tests.integration.broker.http_helpers import read_all
from tests.support.lossy_proxy import LossyProxy
from tests.support.processes import BrokerProcess


def stored(url: str, topic: str) -> list[str]:
    with httpx.Client(base_url=url, timeout=10) as client:
        return [m["body"] for m in read_all(client, topic, 0)]


@pytest.fixture
def proxy(broker: BrokerProcess):
    httpx.post(f"{broker.url}/v1/topics", json={"name": "ONCE", "queues": 1}).raise_for_status()
    p = LossyProxy(broker.port, "/v1/topics/ONCE/messages", drops=2)
    yield p
    p.close()


def test_a_numbered_send_whose_answers_were_lost_is_stored_once(broker: BrokerProcess, proxy: LossyProxy) -> None:
    with Producer(proxy.url, idempotent_id="svc-1", retries=4) as producer:
        result = producer.send("ONCE", "exactly-one")
        producer.send_batch("ONCE", ["b1", "b2"])
    assert proxy.dropped == 2
    assert stored(broker.url, "ONCE") == ["exactly-one", "b1", "b2"]
    assert result.queue_offset == 0


def test_the_same_loss_without_numbering_stores_the_message_twice(broker: BrokerProcess, proxy: LossyProxy) -> None:
    with Producer(proxy.url, retries=4) as producer:  # what the numbering prevents: this test can fail
        producer.send("ONCE", "twice")
    assert proxy.dropped == 2
    assert stored(broker.url, "ONCE") == ["twice"] * 3


def test_the_asyncio_producer_numbers_its_sends_too(broker: BrokerProcess, proxy: LossyProxy) -> None:
    async def scenario() -> None:
        async with AsyncProducer(proxy.url, idempotent_id="svc-2", retries=4) as producer:
            await asyncio.gather(*(producer.send("ONCE", f"a{i}") for i in range(5)))

    asyncio.run(scenario())
    assert sorted(stored(broker.url, "ONCE")) == [f"a{i}" for i in range(5)]


class Recording:
    def __init__(self) -> None:
        self.runs = 0

    def execute_local_transaction(self, message, arg):
        self.runs += 1
        return LocalTransactionState.COMMIT_MESSAGE

    def check_local_transaction(self, message):
        return LocalTransactionState.UNKNOW


def test_a_numbered_half_whose_answer_was_lost_is_one_transaction_and_one_local_run(broker: BrokerProcess) -> None:
    httpx.post(f"{broker.url}/v1/topics", json={"name": "HALVES", "queues": 1}).raise_for_status()
    proxy = LossyProxy(broker.port, "POST /v1/transactions HTTP", drops=1)
    listener = Recording()
    try:
        with TransactionProducer(proxy.url, "pg", listener, check_backs=False, idempotent_id="half-svc", retries=4) as producer:
            result = producer.send_in_transaction("HALVES", "h1")
    finally:
        proxy.close()
    assert proxy.dropped == 1 and listener.runs == 1
    assert result.end is not None and result.end["state"] == "committed"
    assert stored(broker.url, "HALVES") == ["h1"]
    pending = httpx.get(f"{broker.url}/v1/transactions", params={"state": "pending"}).json()
    assert pending["count"] == 0
