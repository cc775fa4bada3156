"""Which calls the batch routes take, and how a batch answer becomes each caller's outcome."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from halfmq.client import endpoints
from halfmq.client.transaction_batches import END_BATCH_PATH, HALF_BATCH_PATH, TransactionBatches, batch_call, batch_item
from halfmq.errors import BrokerError, ProducerGroupMismatch, SystemTopicForbidden
from halfmq.wire import HalfSendResult, OutgoingMessage, to_wire


def _on_the_wire(item: tuple[str, Any] | None) -> tuple[str, Any]:
    """A batch route and its item as JSON-ready builtins, as the broker reads it."""
    assert item is not None
    return item[0], to_wire(item[1])


def test_a_half_send_is_an_item_of_the_batch_half_route_with_its_body() -> None:
    call = endpoints.half_send("pg", "T", OutgoingMessage(body="x"))
    assert _on_the_wire(batch_item(call)) == (HALF_BATCH_PATH, {"producer_group": "pg", "topic": "T", "message": {"body": "x"}})


def test_an_end_is_an_item_of_the_batch_end_route_with_its_transaction_id() -> None:
    call = endpoints.end_transaction("C0A8/01%", "pg", "commit")
    assert _on_the_wire(batch_item(call)) == (END_BATCH_PATH, {"transaction_id": "C0A8/01%", "producer_group": "pg",
                                                               "state": "commit", "from_check": False})


def test_other_calls_are_not_batched() -> None:
    assert batch_item(endpoints.get_transaction("T1")) is None
    assert batch_item(endpoints.producer_heartbeat("pg", "c", None)) is None
    assert batch_item(endpoints.send("T", [OutgoingMessage(body="x")])) is None


def test_an_items_problem_becomes_the_typed_error_of_its_code() -> None:
    call = batch_call(HALF_BATCH_PATH, [{}, {}, {}])
    outcomes = call.parse({"results": [
        {"status": "SEND_OK", "transaction_id": "T", "msg_id": "M", "commit_log_offset": 0, "queue_offset": 0},
        {"problem": SystemTopicForbidden("no").to_problem()},
        {"problem": {"code": "SOMETHING_NEWER", "status": 409, "detail": "new", "retriable": False}},
    ]})
    assert outcomes[0]["transaction_id"] == "T"
    assert isinstance(outcomes[1], SystemTopicForbidden) and outcomes[1].status == SystemTopicForbidden.status
    assert type(outcomes[2]) is BrokerError and outcomes[2].code == "SOMETHING_NEWER" and outcomes[2].status == 409


def test_an_answer_with_too_few_results_fails_the_batch_rather_than_mismatch_callers() -> None:
    with pytest.raises(BrokerError, match="1 results for 2 items"):
        batch_call(END_BATCH_PATH, [{}, {}]).parse({"results": [{}]})


async def test_each_caller_gets_its_own_parsed_result_or_error_through_one_request() -> None:
    sent = []

    async def transport(call):
        sent.append(call)
        items = to_wire(call.body)["items"]
        return call.parse({"results": [
            {"problem": ProducerGroupMismatch("not yours").to_problem()} if item["producer_group"] == "other" else
            {"status": "SEND_OK", "transaction_id": item["message"]["body"], "msg_id": "M", "commit_log_offset": 0, "queue_offset": 0}
            for item in items]})

    batches = TransactionBatches(transport)
    outcomes = await asyncio.gather(
        batches.call(endpoints.half_send("pg", "T", OutgoingMessage(body="a"))),
        batches.call(endpoints.half_send("other", "T", OutgoingMessage(body="b"))),
        batches.call(endpoints.half_send("pg", "T", OutgoingMessage(body="c"))),
        return_exceptions=True,
    )
    assert [c.path for c in sent] == [HALF_BATCH_PATH]
    assert isinstance(outcomes[0], HalfSendResult) and outcomes[0].transaction_id == "a"
    assert isinstance(outcomes[1], ProducerGroupMismatch)
    assert isinstance(outcomes[2], HalfSendResult) and outcomes[2].transaction_id == "c"
