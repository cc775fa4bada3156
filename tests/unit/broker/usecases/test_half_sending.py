"""The half send is written once for both fronts, and checked there once (issue 31 item 2)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest
from msgspec import to_builtins

from halfmq.broker.config import BrokerSettings
from halfmq.broker.idempotence.producer_ids import SentHalf
from halfmq.broker.runtime import BrokerRuntime
from halfmq.broker.security.access import ANONYMOUS
from halfmq.broker.security.access import Access as FakeAccess
from halfmq.broker.security.policy import Action, Resource
from halfmq.broker.usecases.half_sending import HalfSending
from halfmq.errors import AccessDenied, InvalidDeliveryTime, InvalidGroupName, InvalidRequest, ProducerIdNotOwned, SystemTopicForbidden, TopicNotFound
from halfmq.wire import MAX_HALF_COMPANIONS, HalfSendRequest, OutgoingMessage, TransactionState, TxnMessage, to_wire
from tests.support.auth import bearer, write_auth_file
from tests.support.grants import publishing
from tests.unit.broker.usecases.fakes import SCOPE as FAKE_SCOPE
from tests.unit.broker.usecases.fakes import (
    DenyingAccess,
    FakeHalfMessages,
    FakeLog,
    FakeSender,
    FakeTopicCreation,
    FakeTopics,
    FakeWindows,
    RecordingDurable,
)

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
    who = rt.access.principal(SCOPE)
    answer = await rt.usecases.half_sending.send_half(who, SCOPE, half())
    tx = await rt.usecases.half_sending.send_rocketmq_half(
        publishing(rt, "ORDERS"), rt.usecases.sending.target(publishing(rt, "ORDERS")), OutgoingMessage(body="order 43"))
    http_tx = rt.half_messages.get(answer.transaction_id)
    assert (http_tx.producer_group, http_tx.state) == ("shop", TransactionState.PENDING)
    assert (tx.producer_group, tx.state) == ("ORDERS", TransactionState.PENDING)  # a gRPC producer's group is its topic


async def test_an_invalid_producer_group_is_refused_before_anything_is_written(rt: BrokerRuntime) -> None:
    end = rt.store.commit_log.end_offset
    with pytest.raises(InvalidGroupName):
        rt.usecases.half_sending.store_half(rt.access.principal(SCOPE), SCOPE, half("shop/../admin"))
    assert rt.store.commit_log.end_offset == end


async def test_a_repeated_numbered_half_is_answered_from_the_window_and_another_principals_id_is_refused(rt: BrokerRuntime) -> None:
    who = rt.access.principal(SCOPE)
    ids = await rt.usecases.producer_transactions.new_producer_id(ANONYMOUS, SCOPE)
    numbered = half(producer_id=ids.producer_id, epoch=ids.epoch, sequence=0)
    first = to_builtins(await rt.usecases.half_sending.send_half(who, SCOPE, numbered))  # the answers as the wire carries them
    again = to_builtins(await rt.usecases.half_sending.send_half(who, SCOPE, numbered))
    assert again == {**first, "duplicate": True}
    stranger = type(who)("mallory", who.policies)
    with pytest.raises(ProducerIdNotOwned):
        rt.usecases.half_sending.store_half(stranger, SCOPE, numbered)


# --- companions (``also``): checked whole before anything is written -------------------------------------------------


def with_companions(*also: TxnMessage, topic: str = "ORDERS", group: str = "shop") -> HalfSendRequest:
    return HalfSendRequest(producer_group=group, topic=topic, message=OutgoingMessage(body="order 42"), also=list(also))


async def test_a_half_and_its_companion_are_one_pending_transaction_committed_together(rt: BrokerRuntime) -> None:
    who = rt.access.principal(SCOPE)
    answer = await rt.usecases.half_sending.send_half(who, SCOPE, with_companions(TxnMessage(topic="PAYMENT_DUE", body="due 42")))
    assert [tx.transaction_id for tx in rt.half_messages.pending()] == [answer.transaction_id]
    await rt.half_messages.end(answer.transaction_id, "shop", "commit")
    visible = {t: [m.body for q in range(rt.store.topic(t).queues) for m in rt.store.reads.read_queue(t, q, 0, 10)] for t in ("ORDERS", "PAYMENT_DUE")}
    assert visible == {"ORDERS": [b"order 42"], "PAYMENT_DUE": [b"due 42"]}


async def test_a_companion_on_a_topic_the_caller_may_not_send_to_is_refused_and_nothing_is_stored(tmp_path: Path) -> None:
    auth_path = tmp_path / "auth.json"
    _, tokens = write_auth_file(auth_path)
    runtime = BrokerRuntime.open(BrokerSettings(data_dir=tmp_path / "data", grpc_port=0, auth_file=auth_path))
    try:
        scope = {**SCOPE, "headers": [(b"authorization", bearer(tokens["order"])["authorization"].encode())]}
        who = runtime.access.principal(scope)
        end = runtime.store.commit_log.end_offset
        refused = with_companions(TxnMessage(topic="MALLORY_TOPIC", body="x"), topic="ORDER_TOPIC", group="order_producer_group")
        with pytest.raises(AccessDenied):
            runtime.usecases.half_sending.store_half(who, scope, refused)
        assert runtime.store.commit_log.end_offset == end and runtime.half_messages.pending() == []
        assert runtime.store.topic("ORDER_TOPIC") is None and runtime.store.topic("MALLORY_TOPIC") is None
    finally:
        runtime.store.close()


async def test_an_unknown_companion_topic_or_a_companion_delay_past_the_limit_is_refused_and_nothing_is_stored(tmp_path: Path) -> None:
    runtime = BrokerRuntime.open(BrokerSettings(data_dir=tmp_path, grpc_port=0, auto_create_topics=False, timer_max_delay=60))
    try:
        runtime.store.create_topic("ORDERS", 2)
        runtime.store.create_topic("PAYMENT_DUE", 2)
        who = runtime.access.principal(SCOPE)
        end = runtime.store.commit_log.end_offset
        with pytest.raises(TopicNotFound):
            runtime.usecases.half_sending.store_half(who, SCOPE, with_companions(TxnMessage(topic="NOWHERE", body="x")))
        with pytest.raises(InvalidDeliveryTime):
            runtime.usecases.half_sending.store_half(who, SCOPE, with_companions(
                TxnMessage(topic="PAYMENT_DUE", body="ok"), TxnMessage(topic="PAYMENT_DUE", body="late", delay_ms=61_000)))
        with pytest.raises(SystemTopicForbidden):
            runtime.usecases.half_sending.store_half(who, SCOPE, with_companions(TxnMessage(topic="RMQ_SYS_TRANS_HALF_TOPIC", body="x")))
        assert runtime.store.commit_log.end_offset == end and runtime.half_messages.pending() == []
    finally:
        runtime.store.close()


def test_more_than_sixteen_companions_are_an_invalid_request() -> None:
    with_companions(*[TxnMessage(topic="PAYMENT_DUE", body=str(i)) for i in range(MAX_HALF_COMPANIONS)])
    with pytest.raises(msgspec.ValidationError):  # as the broker decodes the body
        msgspec.convert(to_wire(with_companions(*[TxnMessage(topic="PAYMENT_DUE", body=str(i))
                                                  for i in range(MAX_HALF_COMPANIONS + 1)])), HalfSendRequest)


async def test_a_numbered_half_with_companions_repeated_after_a_restart_is_answered_from_the_log(tmp_path: Path) -> None:
    settings = BrokerSettings(data_dir=tmp_path, grpc_port=0)
    runtime = BrokerRuntime.open(settings)
    try:
        who = runtime.access.principal(SCOPE)
        ids = await runtime.usecases.producer_transactions.new_producer_id(ANONYMOUS, SCOPE)
        numbered = HalfSendRequest(producer_group="shop", topic="ORDERS", message=OutgoingMessage(body="order 42"),
                                   also=[TxnMessage(topic="PAYMENT_DUE", body="due 42", delay_ms=60_000)],
                                   producer_id=ids.producer_id, epoch=ids.epoch, sequence=0)
        first = to_builtins(await runtime.usecases.half_sending.send_half(who, SCOPE, numbered))
    finally:
        runtime.store.close()
    runtime = BrokerRuntime.open(settings)
    try:
        again = to_builtins(await runtime.usecases.half_sending.send_half(runtime.access.principal(SCOPE), SCOPE, numbered))
        assert again == {**first, "duplicate": True}  # read back from the half group: its first half answers
        assert [tx.transaction_id for tx in runtime.half_messages.pending()] == [first["transaction_id"]]
    finally:
        runtime.store.close()


# --- HalfSending built from fakes ---------------------------------------------------------------------------------


def half_sending(windows: FakeWindows, access: FakeAccess | None = None) -> tuple[HalfSending, FakeLog, FakeTopicCreation, RecordingDurable]:
    log, durable, created = FakeLog(end=7000), RecordingDurable(), FakeTopicCreation()
    use_case = HalfSending(access or FakeAccess(None), FakeTopics(), FakeSender(log), created, FakeHalfMessages(log=log),
                           windows, durable, log)
    return use_case, log, created, durable


def fake_half(sequence: int | None = 5, producer_id: int | None = 3, epoch: int | None = 0) -> HalfSendRequest:
    return HalfSendRequest(producer_group="PG", topic="ORDERS", message=OutgoingMessage(body="a"),
                           producer_id=producer_id, epoch=epoch, sequence=sequence)


async def test_a_numbered_half_send_writes_the_half_and_its_number_together_and_waits_for_them() -> None:
    windows = FakeWindows()
    use_case, log, created, durable = half_sending(windows)
    answer = await use_case.send_half(ANONYMOUS, FAKE_SCOPE, fake_half())
    assert [len(group) for group in log.groups] == [2]  # the half and the send record, one write group
    assert created.created == ["ORDERS"]  # a new topic is created before its first write
    assert windows.records == [(5, 1)] and [s for s, _ in windows.noted] == [5]
    assert durable.waited == [log.end]
    assert answer.transaction_id == "tx-1" and not answer.duplicate


async def test_a_half_send_with_only_part_of_its_numbering_is_refused_before_anything_is_written() -> None:
    for partial in (fake_half(sequence=None), fake_half(epoch=None), fake_half(producer_id=None, epoch=None)):
        windows = FakeWindows()
        use_case, log, created, durable = half_sending(windows)
        with pytest.raises(InvalidRequest):
            await use_case.send_half(ANONYMOUS, FAKE_SCOPE, partial)
        assert log.groups == [] and created.created == [] and windows.asked == [] and durable.waited == []


async def test_a_numbered_half_send_repeated_inside_the_window_answers_its_first_transaction_and_writes_nothing() -> None:
    windows = FakeWindows(earlier=SentHalf("tx-first", "msg-first", 300, 4))
    use_case, log, created, durable = half_sending(windows)
    answer = await use_case.send_half(ANONYMOUS, FAKE_SCOPE, fake_half())
    assert answer.duplicate and answer.transaction_id == "tx-first" and answer.commit_log_offset == 300
    assert log.groups == [] and created.created == [] and windows.records == []
    assert durable.waited == [7000]  # the log's end: the first attempt may still be waiting for its fsync


async def test_a_half_send_for_a_group_the_principal_may_not_publish_for_is_refused_and_writes_nothing() -> None:
    windows = FakeWindows()
    use_case, log, created, durable = half_sending(windows, DenyingAccess((Action.PUBLISH, Resource.group("PG"))))
    with pytest.raises(AccessDenied):
        await use_case.send_half(ANONYMOUS, FAKE_SCOPE, fake_half())
    assert log.groups == [] and created.created == [] and windows.asked == [] and durable.waited == []
