"""The transactional producer's numbering, without I/O: what goes out next and with which sequence number."""

import pytest

from halfmq.client.producer_transaction_steps import TransactionalSteps
from halfmq.errors import InvalidTxnState, ProducerFenced
from halfmq.wire import OutgoingMessage, TxnAcksResult, TxnInitResult, TxnMessagesResult, to_wire


def ready(batch_size: int = 2) -> TransactionalSteps:
    steps = TransactionalSteps("tid", None, batch_size)
    steps.initialised(TxnInitResult(transactional_id="tid", producer_id=7, epoch=3, transaction_timeout_ms=60_000))
    steps.begin()
    steps.begun()
    return steps


def msg(body: str) -> OutgoingMessage:
    return OutgoingMessage(body=body, properties={"UNIQ_KEY": body})


def test_nothing_goes_out_before_init_and_begin() -> None:
    steps = TransactionalSteps("tid", None, 10)
    with pytest.raises(InvalidTxnState):
        steps.begin()
    steps.initialised(TxnInitResult(transactional_id="tid", producer_id=7, epoch=3, transaction_timeout_ms=60_000))
    with pytest.raises(InvalidTxnState):
        steps.add("OUT", msg("a"))


def test_batches_are_numbered_in_order_and_carry_the_producer_id_and_epoch() -> None:
    steps = ready(batch_size=2)
    assert steps.add("OUT", msg("a")) is False
    assert steps.add("OUT", msg("b")) is True
    steps.add("OTHER", msg("c"))
    first = steps.next_pending()
    assert first is not None
    assert (to_wire(first.body)["sequence"], to_wire(first.body)["producer_id"], to_wire(first.body)["epoch"]) == (1, 7, 3)
    assert [(m["topic"], m["body"]) for m in to_wire(first.body)["messages"]] == [("OUT", "a"), ("OUT", "b")]
    steps.answered(TxnMessagesResult(transactional_id="tid", sequence=1, messages=2, results=[]))
    second = steps.next_pending()
    assert second is not None and to_wire(second.body)["sequence"] == 2 and [m["topic"] for m in to_wire(second.body)["messages"]] == ["OTHER"]
    steps.answered(TxnMessagesResult(transactional_id="tid", sequence=2, messages=3, results=[]))
    assert steps.next_pending() is None
    assert to_wire(steps.acks(["h1"]).body)["sequence"] == 3


def test_a_request_without_an_answer_goes_again_with_the_same_number_before_anything_new() -> None:
    steps = ready(batch_size=1)
    steps.add("OUT", msg("a"))
    lost = steps.next_pending()
    steps.add("OUT", msg("b"))  # sent by the caller after the failure
    again = steps.next_pending()
    assert again is lost and again is not None and to_wire(again.body)["sequence"] == 1
    steps.answered(TxnMessagesResult(transactional_id="tid", sequence=1, messages=1, results=[], duplicate=True))
    then = steps.next_pending()
    assert then is not None and to_wire(then.body)["sequence"] == 2 and to_wire(then.body)["messages"][0]["body"] == "b"
    steps.answered(TxnAcksResult(transactional_id="tid", sequence=2, acks=0))


def test_once_fenced_the_producer_refuses_everything_without_asking_the_broker() -> None:
    steps = ready()
    steps.failed(ProducerFenced("epoch 3 is fenced"))
    for step in (steps.begin, steps.commit, steps.abort, steps.init):
        with pytest.raises(ProducerFenced):
            step()
