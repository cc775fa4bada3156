"""Which exporters a halfmq process traces to, from OpenTelemetry's standard variables and the HALFMQ_TRACES shortcut
(halfmq.tracing.plan): OTEL_SDK_DISABLED wins, HALFMQ_TRACES comes before OTEL_TRACES_EXPORTER, unset is off, and what
halfmq cannot export to is refused by name rather than silently ignored."""

from __future__ import annotations

import pytest

from halfmq.tracing import TracingRefused, idle_path, plan, traces_idle


def test_otel_traces_exporter_console_turns_tracing_on_to_standard_output() -> None:
    decided = plan("", {"OTEL_TRACES_EXPORTER": "console"})
    assert decided.on and decided.exporters == ("console",) and decided.source == "OTEL_TRACES_EXPORTER"
    assert decided.destination() == "standard output"


def test_otlp_goes_to_the_standard_endpoint_variables_or_the_collectors_default() -> None:
    assert plan("", {"OTEL_TRACES_EXPORTER": "otlp"}).destination() == "OTLP/HTTP at http://localhost:4318/v1/traces"
    assert plan("", {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}).otlp_endpoint == "http://c:4318/v1/traces"
    assert plan("", {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
                     "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:9/spans"}).otlp_endpoint == "http://t:9/spans"


def test_a_list_of_exporters_exports_to_each() -> None:
    decided = plan("", {"OTEL_TRACES_EXPORTER": "otlp, console"})
    assert decided.exporters == ("otlp", "console")
    assert decided.destination() == "OTLP/HTTP at http://localhost:4318/v1/traces and standard output"


def test_unset_or_none_is_off() -> None:
    assert not plan("", {}).on and not plan(None, {}).on
    assert not plan("", {"OTEL_TRACES_EXPORTER": "none"}).on and not plan("none", {"OTEL_TRACES_EXPORTER": "console"}).on


def test_otel_sdk_disabled_turns_tracing_off_whatever_else_asks_for_it() -> None:
    for environ in ({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "console"}, {"OTEL_SDK_DISABLED": "TRUE"}):
        assert not plan("otlp", environ).on and plan("otlp", environ).source == "OTEL_SDK_DISABLED"
    assert plan("", {"OTEL_SDK_DISABLED": "false", "OTEL_TRACES_EXPORTER": "console"}).on


def test_the_halfmq_shortcut_comes_before_otel_traces_exporter() -> None:
    decided = plan("console", {"OTEL_TRACES_EXPORTER": "otlp"})
    assert decided.exporters == ("console",) and decided.source == "HALFMQ_TRACES"


@pytest.mark.parametrize("named", ["zipkin", "jaeger", "otlp,zipkin", "none,console"])
def test_an_exporter_halfmq_lacks_is_refused_by_name(named: str) -> None:
    with pytest.raises(TracingRefused, match=f"OTEL_TRACES_EXPORTER={named}: halfmq's processes export spans by otlp or console"):
        plan("", {"OTEL_TRACES_EXPORTER": named})


def test_otlp_over_grpc_is_refused_with_what_to_set() -> None:
    with pytest.raises(TracingRefused, match="http/protobuf only"):
        plan("", {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
    assert plan("", {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}).on


def test_health_checks_and_scrapes_are_idle_requests_and_the_rest_are_not() -> None:
    assert idle_path("/healthz") and idle_path("/metrics")
    assert not idle_path("/orders") and not idle_path("/healthz/x")


def test_idle_spans_are_asked_for_with_halfmq_traces_idle() -> None:
    assert not traces_idle({}) and not traces_idle({"HALFMQ_TRACES_IDLE": "false"})
    assert traces_idle({"HALFMQ_TRACES_IDLE": "true"}) and traces_idle({"HALFMQ_TRACES_IDLE": "1"})
