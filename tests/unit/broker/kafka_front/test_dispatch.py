"""One request frame in, one answer out: ApiVersions from the table, UNSUPPORTED_VERSION outside it, the stubs'
refusals in each API's own shape, bodies that do not decode, and the response header each version calls for."""

from __future__ import annotations

import asyncio
import struct
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.errors import ProducerFencedError
from kafka.protocol.admin import DescribeAclsRequest
from kafka.protocol.api_key import ApiKey
from kafka.protocol.consumer import FetchRequest, FetchResponse, OffsetFetchRequest, OffsetFetchResponse
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse
from kafka.protocol.producer import EndTxnRequest, EndTxnResponse, ProduceRequest, ProduceResponse

from halfmq.broker.kafka_front.api_table import API_TABLE
from halfmq.broker.kafka_front.dispatch import Dispatcher, decode_request
from halfmq.broker.kafka_front.errors import InvalidRequest, KafkaRefusal, NotYetServed
from halfmq.broker.kafka_front.record_batches import Record, encode_batch
from halfmq.broker.kafka_front.request_header import HeaderUnreadable, RequestHeader

UNSUPPORTED_VERSION = 35
INVALID_REQUEST = 42


def payload_of(request, correlation_id: int = 5) -> bytes:
    request.with_header(correlation_id=correlation_id, client_id="test-client")
    return bytes(request.encode(header=True))


def dispatch(payload: bytes, dispatcher: Dispatcher | None = None) -> bytes | None:
    """The dispatcher's answer frame, awaited on a loop of its own."""
    return asyncio.run((dispatcher or Dispatcher()).answer(payload))


def answer(request, dispatcher: Dispatcher | None = None, correlation_id: int = 5) -> bytes:
    framed = dispatch(payload_of(request, correlation_id), dispatcher)
    assert framed is not None
    (size,) = struct.unpack_from(">i", framed)
    assert size == len(framed) - 4
    return framed[4:]


def read(response_class, body: bytes, version: int):
    return response_class.decode(body, version=version, header=True)


def metadata_request(version: int, *topics: str):
    return MetadataRequest[version](topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in topics])


def produce_request(version: int, acks: int = -1):
    request = ProduceRequest[version]
    batch = encode_batch([Record(0, 1_764_000_000_000, b"k", b"v")])
    return request(transactional_id=None, acks=acks, timeout_ms=1000, topic_data=[request.TopicProduceData(
        name="orders", partition_data=[request.TopicProduceData.PartitionProduceData(index=i, records=batch) for i in (0, 3)])])


@pytest.mark.parametrize("version", range(5))
def test_api_versions_is_answered_from_the_table_at_every_version_with_response_header_v0(version: int) -> None:
    body = answer(ApiVersionsRequest[version](client_software_name="t", client_software_version="1"), correlation_id=99)
    assert struct.unpack_from(">i", body)[0] == 99  # header v0: the correlation id, no tagged fields, even at v3+
    response = ApiVersionsResponse.decode(body[4:], version=version)
    assert response.error_code == 0
    assert {v.api_key for v in response.api_keys} == {int(e.key) for e in API_TABLE}


def test_api_versions_newer_than_the_table_gets_v0_with_unsupported_version_and_the_table() -> None:
    """KIP-511: the client retries with the highest ApiVersions version the answer lists."""
    payload = bytearray(payload_of(ApiVersionsRequest[4](client_software_name="t", client_software_version="1"), 12))
    struct.pack_into(">h", payload, 2, 9)  # ApiVersions v9, which no broker knows yet
    framed = dispatch(bytes(payload))
    assert framed is not None
    correlation_id, error_code = struct.unpack_from(">ih", framed, 4)
    assert (correlation_id, error_code) == (12, UNSUPPORTED_VERSION)
    response = ApiVersionsResponse.decode(framed[8:], version=0)
    assert {v.api_key: v.max_version for v in response.api_keys}[ApiKey.ApiVersions] == 4


def test_a_served_api_whose_handler_is_not_written_answers_unsupported_version_in_its_own_shape() -> None:
    body = answer(metadata_request(12, "orders", "payments"))
    response = read(MetadataResponse, body, 12)
    assert response.header.correlation_id == 5
    assert response.brokers == []
    assert [(t.name, t.error_code) for t in response.topics] == [("orders", UNSUPPORTED_VERSION), ("payments", UNSUPPORTED_VERSION)]


