import pytest

from halfmq.broker.half_messages.check_policy import (
    MAX_IMMUNITY_SECONDS,
    CheckDecision,
    CheckPolicy,
    decide,
    first_check_at,
    immunity_seconds,
    next_check_at,
    parse_immunity,
)

POLICY = CheckPolicy(transaction_timeout=6, check_interval=5, check_max=3)


def test_young_half_message_is_not_due() -> None:
    due = first_check_at(100.0, POLICY, None)
    assert due == 106.0
    assert decide(now=105.9, due_at=due, check_times=0, has_producer=True, policy=POLICY) is CheckDecision.NOT_DUE


def test_old_enough_half_message_is_checked() -> None:
    assert decide(now=106.0, due_at=106.0, check_times=0, has_producer=True, policy=POLICY) is CheckDecision.CHECK


def test_immunity_property_overrides_the_timeout() -> None:
    assert first_check_at(100.0, POLICY, 60.0) == 160.0
    assert first_check_at(100.0, POLICY, parse_immunity("not-a-number")) == 106.0
    assert first_check_at(100.0, POLICY, parse_immunity("0")) == 106.0


def test_no_producer_means_no_check_and_nothing_counted() -> None:
    assert decide(now=200, due_at=106, check_times=1, has_producer=False, policy=POLICY) is CheckDecision.NO_PRODUCER


def test_checked_max_times_is_discarded_even_without_a_producer() -> None:
    assert decide(now=200, due_at=106, check_times=3, has_producer=True, policy=POLICY) is CheckDecision.DISCARD
    assert decide(now=200, due_at=106, check_times=3, has_producer=False, policy=POLICY) is CheckDecision.DISCARD


def test_discard_waits_until_the_message_is_due_again() -> None:
    assert decide(now=110, due_at=111, check_times=3, has_producer=True, policy=POLICY) is CheckDecision.NOT_DUE


def test_next_check_follows_the_interval() -> None:
    assert next_check_at(150.0, POLICY) == 155.0


@pytest.mark.parametrize("text", ["0", "30", "1.5", "86400", "007"])
def test_immunity_is_a_plain_decimal_number_of_seconds_up_to_a_day(text: str) -> None:
    assert immunity_seconds(text) == float(text) <= MAX_IMMUNITY_SECONDS


@pytest.mark.parametrize("text", ["1e400", "inf", "nan", "-1", "86400.5", "1e3", " 5", "0x10", "1_000", "\u0663", "", ".5", "5."])
def test_immunity_that_is_not_a_plain_number_of_seconds_up_to_a_day_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        immunity_seconds(text)


def test_an_immunity_stored_before_the_rule_existed_falls_back_to_the_timeout() -> None:
    # Halves written by an older broker may carry "inf" or "1e400": they are checked after the timeout,
    # and the views that render the next check time stay finite.
    for stored in ("inf", "1e400", "nan", "-5", "999999999"):
        assert first_check_at(100.0, POLICY, parse_immunity(stored)) == 106.0


@pytest.mark.parametrize(("immunity", "due"), [(0.5, 100.5), (1.0, 101.0), (0.001, 100.001)])
def test_an_immunity_under_a_second_is_honoured(immunity: float, due: float) -> None:
    assert first_check_at(100.0, POLICY, immunity) == due


def test_a_stored_immunity_is_read_as_seconds() -> None:
    assert parse_immunity("30") == 30.0
    assert parse_immunity("0.25") == 0.25


def test_a_half_without_an_immunity_has_none() -> None:
    assert parse_immunity(None) is None
    assert parse_immunity("") is None


def test_a_refused_immunity_says_what_is_allowed_and_quotes_the_value_cut_short() -> None:
    with pytest.raises(ValueError) as info:
        immunity_seconds("9" * 100)
    message = str(info.value)
    assert "86400" in message and "plain decimal digits" in message
    assert repr("9" * 40) in message


def test_the_check_decisions_have_their_names() -> None:
    assert {d.value for d in CheckDecision} == {"not_due", "check", "discard", "no_producer"}
