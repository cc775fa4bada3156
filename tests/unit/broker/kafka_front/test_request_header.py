"""Request headers v1 and v2: the API, its version, the correlation id, the client id, and where the body starts."""

from __future__ import annotations

import struct

import pytest
from kafka.protocol.consumer import FetchRequest
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest

from halfmq.broker.kafka_front.request_header import HeaderUnreadable, parse_request_header


def payload_of(request, correlation_id: int = 7, client_id: str | None = "billing") -> bytes:
    request.with_header(correlation_id=correlation_id, client_id=client_id)
    return bytes(request.encode(header=True))


def flexible_as_schema(api_key: int, api_version: int) -> bool:
    return {3: api_version >= 9, 18: api_version >= 3}.get(api_key, False)


def test_a_v1_header_names_the_api_its_version_the_correlation_id_and_the_client() -> None:
    body = MetadataRequest[8](topics=None, allow_auto_topic_creation=False)
    payload = payload_of(body, correlation_id=41)
    header = parse_request_header(payload, flexible_as_schema)
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (3, 8, 41, "billing")
    assert not header.flexible
    assert MetadataRequest.decode(payload[header.body_offset:], version=8).topics is None


def test_a_v2_header_skips_its_tagged_fields_so_the_body_starts_where_it_does() -> None:
    payload = payload_of(MetadataRequest[12](topics=[MetadataRequest.MetadataRequestTopic(name="orders")]))
    header = parse_request_header(payload, flexible_as_schema)
    assert header.flexible and (header.api_key, header.api_version) == (3, 12)
    # the tagged-field count (0) sits between the client id and the body
    assert payload[header.body_offset - 1] == 0
    assert [t.name for t in MetadataRequest.decode(payload[header.body_offset:], version=12).topics] == ["orders"]


def test_tagged_fields_in_a_v2_header_are_read_past() -> None:
    plain = payload_of(MetadataRequest[12](topics=[]), client_id="c")
    start = struct.calcsize(">hhih") + 1  # key, version, correlation id, client id (length, "c")
    tagged = plain[:start] + b"\x01\x05\x03abc" + plain[start + 1:]  # one unknown tag (5) of three bytes
    header = parse_request_header(tagged, flexible_as_schema)
    assert tagged[header.body_offset:] == plain[start + 1:]


def test_a_null_client_id_is_read_as_none() -> None:
    header = parse_request_header(payload_of(ApiVersionsRequest[0](), client_id=None), flexible_as_schema)
    assert header.client_id is None and header.api_key == 18


def test_the_header_version_follows_the_schema_of_the_api_and_version_asked() -> None:
    asked: list[tuple[int, int]] = []

    def flexible(api_key: int, api_version: int) -> bool:
        asked.append((api_key, api_version))
        return False

    parse_request_header(payload_of(FetchRequest[4](max_wait_ms=1, min_bytes=1, max_bytes=1, topics=[])), flexible)
    assert asked == [(1, 4)]


@pytest.mark.parametrize("payload", [b"", b"\x00\x03\x00\x0c", b"\x00\x03\x00\x0c\x00\x00\x00"], ids=["empty", "no-correlation", "short"])
def test_a_frame_too_short_to_hold_a_header_is_unreadable(payload: bytes) -> None:
    with pytest.raises(HeaderUnreadable):
        parse_request_header(payload, flexible_as_schema)


def test_a_client_id_running_past_the_frame_is_unreadable() -> None:
    with pytest.raises(HeaderUnreadable):
        parse_request_header(struct.pack(">hhih", 3, 8, 1, 100) + b"abc", flexible_as_schema)
