"""Spans recorded in memory for unit tests: a real OpenTelemetry SDK provider, set for one test and taken away after.

``recorded_spans`` installs it as the API's global provider (what ``opentelemetry.trace.set_tracer_provider``
sets, which refuses a second call, hence the attribute) so halfmq's hooks see tracing on exactly as in a process
that configured it; at teardown the default proxy is back and tracing is off again.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import halfmq.tracing as core


class Recorded:
    def __init__(self, exporter: InMemorySpanExporter, provider: TracerProvider) -> None:
        self.exporter = exporter
        self.provider = provider

    @property
    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> ReadableSpan:
        found = [s for s in self.spans if s.name == name]
        assert len(found) == 1, (name, [s.name for s in self.spans])
        return found[0]


@pytest.fixture
def recorded_spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorded]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)
    monkeypatch.setattr(core, "_cached", None)
    yield Recorded(exporter, provider)
    provider.shutdown()