def test_a_flexible_version_is_answered_with_response_header_v1() -> None:
    assert answer(metadata_request(12))[4] == 0  # the header's tagged-field count after the correlation id
    body = answer(metadata_request(8))  # v8 is not flexible: the body follows the correlation id
    assert struct.unpack_from(">i", body, 4)[0] == 0  # throttle_time_ms


def test_produce_v2_is_advertised_but_refused_for_every_partition() -> None:
    response = read(ProduceResponse, answer(produce_request(2)), 2)
    assert [(t.name, [(p.index, p.error_code) for p in t.partition_responses]) for t in response.responses] == [
        ("orders", [(0, UNSUPPORTED_VERSION), (3, UNSUPPORTED_VERSION)])]


def test_a_version_past_the_table_that_the_schema_knows_is_refused_in_that_versions_shape() -> None:
    fetch = FetchRequest[13](max_wait_ms=10, min_bytes=1, max_bytes=1024, isolation_level=1, session_id=0, session_epoch=-1,
                             topics=[], forgotten_topics_data=[], rack_id="")
    response = read(FetchResponse, answer(fetch), 13)
    assert response.error_code == UNSUPPORTED_VERSION


def test_a_version_no_schema_knows_gets_the_correlation_id_and_unsupported_version() -> None:
    payload = bytearray(payload_of(FetchRequest[12](max_wait_ms=10, min_bytes=1, max_bytes=1024, topics=[]), 17))
    struct.pack_into(">h", payload, 2, 99)
    assert dispatch(bytes(payload)) == struct.pack(">iih", 6, 17, UNSUPPORTED_VERSION)


def test_an_api_outside_the_table_gets_the_correlation_id_and_unsupported_version() -> None:
    payload = payload_of(DescribeAclsRequest[1](resource_type_filter=2, operation=1, permission_type=1, pattern_type_filter=1), 23)
    assert dispatch(payload) == struct.pack(">iih", 6, 23, UNSUPPORTED_VERSION)
    unknown_key = struct.pack(">hhih", 999, 0, 24, -1)
    assert dispatch(unknown_key) == struct.pack(">iih", 6, 24, UNSUPPORTED_VERSION)


def test_a_body_that_does_not_decode_is_an_invalid_request_in_the_apis_shape() -> None:
    header = payload_of(metadata_request(8, "orders"))[:struct.calcsize(">hhih") + len("test-client")]
    response = read(MetadataResponse, bytes(dispatch(header + b"\x00\x00\x00\x09\x00")[4:]), 8)
    assert response.topics == []  # nothing decoded, nothing named
    endtxn = payload_of(EndTxnRequest[3](transactional_id="tx", producer_id=1, producer_epoch=0, committed=True))
    response = read(EndTxnResponse, dispatch(endtxn[:-4])[4:], 3)
    assert response.error_code == INVALID_REQUEST


def test_an_injected_handler_answers_its_api_and_its_refusals_are_answered_in_shape() -> None:
    seen = []

    async def end_txn(request, header):
        seen.append((request.transactional_id, header.client_id))
        return EndTxnResponse(error_code=0, throttle_time_ms=0)

    class Fenced(KafkaRefusal):
        kafka_error = ProducerFencedError

    async def fenced(request, header):
        raise Fenced("an older epoch")

    request = EndTxnRequest[3](transactional_id="tx-1", producer_id=1, producer_epoch=0, committed=True)
    assert read(EndTxnResponse, answer(request, Dispatcher(handlers={ApiKey.EndTxn: end_txn})), 3).error_code == 0
    assert seen == [("tx-1", "test-client")]
    assert read(EndTxnResponse, answer(request, Dispatcher(handlers={ApiKey.EndTxn: fenced})), 3).error_code == ProducerFencedError.errno


def test_a_handlers_bug_is_answered_unknown_server_error_in_the_apis_shape(caplog: pytest.LogCaptureFixture) -> None:
    async def broken(request, header):
        raise RuntimeError("a bug")

    request = EndTxnRequest[3](transactional_id="tx-1", producer_id=1, producer_epoch=0, committed=True)
    assert read(EndTxnResponse, answer(request, Dispatcher(handlers={ApiKey.EndTxn: broken})), 3).error_code == -1
    assert "a bug" in caplog.text


