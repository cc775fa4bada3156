"""The one producer's configuration, without a broker: transactions with a transactional_id only."""

from __future__ import annotations

import asyncio

import pytest

from halfmq.client import AsyncProducer, Producer
from halfmq.client.producer import _abort_after
from halfmq.errors import BrokerUnavailable, InvalidTxnState, ProducerFenced

URL = "http://127.0.0.1:9"  # never reached: every case here fails or ends before a request


@pytest.mark.parametrize("method", ["init_transactions", "begin_transaction", "commit_transaction", "abort_transaction"])
def test_a_producer_without_a_transactional_id_says_so_when_asked_for_a_transaction(method: str) -> None:
    with Producer(URL) as producer, pytest.raises(InvalidTxnState, match="no transactional_id"):
        getattr(producer, method)()
    assert producer.transactional_id is None and producer.epoch is None


def test_a_producer_without_a_transactional_id_cannot_ack_in_a_transaction() -> None:
    with Producer(URL) as producer, pytest.raises(InvalidTxnState, match="no transactional_id"):
        producer.send_offsets_to_transaction(["handle"])


def test_flush_on_a_plain_producer_with_nothing_under_way_returns_at_once_with_no_transaction_results() -> None:
    with Producer(URL) as producer:
        assert producer.flush() == []


def test_a_transactional_producer_sends_only_inside_a_transaction_and_one_message_at_a_time() -> None:
    with Producer(URL, transactional_id="tid") as producer:
        with pytest.raises(InvalidTxnState, match="init_transactions"):
            producer.send("OUT", "before init")
        with pytest.raises(InvalidTxnState, match="send\\(\\)"):
            producer.send_batch("OUT", ["a", "b"])


def test_idempotent_id_beside_a_transactional_id_is_refused() -> None:
    with pytest.raises(ValueError, match="give only transactional_id"):
        AsyncProducer(URL, transactional_id="tid", idempotent_id="other")


def test_a_transaction_block_that_raised_aborts_unless_the_producer_was_fenced() -> None:
    aborts: list[str] = []

    async def abort() -> None:
        aborts.append("abort")

    async def failing_abort() -> None:
        raise BrokerUnavailable("down")

    asyncio.run(_abort_after(abort, RuntimeError("boom")))
    asyncio.run(_abort_after(abort, ProducerFenced("newer instance")))
    asyncio.run(_abort_after(failing_abort, RuntimeError("boom")))  # logged, not raised: the block's error goes on
    assert aborts == ["abort"]
