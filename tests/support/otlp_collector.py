"""A small OTLP/HTTP trace collector for tests: it decodes ``ExportTraceServiceRequest`` protobufs and keeps the spans.

What a real collector receives from the processes' OTLP exporters (``HALFMQ_TRACES=otlp``,
``OTEL_EXPORTER_OTLP_ENDPOINT`` pointed here), flattened to ``CollectedSpan`` for assertions.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

__all__ = ["CollectedSpan", "OtlpCollector"]


@dataclass(frozen=True)
class CollectedSpan:
    service: str
    name: str
    kind: str  # SERVER, CLIENT, PRODUCER, CONSUMER, INTERNAL
    trace_id: str
    span_id: str
    parent_id: str  # "" for a root span
    attributes: dict[str, Any]
    links: tuple[tuple[str, str], ...] = ()  # (trace id, span id) of each span this one links to


def _value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    return None if which is None else getattr(value, which)


def _flattened(request: ExportTraceServiceRequest) -> list[CollectedSpan]:
    spans = []
    for resource_spans in request.resource_spans:
        resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(CollectedSpan(
                    service=str(resource.get("service.name", "")), name=span.name,
                    kind=Span.SpanKind.Name(span.kind).removeprefix("SPAN_KIND_"),
                    trace_id=span.trace_id.hex(), span_id=span.span_id.hex(), parent_id=span.parent_span_id.hex(),
                    attributes={a.key: _value(a.value) for a in span.attributes},
                    links=tuple((link.trace_id.hex(), link.span_id.hex()) for link in span.links)))
    return spans


class OtlpCollector:
    """``POST /v1/traces`` on 127.0.0.1 (``endpoint`` is the base URL the exporters take); ``spans`` so far."""

    def __init__(self) -> None:
        self._spans: list[CollectedSpan] = []
        self._lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                with collector._lock:
                    collector._spans.extend(_flattened(request))
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="otlp-collector", daemon=True)

    def __enter__(self) -> OtlpCollector:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def spans(self) -> list[CollectedSpan]:
        with self._lock:
            return list(self._spans)

    def trace(self, trace_id: str) -> list[CollectedSpan]:
        return [s for s in self.spans if s.trace_id == trace_id]

    def linked_traces(self, trace_id: str) -> list[CollectedSpan]:
        """The spans of every other trace one of whose spans links into ``trace_id`` (the broker's, linked to a producer's)."""
        spans = self.spans
        linking = {s.trace_id for s in spans if s.trace_id != trace_id and any(t == trace_id for t, _ in s.links)}
        return [s for s in spans if s.trace_id in linking]
