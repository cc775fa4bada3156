"""The SDK's producer with a transactional_id (Kafka-style transactions, sync and asyncio) against a real broker process."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from halfmq.client import AsyncProducer, Producer, ProducerFenced, SimpleConsumer, TransactionAborted
from tests.integration.broker.http_helpers import read_all
from tests.support.processes import BrokerProcess


def out_bodies(url: str, topic: str = "OUT") -> list[str]:
    with httpx.Client(base_url=url, timeout=10) as client:
        queues = len(client.get(f"/v1/topics/{topic}").json()["queues"])
        return sorted(m["body"] for q in range(queues) for m in read_all(client, topic, q))


def test_a_consume_transform_produce_round_commits_copies_and_acks_together(broker: BrokerProcess) -> None:
    with Producer(broker.url) as plain:
        plain.create_topic("OUT", 2)
        for i in range(5):
            plain.send("IN", f"m{i}")
    with Producer(broker.url, transactional_id="copier", transaction_batch_size=2) as producer, SimpleConsumer(broker.url, "g", "IN") as consumer:
        producer.init_transactions()
        received = consumer.receive(max_messages=3)
        producer.begin_transaction()
        for m in received:
            producer.send("OUT", m.body.upper())
        producer.send_offsets_to_transaction(received)
        assert out_bodies(broker.url) == []
        result = producer.commit_transaction()
        assert (result.state, result.messages, result.acks) == ("COMPLETE_COMMIT", 3, 3)
        assert out_bodies(broker.url) == sorted(m.body.upper() for m in received)
        rest = consumer.receive(max_messages=10)
        assert sorted(m.body for m in rest) == sorted({f"m{i}" for i in range(5)} - {m.body for m in received})

        producer.begin_transaction()
        producer.send("OUT", "never")
        producer.send_offsets_to_transaction(rest)
        producer.abort_transaction()
        assert sorted(m.body for m in consumer.receive(max_messages=10)) == sorted(m.body for m in rest)
    assert "never" not in out_bodies(broker.url)


def test_a_fenced_producer_gets_the_fatal_error_and_commits_nothing(broker: BrokerProcess) -> None:
    zombie = Producer(broker.url, transactional_id="copier")
    zombie.init_transactions()
    zombie.begin_transaction()
    zombie.send("OUT", "zombie")
    zombie.flush()
    replacement = Producer(broker.url, transactional_id="copier")
    replacement.init_transactions()
    with pytest.raises(ProducerFenced):
        zombie.commit_transaction()
    with pytest.raises(ProducerFenced):  # fatal for good, without asking the broker again
        zombie.begin_transaction()
    replacement.begin_transaction()
    replacement.send("OUT", "fresh")
    replacement.commit_transaction()
    assert out_bodies(broker.url) == ["fresh"]
    zombie.close()
    replacement.close()


def test_a_transaction_the_broker_timed_out_is_the_abortable_error(broker: BrokerProcess) -> None:
    with Producer(broker.url, transactional_id="slow", transaction_timeout_ms=300) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("OUT", "late")
        producer.flush()
        time.sleep(1.5)
        with pytest.raises(TransactionAborted):
            producer.commit_transaction()
        producer.abort_transaction()
        producer.begin_transaction()
        producer.send("OUT", "again")
        producer.commit_transaction()
    assert out_bodies(broker.url) == ["again"]


def test_the_asyncio_producer_commits_many_messages_to_several_topics_at_once(broker: BrokerProcess) -> None:
    async def scenario() -> None:
        async with AsyncProducer(broker.url, transactional_id="async-copier", transaction_batch_size=7) as producer:
            await producer.init_transactions()
            await producer.begin_transaction()
            for i in range(20):
                await producer.send("A" if i % 2 else "B", f"n{i}")
            result = await producer.commit_transaction()
            assert result.messages == 20

    asyncio.run(scenario())
    assert len(out_bodies(broker.url, "A")) == 10 and len(out_bodies(broker.url, "B")) == 10


def test_send_in_a_transaction_returns_nothing_its_ids_come_with_flush_and_a_plain_send_returns_its_result(broker: BrokerProcess) -> None:
    with Producer(broker.url, transactional_id="returns") as producer, Producer(broker.url) as plain:
        producer.init_transactions()
        producer.begin_transaction()
        assert producer.send("OUT", "buffered") is None  # buffered until flush or commit
        [sent] = producer.flush()
        assert (sent.topic, sent.queue_offset) == ("OUT", None)  # handed over, invisible: no offset yet
        producer.commit_transaction()
        assert plain.send("OUT", "plain").status.value == "SEND_OK"
    assert out_bodies(broker.url) == ["buffered", "plain"]


def test_a_transaction_block_commits_when_it_ends_and_aborts_when_it_raises(broker: BrokerProcess) -> None:
    with Producer(broker.url, transactional_id="block") as producer:
        producer.init_transactions()
        with producer.transaction() as tx:
            tx.send("OUT", "kept")
        with pytest.raises(RuntimeError, match="boom"), producer.transaction() as tx:
            tx.send("OUT", "dropped")
            tx.flush()
            raise RuntimeError("boom")
        with producer.transaction() as tx:  # the aborted one is over: the next begins
            tx.send("OUT", "next")
    assert out_bodies(broker.url) == ["kept", "next"]


def test_an_async_transaction_block_commits_when_it_ends_and_aborts_when_it_raises(broker: BrokerProcess) -> None:
    async def main() -> None:
        async with AsyncProducer(broker.url, transactional_id="ablock") as producer:
            await producer.init_transactions()
            async with producer.transaction() as tx:
                await tx.send("OUT", "kept")
            with pytest.raises(RuntimeError, match="boom"):
                async with producer.transaction() as tx:
                    await tx.send("OUT", "dropped")
                    await tx.flush()
                    raise RuntimeError("boom")

    asyncio.run(main())
    assert out_bodies(broker.url) == ["kept"]
