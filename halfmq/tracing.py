"""OpenTelemetry in halfmq, shared by the SDK, the broker and the services: the one switch, the names, the set-up.

Off unless a tracer provider is configured, and then free: every hook asks ``tracer()`` first, which answers
None without importing OpenTelemetry when no one has imported it (a program that configures a provider has),
and otherwise only compares the global provider with the API's default proxy. So ``pip install halfmq`` carries
``opentelemetry-api`` (one package) and pays nothing for it until a program turns tracing on: a program of
its own by setting a provider (``opentelemetry-sdk``), halfmq's processes (broker, order, credit) with
``HALFMQ_TRACES=otlp|console`` (``start``, needs ``pip install 'halfmq[otel]'``; docs/tracing.md).

The trace context travels in the message's ``properties`` as W3C ``traceparent``/``tracestate`` (the global
propagator's keys), so a consumer's process span continues the producer's trace; the broker's spans link to it
from the broker's own trace (a producer does not choose the broker's trace id). ``extract`` reads a context a
client wrote, so it drops trace headers past the W3C bounds (``unusable_trace_headers``, in bytes) before the
propagator sees them, with one log line per process instead of OpenTelemetry's warning per message. Span names and
attributes follow OpenTelemetry's messaging conventions, with ``messaging.system`` = ``rocketmq``: halfmq speaks
RocketMQ's model (half messages, producer and consumer groups).
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Tracer

__all__ = ["EXPORTERS", "INSTRUMENTATION", "SYSTEM", "TRACES_ENV", "Exporter", "attributes", "extract", "inject", "start", "tracer",
           "unusable_trace_headers"]

log = logging.getLogger(__name__)

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


# What a trace header may be, in bytes (W3C Trace Context and Baggage; OpenTelemetry's propagators drop longer ones with
# a warning each time): past these, or malformed where the propagator would warn, a header is dropped here instead.
TRACEPARENT_MAX_BYTES = 512
TRACESTATE_MAX_BYTES = 8192
TRACESTATE_MAX_MEMBERS = 32
BAGGAGE_MAX_BYTES = 8192
BAGGAGE_MAX_MEMBERS = 180
BAGGAGE_MAX_MEMBER_BYTES = 4096
# A tracestate list-member, as W3C Trace Context spells it: key "=" value.
_TRACESTATE_MEMBER = re.compile(r"(?:[a-z][_0-9a-z*/-]{0,255}|[a-z0-9][_0-9a-z*/-]{0,240}@[a-z][_0-9a-z*/-]{0,13})"
                                r"=[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]")
_reported = False  # whether this process has said once that it drops unusable trace headers


def _members(header: str) -> list[str]:
    return [m for m in (part.strip(" \t") for part in header.split(",")) if m]


def _trace_header_problem(name: str, value: str) -> str | None:
    """Why the propagator would refuse (and log) ``value`` of header ``name``; None when it may read it. Non-ASCII
    is never a valid trace header, so for the rest bytes and characters are one count."""
    if not value.isascii():
        return "not ASCII"
    if name == "traceparent":
        return f"over {TRACEPARENT_MAX_BYTES} bytes" if len(value) > TRACEPARENT_MAX_BYTES else None
    if name == "tracestate":
        if len(value) > TRACESTATE_MAX_BYTES:
            return f"over {TRACESTATE_MAX_BYTES} bytes"
        members = _members(value)
        if len(members) > TRACESTATE_MAX_MEMBERS:
            return f"over {TRACESTATE_MAX_MEMBERS} members"
        return None if all(_TRACESTATE_MEMBER.fullmatch(m) for m in members) else "a malformed member"
    if len(value) > BAGGAGE_MAX_BYTES:  # baggage
        return f"over {BAGGAGE_MAX_BYTES} bytes"
    members = _members(value)
    if len(members) > BAGGAGE_MAX_MEMBERS or any(len(m) > BAGGAGE_MAX_MEMBER_BYTES for m in members):
        return f"over {BAGGAGE_MAX_MEMBERS} members or a member over {BAGGAGE_MAX_MEMBER_BYTES} bytes"
    return None


def unusable_trace_headers(carrier: Mapping[str, str]) -> dict[str, str]:
    """The trace headers of ``carrier`` (``traceparent``, ``tracestate``, ``baggage``) to drop, each with why: too
    large, too many members, not ASCII, or a malformed tracestate member. Empty for a well-formed context."""
    found = {}
    for name in ("traceparent", "tracestate", "baggage"):
        value = carrier.get(name)
        problem = None if value is None else _trace_header_problem(name, value)
        if problem is not None:
            found[name] = problem
    return found


def _report_once(dropped: Mapping[str, str]) -> None:
    global _reported
    if not _reported:
        _reported = True
        log.warning("dropped a trace context a client sent (%s); this process drops such headers from now on without a word",
                    ", ".join(f"{name}: {why}" for name, why in dropped.items()))


def extract(carrier: Mapping[str, str]) -> Context:
    """The trace context ``carrier`` holds (message properties or HTTP headers); the current one if it holds none.

    Trace headers the propagator would refuse are dropped first (``unusable_trace_headers``): one log line per
    process says so, not one per message, so a client cannot fill the logs with them."""
    from opentelemetry import propagate

    dropped = unusable_trace_headers(carrier)
    if dropped:
        _report_once(dropped)
        carrier = {k: v for k, v in carrier.items() if k not in dropped}
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
