"""Ending built from fakes: an end is the producer group's to make; a refused end reaches no transaction."""

from __future__ import annotations

import pytest

from halfmq.broker.half_messages.half_records import EndOutcome
from halfmq.broker.security.access import ANONYMOUS, Access
from halfmq.broker.security.policy import Action, Resource
from halfmq.broker.store.flush_waiter import FlushTimedOut
from halfmq.broker.usecases.ending import Ending
from halfmq.errors import AccessDenied
from halfmq.wire import EndItem, EndRequest
from tests.unit.broker.usecases.fakes import SCOPE, DenyingAccess, FakeHalfMessages, FakeViews, RecordingDurable, tx


def ending(access: Access | None = None) -> tuple[Ending, FakeHalfMessages, RecordingDurable]:
    half_messages, durable = FakeHalfMessages(outcome=EndOutcome(tx("tx-1", "PG", end_offset=77), duplicate=False)), RecordingDurable()
    return Ending(access or Access(None), half_messages, FakeViews(), durable), half_messages, durable  # type: ignore[arg-type]


async def test_an_end_is_applied_for_the_group_it_names_and_answered_with_the_transactions_view() -> None:
    use_case, half_messages, _ = ending()
    view = await use_case.end_transaction(ANONYMOUS, SCOPE, "tx-1", EndRequest(producer_group="PG", state="commit"))
    assert half_messages.ends == [("tx-1", "PG", "commit", False)]
    assert view == (half_messages.outcome.tx, False)  # type: ignore[union-attr]


async def test_an_end_for_a_group_the_principal_may_not_publish_for_is_refused_and_reaches_no_transaction() -> None:
    use_case, half_messages, _ = ending(DenyingAccess((Action.PUBLISH, Resource.group("PG"))))
    with pytest.raises(AccessDenied):
        await use_case.end(ANONYMOUS, SCOPE, "tx-1", "PG", "commit")
    with pytest.raises(AccessDenied):
        use_case.end_item(ANONYMOUS, SCOPE, EndItem(transaction_id="tx-1", producer_group="PG", state="rollback"))
    assert half_messages.ends == []


def test_a_batch_item_is_ended_without_a_wait() -> None:
    use_case, half_messages, durable = ending()
    outcome = use_case.end_item(ANONYMOUS, SCOPE, EndItem(transaction_id="tx-1", producer_group="PG", state="rollback"))
    assert outcome.tx.end_offset == 77
    assert half_messages.ends == [("tx-1", "PG", "rollback", False)] and durable.waited == []


async def test_a_batch_waits_once_for_its_largest_end_and_answers_a_timeout_as_a_value() -> None:
    use_case, _, durable = ending()
    assert await use_case.flushed(99) is None
    assert durable.waited == [99]

    async def timing_out(end: int) -> None:
        raise FlushTimedOut("flush timed out")

    use_case.durable = timing_out
    assert isinstance(await use_case.flushed(99), FlushTimedOut)
