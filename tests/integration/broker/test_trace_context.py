"""A message's trace context is the producer's word: a real broker links to it and never adopts it (issue 42).

The broker runs as a real process with ``HALFMQ_TRACES=otlp`` pointed at a collector in the test. A producer that
puts a chosen ``traceparent`` in its messages' properties used to get the broker's spans filed under its trace id;
now every broker span is in a trace of the broker's own with a link to the producer's context. An oversize
``traceparent`` or ``tracestate`` used to cost one OpenTelemetry warning per message in the broker's log; now it is
dropped with one line for the whole process.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.support.otlp_collector import CollectedSpan, OtlpCollector
from tests.support.processes import BrokerProcess
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow

TOPIC = "TRACED"
CHOSEN_TRACE = "0af7651916cd43dd8448eb211c80319c"
CHOSEN_SPAN = "b7ad6b7169203331"
CHOSEN = f"00-{CHOSEN_TRACE}-{CHOSEN_SPAN}-01"


@pytest.fixture
def traced(start_broker) -> Iterator[tuple[OtlpCollector, BrokerProcess]]:
    with OtlpCollector() as collector:
        broker = start_broker({"HALFMQ_TRACES": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100"})
        httpx.post(f"{broker.url}/v1/topics", json={"name": TOPIC, "queues": 1}, timeout=10).raise_for_status()
        yield collector, broker


def send(broker: BrokerProcess, messages: list[dict]) -> None:
    httpx.post(f"{broker.url}/v1/topics/{TOPIC}/messages", json={"messages": messages}, timeout=30).raise_for_status()


def receive_all(broker: BrokerProcess, count: int) -> None:
    got = 0
    while got < count:
        answer = httpx.post(f"{broker.url}/v1/consumer-groups/readers/topics/{TOPIC}/receive",
                            json={"max_messages": 100, "wait_seconds": 2}, timeout=30).json()
        assert answer["messages"], f"{got} of {count} received"
        got += len(answer["messages"])


def broker_spans(collector: OtlpCollector, name: str, count: int) -> list[CollectedSpan]:
    return wait_for(lambda: found if len(found := [s for s in collector.spans if s.name == name]) >= count else None, timeout=30)


def test_the_brokers_spans_link_to_a_producers_trace_context_and_are_filed_under_their_own(traced) -> None:
    collector, broker = traced
    send(broker, [{"body": "chosen", "properties": {"traceparent": CHOSEN}}])
    receive_all(broker, 1)
    [sent] = broker_spans(collector, f"send {TOPIC}", 1)
    [delivered] = broker_spans(collector, f"deliver {TOPIC}", 1)
    for span in (sent, delivered):
        assert span.trace_id != CHOSEN_TRACE and span.parent_id == "", span
        assert span.links == ((CHOSEN_TRACE, CHOSEN_SPAN),), span
    assert not collector.trace(CHOSEN_TRACE)


def test_oversize_trace_headers_on_a_hundred_messages_cost_one_log_line(traced) -> None:
    collector, broker = traced
    oversize_parent = {"traceparent": CHOSEN + "-" + "0" * 600}
    oversize_state = {"traceparent": CHOSEN, "tracestate": ",".join(f"k{i}=" + "v" * 200 for i in range(45))}  # 9.4 KB
    for first in range(0, 100, 10):  # batches that fit the test broker's 256 KiB segments
        send(broker, [{"body": str(i), "properties": oversize_parent if i % 2 else oversize_state} for i in range(first, first + 10)])
    receive_all(broker, 100)
    delivered = broker_spans(collector, f"deliver {TOPIC}", 100)

    log = broker.log_path.read_text(errors="replace").splitlines()
    about_trace_headers = [line for line in log if "traceparent" in line or "tracestate" in line]
    assert len(about_trace_headers) == 1, (len(about_trace_headers), about_trace_headers[:3])
    assert "dropped a trace context" in about_trace_headers[0]
    assert sum(1 for s in delivered if s.links == ((CHOSEN_TRACE, CHOSEN_SPAN),)) == 50  # the traceparent beside a dropped tracestate
