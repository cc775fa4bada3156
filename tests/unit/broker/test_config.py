import pytest
from pydantic import ValidationError

from halfmq.broker.config import BrokerSettings


@pytest.mark.parametrize("name", ["HALFMQ_BROKER_TRANSACTION_CHECK_INTERVAL", "HALFMQ_BROKER_TRANSACTION_TIMEOUT", "HALFMQ_BROKER_PRODUCER_EXPIRY"])
@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e400"])
def test_a_duration_setting_that_is_not_finite_refuses_to_start(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError):
        BrokerSettings()


def test_finite_duration_settings_are_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HALFMQ_BROKER_TRANSACTION_CHECK_INTERVAL", "0.25")
    assert BrokerSettings().transaction_check_interval == 0.25
