import pytest

from halfmq.client.sqlalchemy.horizon import CheckAnswer, Horizon, check_answer, half_age_seconds

HORIZON = Horizon(local_tx_timeout=30, commit_grace=30)


def test_the_horizon_is_the_local_timeout_plus_the_commit_grace() -> None:
    assert HORIZON.seconds == 60
    assert Horizon().seconds == 60
    assert Horizon(10, 0).seconds == 10


def test_a_found_record_commits_at_any_age() -> None:
    assert check_answer(True, 0.0, HORIZON) is CheckAnswer.COMMIT
    assert check_answer(True, 9999.0, HORIZON) is CheckAnswer.COMMIT


def test_a_missing_record_is_unknown_while_the_local_transaction_or_its_commit_may_still_run() -> None:
    assert check_answer(False, 0.0, HORIZON) is CheckAnswer.UNKNOWN
    assert check_answer(False, 30.5, HORIZON) is CheckAnswer.UNKNOWN, "past the local timeout, but within the grace"
    assert check_answer(False, 60.0, HORIZON) is CheckAnswer.UNKNOWN, "at the horizon itself"


def test_a_missing_record_older_than_the_horizon_rolls_back() -> None:
    assert check_answer(False, 60.001, HORIZON) is CheckAnswer.ROLLBACK
    assert check_answer(False, 1e6, HORIZON) is CheckAnswer.ROLLBACK


def test_the_age_comes_from_the_born_timestamp_in_milliseconds() -> None:
    now = 1_700_000_100.0  # a fake clock
    assert half_age_seconds(1_700_000_000_000, now) == pytest.approx(100.0)
    assert half_age_seconds(1_700_000_100_500, now) == pytest.approx(-0.5), "a broker clock ahead gives a negative age"
    assert check_answer(False, half_age_seconds(1_700_000_100_500, now), HORIZON) is CheckAnswer.UNKNOWN


@pytest.mark.parametrize(("timeout", "grace", "says"), [(0, 30, "^local_tx_timeout must be positive$"),
                                                       (-1, 30, "^local_tx_timeout must be positive$"),
                                                       (30, -0.1, "^commit_grace must be >= 0$")])
def test_a_horizon_that_could_roll_back_a_running_transaction_is_refused(timeout: float, grace: float, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        Horizon(timeout, grace)


def test_a_local_timeout_under_a_second_is_allowed() -> None:
    assert Horizon(0.5, 0).seconds == 0.5
    assert Horizon(1, 0).seconds == 1


def test_a_zero_grace_is_allowed() -> None:
    assert Horizon(5, 0).seconds == 5


def test_the_answers_have_the_brokers_wire_names() -> None:
    assert [a.value for a in CheckAnswer] == ["commit", "rollback", "unknown"]
