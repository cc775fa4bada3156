from decimal import Decimal

import orjson
import pytest

from halfmq.services.credit.rules import PoisonMessage, apply_sequence, credit_points, parse_order_message, points_for
from halfmq.services.order_events import OrderEvent


@pytest.mark.parametrize(("amount", "rate", "points"), [("12.99", 1, 12), ("0.99", 1, 0), ("100.00", 3, 300), ("1", 10, 10)])
def test_points_are_whole_units_times_the_rate(amount: str, rate: int, points: int) -> None:
    assert points_for(Decimal(amount), rate) == points


def test_a_well_formed_order_message_parses() -> None:
    cmd = parse_order_message(b'{"order_id": "o1", "user_id": "u1", "amount": "12.50", "created_at": "x"}')
    assert (cmd.order_id, cmd.user_id, cmd.amount) == ("o1", "u1", Decimal("12.50"))


@pytest.mark.parametrize("body", [
    b"not json", b"[1,2]", b'"text"', b"{}",
    b'{"order_id": "o1", "user_id": "u1"}',
    b'{"order_id": "o1", "user_id": "u1", "amount": "-5"}',
    b'{"order_id": "o1", "user_id": "u1", "amount": "0"}',
    b'{"order_id": "o1", "user_id": "u1", "amount": "abc"}',
    b'{"order_id": "o1", "user_id": "u1", "amount": "1.001"}',
    b'{"order_id": "o1", "user_id": "u1", "amount": "NaN"}',
    b'{"order_id": 5, "user_id": "u1", "amount": "1"}',
])
def test_malformed_messages_are_poison(body: bytes) -> None:
    with pytest.raises(PoisonMessage):
        parse_order_message(body)


def message(order_id: object = "o1", user_id: object = "u1", amount: object = "12.50") -> bytes:
    return orjson.dumps({"order_id": order_id, "user_id": user_id, "amount": amount})


@pytest.mark.parametrize("amount", ["0.01", "0.5", "0.99", "1", 3, 7.25])
def test_any_positive_amount_in_cents_is_credited(amount: object) -> None:
    assert parse_order_message(message(amount=amount)).amount == Decimal(str(amount))


@pytest.mark.parametrize("amount", ["0", "0.00", "-0.01", "-1"])
def test_an_amount_of_zero_or_less_is_poison(amount: str) -> None:
    with pytest.raises(PoisonMessage, match="positive"):
        parse_order_message(message(amount=amount))


def test_ids_of_up_to_64_characters_are_accepted() -> None:
    cmd = parse_order_message(message(order_id="o" * 64, user_id="u" * 64))
    assert (cmd.order_id, cmd.user_id) == ("o" * 64, "u" * 64)


@pytest.mark.parametrize(("order_id", "user_id"), [("o" * 65, "u1"), ("o1", "u" * 65), ("o" * 65, "u" * 65)])
def test_an_id_longer_than_64_characters_is_poison(order_id: str, user_id: str) -> None:
    with pytest.raises(PoisonMessage, match="at most 64 characters"):
        parse_order_message(message(order_id=order_id, user_id=user_id))


@pytest.mark.parametrize(("order_id", "user_id"), [(5, "u1"), ("o1", 7), ("o1", ["u"])])
def test_an_id_that_is_not_a_string_is_poison(order_id: object, user_id: object) -> None:
    with pytest.raises(PoisonMessage, match="must be strings"):
        parse_order_message(message(order_id=order_id, user_id=user_id))


@pytest.mark.parametrize(("body", "reason"), [
    (b"not json", "not JSON"),
    (b"[1,2]", "not a JSON object"),
    (b'{"order_id": "o1", "amount": "1"}', "missing fields: \\['user_id'\\]"),
    (b'{"order_id": "o1", "user_id": "u1", "amount": "abc"}', "'abc' is not a number"),
    (b'{"order_id": "o1", "user_id": "u1", "amount": "1.001"}', "'1.001' must be positive with at most 2 decimals"),
])
def test_a_poison_message_says_why(body: bytes, reason: str) -> None:
    with pytest.raises(PoisonMessage, match=reason):
        parse_order_message(body)


def test_a_refund_message_parses_as_a_refund_keyed_apart_from_its_order() -> None:
    order = parse_order_message(b'{"order_id": "o1", "user_id": "u1", "amount": "12.50"}')
    refund = parse_order_message(b'{"order_id": "o1", "user_id": "u1", "amount": "12.50", "kind": "refund"}')
    assert (order.event, refund.event) == (OrderEvent.ORDER, OrderEvent.REFUND)
    assert (order.inbox_key, refund.inbox_key) == ("o1", "refund:o1")
    assert (credit_points(order, 2), credit_points(refund, 2)) == (24, -24)


def test_a_message_of_an_unknown_kind_is_poison() -> None:
    with pytest.raises(PoisonMessage):
        parse_order_message(b'{"order_id": "o1", "user_id": "u1", "amount": "1", "kind": "chargeback"}')


def test_a_batch_numbers_each_users_messages_in_the_order_it_applies_them() -> None:
    # u1 had 3 applied before this batch (5 with it), u2 none (1 with it).
    assert apply_sequence(["u1", "u2", "u1"], {"u1": 5, "u2": 1}) == [4, 1, 5]
