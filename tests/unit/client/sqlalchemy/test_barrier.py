"""The barrier's decisions that need no broker: the after-commit answer, the send's outcome, the wiring check."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from sqlalchemy import create_engine

from halfmq.client import HalfSendResult, LocalTransactionState, OutgoingMessage, SendStatus, TransactionSendResult
from halfmq.client.sqlalchemy.barrier import TransactionBarrier
from halfmq.client.sqlalchemy.barrier_base import HalfNotDurable, Sent, Work
from tests.support.fake_clock import FakeClock

COMMIT, ROLLBACK, UNKNOW = LocalTransactionState.COMMIT_MESSAGE, LocalTransactionState.ROLLBACK_MESSAGE, LocalTransactionState.UNKNOW


@pytest.fixture
def barrier() -> TransactionBarrier:
    return TransactionBarrier(create_engine("sqlite://"))


def result(status: SendStatus = SendStatus.SEND_OK, state: LocalTransactionState = COMMIT, **extra: Any) -> TransactionSendResult:
    half = HalfSendResult(status=status, transaction_id="tx", msg_id="m", commit_log_offset=0, queue_offset=0)
    return TransactionSendResult(transaction_id="tx", msg_id="m", send_status=status, local_state=state, half=half,
                                 message=OutgoingMessage(body="{}"), **extra)


@pytest.mark.parametrize(("answer", "sent"), [(None, COMMIT), (COMMIT, COMMIT), (UNKNOW, UNKNOW), (ROLLBACK, UNKNOW), ("nonsense", UNKNOW)])
async def test_after_commit_can_only_delay_the_decision_never_roll_back(barrier: TransactionBarrier, answer: Any, sent: Any) -> None:
    work: Work[str] = Work("k", lambda s: "v", after_commit=lambda value: answer)
    assert await barrier._after_commit(work) is sent


async def test_an_async_after_commit_is_awaited(barrier: TransactionBarrier) -> None:
    seen: list[str] = []

    async def hook(value: str) -> LocalTransactionState:
        seen.append(value)
        return UNKNOW

    work: Work[str] = Work("k", lambda s: "v", after_commit=hook, value="v")
    assert await barrier._after_commit(work) is UNKNOW and seen == ["v"]


def test_a_committed_send_hands_back_the_value_and_whether_the_broker_has_it(barrier: TransactionBarrier) -> None:
    work: Work[str] = Work("k", lambda s: "v", value="v")
    sent = barrier._outcome(result(end={"state": "committed"}), work)
    assert isinstance(sent, Sent) and (sent.value, sent.transaction_id, sent.committed) == ("v", "tx", True)
    assert not barrier._outcome(result(state=UNKNOW), work).committed
    assert barrier._outcome(result(end_error=None, state=COMMIT, end=None), work).committed is not False


def test_a_local_failure_is_raised_as_it_was(barrier: TransactionBarrier) -> None:
    boom = ValueError("boom")
    with pytest.raises(ValueError) as raised:
        barrier._outcome(result(state=ROLLBACK, local_error=boom), Work("k", lambda s: None))
    assert raised.value is boom


def test_a_half_not_known_durable_is_a_typed_refusal(barrier: TransactionBarrier) -> None:
    with pytest.raises(HalfNotDurable, match="FLUSH_DISK_TIMEOUT") as raised:
        barrier._outcome(result(SendStatus.FLUSH_DISK_TIMEOUT, ROLLBACK), Work("k", lambda s: None))
    assert raised.value.code == "HALF_NOT_DURABLE"


async def test_a_producer_built_with_another_listener_is_refused(barrier: TransactionBarrier) -> None:
    producer = type("P", (), {"listener": object()})()
    with pytest.raises(ValueError, match="listener is not this barrier"):
        await barrier.send(producer, "T", {"a": 1}, "k", lambda s: None)  # type: ignore[arg-type]


def test_a_check_without_a_transaction_id_is_unknown(barrier: TransactionBarrier) -> None:
    from halfmq.client import Message

    msg = msgspec.convert({"msg_id": "m", "topic": "T", "queue_id": 0, "queue_offset": 0, "commit_log_offset": 0,
                           "born_timestamp": 0, "store_timestamp": 0, "body": "{}"}, Message)
    assert barrier.check_local_transaction(msg) is UNKNOW


async def test_a_local_transaction_past_its_timeout_is_rolled_back_not_committed(tmp_path: Any) -> None:
    from sqlalchemy import func, select

    from halfmq.client.sqlalchemy.barrier_base import LocalTransactionTimedOut
    from halfmq.client.sqlalchemy.records import create_transaction_records

    engine = create_engine(f"sqlite:///{tmp_path}/b.db")
    create_transaction_records(engine)
    clock = FakeClock()
    barrier = TransactionBarrier(engine, local_tx_timeout=0.05, commit_grace=0, retention=60, deadline_clock=clock)
    msg = OutgoingMessage(body="{}", properties={"TRANSACTION_ID": "tx-slow"})
    slow = barrier._work("slow", lambda s: clock.advance(0.1), None)  # the local transaction takes 0.1 s
    with pytest.raises(LocalTransactionTimedOut) as raised:
        await barrier.execute_local_transaction(msg, slow)
    assert raised.value.code == "LOCAL_TRANSACTION_TIMED_OUT"
    fast = barrier._work("fast", lambda s: "ok", None)
    assert await barrier.execute_local_transaction(OutgoingMessage(body="{}", properties={"TRANSACTION_ID": "tx-fast"}), fast) is COMMIT
    with engine.connect() as conn:
        assert list(conn.scalars(select(barrier.table.c.txid))) == ["tx-fast"]
        assert conn.scalar(select(func.count()).select_from(barrier.table)) == 1
