"""OrderService with fakes: every path of placing an order, and the domain error each refusal raises."""

from __future__ import annotations

from decimal import Decimal

import orjson
import pytest

from halfmq.client import SendStatus
from halfmq.services.order.errors import (
    BrokerNotDurable,
    BrokerUnreachable,
    FaultsDisabled,
    IdempotencyKeyReused,
    LocalTransactionFailed,
    OrderAlreadyRefunded,
    OrderNotFound,
    OrderNotSent,
    UnknownFault,
)
from halfmq.services.order.local_transaction import Fault
from halfmq.services.order.models import Order
from halfmq.services.order.order_service import OrderService
from halfmq.services.order.schemas import OrderCreate
from tests.unit.services.fakes import FakeOrderRepository

ORDER = OrderCreate(user_id="u1", amount=Decimal("12.50"))


async def test_a_placed_order_is_stored_and_its_message_committed(service: OrderService, repo, sender) -> None:
    placed = await service.place(ORDER, None, None)
    assert (placed.message_state, placed.replayed) == ("committed", False)
    assert repo.get(placed.order.order_id) is placed.order
    assert sender.transaction_of(placed.order.order_id) == placed.transaction_id
    [message] = sender.committed()
    assert orjson.loads(message.body) == {"order_id": placed.order.order_id, "user_id": "u1", "amount": "12.50",
                                          "created_at": placed.order.created_at.isoformat()}
    assert message.keys == [placed.order.order_id] and message.tag == "order_created"


async def test_a_retry_with_the_same_key_and_body_replays_the_first_order(service: OrderService, sender) -> None:
    first = await service.place(ORDER, "k-1", None)
    again = await service.place(OrderCreate(user_id="u1", amount=Decimal("12.5")), "k-1", None)
    assert again.replayed and again.order.order_id == first.order.order_id
    assert (again.message_state, again.transaction_id) == ("committed", first.transaction_id)
    assert len(sender.sent) == 1


async def test_a_key_reused_for_another_body_is_refused_and_sends_nothing(service: OrderService, sender) -> None:
    await service.place(ORDER, "k-1", None)
    with pytest.raises(IdempotencyKeyReused) as refused:
        await service.place(OrderCreate(user_id="u1", amount=Decimal("99.00")), "k-1", None)
    assert refused.value.code == "IDEMPOTENCY_KEY_REUSED" and not refused.value.retriable
    assert len(sender.sent) == 1


async def test_a_replay_while_the_broker_is_down_answers_pending_check(service: OrderService, sender) -> None:
    first = await service.place(ORDER, "k-1", None)
    sender.down = True
    again = await service.place(ORDER, "k-1", None)
    assert again.replayed and again.order.order_id == first.order.order_id and again.message_state == "pending_check"


async def test_a_request_that_lost_the_race_for_its_key_replays_the_winner(repo: FakeOrderRepository, service: OrderService, sender) -> None:
    winner = await service.place(ORDER, "k-race", None)
    lookups = iter([None])  # the loser's first lookup ran before the winner committed
    real_lookup = repo.by_idempotency_key
    repo.by_idempotency_key = lambda key: next(lookups, real_lookup(key))  # type: ignore[method-assign]
    loser = await service.place(ORDER, "k-race", None)
    assert loser.replayed and loser.order.order_id == winner.order.order_id
    assert len(repo.orders) == 1 and len(sender.committed()) == 1
    assert [t["state"] for t in sender.transactions.values()] == ["committed", "rolled_back"]


async def test_a_down_broker_places_no_order(service: OrderService, repo, sender) -> None:
    sender.down = True
    with pytest.raises(BrokerUnreachable) as refused:
        await service.place(ORDER, "k-1", None)
    assert refused.value.code == "BROKER_UNAVAILABLE" and refused.value.retriable
    assert "BROKER_UNAVAILABLE" in refused.value.detail
    assert repo.orders == {} and repo.keys == {}


async def test_a_half_message_not_known_durable_is_rolled_back_before_the_local_transaction(service: OrderService, repo, sender) -> None:
    sender.half_status = SendStatus.FLUSH_DISK_TIMEOUT
    with pytest.raises(BrokerNotDurable) as refused:
        await service.place(ORDER, None, None)
    assert refused.value.code == "BROKER_NOT_DURABLE" and refused.value.retriable
    assert "FLUSH_DISK_TIMEOUT" in refused.value.detail
    assert repo.orders == {} and sender.committed() == []


async def test_a_failed_local_transaction_stores_nothing_and_rolls_the_message_back(service: OrderService, repo, sender) -> None:
    with pytest.raises(LocalTransactionFailed) as refused:
        await service.place(ORDER, "k-1", Fault.FAIL_LOCAL_TX)
    assert refused.value.code == "LOCAL_TRANSACTION_FAILED" and refused.value.retriable
    assert refused.value.detail == "injected fault: fail-local-tx"
    assert repo.orders == {} and repo.keys == {}
    assert [t["state"] for t in sender.transactions.values()] == ["rolled_back"]


async def test_a_database_error_in_the_local_transaction_rolls_the_message_back(service: OrderService, repo, sender) -> None:
    repo.down = True
    with pytest.raises(LocalTransactionFailed, match="could not be stored: DatabaseDown"):
        await service.place(ORDER, None, None)
    assert sender.committed() == []


