"""FastStream's OpenTelemetry and Prometheus middlewares on ``HalfmqBroker``: one trace from publish to handler, and
the messages counted per topic."""

from __future__ import annotations

from faststream_halfmq import HalfmqBroker
from faststream_halfmq.opentelemetry import HalfmqTelemetryMiddleware
from faststream_halfmq.prometheus import HalfmqPrometheusMiddleware
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from prometheus_client import CollectorRegistry

from tests.integration.faststream_halfmq.conftest import Running, Seen
from tests.support.unique_names import unique


async def test_the_handlers_span_continues_the_publishers_trace(url: str, running: Running, seen: Seen) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    broker, topic = HalfmqBroker(url, middlewares=[HalfmqTelemetryMiddleware(tracer_provider=provider)]), unique("FS")

    @broker.subscriber(topic, group="g")
    async def handle(body: str) -> None:
        seen.add(body)

    async with running(broker) as br:
        await br.publish("traced", topic)
        await seen.at_least(1)
    spans = exporter.get_finished_spans()
    kinds = {s.kind for s in spans}
    assert {SpanKind.PRODUCER, SpanKind.CONSUMER} <= kinds, [(s.name, s.kind) for s in spans]
    assert len({s.context.trace_id for s in spans}) == 1  # publish, receive and process: one trace
    assert all(s.attributes is not None and s.attributes["messaging.system"] == "halfmq" for s in spans)


async def test_received_and_published_messages_are_counted_per_topic(url: str, running: Running, seen: Seen) -> None:
    registry = CollectorRegistry()
    broker, topic = HalfmqBroker(url, middlewares=[HalfmqPrometheusMiddleware(registry=registry)]), unique("FS")

    @broker.subscriber(topic, group="g")
    async def handle(body: str) -> None:
        seen.add(body)

    async with running(broker) as br:
        for n in range(3):
            await br.publish(f"m{n}", topic)
        await seen.at_least(3)
    labels = {"app_name": "faststream", "broker": "halfmq", "handler": topic}
    assert registry.get_sample_value("faststream_received_messages_total", labels) == 3
    assert registry.get_sample_value("faststream_published_messages_total",
                                     {"app_name": "faststream", "broker": "halfmq", "destination": topic, "status": "success"}) == 3
