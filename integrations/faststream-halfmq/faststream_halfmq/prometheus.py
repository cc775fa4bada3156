"""FastStream's Prometheus middleware for halfmq: ``HalfmqBroker(middlewares=[HalfmqPrometheusMiddleware(registry=...)])``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from faststream._internal.constants import EMPTY
from faststream.message import StreamMessage
from faststream.prometheus import ConsumeAttrs, MetricsSettingsProvider
from faststream.prometheus.middleware import PrometheusMiddleware

from halfmq import Message

from .response import HalfmqPublishCommand

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

__all__ = ["HalfmqMetricsSettingsProvider", "HalfmqPrometheusMiddleware"]


class HalfmqMetricsSettingsProvider(MetricsSettingsProvider[Message, HalfmqPublishCommand]):
    messaging_system = "halfmq"

    def get_consume_attrs_from_message(self, msg: StreamMessage[Message]) -> ConsumeAttrs:
        return {"destination_name": msg.raw_message.topic, "message_size": len(msg.body), "messages_count": 1}

    def get_publish_destination_name_from_cmd(self, cmd: HalfmqPublishCommand) -> str:
        return cmd.destination


class HalfmqPrometheusMiddleware(PrometheusMiddleware[Message, HalfmqPublishCommand]):
    def __init__(self, *, registry: CollectorRegistry, app_name: str = EMPTY, metrics_prefix: str = "faststream",
                 received_messages_size_buckets: Sequence[float] | None = None,
                 custom_labels: dict[str, str | Callable[[Any], str]] | None = None) -> None:
        super().__init__(settings_provider_factory=lambda _: HalfmqMetricsSettingsProvider(), registry=registry, app_name=app_name,
                         metrics_prefix=metrics_prefix, received_messages_size_buckets=received_messages_size_buckets,
                         custom_labels=custom_labels)
