from decimal import Decimal

import pytest
from pydantic import ValidationError

from halfmq.services.order.rules import fingerprint, order_sent, refund_key
from halfmq.services.order.schemas import OrderCreate


@pytest.mark.parametrize("amount", ["0.01", "12.5", "12.50", 7, "1000000000"])
def test_valid_amounts_are_kept_exact(amount) -> None:
    order = OrderCreate(user_id="u-1", amount=amount)
    assert order.amount == Decimal(str(amount))
    assert order.amount.as_tuple().exponent == -2


@pytest.mark.parametrize("amount", ["0", "-1", "0.001", "12.345", "NaN", "Infinity", "1000000000.01", "abc", None, True])
def test_invalid_amounts_are_refused(amount) -> None:
    with pytest.raises(ValidationError):
        OrderCreate(user_id="u-1", amount=amount)


@pytest.mark.parametrize("amount", ["\uff14\uff12.\uff11\uff10", "\uff14\uff12", "\u0661\u0662", "4\uff12.10", "\u0968\u0968"])
def test_an_amount_in_digits_other_than_ascii_is_refused(amount: str) -> None:
    with pytest.raises(ValidationError, match="ASCII digits"):
        OrderCreate(user_id="u-1", amount=amount)


@pytest.mark.parametrize("user_id", ["", "x" * 65, "has space", "semi;colon", "ünïcode"])
def test_invalid_user_ids_are_refused(user_id: str) -> None:
    with pytest.raises(ValidationError):
        OrderCreate(user_id=user_id, amount="1.00")


def test_unknown_fields_are_refused() -> None:
    with pytest.raises(ValidationError):
        OrderCreate(user_id="u", amount="1", coupon="FREE")


def test_idempotency_fingerprint_ignores_amount_formatting_but_not_value() -> None:
    assert fingerprint("u", Decimal("12.5")) == fingerprint("u", Decimal("12.50"))
    assert fingerprint("u", Decimal("12.5")) != fingerprint("u", Decimal("12.51"))
    assert fingerprint("u", Decimal("1")) != fingerprint("v", Decimal("1"))


def test_the_fingerprint_is_the_user_and_the_amount_in_cents() -> None:
    assert fingerprint("u-1", Decimal("12.5")) == "u-1|12.50"
    assert fingerprint("u-1", Decimal("7")) == "u-1|7.00"


def test_an_order_is_sent_once_its_transaction_committed_or_is_forgotten_and_not_while_pending_or_rolled_back() -> None:
    assert order_sent("committed")
    assert order_sent(None)  # forgotten after retention, or the record purged: long past its check-backs
    assert not order_sent("pending")
    assert not order_sent("rolled_back")
    assert not order_sent("discarded")
    assert not order_sent("COMMITTED")


def test_a_refund_has_one_business_key_per_order() -> None:
    assert refund_key("o-1") == "refund:o-1"
    assert refund_key("o-1") != refund_key("o-2")
