"""A batch route's items are answered one by one: once items are written, nothing fails the request as a whole."""

from __future__ import annotations

import logging

import msgspec
import pytest

from halfmq.broker.api.routes.transaction_batches import _each
from halfmq.errors import SequenceNumberReused


class Item(msgspec.Struct):
    n: int


def test_a_bug_in_one_item_answers_that_item_with_a_500_and_the_items_written_before_and_after_keep_their_answers(
        caplog: pytest.LogCaptureFixture) -> None:
    written: list[int] = []

    def run(item: Item) -> int:
        if item.n == 1:
            raise TypeError("'list' object is not a mapping")  # issue 30 item 6's bug, as any bug would
        if item.n == 2:
            raise SequenceNumberReused("used for another request")
        written.append(item.n)
        return item.n

    with caplog.at_level(logging.ERROR):
        done = _each([{"n": 0}, {"n": 1}, {"n": 2}, {"n": 3}, {"n": "x"}], Item, "/v1/transaction-batches/half", run)
    assert done[0] == 0 and done[3] == 3 and written == [0, 3]
    bug, reused, invalid = done[1]["problem"], done[2]["problem"], done[4]["problem"]
    assert (bug["status"], bug["code"]) == (500, "BROKER_ERROR") and "not a mapping" not in bug["detail"]
    assert (reused["status"], reused["code"]) == (409, "SEQUENCE_NUMBER_REUSED")
    assert invalid["status"] == 400
    assert any("item 1" in r.getMessage() and r.exc_info for r in caplog.records)
