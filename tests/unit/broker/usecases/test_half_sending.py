"""The half send is written once for both fronts, and checked there once (issue 31 item 2)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from msgspec import to_builtins

from halfmq.broker.api.runtime import BrokerRuntime
from halfmq.broker.config import BrokerSettings
from halfmq.broker.protocol import HalfSendRequest, OutgoingMessage
from halfmq.broker.usecases import half_sending, producer_txns, sending
from halfmq.errors import InvalidGroupName, ProducerIdNotOwned
from halfmq.wire import TransactionState

SCOPE = {"type": "http", "path": "/v1/transactions", "headers": []}


@pytest.fixture
async def rt(tmp_path: Path) -> AsyncIterator[BrokerRuntime]:
    runtime = BrokerRuntime.open(BrokerSettings(data_dir=tmp_path, grpc_port=0))
    try:
        yield runtime
    finally:
        runtime.store.close()


def half(group: str = "shop", **numbered: int) -> HalfSendRequest:
    return HalfSendRequest(producer_group=group, topic="ORDERS", message=OutgoingMessage(body="order 42"), **numbered)


async def test_the_http_and_the_rocketmq_half_are_the_same_pending_transaction(rt: BrokerRuntime) -> None:
    who = rt.guard.principal(SCOPE)
    answer = await half_sending.send_half(rt, who, SCOPE, half())
    tx = await half_sending.send_rocketmq_half(rt, "ORDERS", sending.target(rt, "ORDERS"), OutgoingMessage(body="order 43"))
    http_tx = rt.transactions.get(answer.transaction_id)
    assert (http_tx.producer_group, http_tx.state) == ("shop", TransactionState.PENDING)
    assert (tx.producer_group, tx.state) == ("ORDERS", TransactionState.PENDING)  # a gRPC producer's group is its topic


async def test_an_invalid_producer_group_is_refused_before_anything_is_written(rt: BrokerRuntime) -> None:
    end = rt.store.commit_log.end_offset
    with pytest.raises(InvalidGroupName):
        half_sending.store_half(rt, rt.guard.principal(SCOPE), SCOPE, half("shop/../admin"))
    assert rt.store.commit_log.end_offset == end


async def test_a_repeated_numbered_half_is_answered_from_the_window_and_another_principals_id_is_refused(rt: BrokerRuntime) -> None:
    who = rt.guard.principal(SCOPE)
    ids = await producer_txns.new_producer_id(rt, SCOPE)
    numbered = half(producer_id=ids.producer_id, epoch=ids.epoch, sequence=0)
    first = to_builtins(await half_sending.send_half(rt, who, SCOPE, numbered))  # the answers as the wire carries them
    again = to_builtins(await half_sending.send_half(rt, who, SCOPE, numbered))
    assert again == {**first, "duplicate": True}
    stranger = type(who)("mallory", who.policies)
    with pytest.raises(ProducerIdNotOwned):
        half_sending.store_half(rt, stranger, SCOPE, numbered)
