"""CreditService with a fake ledger: credits, duplicates, poison, database errors, and the reads."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from halfmq.services.credit.credit_service import CreditService
from halfmq.services.credit.rules import PoisonMessage
from tests.unit.services.fakes import DatabaseDown, FakeCreditLedger, broker_message


def order(order_id: str, user_id: str = "u1", amount: str = "10.99") -> dict[str, str]:
    return {"order_id": order_id, "user_id": user_id, "amount": amount, "created_at": "2026-11-22T00:00:00+00:00"}


@pytest.fixture
def ledger() -> FakeCreditLedger:
    return FakeCreditLedger()


@pytest.fixture
def service(ledger: FakeCreditLedger) -> CreditService:
    return CreditService(ledger, points_per_unit=2)


async def test_an_order_message_credits_its_user_whole_units_times_the_rate(service: CreditService, ledger: FakeCreditLedger) -> None:
    message = broker_message(order("o1"))
    assert await service.handle(message) is True
    assert ledger.balances == {"u1": 20}
    assert (ledger.records["o1"].points, ledger.records["o1"].message_id) == (20, message.msg_id)
    assert (service.stats.credited, service.stats.duplicates) == (1, 0)


async def test_the_same_order_delivered_again_credits_nothing_more(service: CreditService, ledger: FakeCreditLedger) -> None:
    await service.handle(broker_message(order("o1")))
    assert await service.handle(broker_message(order("o1"))) is False
    assert ledger.balances == {"u1": 20} and list(ledger.records) == ["o1"]
    assert (service.stats.credited, service.stats.duplicates) == (1, 1)


@pytest.mark.parametrize("body", [order("o1", amount="-3"), order("o1", amount="1.001"), order("o1", amount="abc"), "not json"])
async def test_a_message_with_an_invalid_amount_or_body_is_poison_and_credits_nothing(service: CreditService, ledger, body) -> None:
    with pytest.raises(PoisonMessage) as refused:
        await service.handle(broker_message(body))
    assert refused.value.code == "POISON_MESSAGE" and not refused.value.retriable
    assert ledger.records == {} and service.stats.poison == 1


async def test_a_database_error_is_raised_so_the_message_is_redelivered(service: CreditService, ledger: FakeCreditLedger) -> None:
    ledger.down = True
    with pytest.raises(DatabaseDown):
        await service.handle(broker_message(order("o1")))
    assert service.stats.errors == 1 and service.stats.last_error == "DatabaseDown: the database is down"
    ledger.down = False
    assert await service.handle(broker_message(order("o1"))) is True


async def test_an_account_reads_balance_recent_records_and_count(service: CreditService) -> None:
    for i in range(3):
        await service.handle(broker_message(order(f"o{i}", amount="1.00")))
    account, records, total = await service.account("u1")
    assert account is not None and account.balance == 6 and total == 3
    assert [r.order_id for r in records] == ["o2", "o1", "o0"]
    assert await service.account("nobody") == (None, [], 0)


async def test_the_summary_is_none_before_the_first_run_then_the_published_one(service: CreditService, ledger: FakeCreditLedger) -> None:
    assert await service.summary() is None
    ledger.publish_summary(datetime(2026, 11, 22, tzinfo=UTC), {"u1": 5}, {date(2026, 11, 21): 5})
    run, users, days = await service.summary()
    assert (run.run_id, [u.user_id for u in users], [d.points for d in days]) == ("r1", ["u1"], [5])



async def test_a_refund_takes_its_orders_points_back_once_after_the_order(service: CreditService, ledger: FakeCreditLedger) -> None:
    await service.handle(broker_message(order("o1")))
    refund = {**order("o1"), "kind": "refund"}
    assert await service.handle(broker_message(refund)) is True
    assert await service.handle(broker_message(refund)) is False
    assert ledger.balances == {"u1": 0}
    assert [(r.order_id, r.kind, r.points, r.seq) for r in await service.ledger("u1", 0, 10)] == [("o1", "order", 20, 1), ("o1", "refund", -20, 2)]
    assert [r.seq for r in await service.ledger("u1", 1, 10)] == [2]
