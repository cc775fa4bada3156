"""Which trace headers a client sent are dropped before OpenTelemetry's propagator reads them (halfmq/tracing.py).

Past the W3C bounds (in bytes) or malformed where the propagator would log a warning for each message, a header is
dropped, so a producer cannot fill every consumer's and the broker's logs by sending it on every message.
"""

from __future__ import annotations

import pytest

from halfmq.tracing import unusable_trace_headers

PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def test_a_well_formed_context_is_kept_whole() -> None:
    assert unusable_trace_headers({"traceparent": PARENT, "tracestate": "rojo=00f067aa0ba902b7, congo@t61=x",
                                   "baggage": "user=alice;team=x", "UNIQ_KEY": "x" * 10_000}) == {}  # other properties are not looked at
    assert unusable_trace_headers({}) == {}


def test_a_traceparent_over_512_bytes_is_dropped() -> None:
    assert unusable_trace_headers({"traceparent": PARENT + "-" + "0" * (512 - len(PARENT) - 1)}) == {}
    assert unusable_trace_headers({"traceparent": PARENT + "-" + "0" * (512 - len(PARENT))}) == {"traceparent": "over 512 bytes"}


@pytest.mark.parametrize("name", ["traceparent", "tracestate", "baggage"])
def test_multi_byte_text_is_counted_in_bytes_and_never_a_valid_trace_header(name: str) -> None:
    assert unusable_trace_headers({name: "k=" + "\N{PILE OF POO}" * 100}) == {name: "not ASCII"}  # 402 bytes, 102 characters


def test_a_tracestate_over_8192_bytes_or_32_members_or_with_a_malformed_member_is_dropped() -> None:
    under = ",".join(f"k{i}=" + "v" * 240 for i in range(32))
    assert len(under) <= 8192 and unusable_trace_headers({"tracestate": under}) == {}
    assert unusable_trace_headers({"tracestate": "k=" + "v" * 8191}) == {"tracestate": "over 8192 bytes"}
    assert unusable_trace_headers({"tracestate": ",".join(f"k{i}=v" for i in range(33))}) == {"tracestate": "over 32 members"}
    for malformed in ("x", "K=v", "k=v=w", "k= "):
        assert unusable_trace_headers({"tracestate": f"a=b,{malformed}"}) == {"tracestate": "a malformed member"}, malformed


def test_baggage_over_its_bounds_is_dropped() -> None:
    assert unusable_trace_headers({"baggage": "k=" + "v" * 8191}) == {"baggage": "over 8192 bytes"}
    assert "baggage" in unusable_trace_headers({"baggage": ",".join(f"k{i}=v" for i in range(181))})
    assert "baggage" in unusable_trace_headers({"baggage": "k=" + "v" * 4095})