async def test_a_dropped_end_answers_pending_check_with_the_order_stored(service: OrderService, repo, sender) -> None:
    placed = await service.place(ORDER, None, Fault.DROP_END)
    assert placed.message_state == "pending_check" and repo.exists(placed.order.order_id)
    assert sender.transactions[placed.transaction_id]["state"] == "pending"


async def test_an_end_lost_on_the_way_answers_pending_check(service: OrderService, repo, sender) -> None:
    sender.end_lost = True
    placed = await service.place(ORDER, None, None)
    assert placed.message_state == "pending_check" and repo.exists(placed.order.order_id)


def test_a_fault_header_is_refused_while_faults_are_off(repo, sender) -> None:
    with pytest.raises(FaultsDisabled):
        OrderService(repo, sender, sender, "ORDER_TOPIC", faults_enabled=False).parse_fault("drop-end")


def test_an_unknown_fault_is_refused_and_no_header_means_no_fault(service: OrderService) -> None:
    with pytest.raises(UnknownFault, match="fail-local-tx"):
        service.parse_fault("set-fire")
    assert service.parse_fault(None) is None
    assert service.parse_fault("drop-end") is Fault.DROP_END


async def test_reading_an_unknown_order_raises_order_not_found(service: OrderService) -> None:
    with pytest.raises(OrderNotFound, match="'nope'"):
        await service.get("nope")


async def test_orders_of_a_user_are_paged_in_creation_order(service: OrderService) -> None:
    placed = [await service.place(OrderCreate(user_id="u-page", amount=Decimal(i)), None, None) for i in (1, 2, 3)]
    await service.place(OrderCreate(user_id="someone-else", amount=Decimal(1)), None, None)
    page = await service.orders_of("u-page", 2, 1)
    assert [o.order_id for o in page] == [p.order.order_id for p in placed[1:]]


async def test_an_orders_message_is_in_its_users_message_group(service: OrderService, sender) -> None:
    await service.place(ORDER, None, None)
    [message] = sender.committed()
    assert message.message_group == "u1"


async def test_a_refund_is_sent_in_its_orders_message_group_and_marks_the_order_refunded(service: OrderService, repo, sender) -> None:
    placed = await service.place(ORDER, None, None)
    refunded = await service.refund(placed.order.order_id)
    assert (refunded.order.status, refunded.message_state) == ("refunded", "committed")
    assert repo.get(placed.order.order_id).status == "refunded"
    order_message, refund_message = sender.committed()
    assert refund_message.message_group == order_message.message_group == "u1"
    assert refund_message.keys == [placed.order.order_id] and refund_message.tag == "order_refunded"
    body = orjson.loads(refund_message.body)
    assert (body["order_id"], body["user_id"], body["amount"], body["kind"]) == (placed.order.order_id, "u1", "12.50", "refund")
    assert sender.transaction_of(f"refund:{placed.order.order_id}") == refunded.transaction_id


async def test_a_second_refund_is_refused_with_the_same_answer_and_sends_nothing(service: OrderService, sender) -> None:
    placed = await service.place(ORDER, None, None)
    await service.refund(placed.order.order_id)
    for _ in range(2):
        with pytest.raises(OrderAlreadyRefunded) as refused:
            await service.refund(placed.order.order_id)
        assert refused.value.code == "ORDER_ALREADY_REFUNDED" and not refused.value.retriable
    assert len(sender.sent) == 2


async def test_a_refund_that_loses_the_race_in_its_local_transaction_is_rolled_back(service: OrderService, repo, sender) -> None:
    placed = await service.place(ORDER, None, None)
    created = placed.order
    # Read before another refund committed: the status check passes, the local transaction refuses.
    repo.get = lambda order_id: Order(order_id=created.order_id, user_id=created.user_id, amount=created.amount,  # type: ignore[method-assign]
                                      status="created", created_at=created.created_at)
    await service.refund(placed.order.order_id)
    with pytest.raises(OrderAlreadyRefunded):
        await service.refund(placed.order.order_id)
    assert len(sender.committed()) == 2 and len(sender.sent) == 3


async def test_an_unknown_order_cannot_be_refunded(service: OrderService, sender) -> None:
    with pytest.raises(OrderNotFound):
        await service.refund("nope")
    assert sender.sent == []


async def test_an_order_whose_message_waits_for_its_check_back_is_not_refunded_yet(service: OrderService, sender) -> None:
    sender.end_lost = True
    placed = await service.place(ORDER, None, None)
    sender.end_lost = False
    with pytest.raises(OrderNotSent) as refused:
        await service.refund(placed.order.order_id)
    assert refused.value.code == "ORDER_NOT_SENT" and refused.value.retriable
    assert len(sender.sent) == 1
    sender.transactions[placed.transaction_id]["state"] = "committed"  # the check-back committed it
    assert (await service.refund(placed.order.order_id)).order.status == "refunded"


async def test_a_refund_while_the_broker_is_down_is_a_broker_error(service: OrderService, sender) -> None:
    placed = await service.place(ORDER, None, None)
    sender.down = True
    with pytest.raises(BrokerUnreachable):
        await service.refund(placed.order.order_id)
