import pytest
from pydantic import ValidationError

from halfmq.broker.config import BrokerSettings, default_grpc_port


@pytest.mark.parametrize("name", ["HALFMQ_BROKER_TRANSACTION_CHECK_INTERVAL", "HALFMQ_BROKER_TRANSACTION_TIMEOUT", "HALFMQ_BROKER_PRODUCER_EXPIRY"])
@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e400"])
def test_a_duration_setting_that_is_not_finite_refuses_to_start(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError):
        BrokerSettings()


def test_finite_duration_settings_are_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HALFMQ_BROKER_TRANSACTION_CHECK_INTERVAL", "0.25")
    assert BrokerSettings().transaction_check_interval == 0.25


@pytest.mark.parametrize(("port", "grpc"), [(10911, 8081), (10912, 8082), (10913, 8083), (20000, 17170), (3854, 1024), (3000, 5830), (0, 0)])
def test_the_grpc_port_is_derived_from_the_http_port_unless_set(port: int, grpc: int) -> None:
    assert default_grpc_port(port) == grpc
    assert BrokerSettings(port=port).grpc_port == grpc


def test_a_grpc_port_that_is_set_is_kept_and_zero_turns_the_front_off(monkeypatch: pytest.MonkeyPatch) -> None:
    assert BrokerSettings(port=10912, grpc_port=9000).grpc_port == 9000
    monkeypatch.setenv("HALFMQ_BROKER_GRPC_PORT", "0")
    assert BrokerSettings(port=10912).grpc_port == 0


def test_brokers_on_different_unprivileged_http_ports_derive_different_grpc_ports() -> None:
    derived = [default_grpc_port(port) for port in range(3854, 65536)]
    assert all(1024 <= p <= 65535 for p in derived) and len(set(derived)) == len(derived)
    assert all(1024 <= default_grpc_port(port) <= 65535 for port in range(1, 3854))


def test_the_journal_is_on_unless_halfmq_broker_journal_is_false(monkeypatch: pytest.MonkeyPatch) -> None:
    assert BrokerSettings().journal is True
    monkeypatch.setenv("HALFMQ_BROKER_JOURNAL", "false")
    assert BrokerSettings().journal is False


def test_a_principals_cap_of_remembered_numbers_must_hold_one_producers_full_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HALFMQ_BROKER_IDEMPOTENT_SEND_WINDOW", "64")
    monkeypatch.setenv("HALFMQ_BROKER_IDEMPOTENT_SEQUENCES_PER_PRINCIPAL", "127")
    with pytest.raises(ValidationError, match="at least twice idempotent_send_window"):
        BrokerSettings()
    monkeypatch.setenv("HALFMQ_BROKER_IDEMPOTENT_SEQUENCES_PER_PRINCIPAL", "128")
    assert BrokerSettings().idempotent_sequences_per_principal == 128


@pytest.mark.parametrize(("value", "seconds"), [("604800", 604_800.0), ("7d", 604_800.0), ("12h", 43_200.0), ("30s", 30.0)])
def test_the_retention_is_a_duration_in_seconds_or_with_a_unit(monkeypatch: pytest.MonkeyPatch, value: str, seconds: float) -> None:
    monkeypatch.setenv("HALFMQ_BROKER_RETENTION", value)
    assert BrokerSettings().retention == seconds


def test_retention_keeps_seven_days_and_no_size_limit_by_default() -> None:
    settings = BrokerSettings()
    assert (settings.retention, settings.retention_bytes) == (7 * 86400.0, None)


@pytest.mark.parametrize(("name", "value"), [("HALFMQ_BROKER_RETENTION", "0"), ("HALFMQ_BROKER_RETENTION", "7y"),
                                             ("HALFMQ_BROKER_RETENTION", "inf"), ("HALFMQ_BROKER_RETENTION_BYTES", "0")])
def test_a_retention_that_is_not_a_positive_span_or_size_refuses_to_start(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError):
        BrokerSettings()


def test_the_kafka_advertised_address_is_derived_from_the_advertise_url_and_the_kafka_port_unless_set() -> None:
    assert BrokerSettings(kafka_port=9092).kafka_advertised() == ("127.0.0.1", 9092)
    assert BrokerSettings(kafka_port=9092, host="0.0.0.0", advertise_url="http://broker:10911").kafka_advertised() == ("broker", 9092)


@pytest.mark.parametrize(("value", "address"), [("127.0.0.1:19092", ("127.0.0.1", 19092)), ("kafka.example.com:9093", ("kafka.example.com", 9093)),
                                                ("[::1]:9092", ("::1", 9092)), (" localhost:1 ", ("localhost", 1))])
def test_a_kafka_advertised_address_that_is_set_is_what_clients_are_sent_to(monkeypatch: pytest.MonkeyPatch, value: str, address: tuple[str, int]) -> None:
    monkeypatch.setenv("HALFMQ_BROKER_KAFKA_ADVERTISE", value)
    assert BrokerSettings(kafka_port=9092, host="0.0.0.0").kafka_advertised() == address


@pytest.mark.parametrize("value", ["broker", "broker:", ":9092", "broker:0", "broker:65536", "broker:port", "http://broker:9092", "0.0.0.0:9092", "[::]:9092"])
def test_a_kafka_advertised_address_that_is_not_a_reachable_host_and_port_refuses_to_start(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("HALFMQ_BROKER_KAFKA_ADVERTISE", value)
    with pytest.raises(ValidationError, match="kafka_advertise"):
        BrokerSettings(kafka_port=9092)


def test_the_removed_fetch_replication_refuses_to_start_and_the_stream_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HALFMQ_BROKER_REPLICATION", "fetch")
    with pytest.raises(ValidationError, match="HALFMQ_BROKER_REPLICATION=fetch was removed"):
        BrokerSettings()
    monkeypatch.setenv("HALFMQ_BROKER_REPLICATION", "stream")
    BrokerSettings()