def test_a_version_outside_the_table_is_refused_as_such_even_when_its_body_does_not_decode() -> None:
    cut = bytearray(payload_of(FetchRequest[13](max_wait_ms=1, min_bytes=1, max_bytes=1, topics=[]), 5))[:-6]
    assert read(FetchResponse, dispatch(bytes(cut))[4:], 13).error_code == UNSUPPORTED_VERSION


def test_a_version_outside_the_table_never_reaches_the_handler() -> None:
    calls: list[int] = []

    async def produce(request, header):
        calls.append(header.api_version)
        return ProduceResponse(responses=[])

    served = Dispatcher(handlers={ApiKey.Produce: produce})
    assert read(ProduceResponse, answer(produce_request(3), served), 3).responses == []
    for version in (2, 13):
        response = read(ProduceResponse, answer(produce_request(version) if version < 13 else produce_by_topic_id(), served), version)
        assert {p.error_code for t in response.responses for p in t.partition_responses} == {UNSUPPORTED_VERSION}
    assert calls == [3]


def produce_by_topic_id():
    request = ProduceRequest[13]
    return request(acks=-1, timeout_ms=1000, topic_data=[request.TopicProduceData(
        topic_id=uuid.UUID(int=7), partition_data=[request.TopicProduceData.PartitionProduceData(index=0, records=None)])])


def test_a_produce_with_acks_0_gets_no_answer() -> None:
    assert dispatch(payload_of(produce_request(9, acks=0))) is None


@pytest.mark.parametrize("entry", [e for e in API_TABLE if e.key != ApiKey.ApiVersions], ids=lambda e: e.key.name)
def test_every_api_but_api_versions_is_a_stub_that_refuses_at_both_ends_of_its_range(entry) -> None:
    for version in (entry.min_version, entry.max_version):
        payload = struct.pack(">hhih", int(entry.key), version, 3, -1) + (b"\x00" if entry.request.flexible_version_q(version) else b"")
        fields = {"acks": -1} if entry.key == ApiKey.Produce else {}  # the default, 0, expects no answer
        framed = dispatch(payload + bytes(entry.request[version](**fields).encode()))  # every other field its default
        assert framed is not None
        response = entry.response.decode(framed[4:], version=version, header=True)
        assert response.header.correlation_id == 3


def test_the_stub_refusal_is_not_yet_served_and_a_bad_body_an_invalid_request() -> None:
    assert NotYetServed.kafka_error.errno == UNSUPPORTED_VERSION and InvalidRequest.kafka_error.errno == INVALID_REQUEST


def test_a_header_too_short_to_answer_is_left_to_the_connection() -> None:
    with pytest.raises(HeaderUnreadable):
        dispatch(b"\x00\x03")


@settings(max_examples=300, deadline=None)
@given(entry=st.sampled_from(API_TABLE), version=st.integers(0, 20), body=st.binary(max_size=200))
def test_any_body_after_a_header_is_answered_never_raised(entry, version: int, body: bytes) -> None:
    payload = struct.pack(">hhih", int(entry.key), version, 8, -1) + (b"\x00" if entry.request.flexible_version_q(version) else b"")
    framed = dispatch(payload + body)
    assert framed is None or struct.unpack_from(">i", framed, 4)[0] == 8


@settings(max_examples=300, deadline=None)
@given(entry=st.sampled_from(API_TABLE), body=st.binary(max_size=200), data=st.data())
def test_a_body_the_schema_does_not_describe_is_an_invalid_request_not_a_bug(entry, body: bytes, data) -> None:
    """Every way kafka-python's decoders fail on a bad body is named, so none is answered UNKNOWN_SERVER_ERROR."""
    version = data.draw(st.integers(entry.min_version, entry.max_version))
    header = RequestHeader(int(entry.key), version, 1, None, bool(entry.request.flexible_version_q(version)), 0)
    try:
        decode_request(entry, body, header)
    except InvalidRequest:
        pass


def test_offset_fetch_answers_each_group_from_v8() -> None:
    group = OffsetFetchRequest.OffsetFetchRequestGroup
    request = OffsetFetchRequest[8](groups=[group(group_id="g1", topics=None), group(group_id="g2", topics=None)], require_stable=False)
    response = read(OffsetFetchResponse, answer(request), 8)
    assert [(g.group_id, g.error_code) for g in response.groups] == [("g1", UNSUPPORTED_VERSION), ("g2", UNSUPPORTED_VERSION)]
