"""The transaction's steps walked with plain values: each step answered by a script, no HTTP.

Both producers run exactly this sequence (through ``step_drivers``), so what is
pinned here holds for the blocking and the asyncio producer alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from halfmq.client import AsyncTransactionProducer, LocalTransactionState, TransactionSendResult
from halfmq.client.half_message_steps import Request, RunLocalTransaction, Step, end_state, send_in_transaction
from halfmq.client.retry import is_retriable
from halfmq.client.step_drivers import retry_on, run_steps, run_steps_async
from halfmq.client.transport import request_not_sent
from halfmq.errors import BrokerUnavailable, CheckUrlRefused, StoreUnavailable
from halfmq.wire import HalfSendResult, OutgoingMessage, SendStatus, to_wire

COMMIT = LocalTransactionState.COMMIT_MESSAGE
ROLLBACK = LocalTransactionState.ROLLBACK_MESSAGE
UNKNOW = LocalTransactionState.UNKNOW
MESSAGE = OutgoingMessage(body="order 7", keys="order-7")


class Crash(BaseException):
    """The process dying inside the local transaction."""


def half(status: SendStatus = SendStatus.SEND_OK) -> HalfSendResult:
    return HalfSendResult(status=status, transaction_id="tx-1", msg_id="m-1", commit_log_offset=0, queue_offset=0)


@dataclass
class Script:
    """Answers each step as a broker and a listener would, and records the steps asked for."""

    half_answer: HalfSendResult | Exception = field(default_factory=half)
    local_answer: Callable[[OutgoingMessage, Any], Any] = lambda msg, arg: COMMIT
    end_answer: Exception | None = None
    steps: list[Step] = field(default_factory=list)

    def perform(self, step: Step) -> Any:
        self.steps.append(step)
        if isinstance(step, RunLocalTransaction):
            return self.local_answer(step.message, step.arg)
        if step.call.path == "/v1/transactions":
            return _answer(self.half_answer)
        if self.end_answer is not None:
            raise self.end_answer
        return {"transaction_id": "tx-1", "state": to_wire(step.call.body)["state"]}

    async def perform_async(self, step: Step) -> Any:
        return self.perform(step)

    def ended_with(self) -> str | None:
        ends = [to_wire(s.call.body)["state"] for s in self.steps if isinstance(s, Request) and s.call.path.endswith("/end")]
        assert len(ends) <= 1
        return ends[0] if ends else None

    def ran_local(self) -> bool:
        return any(isinstance(s, RunLocalTransaction) for s in self.steps)


def _answer(value: HalfSendResult | Exception) -> HalfSendResult:
    if isinstance(value, Exception):
        raise value
    return value


def run(script: Script, arg: Any = None) -> TransactionSendResult:
    return run_steps(send_in_transaction("pg", "Orders", MESSAGE, arg), script.perform)


def raise_(exc: BaseException) -> Callable[[OutgoingMessage, Any], Any]:
    def execute(msg: OutgoingMessage, arg: Any) -> Any:
        raise exc

    return execute


def test_a_committed_local_transaction_is_ended_with_commit() -> None:
    script = Script()
    result = run(script, arg={"amount": 3})
    assert [type(s) for s in script.steps] == [Request, RunLocalTransaction, Request]
    assert script.ended_with() == "commit"
    assert result.local_state is COMMIT and result.end == {"transaction_id": "tx-1", "state": "commit"}
    assert result.end_error is None and result.local_error is None


def test_the_local_transaction_sees_the_message_with_its_transaction_id_and_the_callers_arg() -> None:
    seen: list[tuple[OutgoingMessage, Any]] = []
    script = Script(local_answer=lambda msg, arg: seen.append((msg, arg)) or COMMIT)
    result = run(script, arg="the arg")
    msg, arg = seen[0]
    assert arg == "the arg"
    assert msg.properties["TRANSACTION_ID"] == "tx-1" and msg.properties["PGROUP"] == "pg"
    assert msg.properties["TRAN_MSG"] == "true" and msg.body == "order 7"
    assert result.message == msg


def test_a_failed_half_send_never_runs_the_local_transaction() -> None:
    script = Script(half_answer=StoreUnavailable("disk full"))
    with pytest.raises(StoreUnavailable):
        run(script)
    assert not script.ran_local()
    assert script.ended_with() is None


def test_a_half_stored_without_send_ok_is_rolled_back_without_running_the_local_transaction() -> None:
    script = Script(half_answer=half(SendStatus.FLUSH_DISK_TIMEOUT))
    result = run(script)
    assert not script.ran_local()
    assert script.ended_with() == "rollback"
    assert result.local_state is ROLLBACK and result.send_status is SendStatus.FLUSH_DISK_TIMEOUT


def test_an_exception_in_the_local_transaction_ends_with_rollback(caplog: pytest.LogCaptureFixture) -> None:
    boom = ValueError("insufficient funds")
    script = Script(local_answer=raise_(boom))
    result = run(script)
    assert script.ended_with() == "rollback"
    assert result.local_state is ROLLBACK and result.local_error is boom
    assert any("execute_local_transaction failed" in r.getMessage() and r.exc_info for r in caplog.records)


def test_a_crash_in_the_local_transaction_propagates_and_sends_no_end() -> None:
    script = Script(local_answer=raise_(Crash()))
    with pytest.raises(Crash):
        run(script)
    assert script.ran_local()
    assert script.ended_with() is None


@pytest.mark.parametrize("answer", [UNKNOW, None, "maybe", 42], ids=["UNKNOW", "None", "a stray string", "a number"])
def test_an_unknown_or_unrecognised_answer_ends_as_unknown_for_the_check_back(answer: Any) -> None:
    script = Script(local_answer=lambda msg, arg: answer)
    result = run(script)
    assert script.ended_with() == "unknown"
    assert result.local_state is UNKNOW


@pytest.mark.parametrize("answer", ["commit", "COMMIT_MESSAGE", "rollback", "ROLLBACK_MESSAGE"])
def test_a_state_given_by_value_or_by_name_ends_with_that_state(answer: str) -> None:
    script = Script(local_answer=lambda msg, arg: answer)
    run(script)
    assert script.ended_with() == answer.split("_")[0].lower()


def test_a_failed_end_is_returned_not_raised() -> None:
    lost = BrokerUnavailable("connection reset")
    script = Script(end_answer=lost)
    result = run(script)
    assert result.end is None and result.end_error is lost
    assert result.local_state is COMMIT


def test_only_the_end_may_be_retried_after_the_request_could_have_arrived() -> None:
    script = Script()
    run(script)
    half_send, _, end = script.steps
    assert isinstance(half_send, Request) and isinstance(end, Request)
    assert retry_on(half_send) is request_not_sent
    assert retry_on(end) is is_retriable


async def test_the_asyncio_driver_walks_the_same_steps() -> None:
    for local_answer, ended in ((lambda msg, arg: COMMIT, "commit"), (raise_(ValueError("no")), "rollback")):
        script = Script(local_answer=local_answer)
        result = await run_steps_async(send_in_transaction("pg", "Orders", MESSAGE, None), script.perform_async)
        assert [type(s) for s in script.steps] == [Request, RunLocalTransaction, Request]
        assert script.ended_with() == ended and result.local_state.value == ended


async def test_the_asyncio_driver_lets_a_crash_through_without_an_end() -> None:
    script = Script(local_answer=raise_(Crash()))
    with pytest.raises(Crash):
        await run_steps_async(send_in_transaction("pg", "Orders", MESSAGE, None), script.perform_async)
    assert script.ended_with() is None


@pytest.mark.parametrize("state", [COMMIT, "commit", "COMMIT_MESSAGE"])
def test_an_end_state_may_be_given_as_member_value_or_name(state: Any) -> None:
    assert end_state(state) == "commit"


def test_an_end_state_that_is_no_state_is_refused() -> None:
    with pytest.raises(ValueError, match="not a transaction state"):
        end_state("done")


class Listener:
    def execute_local_transaction(self, msg: Any, arg: Any) -> LocalTransactionState:
        return COMMIT

    def check_local_transaction(self, msg: Any) -> LocalTransactionState:
        return UNKNOW


def producer(check_url: str | None = "http://127.0.0.1:8001/check") -> AsyncTransactionProducer:
    return AsyncTransactionProducer("http://127.0.0.1:9", "pg", Listener(), check_url=check_url, client_id="c-1",
                                    check_backs=check_url is not None)


def test_start_registers_the_check_url_with_a_first_heartbeat_and_asks_for_the_heartbeat_loop() -> None:
    base, steps = producer(), []
    assert run_steps(base._start_steps(), lambda step: steps.append(step)) is True
    assert [to_wire(s.call.body) for s in steps if isinstance(s, Request)] == [
        {"producer_group": "pg", "client_id": "c-1", "check_url": "http://127.0.0.1:8001/check"}
    ]
    assert run_steps(base._start_steps(), lambda step: steps.append(step)) is False  # started once only
    assert len(steps) == 1


def test_a_first_heartbeat_the_broker_cannot_take_yet_still_starts_the_producer() -> None:
    base = producer()
    assert run_steps(base._start_steps(), raise_step(BrokerUnavailable("not up yet"))) is True
    assert base._started


def test_a_refused_check_url_fails_start_and_leaves_the_producer_unstarted() -> None:
    base = producer()
    with pytest.raises(CheckUrlRefused):
        run_steps(base._start_steps(), raise_step(CheckUrlRefused("not on check_url_allow")))
    assert not base._started
    with pytest.raises(RuntimeError, match="start"):
        base._send_steps("Orders", "body", None, {})


def test_without_check_backs_start_makes_no_request_and_needs_no_heartbeat_loop() -> None:
    base, steps = producer(check_url=None), []
    assert run_steps(base._start_steps(), lambda step: steps.append(step)) is False
    assert steps == [] and base._started


def raise_step(exc: Exception) -> Callable[[Step], Any]:
    def perform(step: Step) -> Any:
        raise exc

    return perform


def test_a_send_with_also_puts_each_companion_with_its_topic_and_own_id_on_the_one_half_request() -> None:
    base = producer()
    base._started = True
    script = Script()
    due = OutgoingMessage(body="pay order 7", delay_ms=1_800_000)
    result = run_steps(base._send_steps("Orders", MESSAGE, None, {}, [("PAYMENT_DUE", due), ("AUDIT", {"order": 7})]), script.perform)
    [half_call] = [s.call for s in script.steps if isinstance(s, Request) and s.call.path == "/v1/transactions"]
    also = to_wire(half_call.body)["also"]
    assert [(m["topic"], m["body"], m.get("delay_ms")) for m in also] == [("PAYMENT_DUE", "pay order 7", 1_800_000), ("AUDIT", '{"order":7}', None)]
    assert all(m["properties"]["UNIQ_KEY"] for m in also) and [m.topic for m in result.also] == ["PAYMENT_DUE", "AUDIT"]
    assert script.ended_with() == "commit"  # one end decides them all
    plain = Script()
    run_steps(send_in_transaction("pg", "Orders", MESSAGE, None), plain.perform)
    assert isinstance(plain.steps[0], Request) and "also" not in to_wire(plain.steps[0].call.body)  # without companions: the body as before


def test_more_companions_than_the_broker_takes_are_refused_before_any_request() -> None:
    base = producer()
    base._started = True
    with pytest.raises(ValueError, match="at most 16"):
        base._send_steps("Orders", MESSAGE, None, {}, [("PAYMENT_DUE", "x")] * 17)
