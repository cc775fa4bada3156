from decimal import Decimal

import pytest

from halfmq.services.credit.rules import PoisonMessage, parse_order_message, points_for


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
