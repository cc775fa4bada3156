"""OpenTelemetry in halfmq, shared by the SDK, the broker and the services: the one switch, the names, the set-up.

Off unless a tracer provider is configured, and then free: every hook asks ``tracer()`` first, which answers
None without importing OpenTelemetry when no one has imported it (a program that configures a provider has),
and otherwise only compares the global provider with the API's default proxy. So ``pip install halfmq`` carries
``opentelemetry-api`` (one package) and pays nothing for it until a program turns tracing on: a program of
its own by setting a provider (``opentelemetry-sdk``), halfmq's processes (broker, order, credit) with
``HALFMQ_TRACES=otlp|console`` (``start``, needs ``pip install 'halfmq[otel]'``; docs/tracing.md).

The trace context travels in the message's ``properties`` as W3C ``traceparent``/``tracestate`` (the global
propagator's keys), so a consumer's process span, the broker's spans and a check-back continue the producer's
trace. Span names and attributes follow OpenTelemetry's messaging conventions, with ``messaging.system`` =
``rocketmq``: halfmq speaks RocketMQ's model (half messages, producer and consumer groups).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Tracer

__all__ = ["EXPORTERS", "INSTRUMENTATION", "SYSTEM", "TRACES_ENV", "Exporter", "attributes", "extract", "inject", "start", "tracer"]

TRACES_ENV = "HALFMQ_TRACES"
Exporter = Literal["otlp", "console"]
EXPORTERS: tuple[Exporter, ...] = ("otlp", "console")
INSTRUMENTATION = "halfmq"
SYSTEM = "rocketmq"  # halfmq's model is RocketMQ's (half messages, groups); semantic conventions' value for it

# The attribute names, spelled once (OpenTelemetry semantic conventions 1.27, messaging; halfmq.* are halfmq's own).
OPERATION_NAME = "messaging.operation.name"
OPERATION_TYPE = "messaging.operation.type"
DESTINATION = "messaging.destination.name"
MESSAGE_ID = "messaging.message.id"
CONSUMER_GROUP = "messaging.consumer.group.name"
CLIENT_GROUP = "messaging.rocketmq.client_group"  # the producer group
MESSAGE_TYPE = "messaging.rocketmq.message.type"
MESSAGE_TAG = "messaging.rocketmq.message.tag"
BATCH_COUNT = "messaging.batch.message_count"
TRANSACTION_ID = "halfmq.transaction.id"
TRANSACTION_STATE = "halfmq.transaction.state"
FROM_CHECK = "halfmq.transaction.from_check"
CHECK_TIMES = "halfmq.check.times"
CHECK_OUTCOME = "halfmq.check.outcome"
DELIVERY_ATTEMPT = "halfmq.delivery.attempt"

_cached: tuple[object, Tracer] | None = None
_NOT_THERE = object()
_PROVIDER_FROM_ENVIRONMENT = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ  # the API's own variable for a provider


def tracer() -> Tracer | None:
    """The tracer to make halfmq's spans with, or None while tracing is off (no provider set): every hook's first question."""
    global _cached  # one tracer per provider, asked for once
    module = sys.modules.get("opentelemetry.trace")
    if module is None:
        return None  # nobody imported the API, so nobody set a provider
    # The global itself rather than get_tracer_provider(), which looks in os.environ on every call while none is set
    # (half a microsecond): a provider named by the environment is read once, at this module's import.
    provider: Any = getattr(module, "_TRACER_PROVIDER", _NOT_THERE)
    if provider is None and not _PROVIDER_FROM_ENVIRONMENT:
        return None
    if provider is None or provider is _NOT_THERE:
        provider = module.get_tracer_provider()
    if isinstance(provider, (module.ProxyTracerProvider, module.NoOpTracerProvider)):
        return None
    cached = _cached
    if cached is not None and cached[0] is provider:
        return cached[1]
    version = getattr(sys.modules.get("halfmq"), "__version__", None)  # the package is loaded: this module is in it
    made: Tracer = provider.get_tracer(INSTRUMENTATION, version)
    _cached = (provider, made)
    return made


def attributes(operation: str, kind: str | None, destination: str, **more: Any) -> dict[str, Any]:
    """A messaging span's attributes: the system, the operation's name and type, the destination, and ``more`` (None left out)."""
    found: dict[str, Any] = {"messaging.system": SYSTEM, OPERATION_NAME: operation, DESTINATION: destination}
    if kind is not None:
        found[OPERATION_TYPE] = kind
    found.update((key, value) for key, value in more.items() if value is not None)
    return found


def inject(carrier: MutableMapping[str, str], context: Context | None = None) -> None:
    """Write the current (or ``context``'s) trace context into ``carrier``: ``traceparent`` and ``tracestate``."""
    from opentelemetry import propagate

    propagate.inject(carrier, context)


def extract(carrier: Mapping[str, str]) -> Context:
    """The trace context ``carrier`` holds (message properties or HTTP headers); the current one if it holds none."""
    from opentelemetry import propagate

    return propagate.extract(carrier)


def start(exporter: str | None, service_name: str) -> bool:
    """Turn tracing on for this process (its start-up calls this once): spans exported by ``exporter``, batched.

    ``otlp``: OTLP over HTTP/protobuf to ``$OTEL_EXPORTER_OTLP_ENDPOINT`` (default http://localhost:4318);
    ``console``: each span printed as JSON on standard output. ``$OTEL_SERVICE_NAME`` (else ``service_name``)
    names the process; the rest of the standard ``OTEL_*`` variables apply. None or "" leaves tracing off (False).
    Needs ``pip install 'halfmq[otel]'`` (opentelemetry-sdk and the OTLP exporter).
    """
    if not exporter:
        return False
    if exporter not in EXPORTERS:
        raise ValueError(f"{TRACES_ENV} must be one of {', '.join(EXPORTERS)}, not {exporter!r}")
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
    except ImportError as exc:
        raise RuntimeError(f"{TRACES_ENV}={exporter} needs OpenTelemetry's SDK: pip install 'halfmq[otel]' ({exc})") from None
    span_exporter: SpanExporter
    if exporter == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        span_exporter = OTLPSpanExporter()
    else:
        span_exporter = ConsoleSpanExporter()
    name = os.environ.get("OTEL_SERVICE_NAME") or service_name
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: name}))
    provider.add_span_processor(BatchSpanProcessor(span_exporter))
    trace.set_tracer_provider(provider)
    return True
