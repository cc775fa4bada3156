"""A FastStream broker for halfmq (DESIGN section 20): ``HalfmqBroker``, its routers, ``TestHalfmqBroker``.

The OpenTelemetry and Prometheus middlewares live in ``faststream_halfmq.opentelemetry`` and
``faststream_halfmq.prometheus`` (they need FastStream's ``otel`` and ``prometheus`` extras).
"""

from faststream_halfmq.broker import HalfmqBroker, HalfmqPublisherArgs, HalfmqRoute, HalfmqRouter
from faststream_halfmq.half_messages import HalfMessagePublisher
from faststream_halfmq.message import HalfmqMessage
from faststream_halfmq.publisher import HalfmqPublisher
from faststream_halfmq.response import HalfmqResponse
from faststream_halfmq.subscriber import HalfmqSubscriber
from faststream_halfmq.testing import TestHalfmqBroker

__all__ = ["HalfMessagePublisher", "HalfmqBroker", "HalfmqMessage", "HalfmqPublisher", "HalfmqPublisherArgs", "HalfmqResponse", "HalfmqRoute",
           "HalfmqRouter", "HalfmqSubscriber", "TestHalfmqBroker"]
