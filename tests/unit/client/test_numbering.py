"""The SDK's numbering: how far ahead of a stuck send new numbers may go (no I/O)."""

from __future__ import annotations

from halfmq.client.numbering import SPREAD, Numbering, _key
from halfmq.wire import ProducerIdResult


def _numbering() -> Numbering:
    numbering = Numbering()
    numbering.initialised(ProducerIdResult(producer_id=7, epoch=0))
    return numbering


def test_new_numbers_stop_spread_past_the_oldest_unsettled_send_until_it_settles() -> None:
    numbering = _numbering()
    taken = [numbering.take() for _ in range(SPREAD)]
    assert not numbering.may_take()  # sequence SPREAD would be SPREAD past sequence 0, still in retries
    for numbers in taken[1:]:
        numbering._outstanding.discard(_key(numbers))
    assert not numbering.may_take(), "the oldest alone holds the spread"
    numbering._outstanding.discard(_key(taken[0]))
    assert numbering.may_take()


def test_sends_of_an_earlier_producer_id_do_not_hold_back_the_new_one() -> None:
    numbering = _numbering()
    for _ in range(SPREAD):
        numbering.take()
    numbering.initialised(ProducerIdResult(producer_id=8, epoch=0))
    assert numbering.may_take()
