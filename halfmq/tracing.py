"""OpenTelemetry in halfmq, shared by the SDK, the broker and the services: the one switch, the names, the set-up.

Off unless a tracer provider is configured, and then free: every hook asks ``tracer()`` first, which answers
None without importing OpenTelemetry when no one has imported it (a program that configures a provider has),
and otherwise only compares the global provider with the API's default proxy. So ``pip install halfmq`` carries
``opentelemetry-api`` (one package) and pays nothing for it until a program turns tracing on: a program of
its own by setting a provider (``opentelemetry-sdk``), halfmq's processes (broker, order, credit) with
OpenTelemetry's own ``OTEL_TRACES_EXPORTER=otlp|console`` or the shortcut ``HALFMQ_TRACES`` (``plan`` decides,
``start`` acts; needs ``pip install 'halfmq[otel]'``; docs/tracing.md). ``OTEL_SDK_DISABLED=true`` turns it off.
Requests that only say "nothing happened" (``GET /healthz``, ``/metrics``, a receive that answered no message)
make no span unless ``HALFMQ_TRACES_IDLE=true`` asks for them (``idle_path``, ``traces_idle``).

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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Tracer

__all__ = ["EXPORTERS", "IDLE_ENV", "IDLE_PATHS", "INSTRUMENTATION", "SYSTEM", "TRACES_ENV", "Exporter", "TracingPlan",
           "TracingRefused", "attributes", "extract", "fastapi_telemetry", "idle_path", "inject", "plan", "start", "tracer",
           "traces_idle", "unusable_trace_headers"]

log = logging.getLogger(__name__)

TRACES_ENV = "HALFMQ_TRACES"
IDLE_ENV = "HALFMQ_TRACES_IDLE"  # true: spans for health checks, scrapes and empty polls too
Exporter = Literal["otlp", "console", "none"]
EXPORTERS: tuple[Exporter, ...] = ("otlp", "console", "none")
# The requests that only say "nothing happened" (a probe, a scrape): no span unless HALFMQ_TRACES_IDLE asks.
IDLE_PATHS = frozenset({"/healthz", "/metrics"})
OTLP_DEFAULT_ENDPOINT = "http://localhost:4318"
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
    if isinstance(provider, (module.ProxyTracerProvider, module.NoOpTracerProvider)) or getattr(provider, "_disabled", False):
        return None  # no provider, or the SDK's own one under OTEL_SDK_DISABLED=true (it would hand out no-op tracers)
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


class TracingRefused(ValueError):
    """The tracing variables ask for what halfmq cannot do (an exporter it lacks, OTLP over gRPC): the process does not start."""


_TRUE = frozenset({"true", "1", "yes", "on"})


def traces_idle(environ: Mapping[str, str]) -> bool:
    """Whether ``HALFMQ_TRACES_IDLE`` asks for the idle requests' spans too (the SDK's question; the processes' settings read it too)."""
    return environ.get(IDLE_ENV, "").strip().lower() in _TRUE


def idle_path(path: str) -> bool:
    """Whether a request to ``path`` only says "nothing happened" (a health check, a scrape): no span for it unless asked."""
    return path in IDLE_PATHS


@dataclass(frozen=True)
class TracingPlan:
    """What a process's tracing variables ask for: the exporters (none: tracing off), which variable said so, and where
    the spans go, for the one log line at start."""

    exporters: tuple[str, ...]
    source: str
    otlp_endpoint: str = ""

    @property
    def on(self) -> bool:
        return bool(self.exporters)

    def destination(self) -> str:
        """Where the spans go, in words: "standard output", "OTLP/HTTP at <url>", or both."""
        places = ["standard output" if name == "console" else f"OTLP/HTTP at {self.otlp_endpoint}" for name in self.exporters]
        return " and ".join(places)


def _truthy(environ: Mapping[str, str], name: str) -> bool:
    return environ.get(name, "").strip().lower() == "true"


