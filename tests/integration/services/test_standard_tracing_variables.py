"""OpenTelemetry's own switches drive halfmq's processes: real broker and credit processes run with
``OTEL_TRACES_EXPORTER=console`` print their spans as JSON on standard output (a send's, a delivered message's), say
in one log line that tracing is on and where the spans go, and print none for health checks or receives that answered
no message; ``OTEL_SDK_DISABLED=true`` prints none at all."""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
import pytest

from halfmq.client import Producer
from tests.support.processes import ServiceProcess
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow

TOPIC = "ORDER_TOPIC"
CONSOLE = {"OTEL_TRACES_EXPORTER": "console", "OTEL_BSP_SCHEDULE_DELAY": "100"}
# A console span is a JSON object printed with an indent of 4: its own "name" is the one key at that depth.
SPAN_NAME = re.compile(r'^ {4}"name": "(.*)",$', re.MULTILINE)


def span_names(log: Path) -> list[str]:
    return SPAN_NAME.findall(log.read_text(errors="replace"))


def test_otel_traces_exporter_console_prints_the_work_and_not_the_idle_requests(start_broker, tmp_path) -> None:
    broker = start_broker(CONSOLE)
    assert httpx.post(f"{broker.url}/v1/topics", json={"name": TOPIC, "queues": 1}).status_code in (200, 201)
    credit = ServiceProcess("credit", tmp_path, {**CONSOLE, "CREDIT_DATABASE_URL": f"sqlite:///{tmp_path}/credit.db",
                                                  "CREDIT_BROKER_URL": broker.url, "CREDIT_WAIT_SECONDS": "1"})
    credit.start()
    try:
        for _ in range(5):
            assert httpx.get(f"{credit.url}/healthz").status_code == 200
            assert httpx.get(f"{broker.url}/healthz").status_code == 200
        time.sleep(3)  # the credit service's consumer long-polls an empty topic (1 s each)
        idle_broker, idle_credit = span_names(broker.log_path), span_names(credit.log_path)
        with Producer(broker.url) as producer:
            producer.send("PLAIN", "hello")
            producer.send(TOPIC, '{"order_id": "o1", "user_id": "u1", "amount": "10.00"}')
        wait_for(lambda: "send PLAIN" in span_names(broker.log_path), timeout=30)
        wait_for(lambda: f"receive {TOPIC}" in span_names(credit.log_path), timeout=30)
    finally:
        credit.stop()
    assert idle_broker == [] and idle_credit == [], (idle_broker, idle_credit)
    assert "GET /healthz" not in span_names(credit.log_path)
    assert "tracing on (OTEL_TRACES_EXPORTER): spans of halfmq-broker go to standard output" in broker.log_path.read_text()
    assert "tracing on (OTEL_TRACES_EXPORTER): spans of halfmq-credit go to standard output" in credit.log_path.read_text()


def test_otel_sdk_disabled_prints_no_span(start_broker) -> None:
    broker = start_broker({**CONSOLE, "OTEL_SDK_DISABLED": "true"})
    with Producer(broker.url) as producer:
        producer.send("PLAIN", "hello")
    time.sleep(1)  # ten times the batch's schedule delay: a span would be out by now
    assert span_names(broker.log_path) == [] and "tracing on" not in broker.log_path.read_text()
