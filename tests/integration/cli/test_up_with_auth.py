"""`halfmq up` turns auth on: tokens generated into the data dir on first start, picked up by the services, reused after a restart."""

from __future__ import annotations

import signal
import stat

import httpx
import pytest
from kafka import KafkaConsumer

from halfmq.broker.config import default_kafka_port
from tests.support.processes import ManagedProcess, free_port, halfmq_command
from tests.support.waiting import wait_for


class Up(ManagedProcess):
    """``halfmq up`` as a real process; it starts credit last, after broker and order are healthy."""

    def __init__(self, data_dir, ports: tuple[int, int, int]) -> None:
        self.data_dir = data_dir
        self.broker, self.order, self.credit = (f"http://127.0.0.1:{p}" for p in ports)
        super().__init__("up", halfmq_command("up", "--no-restart", "--data-dir", str(data_dir), "--broker-port", str(ports[0]),
                                              "--order-port", str(ports[1]), "--credit-port", str(ports[2])),
                         {}, f"{self.credit}/healthz", data_dir.parent / "up.log")

    def __enter__(self) -> Up:
        self.start(timeout=90)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop(grace=60, sig=signal.SIGINT)


def credits(up: Up, user: str) -> int:
    return httpx.get(f"{up.credit}/users/{user}/credits").json()["balance"]


@pytest.mark.slow
def test_up_generates_tokens_on_first_start_and_the_services_use_them_across_a_restart(tmp_path) -> None:
    data = tmp_path / "data"
    up = Up(data, (free_port(), free_port(), free_port()))
    with up:
        auth = data / "auth"
        for name in ("auth.json", "admin.token", "order.token", "credit.token", "order_producer_group.check-secret"):
            assert stat.S_IMODE((auth / name).stat().st_mode) == 0o600, name
        admin_token = (auth / "admin.token").read_text().strip()
        assert admin_token not in (auth / "auth.json").read_text()
        assert httpx.post(f"{up.broker}/v1/topics/ORDER_TOPIC/messages", json={"messages": [{"body": "forged"}]}).status_code == 401
        placed = httpx.post(f"{up.order}/orders", json={"user_id": "u1", "amount": "4"}, timeout=30)
        assert placed.status_code == 201, placed.text
        wait_for(lambda: credits(up, "u1") == 4, timeout=30)
    with up:  # restarted on the same data dir: same tokens, still working
        assert (data / "auth" / "admin.token").read_text().strip() == admin_token
        placed = httpx.post(f"{up.order}/orders", json={"user_id": "u1", "amount": "1"}, timeout=30)
        assert placed.status_code == 201, placed.text
        wait_for(lambda: credits(up, "u1") == 5, timeout=30)
        listing = httpx.get(f"{up.broker}/v1/transactions", headers={"authorization": f"Bearer {admin_token}"})
        assert listing.status_code == 200


@pytest.mark.slow
def test_up_creates_the_order_topic_before_the_services_start_so_its_first_run_logs_no_error(tmp_path) -> None:
    up = Up(tmp_path / "data", (free_port(), free_port(), free_port()))
    with up:
        admin = {"authorization": f"Bearer {(tmp_path / 'data' / 'auth' / 'admin.token').read_text().strip()}"}
        assert httpx.get(f"{up.broker}/v1/topics/ORDER_TOPIC", headers=admin).status_code == 200
        credit_token = (tmp_path / "data" / "auth" / "credit.token").read_text().strip()
        kafka = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{default_kafka_port(int(up.broker.rsplit(':', 1)[1]))}",
                              security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", sasl_plain_username="credit",
                              sasl_plain_password=credit_token)
        assert "ORDER_TOPIC" in kafka.topics()  # up serves Kafka's clients too, signed in as up's own principals
        kafka.close()
        placed = httpx.post(f"{up.order}/orders", json={"user_id": "u9", "amount": "2"}, timeout=30)
        assert placed.status_code == 201, placed.text
        wait_for(lambda: credits(up, "u9") == 2, timeout=30)
    log = (tmp_path / "up.log").read_text()
    assert log.index("topics ready: ORDER_TOPIC") < log.index("order healthy at")
    assert " ERROR " not in log, [line for line in log.splitlines() if " ERROR " in line][:5]