def plan(halfmq_traces: str | None, environ: Mapping[str, str]) -> TracingPlan:
    """What this process's tracing is, from OpenTelemetry's standard variables and halfmq's shortcut (a pure function).

    ``OTEL_SDK_DISABLED=true`` turns tracing off, whatever else is set (the SDK's own rule). Otherwise
    ``HALFMQ_TRACES`` (the shortcut, halfmq's own and so the more specific) names the exporter when set, else
    ``OTEL_TRACES_EXPORTER`` does (a comma-separated list, as the specification has it): ``otlp``, ``console``,
    ``none``. Unset, tracing is off (OpenTelemetry's default of ``otlp`` is for programs run under
    ``opentelemetry-instrument``; halfmq's processes do not send spans to a collector nobody started). ``otlp``
    goes over HTTP/protobuf to ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_ENDPOINT`` +
    ``/v1/traces``; an exporter halfmq lacks (zipkin, OTLP over gRPC) is refused (``TracingRefused``), not ignored.
    """
    if _truthy(environ, "OTEL_SDK_DISABLED"):
        return TracingPlan((), "OTEL_SDK_DISABLED")
    source, named = (TRACES_ENV, halfmq_traces) if halfmq_traces else ("OTEL_TRACES_EXPORTER", environ.get("OTEL_TRACES_EXPORTER", ""))
    names = tuple(dict.fromkeys(part.strip().lower() for part in named.split(",") if part.strip()))
    if not names or names == ("none",):
        return TracingPlan((), source)
    unknown = [name for name in names if name not in EXPORTERS or name == "none"]
    if unknown:
        raise TracingRefused(f"{source}={named}: halfmq's processes export spans by otlp or console (or none for no spans), "
                             f"not {', '.join(unknown)}")
    endpoint = ""
    if "otlp" in names:
        protocol = environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf"
        if protocol.strip() != "http/protobuf":
            raise TracingRefused(f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol}: halfmq's processes send OTLP over http/protobuf only "
                                 "(a collector's port 4318); unset it or set http/protobuf")
        endpoint = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or (
            (environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or OTLP_DEFAULT_ENDPOINT).rstrip("/") + "/v1/traces")
    return TracingPlan(names, source, endpoint)


def start(exporter: str | None, service_name: str, environ: Mapping[str, str] | None = None) -> TracingPlan:
    """Turn tracing on for this process (its start-up calls this once) as ``plan`` says: spans batched to each exporter.

    ``exporter``: the ``HALFMQ_TRACES`` shortcut (None or "" defers to ``OTEL_TRACES_EXPORTER``). ``otlp``: OTLP
    over HTTP/protobuf; ``console``: each span printed as JSON on standard output. ``$OTEL_SERVICE_NAME`` (else
    ``service_name``) names the process; the rest of the standard ``OTEL_*`` variables apply (the sampler, the
    batch processor's, the exporter's headers). Needs ``pip install 'halfmq[otel]'`` (opentelemetry-sdk and the
    OTLP exporter). Returns the plan (``.on`` False: nothing was set up).
    """
    environ = os.environ if environ is None else environ
    decided = plan(exporter, environ)
    if not decided.on:
        return decided
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
    except ImportError as exc:
        raise TracingRefused(f"{decided.source}={','.join(decided.exporters)} needs OpenTelemetry's SDK: pip install 'halfmq[otel]' ({exc})") from None
    name = environ.get("OTEL_SERVICE_NAME") or service_name
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: name}))
    for chosen in decided.exporters:
        span_exporter: SpanExporter
        if chosen == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            span_exporter = OTLPSpanExporter(endpoint=decided.otlp_endpoint)
        else:
            span_exporter = ConsoleSpanExporter()
        provider.add_span_processor(BatchSpanProcessor(span_exporter))
    trace.set_tracer_provider(provider)
    return decided


def fastapi_telemetry(fastapi: Any, traces_idle: bool) -> dict[str, Any]:
    """``FastAPI(**fastapi_telemetry(FastAPI, idle))``: FastAPI's own request spans (0.165 and later) skip the idle
    paths unless asked; nothing for an older FastAPI, whose apps make no span of their own."""
    import inspect

    if traces_idle or "telemetry" not in inspect.signature(fastapi).parameters:
        return {}
    return {"telemetry": {"exclude": lambda scope: idle_path(scope.get("path", ""))}}
