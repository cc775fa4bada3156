from broker.transaction.check_policy import CheckDecision, CheckPolicy, decide, first_check_at, next_check_at, parse_immunity

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
