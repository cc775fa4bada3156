"""FastStream's OpenTelemetry middleware for halfmq: ``HalfmqBroker(middlewares=[HalfmqTelemetryMiddleware()])``.

The publish span's context travels in the message's properties (``traceparent``), which the SDK also stamps when
tracing is on and the broker links its own spans to, so producer, broker and consumer share one trace.
"""

from __future__ import annotations

from typing import Any

from faststream.message import StreamMessage
from faststream.opentelemetry import TelemetryMiddleware, TelemetrySettingsProvider
from faststream.opentelemetry.consts import MESSAGING_DESTINATION_PUBLISH_NAME
from opentelemetry.metrics import Meter, MeterProvider
from opentelemetry.semconv.trace import SpanAttributes
from opentelemetry.trace import TracerProvider

from halfmq import Message

from .response import HalfmqPublishCommand

__all__ = ["HalfmqTelemetryMiddleware", "HalfmqTelemetrySettingsProvider"]


class HalfmqTelemetrySettingsProvider(TelemetrySettingsProvider[Message, HalfmqPublishCommand]):
    messaging_system = "halfmq"

    def get_consume_attrs_from_message(self, msg: StreamMessage[Message]) -> dict[str, Any]:
        return {SpanAttributes.MESSAGING_SYSTEM: self.messaging_system, SpanAttributes.MESSAGING_MESSAGE_ID: msg.message_id,
                SpanAttributes.MESSAGING_MESSAGE_CONVERSATION_ID: msg.correlation_id,
                SpanAttributes.MESSAGING_MESSAGE_PAYLOAD_SIZE_BYTES: len(msg.body),
                MESSAGING_DESTINATION_PUBLISH_NAME: msg.raw_message.topic}

    def get_consume_destination_name(self, msg: StreamMessage[Message]) -> str:
        return str(msg.raw_message.topic)

    def get_publish_attrs_from_cmd(self, cmd: HalfmqPublishCommand) -> dict[str, Any]:
        return {SpanAttributes.MESSAGING_SYSTEM: self.messaging_system, SpanAttributes.MESSAGING_DESTINATION_NAME: cmd.destination,
                SpanAttributes.MESSAGING_MESSAGE_CONVERSATION_ID: cmd.correlation_id}

    def get_publish_destination_name(self, cmd: HalfmqPublishCommand) -> str:
        return cmd.destination


class HalfmqTelemetryMiddleware(TelemetryMiddleware[HalfmqPublishCommand]):
    def __init__(self, *, tracer_provider: TracerProvider | None = None, meter_provider: MeterProvider | None = None,
                 meter: Meter | None = None, include_messages_counters: bool = True) -> None:
        super().__init__(settings_provider_factory=lambda _: HalfmqTelemetrySettingsProvider(), tracer_provider=tracer_provider,
                         meter_provider=meter_provider, meter=meter, include_messages_counters=include_messages_counters)
