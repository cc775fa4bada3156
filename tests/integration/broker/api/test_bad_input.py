"""Bad input to the HTTP API (DESIGN section 6): a 4xx problem with a stable code, and nothing changed.

Every refusal is checked three ways: the status, an RFC 9457 problem+json body
carrying the stable ``code``, and a before/after snapshot of the store (all
topics with their queues' min/max offsets plus the commit-log end) proving the
request wrote nothing — not even an auto-created topic.
"""

from __future__ import annotations

import base64
import copy
import itertools
import json
import random
from collections.abc import Iterator
from typing import Any

import httpx
import msgspec
import pytest

from halfmq.wire import (
    BeginTxnRequest,
    DlqRedriveRequest,
    EndBatchRequest,
    EndRequest,
    EndTxnRequest,
    HalfBatchRequest,
    HalfSendRequest,
    Heartbeat,
    InitProducer,
    NewProducerId,
    RecallRequest,
    ReceiveRequest,
    ResetOffsetsRequest,
    SendRequest,
    SettleRequest,
    TopicAlter,
    TopicCreate,
    TxnAcksRequest,
    TxnMessagesRequest,
)
from halfmq.wire.base import _Request

from ..http_helpers import group_state, path, receive, send, settle
from .support import ModuleBrokerFactory, assert_problem, store_state, stores_nothing, topic_names

MAX_MESSAGE_SIZE = 1024
_names = itertools.count()


def fresh(prefix: str) -> str:
    """A topic or group name no other test in this module uses."""
    return f"{prefix}-{next(_names)}"


@pytest.fixture(scope="module")
def broker_url(module_broker_factory: ModuleBrokerFactory) -> str:
    """Auto-create on (the default) and a 1 KiB message limit so "oversized" is cheap to send."""
    return module_broker_factory({"HALFMQ_BROKER_MAX_MESSAGE_SIZE": str(MAX_MESSAGE_SIZE)}).url


@pytest.fixture(scope="module")
def client(broker_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=broker_url, timeout=15) as c:
        yield c


@pytest.fixture(scope="module")
def strict_client(module_broker_factory: ModuleBrokerFactory) -> Iterator[httpx.Client]:
    broker = module_broker_factory({"HALFMQ_BROKER_AUTO_CREATE_TOPICS": "false"})
    with httpx.Client(base_url=broker.url, timeout=15) as c:
        yield c


def create_topic(client: httpx.Client, name: str, queues: int) -> None:
    client.post("/v1/topics", json={"name": name, "queues": queues}).raise_for_status()


def post_raw(client: httpx.Client, url: str, content: bytes, content_type: str | None = "application/json") -> httpx.Response:
    headers = {"content-type": content_type} if content_type else {}
    return client.post(url, content=content, headers=headers)


def send_raw(client: httpx.Client, topic: str, messages: list[dict[str, Any]]) -> httpx.Response:
    """Send through json.dumps (not httpx's encoder), so lone surrogates go out as \\ud800 escapes."""
    return post_raw(client, path("v1", "topics", topic, "messages"), json.dumps({"messages": messages}).encode())


# --- topics -------------------------------------------------------------------------------------


def test_send_to_an_unknown_topic_without_auto_create_is_not_found_and_creates_nothing(strict_client: httpx.Client) -> None:
    topic = fresh("NOPE")
    with stores_nothing(strict_client):
        resp = strict_client.post(path("v1", "topics", topic, "messages"), json={"messages": [{"body": "hello"}]})
        assert_problem(resp, 404, "TOPIC_NOT_FOUND")
    assert topic not in topic_names(strict_client)
    assert_problem(strict_client.get(path("v1", "topics", topic)), 404, "TOPIC_NOT_FOUND")

    # Only the unknown topic is refused: once created explicitly, the same send is accepted.
    create_topic(strict_client, topic, 1)
    assert send(strict_client, topic, "hello")[0]["status"] == "SEND_OK"


def test_offset_read_of_an_unknown_topic_is_not_found_and_creates_nothing(client: httpx.Client, strict_client: httpx.Client) -> None:
    for c in (strict_client, client):  # reads never auto-create, whatever the setting
        topic = fresh("NOREAD")
        with stores_nothing(c):
            assert_problem(c.get(path("v1", "topics", topic, "queues", 0, "messages")), 404, "TOPIC_NOT_FOUND")
            assert_problem(c.get(path("v1", "topics", topic)), 404, "TOPIC_NOT_FOUND")
        assert topic not in topic_names(c)


@pytest.mark.parametrize(
    "topic",
    ["RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC", "TRANS_CHECK_MAX_TIME_TOPIC", "%DLQ%x", "%RETRY%x"],
)
def test_send_to_system_topic_is_forbidden_and_stores_nothing(client: httpx.Client, topic: str) -> None:
    # "%DLQ%x" travels percent-encoded: /v1/topics/%25DLQ%25x/messages. The broker may list its own system
    # topics (it creates the transaction ones at start); what matters is that no offset and no byte moved.
    url = path("v1", "topics", topic, "messages")
    with stores_nothing(client):
        body = assert_problem(client.post(url, json={"messages": [{"body": "forged"}]}), 403, "SYSTEM_TOPIC_FORBIDDEN")
    assert topic in body["detail"]


@pytest.mark.parametrize("topic", ["RMQ_SYS_TRANS_HALF_TOPIC", "%DLQ%x"])
def test_creating_a_system_topic_is_forbidden(client: httpx.Client, topic: str) -> None:
    with stores_nothing(client):
        assert_problem(client.post("/v1/topics", json={"name": topic, "queues": 1}), 403, "SYSTEM_TOPIC_FORBIDDEN")


@pytest.mark.parametrize("name", ["bad name!", "a" * 128, "a" * 200, "dots.not.allowed", "trailing-newline\n", "ünïcode", "日本語"])
@pytest.mark.parametrize("operation", ["create", "send"])
def test_invalid_topic_name_is_refused_and_creates_nothing(client: httpx.Client, name: str, operation: str) -> None:
    with stores_nothing(client):
        if operation == "create":
            resp = client.post("/v1/topics", json={"name": name, "queues": 1})
        else:
            resp = client.post(path("v1", "topics", name, "messages"), json={"messages": [{"body": "x"}]})
        assert_problem(resp, 400, "INVALID_TOPIC_NAME")
    assert name not in topic_names(client)


@pytest.mark.parametrize("queues", [0, 65, -3])
def test_creating_a_topic_with_a_queue_count_outside_1_to_64_is_refused(client: httpx.Client, queues: int) -> None:
    topic = fresh("QCOUNT")
    with stores_nothing(client):
        body = assert_problem(client.post("/v1/topics", json={"name": topic, "queues": queues}), 400, "INVALID_QUEUE_COUNT")
    assert str(queues) in body["detail"]
    assert topic not in topic_names(client)


def test_recreating_an_existing_topic_with_another_queue_count_conflicts_and_keeps_the_old_one(client: httpx.Client) -> None:
    topic = fresh("EXISTS")
    create_topic(client, topic, 2)
    with stores_nothing(client):
        assert_problem(client.post("/v1/topics", json={"name": topic, "queues": 3}), 409, "TOPIC_EXISTS")
    assert [q["queue_id"] for q in client.get(path("v1", "topics", topic)).json()["queues"]] == [0, 1]


# --- message content ----------------------------------------------------------------------------


def test_oversized_message_is_refused_with_413_and_stores_nothing(client: httpx.Client) -> None:
    topic = fresh("BIG")
    create_topic(client, topic, 1)
    with stores_nothing(client):
        body = assert_problem(client.post(path("v1", "topics", topic, "messages"), json={"messages": [{"body": "x" * 2000}]}), 413, "MESSAGE_TOO_LARGE")
    assert body["limit"] == MAX_MESSAGE_SIZE


def test_batch_whose_last_message_is_oversized_is_refused_whole_without_auto_creating_the_topic(client: httpx.Client) -> None:
    topic = fresh("BIGBATCH")
    batch = [{"body": "small one"}, {"body": "small two"}, {"body": "x" * 2000}]
    with stores_nothing(client):
        assert_problem(client.post(path("v1", "topics", topic, "messages"), json={"messages": batch}), 413, "MESSAGE_TOO_LARGE")
    assert topic not in topic_names(client)
    assert_problem(client.get(path("v1", "topics", topic)), 404, "TOPIC_NOT_FOUND")


@pytest.mark.parametrize(
    "content",
    [
        b'{"messages": [{"body": "x"',
        b"not json at all",
        b"{'messages': [{'body': 'x'}]}",
        b'{"messages": [{"body": "x"}]} trailing',
        b"\xff\xfe\x00\x01",
        b'{"messages": [{"body": "\xc3\x28"}]}',
        b'{"messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    ],
    ids=["truncated", "bare-words", "single-quotes", "trailing-garbage", "utf16-bom-binary", "invalid-utf8", "nested-too-deeply"],
)
def test_malformed_json_is_refused_as_malformed_json(client: httpx.Client, content: bytes) -> None:
    topic = fresh("MALFORMED")
    with stores_nothing(client):
        assert_problem(post_raw(client, path("v1", "topics", topic, "messages"), content), 400, "MALFORMED_JSON")
    assert topic not in topic_names(client)


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "application/xml", None])
def test_non_json_content_type_is_unsupported_media_type(client: httpx.Client, content_type: str | None) -> None:
    topic = fresh("MEDIA")
    valid_json = json.dumps({"messages": [{"body": "x"}]}).encode()
    with stores_nothing(client):
        assert_problem(post_raw(client, path("v1", "topics", topic, "messages"), valid_json, content_type), 415, "UNSUPPORTED_MEDIA_TYPE")
    assert topic not in topic_names(client)


@pytest.mark.parametrize("bad_base64", ["@@@not base64@@@", "abc", "aGVsbG8", "aGVs bG8="])
def test_bad_base64_body_is_refused_as_bad_body_encoding(client: httpx.Client, bad_base64: str) -> None:
    topic = fresh("B64")
    create_topic(client, topic, 1)
    with stores_nothing(client):
        resp = client.post(path("v1", "topics", topic, "messages"), json={"messages": [{"body": bad_base64, "body_encoding": "base64"}]})
        assert_problem(resp, 400, "BAD_BODY_ENCODING")


def test_batch_of_a_good_message_then_bad_base64_stores_nothing(client: httpx.Client) -> None:
    topic = fresh("B64BATCH")
    batch = [{"body": "aGVsbG8=", "body_encoding": "base64"}, {"body": "%%%", "body_encoding": "base64"}]
    with stores_nothing(client):
        assert_problem(client.post(path("v1", "topics", topic, "messages"), json={"messages": batch}), 400, "BAD_BODY_ENCODING")
    assert topic not in topic_names(client)


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ({"body": "\ud800"}, "MALFORMED_JSON"),
        ({"body": "x", "keys": ["ok", "\ud800"]}, "MALFORMED_JSON"),
        ({"body": "x", "keys": "\udfff"}, "MALFORMED_JSON"),
        ({"body": "x", "tag": "\ud800"}, "MALFORMED_JSON"),
        ({"body": "x", "properties": {"k": "\ud800"}}, "MALFORMED_JSON"),
        ({"body": "x", "properties": {"\ud800": "v"}}, "MALFORMED_JSON"),
        ({"body": "x", "sharding_key": "\ud800"}, "MALFORMED_JSON"),
    ],
    ids=["body", "keys-list", "keys-string", "tag", "property-value", "property-name", "sharding-key"],
)
def test_lone_surrogate_in_message_text_is_refused_and_stores_nothing(client: httpx.Client, message: dict, code: str) -> None:
    # JSON may escape a lone surrogate; UTF-8 cannot store one (RFC 8259 8.2: not interoperable text).
    # The send path's JSON parser refuses it outright; it once reached the store and answered 500.
    topic = fresh("SURROGATE")
    with stores_nothing(client):
        assert_problem(send_raw(client, topic, [{"body": "fine"}, message]), 400, code)
    assert topic not in topic_names(client)


def test_queue_id_out_of_range_is_refused_and_stores_nothing(client: httpx.Client) -> None:
    topic = fresh("QID")
    create_topic(client, topic, 4)
    with stores_nothing(client):
        assert_problem(send_raw(client, topic, [{"body": "x", "queue_id": 4}]), 400, "INVALID_QUEUE_ID")
        assert_problem(send_raw(client, topic, [{"body": "ok", "queue_id": 0}, {"body": "x", "queue_id": 10**20}]), 400, "INVALID_QUEUE_ID")
        assert_problem(client.get(path("v1", "topics", topic, "queues", 4, "messages")), 400, "INVALID_QUEUE_ID")


def test_queue_id_out_of_range_for_an_auto_created_topic_creates_nothing(client: httpx.Client) -> None:
    topic = fresh("QIDAUTO")  # auto-create would give it 4 queues: 0..3
    with stores_nothing(client):
        assert_problem(send_raw(client, topic, [{"body": "x", "queue_id": 4}]), 400, "INVALID_QUEUE_ID")
    assert topic not in topic_names(client)


def test_negative_queue_id_is_an_invalid_request(client: httpx.Client) -> None:
    topic = fresh("QIDNEG")
    create_topic(client, topic, 4)
    with stores_nothing(client):
        assert_problem(send_raw(client, topic, [{"body": "x", "queue_id": -1}]), 400, "INVALID_REQUEST")


@pytest.mark.parametrize(
    "name", ["REAL_TOPIC", "REAL_QID", "TRAN_MSG", "PGROUP", "TRANSACTION_CHECK_TIMES", "RECONSUME_TIME", "ORIGIN_MESSAGE_ID"]
)
def test_reserved_property_is_refused_and_stores_nothing(client: httpx.Client, name: str) -> None:
    topic = fresh("RESERVED")
    with stores_nothing(client):
        body = assert_problem(send_raw(client, topic, [{"body": "x", "properties": {name: "forged"}}]), 400, "RESERVED_PROPERTY")
    assert name in body["detail"]
    assert topic not in topic_names(client)


def test_empty_message_list_is_an_invalid_request(client: httpx.Client) -> None:
    topic = fresh("EMPTY")
    with stores_nothing(client):
        assert_problem(send_raw(client, topic, []), 400, "INVALID_REQUEST")
    assert topic not in topic_names(client)


def test_message_without_a_body_is_an_invalid_request_naming_the_field(client: httpx.Client) -> None:
    topic = fresh("NOBODY")
    with stores_nothing(client):
        body = assert_problem(send_raw(client, topic, [{"body": "fine"}, {"keys": ["k"]}]), 400, "INVALID_REQUEST")
    assert ["body", "messages", "1", "body"] in [e["loc"] for e in body["errors"]]
    assert topic not in topic_names(client)


def test_unknown_field_in_a_message_is_an_invalid_request(client: httpx.Client) -> None:
    topic = fresh("EXTRA")
    with stores_nothing(client):
        assert_problem(send_raw(client, topic, [{"body": "x", "delay_level": 3}]), 400, "INVALID_REQUEST")


# --- consuming ----------------------------------------------------------------------------------


@pytest.fixture
def in_flight(client: httpx.Client) -> tuple[str, str, str]:
    """(group, topic, receipt handle) of one received, unacked message."""
    topic, group = fresh("SETTLE"), fresh("g")
    create_topic(client, topic, 1)
    send(client, topic, "only")
    [message] = receive(client, group, topic, n=1, invisible=60)
    return group, topic, message["receipt_handle"]


def _settle_raw(client: httpx.Client, verb: str, group: str, topic: str, handles: list[str]) -> httpx.Response:
    return client.post(path("v1", "consumer-groups", group, "topics", topic, verb), json={"receipt_handles": handles})


@pytest.mark.parametrize("verb", ["ack", "nack"])
@pytest.mark.parametrize("bad_handle", ["not-a-handle!", "", "Zm9vYmFy", "A" * 5000], ids=["punctuation", "empty", "base64-of-junk", "long"])
def test_malformed_receipt_handle_is_refused_and_settles_nothing(
    client: httpx.Client, in_flight: tuple[str, str, str], verb: str, bad_handle: str
) -> None:
    group, topic, good = in_flight
    before = group_state(client, group)
    assert before[topic][0] == {"queue_id": 0, "committed_offset": 0, "max_offset": 1, "lag": 1, "in_flight": 1, "retention_skipped": 0}
    # The valid handle comes first: the whole request is refused before anything is settled.
    assert_problem(_settle_raw(client, verb, group, topic, [good, bad_handle]), 400, "INVALID_RECEIPT_HANDLE")
    assert group_state(client, group) == before
    assert settle(client, "ack", group, topic, [good]) == ["OK"]  # still in flight, untouched
    assert group_state(client, group)[topic][0]["committed_offset"] == 1


def test_receipt_handle_of_another_group_is_refused_and_settles_nothing(client: httpx.Client, in_flight: tuple[str, str, str]) -> None:
    group, topic, good = in_flight
    other_group = fresh("g-other")
    [other] = receive(client, other_group, topic, n=1)
    before = (group_state(client, group), group_state(client, other_group))
    assert_problem(_settle_raw(client, "ack", group, topic, [good, other["receipt_handle"]]), 400, "INVALID_RECEIPT_HANDLE")
    assert (group_state(client, group), group_state(client, other_group)) == before


@pytest.mark.parametrize("max_messages", [0, -1, 257])
def test_receive_with_max_messages_out_of_range_is_refused_and_delivers_nothing(client: httpx.Client, max_messages: int) -> None:
    topic, group = fresh("RECV"), fresh("g")
    create_topic(client, topic, 1)
    send(client, topic, "waiting")
    resp = client.post(path("v1", "consumer-groups", group, "topics", topic, "receive"), json={"max_messages": max_messages})
    assert_problem(resp, 400, "INVALID_REQUEST")
    assert_problem(client.get(path("v1", "consumer-groups", group)), 404, "CONSUMER_GROUP_NOT_FOUND")
    [message] = receive(client, group, topic, n=5)
    assert message["body"] == "waiting" and message["delivery_attempt"] == 1


# --- routing ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "url"),
    [("GET", "/nope"), ("GET", "/v2/topics"), ("POST", "/v1/topics/T/queues/0/messages/extra"), ("GET", "/v1/consumer-groups/g/topics/T")],
)
def test_unknown_route_is_a_not_found_problem(client: httpx.Client, method: str, url: str) -> None:
    with stores_nothing(client):
        body = assert_problem(client.request(method, url, json={}), 404, "NOT_FOUND")
    assert body["instance"] == url


@pytest.mark.parametrize(
    ("method", "url"),
    [("DELETE", "/v1/topics"), ("PUT", "/v1/topics/T"), ("GET", "/v1/topics/T/messages"), ("POST", "/healthz"), ("GET", "/v1/consumer-groups/g/topics/T/ack")],
)
def test_wrong_method_is_method_not_allowed(client: httpx.Client, method: str, url: str) -> None:
    with stores_nothing(client):
        body = assert_problem(client.request(method, url), 405, "METHOD_NOT_ALLOWED")
    assert method in body["detail"]


# --- never a 500 --------------------------------------------------------------------------------


def _nested(depth: int) -> bytes:
    return b'{"messages": ' + b"[" * depth + b"]" * depth + b"}"


def _nested_objects(depth: int) -> bytes:
    return b'{"messages": [{"body": "x", "properties": ' + b'{"a": ' * depth + b"1" + b"}" * depth + b"}]}"


def _msgs(**fields: Any) -> bytes:
    return json.dumps({"messages": [{"body": "x", **fields}]}).encode()


_rng = random.Random(20261122)
GARBAGE: list[tuple[str, str, str, bytes | None, str | None]] = [
    # (id, method, url, content, content type)
    ("random-bytes-send", "POST", "/v1/topics/G/messages", _rng.randbytes(512), "application/json"),
    ("random-bytes-create", "POST", "/v1/topics", _rng.randbytes(512), "application/json"),
    ("random-bytes-receive", "POST", "/v1/consumer-groups/g/topics/G/receive", _rng.randbytes(64), "application/json"),
    ("nested-arrays", "POST", "/v1/topics/G/messages", _nested(20000), "application/json"),
    ("nested-objects", "POST", "/v1/topics/G/messages", _nested_objects(20000), "application/json"),
    ("huge-queue-id", "POST", "/v1/topics/G/messages", _msgs(queue_id=10**40), "application/json"),
    ("huge-negative-queue-id", "POST", "/v1/topics/G/messages", _msgs(queue_id=-(10**40)), "application/json"),
    ("float-queue-id", "POST", "/v1/topics/G/messages", _msgs(queue_id=1e308), "application/json"),
    ("infinite-queue-id", "POST", "/v1/topics/G/messages", b'{"messages": [{"body": "x", "queue_id": 1e99999}]}', "application/json"),
    ("nan-queue-id", "POST", "/v1/topics/G/messages", b'{"messages": [{"body": "x", "queue_id": NaN}]}', "application/json"),
    ("huge-queue-count", "POST", "/v1/topics", json.dumps({"name": "HUGEQ", "queues": 10**40}).encode(), "application/json"),
    ("fractional-queue-count", "POST", "/v1/topics", json.dumps({"name": "FRACQ", "queues": 1.5}).encode(), "application/json"),
    ("negative-offset-read", "GET", "/v1/topics/G/queues/0/messages?offset=-1", None, None),
    ("huge-offset-read", "GET", "/v1/topics/G/queues/0/messages?offset=" + "9" * 30, None, None),
    ("enormous-offset-read", "GET", "/v1/topics/G/queues/0/messages?offset=" + "9" * 5000, None, None),
    ("huge-max-read", "GET", "/v1/topics/G/queues/0/messages?max=" + "9" * 30, None, None),
    ("huge-queue-in-path", "GET", "/v1/topics/G/queues/" + "9" * 40 + "/messages", None, None),
    ("negative-queue-in-path", "GET", "/v1/topics/G/queues/-1/messages", None, None),
    ("unicode-topic-send", "POST", "/v1/topics/%E6%97%A5%E6%9C%AC/messages", _msgs(), "application/json"),
    ("unicode-topic-create", "POST", "/v1/topics", json.dumps({"name": "🔥topic"}).encode(), "application/json"),
    ("invalid-utf8-in-path", "POST", "/v1/topics/%FF%FE/messages", _msgs(), "application/json"),
    ("nul-in-path", "GET", "/v1/topics/a%00b/queues/0/messages", None, None),
    ("very-long-topic", "POST", "/v1/topics/" + "t" * 4000 + "/messages", _msgs(), "application/json"),
    ("surrogate-body", "POST", "/v1/topics/G/messages", _msgs(body="\ud800"), "application/json"),
    ("surrogate-keys", "POST", "/v1/topics/G/messages", _msgs(keys=["\ud800"]), "application/json"),
    ("surrogate-property-name", "POST", "/v1/topics/G/messages", _msgs(properties={"\udbff": "v"}), "application/json"),
    ("surrogate-sharding-key", "POST", "/v1/topics/G/messages", _msgs(sharding_key="\udc00"), "application/json"),
    ("surrogate-topic-create", "POST", "/v1/topics", json.dumps({"name": "\ud800"}).encode(), "application/json"),
    ("surrogate-receipt-handle", "POST", "/v1/consumer-groups/g/topics/G/ack", json.dumps({"receipt_handles": ["\ud800"]}).encode(), "application/json"),
    ("surrogate-group-in-path", "GET", "/v1/consumer-groups/%ED%A0%80", None, None),
    ("surrogate-group-in-ack-path", "POST", "/v1/consumer-groups/%ED%B0%80/topics/G/ack", b'{"receipt_handles": ["x"]}', "application/json"),
    ("surrogate-topic-in-path", "GET", "/v1/topics/%ED%B0%80", None, None),
    ("surrogate-topic-in-send-path", "POST", "/v1/topics/%ED%B0%80/messages", _msgs(), "application/json"),
    ("surrogate-transaction-in-end-path", "POST", "/v1/transactions/%ED%B0%80/end", b'{"producer_group": "pg", "state": "commit"}', "application/json"),
    ("surrogate-transaction-in-path", "GET", "/v1/transactions/%ED%B0%80", None, None),
    ("surrogate-transaction-in-force-path", "POST", "/v1/transactions/%ED%B0%80/force-commit", None, None),
    ("null-document", "POST", "/v1/topics/G/messages", b"null", "application/json"),
    ("array-document", "POST", "/v1/topics/G/messages", b"[]", "application/json"),
    ("empty-document", "POST", "/v1/topics/G/messages", b"", "application/json"),
    ("messages-not-a-list", "POST", "/v1/topics/G/messages", b'{"messages": "lots"}', "application/json"),
    ("null-message", "POST", "/v1/topics/G/messages", b'{"messages": [null]}', "application/json"),
    ("numeric-body", "POST", "/v1/topics/G/messages", b'{"messages": [{"body": 12}]}', "application/json"),
    ("unknown-encoding", "POST", "/v1/topics/G/messages", _msgs(body_encoding="rot13"), "application/json"),
    ("nested-property-value", "POST", "/v1/topics/G/messages", _msgs(properties={"a": {"b": [1]}}), "application/json"),
    ("ten-thousand-keys", "POST", "/v1/topics/G/messages", _msgs(keys=[f"k{i}" for i in range(10000)]), "application/json"),
    ("too-many-messages", "POST", "/v1/topics/G/messages", json.dumps({"messages": [{"body": "x"}] * 1001}).encode(), "application/json"),
    ("batch-over-a-segment", "POST", "/v1/topics/G/messages", json.dumps({"messages": [{"body": "x" * 1000}] * 300}).encode(), "application/json"),
    ("utf16-declared", "POST", "/v1/topics/G/messages", _msgs(), "application/json; charset=utf-16"),
    ("bom-prefixed", "POST", "/v1/topics/G/messages", b"\xef\xbb\xbf" + _msgs(), "application/json"),
    ("nan-invisible", "POST", "/v1/consumer-groups/g/topics/G/receive", b'{"invisible_seconds": NaN}', "application/json"),
    ("infinite-wait", "POST", "/v1/consumer-groups/g/topics/G/receive", b'{"wait_seconds": Infinity}', "application/json"),
    ("numeric-handles", "POST", "/v1/consumer-groups/g/topics/G/nack", b'{"receipt_handles": [1, 2]}', "application/json"),
    ("bad-group-name", "POST", "/v1/consumer-groups/a%20b%21/topics/G/receive", b"{}", "application/json"),
    ("receive-system-topic", "POST", "/v1/consumer-groups/g/topics/RMQ_SYS_TRANS_HALF_TOPIC/receive", b"{}", "application/json"),
]


@pytest.fixture(scope="module")
def garbage_topic(client: httpx.Client) -> str:
    create_topic(client, "G", 2)
    send(client, "G", "already here")
    return "G"


@pytest.mark.parametrize(("method", "url", "content", "content_type"), [g[1:] for g in GARBAGE], ids=[g[0] for g in GARBAGE])
def test_garbage_input_never_causes_a_server_error(
    broker_url: str, garbage_topic: str, method: str, url: str, content: bytes | None, content_type: str | None
) -> None:
    # A fresh connection per case: a 5xx makes the server drop the connection, which must not hide the next case.
    headers = {"content-type": content_type} if content_type else {}
    with httpx.Client(base_url=broker_url, timeout=15) as c:
        resp = c.request(method, url, content=content, headers=headers)
        assert resp.status_code < 500, f"{method} {url[:80]} -> {resp.status_code}: {resp.text[:300]}"
        if resp.status_code >= 400:
            assert resp.headers["content-type"].startswith("application/problem+json"), resp.text[:300]
            assert resp.json()["code"]
        assert c.get("/healthz").status_code == 200


@pytest.mark.parametrize("message", [
    {"body": "x", "properties": {"a": "v\u0002REAL_TOPIC\u0001EVIL"}},
    {"body": "x", "properties": {"a\u0001b": "v"}},
    {"body": "x", "keys": ["k\u0002TRAN_MSG\u0001true"]},
    {"body": "x", "tag": "t\u0001"},
    {"body": "x", "properties": {"": "v"}},
], ids=["value-forges-property", "name-separator", "key-separator", "tag-separator", "empty-name"])
def test_property_separators_cannot_forge_broker_properties(client: httpx.Client, message: dict) -> None:
    topic = fresh("FORGE")
    with stores_nothing(client):
        assert_problem(send_raw(client, topic, [message]), 400, "INVALID_REQUEST")


# --- text that UTF-8 cannot carry, in every string field of every request ------------------------
#
# JSON may escape a lone surrogate ("\udc00"); UTF-8 cannot encode one, so the broker could neither
# store it nor echo it. Each case takes a valid request, replaces ONE string (a value, or a free-form
# map's key) with a lone surrogate, and expects 400 MALFORMED_JSON with nothing changed anywhere.
# The cases are generated from the wire structs, so a string field added later is swept too.

SWEEP_TOPIC, SWEEP_GROUP, SWEEP_PRODUCERS = "SWEEP", "sweep-g", "sweep-pg"
_FULL_MESSAGE = {
    "body": "x", "body_encoding": "utf-8", "keys": ["k1", "k2"], "tag": "t",
    "properties": {"p": "v"}, "sharding_key": "s", "message_group": "s",  # a group picks its queue: no queue_id
}
# (model, method, url template, a valid body using every string field of the model)
REQUEST_TEMPLATES: list[tuple[type, str, str, dict[str, Any]]] = [
    (SendRequest, "POST", "/v1/topics/{topic}/messages", {"messages": [_FULL_MESSAGE]}),
    (SendRequest, "POST", "/v1/topics/{topic}/messages", {"messages": [{"body": "x", "keys": "one-key"}]}),
    (HalfSendRequest, "POST", "/v1/transactions", {"producer_group": SWEEP_PRODUCERS, "topic": SWEEP_TOPIC, "message": _FULL_MESSAGE,
                                                   "also": [{**_FULL_MESSAGE, "topic": SWEEP_TOPIC}]}),
    (EndRequest, "POST", "/v1/transactions/{transaction_id}/end", {"producer_group": SWEEP_PRODUCERS, "state": "commit", "from_check": False}),
    (TopicCreate, "POST", "/v1/topics", {"name": "SWEEP-NEW", "queues": 1}),
    (TopicAlter, "PATCH", "/v1/topics/{topic}", {"retention_ms": 60_000}),  # no string field: in the sweep, no case
    (RecallRequest, "POST", "/v1/topics/{topic}/recall", {"recall_handle": "not-a-handle"}),
    (SettleRequest, "POST", "/v1/consumer-groups/{group}/topics/{topic}/ack", {"receipt_handles": ["{handle}"]}),
    (SettleRequest, "POST", "/v1/consumer-groups/{group}/topics/{topic}/nack", {"receipt_handles": ["{handle}"]}),
    (Heartbeat, "POST", "/v1/producers/heartbeat", {"producer_group": SWEEP_PRODUCERS, "client_id": "c1", "check_url": "http://127.0.0.1:9/check"}),
    (ReceiveRequest, "POST", "/v1/consumer-groups/{group}/topics/{topic}/receive", {"max_messages": 1, "invisible_seconds": 30, "wait_seconds": 0,
                                                                                           "tags": ["a"]}),
    (InitProducer, "POST", "/v1/transactional-ids/sweep-tid/init", {"transaction_timeout_ms": 1000}),
    (BeginTxnRequest, "POST", "/v1/transactional-ids/sweep-tid/begin", {"producer_id": 1, "epoch": 0, "sequence": 0}),
    (TxnMessagesRequest, "POST", "/v1/transactional-ids/sweep-tid/messages",
     {"producer_id": 1, "epoch": 0, "sequence": 1, "messages": [{**_FULL_MESSAGE, "topic": SWEEP_TOPIC}]}),
    (TxnAcksRequest, "POST", "/v1/transactional-ids/sweep-tid/acks", {"producer_id": 1, "epoch": 0, "sequence": 1, "receipt_handles": ["{handle}"]}),
    (EndTxnRequest, "POST", "/v1/transactional-ids/sweep-tid/commit", {"producer_id": 1, "epoch": 0}),
    (EndTxnRequest, "POST", "/v1/transactional-ids/sweep-tid/abort", {"producer_id": 1, "epoch": 0}),
    (NewProducerId, "POST", "/v1/producer-ids", {}),
    (ResetOffsetsRequest, "POST", "/v1/consumer-groups/{group}/topics/{topic}/reset-offsets", {"to": "earliest", "dry_run": True}),
    (DlqRedriveRequest, "POST", "/v1/consumer-groups/{group}/dlq/redrive", {"max_messages": 1}),
    (HalfBatchRequest, "POST", "/v1/transaction-batches/half",
     {"items": [{"producer_group": SWEEP_PRODUCERS, "topic": SWEEP_TOPIC, "message": _FULL_MESSAGE,
                 "also": [{**_FULL_MESSAGE, "topic": SWEEP_TOPIC}]}]}),
    (EndBatchRequest, "POST", "/v1/transaction-batches/end",
     {"items": [{"transaction_id": "{transaction_id}", "producer_group": SWEEP_PRODUCERS, "state": "commit", "from_check": False}]}),
]
# Models that only travel from the broker (answers, and the check-back it POSTs): never parsed from a stranger.
NOT_REQUESTS = {
    "SendResult", "SendResponse", "Message", "QueueInfo", "TopicInfo", "TopicList", "OffsetReadResponse",
    "ReceiveResponse", "SettleResult", "SettleResponse", "GroupQueueState", "GroupTopicState", "ConsumerGroupInfo",
    "HalfSendResult", "Transaction", "CheckRequest", "CheckResponse",
}


def _inner(kind: msgspec.inspect.Type) -> Iterator[msgspec.inspect.Type]:
    """``kind`` and the types it holds (a union's members, a list's items, a map's keys and values, a bound's type)."""
    yield kind
    if isinstance(kind, msgspec.inspect.Metadata):
        yield from _inner(kind.type)
    elif isinstance(kind, msgspec.inspect.UnionType):
        for member in kind.types:
            yield from _inner(member)
    elif isinstance(kind, msgspec.inspect.ListType):
        yield from _inner(kind.item_type)
    elif isinstance(kind, msgspec.inspect.DictType):
        yield from _inner(kind.key_type)
        yield from _inner(kind.value_type)


def _string_fields(shape: type[msgspec.Struct], prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """Dotted paths of every field of ``shape`` (and nested structs) whose type can hold a string."""
    info = msgspec.inspect.type_info(shape)
    assert isinstance(info, msgspec.inspect.StructType)
    out = set()
    for field in info.fields:
        kinds = list(_inner(field.type))
        nested = [k.cls for k in kinds if isinstance(k, msgspec.inspect.StructType)]
        if nested:
            out |= _string_fields(nested[0], (*prefix, field.name))
        elif any(isinstance(k, msgspec.inspect.StrType) for k in kinds):
            out.add((*prefix, field.name))
    return out


def _string_locations(body: Any, at: tuple = ()) -> Iterator[tuple[tuple, bool]]:
    """(path, is_key) of every string value in ``body`` and every key of a free-form ``properties`` map."""
    if isinstance(body, dict):
        for key, value in body.items():
            if at and at[-1] == "properties":
                yield (*at, key), True
            yield from _string_locations(value, (*at, key))
    elif isinstance(body, list):
        for i, value in enumerate(body):
            yield from _string_locations(value, (*at, i))
    elif isinstance(body, str):
        yield at, False


def _poisoned(body: Any, at: tuple, is_key: bool, bad: str) -> Any:
    body = copy.deepcopy(body)
    holder = body
    for step in at[:-1]:
        holder = holder[step]
    if is_key:
        holder[bad] = holder.pop(at[-1])
    else:
        holder[at[-1]] = bad
    return body


def _field_path(at: tuple) -> tuple[str, ...]:
    """A location in a body as the model's dotted field path (list indexes and map keys dropped)."""
    names = [str(s) for s in at if isinstance(s, str)]
    return tuple(names[: names.index("properties") + 1] if "properties" in names else names)


SURROGATE_CASES = [
    pytest.param(
        model,
        method,
        url,
        body,
        at,
        is_key,
        id=f"{model.__name__}-{method}{url.rsplit('/', 1)[-1]}-{'.'.join(map(str, at))}{'-key' if is_key else ''}",
    )
    for model, method, url, body in REQUEST_TEMPLATES
    for at, is_key in _string_locations(body)
]


def test_the_surrogate_sweep_covers_every_string_field_of_every_request_model() -> None:
    models = set(_Request.__subclasses__())  # every request body (the batches' items too: their own templates)
    requests = {m.__name__ for m in models} - NOT_REQUESTS - {"OutgoingMessage"}
    assert requests == {m.__name__ for m, *_ in REQUEST_TEMPLATES}, "classify the new wire model"
    for model in {m for m, *_ in REQUEST_TEMPLATES}:
        covered = {
            _field_path(at) for m, _, _, body in REQUEST_TEMPLATES if m is model for at, _ in _string_locations(body)
        }
        assert _string_fields(model) <= covered, f"{model.__name__}: add the missing string fields to its template"


@pytest.fixture(scope="module")
def sweep_context(client: httpx.Client) -> dict[str, str]:
    """A topic, a group holding one message in flight, and a pending transaction for the templates.

    The transaction's first check is a day away: the broker's check-back timer moves a due transaction's
    ``next_check_timestamp`` (and may count a check), which a request of the sweep must not, and the sweep
    compares every field of it before and after each request, for longer than the broker's transaction_timeout."""
    create_topic(client, SWEEP_TOPIC, 1)
    send(client, SWEEP_TOPIC, "held")
    [held] = receive(client, SWEEP_GROUP, SWEEP_TOPIC, n=1, invisible=3600)
    half = client.post(
        "/v1/transactions",
        json={"producer_group": SWEEP_PRODUCERS, "topic": SWEEP_TOPIC,
              "message": {"body": "pending", "properties": {"CHECK_IMMUNITY_TIME_IN_SECONDS": "86400"}}},
    )
    half.raise_for_status()
    return {
        "topic": SWEEP_TOPIC,
        "group": SWEEP_GROUP,
        "handle": held["receipt_handle"],
        "transaction_id": half.json()["transaction_id"],
    }


def broker_state(client: httpx.Client, ctx: dict[str, str]) -> tuple[Any, ...]:
    """What any request of the sweep could change: the store, the producers, the group and the transaction."""
    producers = client.get("/v1/producers")
    assert producers.status_code == 200, producers.text[:300]
    transaction = client.get(path("v1", "transactions", ctx["transaction_id"]))
    assert transaction.status_code == 200, transaction.text[:300]
    tx = {k: v for k, v in transaction.json().items() if k != "age_seconds"}
    return store_state(client), producers.json(), group_state(client, ctx["group"]), tx


@pytest.mark.parametrize("encoding", ["escaped", "raw-utf8-bytes"])
@pytest.mark.parametrize(("model", "method", "url", "body", "at", "is_key"), SURROGATE_CASES)
def test_lone_surrogate_in_any_string_of_any_request_is_malformed_json_and_changes_nothing(
    client: httpx.Client,
    sweep_context: dict[str, str],
    model: type,
    method: str,
    url: str,
    body: dict,
    at: tuple,
    is_key: bool,
    encoding: str,
) -> None:
    # "escaped" is the JSON escape \udc00; "raw" sends the surrogate's would-be UTF-8 bytes (ED B0 80), which
    # Python's json.loads(bytes) decodes with surrogatepass: both once reached FastAPI's routes.
    filled = json.loads(json.dumps(body).replace("{handle}", sweep_context["handle"])
                        .replace("{transaction_id}", sweep_context["transaction_id"]))
    poisoned = _poisoned(filled, at, is_key, "\udc00")
    content = (
        json.dumps(poisoned).encode()
        if encoding == "escaped"
        else json.dumps(poisoned, ensure_ascii=False).encode("utf-8", "surrogatepass")
    )
    before = broker_state(client, sweep_context)
    resp = post_raw(client, url.format(**sweep_context), content)
    assert_problem(resp, 400, "MALFORMED_JSON")
    assert broker_state(client, sweep_context) == before


def producers_of(client: httpx.Client, group: str) -> list[dict]:
    resp = client.get("/v1/producers")
    assert resp.status_code == 200, resp.text[:300]
    return [{k: v for k, v in p.items() if k != "last_heartbeat_timestamp"}  # when, not who: compared by who
            for g in resp.json()["groups"] if g["producer_group"] == group for p in g["producers"]]


def test_a_refused_poisoned_heartbeat_leaves_registration_and_listing_working(client: httpx.Client) -> None:
    # The heartbeat of the hardening issue: it once answered 500 yet stayed in memory, and from then on
    # every registration and GET /v1/producers failed (the snapshot could not encode it).
    group = fresh("poison-pg")
    poisoned = json.dumps(
        {"producer_group": group, "client_id": "c1", "check_url": "http://127.0.0.1:9/\udc00"}
    ).encode()
    assert_problem(post_raw(client, "/v1/producers/heartbeat", poisoned), 400, "MALFORMED_JSON")
    assert producers_of(client, group) == []
    good = client.post(
        "/v1/producers/heartbeat",
        json={"producer_group": group, "client_id": "c2", "check_url": "http://127.0.0.1:9/ok"},
    )
    assert good.status_code == 200, good.text
    assert producers_of(client, group) == [{"client_id": "c2", "check_url": "http://127.0.0.1:9/ok"}]


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/\x00",
        "http://127.0.0.1:9/a\tb",
        "http://127.0.0.1:9/\r\nX-Injected: 1",
        "http://127.0.0.1:9/\x7f",
        "http://127.0.0.1:9/\u200b",
        "http://127.0.0.1:9/\x85",
    ],
    ids=["nul", "tab", "crlf", "del", "zero-width-space", "c1-control"],
)
def test_check_url_with_control_or_invisible_characters_is_refused_at_heartbeat(client: httpx.Client, url: str) -> None:
    # They pass urlsplit, but the check client cannot dial them (httpx.InvalidURL): the group would be stuck.
    group = fresh("ctl-pg")
    resp = client.post("/v1/producers/heartbeat", json={"producer_group": group, "client_id": "c1", "check_url": url})
    assert_problem(resp, 400, "CHECK_URL_REFUSED")
    assert producers_of(client, group) == []


# --- numbers the broker interprets ---------------------------------------------------------------


def half_raw(
    client: httpx.Client, message: dict[str, Any], group: str = "num-pg", topic: str = "NUMS"
) -> httpx.Response:
    return post_raw(
        client, "/v1/transactions", json.dumps({"producer_group": group, "topic": topic, "message": message}).encode()
    )


@pytest.mark.parametrize(
    "immunity",
    [
        "1e400",
        "inf",
        "-inf",
        "Infinity",
        "nan",
        "NaN",
        "-1",
        "-0.5",
        "1e300",
        "99999999999999999999999",
        "86401",
        "abc",
        "",
        " 5",
        "5 ",
        "0x10",
        "1_000",
        "٣",
    ],
)
def test_check_immunity_time_that_is_not_a_sane_number_of_seconds_is_refused_at_half_send(
    client: httpx.Client, immunity: str
) -> None:
    # Once stored, "1e400" or "inf" made the pending listing and the lookup answer 500 (next check at infinity).
    create_topic(client, "NUMS", 1)
    with stores_nothing(client):
        body = assert_problem(
            half_raw(client, {"body": "x", "properties": {"CHECK_IMMUNITY_TIME_IN_SECONDS": immunity}}),
            400,
            "INVALID_PROPERTY",
        )
    assert "CHECK_IMMUNITY_TIME_IN_SECONDS" in body["detail"]
    with stores_nothing(client):  # a plain send carrying it is refused alike: one rule for the property
        assert_problem(
            send_raw(client, "NUMS", [{"body": "x", "properties": {"CHECK_IMMUNITY_TIME_IN_SECONDS": immunity}}]),
            400,
            "INVALID_PROPERTY",
        )
    assert client.get("/v1/transactions", params={"state": "pending"}).status_code == 200


@pytest.mark.parametrize(("immunity", "delay"), [("0", None), ("30", 30.0), ("1.5", 1.5), ("86400", 86400.0)])
def test_check_immunity_time_within_range_sets_the_first_check_and_the_views_answer(
    client: httpx.Client, immunity: str, delay: float | None
) -> None:
    create_topic(client, "NUMS", 1)
    resp = half_raw(client, {"body": "x", "properties": {"CHECK_IMMUNITY_TIME_IN_SECONDS": immunity}})
    assert resp.status_code == 200, resp.text
    txid = resp.json()["transaction_id"]
    tx = client.get(path("v1", "transactions", txid))
    assert tx.status_code == 200, tx.text
    first_check = (tx.json()["next_check_timestamp"] - tx.json()["born_timestamp"]) / 1000
    assert first_check == pytest.approx(
        delay if delay is not None else 6.0, abs=0.01
    )  # "0": the broker's transaction_timeout
    listed = client.get("/v1/transactions", params={"state": "pending", "limit": 10_000})
    assert listed.status_code == 200 and txid in {t["transaction_id"] for t in listed.json()["transactions"]}
    client.post(path("v1", "transactions", txid, "force-rollback")).raise_for_status()


NUMBER_CASES = [
    # (id, method, url, raw body or None, expected status, expected code)
    *[
        (
            f"queue-id-{text}",
            "POST",
            "/v1/topics/NUMS/messages",
            b'{"messages": [{"body": "x", "queue_id": %s}]}' % text.encode(),
            400,
            code,
        )
        for text, code in [
            ("1e400", "INVALID_REQUEST"),
            ("-1e400", "INVALID_REQUEST"),
            ("NaN", "INVALID_REQUEST"),
            ("Infinity", "INVALID_REQUEST"),
            ("-1", "INVALID_REQUEST"),
            ("1.5", "INVALID_REQUEST"),
            ("1" + "0" * 30, "INVALID_QUEUE_ID"),
            ('"abc"', "INVALID_REQUEST"),
        ]
    ],
    *[
        (
            f"half-queue-id-{text}",
            "POST",
            "/v1/transactions",
            b'{"producer_group": "num-pg", "topic": "NUMS", "message": {"body": "x", "queue_id": %s}}' % text.encode(),
            400,
            code,
        )
        for text, code in [
            ("1e400", "INVALID_REQUEST"),
            ("NaN", "INVALID_REQUEST"),
            ("-1", "INVALID_REQUEST"),
            ("1" + "0" * 30, "INVALID_QUEUE_ID"),
        ]
    ],
    *[
        (f"queues-{text}", "POST", "/v1/topics", b'{"name": "NUMS-NEW", "queues": %s}' % text.encode(), 400, code)
        for text, code in [
            ("1e400", "INVALID_REQUEST"),
            ("NaN", "INVALID_REQUEST"),
            ("Infinity", "INVALID_REQUEST"),
            ("-1", "INVALID_QUEUE_COUNT"),
            ("1" + "0" * 30, "INVALID_QUEUE_COUNT"),
            ("2.5", "INVALID_REQUEST"),
            ('"many"', "INVALID_REQUEST"),
        ]
    ],
    *[
        (
            f"receive-{field}-{text}",
            "POST",
            "/v1/consumer-groups/num-g/topics/NUMS/receive",
            b'{"%s": %s}' % (field.encode(), text.encode()),
            400,
            "INVALID_REQUEST",
        )
        for field in ("max_messages", "invisible_seconds", "wait_seconds")
        for text in ("1e400", "-1e400", "NaN", "Infinity", "-1", "1" + "0" * 30, '"soon"')
    ],
    *[
        (f"read-{name}-{text}", "GET", f"/v1/topics/NUMS/queues/0/messages?{name}={text}", None, 400, "INVALID_REQUEST")
        for name in ("offset", "max")
        for text in ("1e400", "inf", "nan", "-1", "abc", "1.5")
    ],
    *[
        (f"read-queue-{text}", "GET", f"/v1/topics/NUMS/queues/{text}/messages", None, 400, code)
        for text, code in [
            ("inf", "INVALID_REQUEST"),
            ("nan", "INVALID_REQUEST"),
            ("1e400", "INVALID_REQUEST"),
            ("-1", "INVALID_QUEUE_ID"),
            ("9" * 30, "INVALID_QUEUE_ID"),
        ]
    ],
    *[
        (f"list-limit-{text}", "GET", f"/v1/transactions?limit={text}", None, 400, "INVALID_REQUEST")
        for text in ("1e400", "inf", "nan", "-1", "0", "9" * 30)
    ],
]


@pytest.mark.parametrize(
    ("method", "url", "content", "status", "code"), [c[1:] for c in NUMBER_CASES], ids=[c[0] for c in NUMBER_CASES]
)
def test_numbers_that_are_not_finite_in_range_values_are_refused_and_change_nothing(
    client: httpx.Client, method: str, url: str, content: bytes | None, status: int, code: str
) -> None:
    create_topic(client, "NUMS", 1)
    with stores_nothing(client):
        resp = client.request(
            method, url, content=content, headers={"content-type": "application/json"} if content is not None else {}
        )
        assert_problem(resp, status, code)
    assert_problem(client.get("/v1/consumer-groups/num-g"), 404, "CONSUMER_GROUP_NOT_FOUND")


# --- forged receipt handles ---------------------------------------------------------------------
#
# A receipt handle is opaque to clients. Anything the broker did not issue (random text, a cut or
# edited handle, one from another broker) is refused as a whole request and creates no state: a
# settle to a group that never received must not bring that group into being.


def _b64decode(handle: str) -> bytes:
    return base64.urlsafe_b64decode(handle + "=" * (-len(handle) % 4))


def _b64encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _forged(group: str, topic: str, queue_id: int = 0, offset: int = 0, nonce: int = 1, epoch: str = "deadbeef") -> str:
    """A handle in the layout this broker once issued, made up by a client."""
    return _b64encode("\x1f".join((group, topic, str(queue_id), str(offset), str(nonce), epoch)).encode())


def _retargeted(handle: str, group: str, topic: str, new_group: str) -> str:
    """A genuine handle with its group renamed in place (everything else kept)."""
    raw = _b64decode(handle)
    prefix = f"{group}\x1f{topic}\x1f".encode()
    assert raw.startswith(prefix)
    return _b64encode(f"{new_group}\x1f{topic}\x1f".encode() + raw[len(prefix) :])


def _tampered_offset(handle: str, group: str, topic: str) -> str:
    """A genuine handle whose offset field points at the next message."""
    raw = _b64decode(handle)
    head = f"{group}\x1f{topic}\x1f0\x1f".encode()
    assert raw.startswith(head)
    offset, rest = raw[len(head) :].split(b"\x1f", 1)
    return _b64encode(head + str(int(offset) + 1).encode() + b"\x1f" + rest)


@pytest.fixture
def two_in_flight(client: httpx.Client) -> tuple[str, str, list[str]]:
    """(group, topic, receipt handles) of two received, unacked messages in a one-queue topic."""
    topic, group = fresh("FORGE-T"), fresh("forge-g")
    create_topic(client, topic, 1)
    send(client, topic, "first", "second")
    return group, topic, [m["receipt_handle"] for m in receive(client, group, topic, n=2, invisible=60)]


@pytest.mark.parametrize("verb", ["ack", "nack"])
@pytest.mark.parametrize("how", ["made-up", "made-up-garbage", "renamed-group"])
def test_forged_receipt_handle_for_a_group_that_never_received_is_refused_and_creates_no_group(
    client: httpx.Client, two_in_flight: tuple[str, str, list[str]], verb: str, how: str
) -> None:
    group, topic, handles = two_in_flight
    never = fresh("never-g")
    forged = {
        "made-up": _forged(never, topic),
        "made-up-garbage": _forged(never, topic, offset=10**30, nonce=-5, epoch="x" * 300),
        "renamed-group": _retargeted(handles[0], group, topic, never),
    }[how]
    with stores_nothing(client):
        assert_problem(_settle_raw(client, verb, never, topic, [forged]), 400, "INVALID_RECEIPT_HANDLE")
    assert_problem(client.get(path("v1", "consumer-groups", never)), 404, "CONSUMER_GROUP_NOT_FOUND")
    assert settle(client, "ack", group, topic, handles) == ["OK", "OK"]  # the genuine deliveries are untouched


@pytest.mark.parametrize("verb", ["ack", "nack"])
@pytest.mark.parametrize("how", ["truncated", "tampered-offset", "made-up-for-this-group", "extra-byte"])
def test_tampered_receipt_handle_is_refused_whole_and_settles_nothing(
    client: httpx.Client, two_in_flight: tuple[str, str, list[str]], verb: str, how: str
) -> None:
    # "tampered-offset" points at the other in-flight message: it must not settle a delivery it was not given.
    group, topic, handles = two_in_flight
    bad = {
        "truncated": handles[0][:-6],
        "tampered-offset": _tampered_offset(handles[0], group, topic),
        "made-up-for-this-group": _forged(group, topic, offset=1, nonce=2),
        "extra-byte": _b64encode(_b64decode(handles[0]) + b"\x00"),
    }[how]
    before = group_state(client, group)
    assert_problem(_settle_raw(client, verb, group, topic, [bad]), 400, "INVALID_RECEIPT_HANDLE")
    assert group_state(client, group) == before
    assert settle(client, "ack", group, topic, handles) == ["OK", "OK"]


def test_receipt_handle_issued_by_another_broker_is_refused_and_creates_no_group(
    client: httpx.Client, strict_client: httpx.Client
) -> None:
    # Same group and topic names on both brokers: only the issuer can tell its handles apart.
    topic, group = fresh("OTHERBROKER"), fresh("ob-g")
    for c in (client, strict_client):
        create_topic(c, topic, 1)
        send(c, topic, "m")
    [elsewhere] = receive(strict_client, group, topic, n=1)
    with stores_nothing(client):
        assert_problem(
            _settle_raw(client, "ack", group, topic, [elsewhere["receipt_handle"]]), 400, "INVALID_RECEIPT_HANDLE"
        )
    assert_problem(client.get(path("v1", "consumer-groups", group)), 404, "CONSUMER_GROUP_NOT_FOUND")


# --- UNIQ_KEY: the producer's message id ---------------------------------------------------------


def test_a_producer_set_uniq_key_is_the_msg_id_and_a_repeat_is_stored_again(client: httpx.Client) -> None:
    # docs/decisions/008-validation.md: a retried send keeps its UNIQ_KEY, so a duplicate is visible as one
    # (same msg_id) to consumers; stopping it at the broker is the idempotent producer's job.
    topic, group = fresh("UNIQ"), fresh("uniq-g")
    create_topic(client, topic, 1)
    first = send(client, topic, "order-1", properties={"UNIQ_KEY": "7F0000011C2A18B4AAC2"})
    again = send(client, topic, "order-1", properties={"UNIQ_KEY": "7F0000011C2A18B4AAC2"})
    assert [r["msg_id"] for r in first + again] == ["7F0000011C2A18B4AAC2"] * 2
    assert again[0]["queue_offset"] == first[0]["queue_offset"] + 1
    received = receive(client, group, topic, n=10)
    assert [(m["msg_id"], m["body"]) for m in received] == [("7F0000011C2A18B4AAC2", "order-1")] * 2


@pytest.mark.parametrize(
    "key",
    ["", " ", "a b", "x" * 129, "tab\there", "ünï", "k\x00", "\u200b"],
    ids=["empty", "space", "inner-space", "too-long", "tab", "non-ascii", "nul", "zero-width"],
)
def test_a_uniq_key_that_is_not_1_to_128_visible_ascii_characters_is_refused(client: httpx.Client, key: str) -> None:
    topic = fresh("UNIQBAD")
    with stores_nothing(client):
        body = assert_problem(
            send_raw(client, topic, [{"body": "fine"}, {"body": "x", "properties": {"UNIQ_KEY": key}}]),
            400,
            "INVALID_PROPERTY",
        )
        assert "UNIQ_KEY" in body["detail"]
        assert_problem(
            half_raw(client, {"body": "x", "properties": {"UNIQ_KEY": key}}, topic=topic), 400, "INVALID_PROPERTY"
        )
    assert topic not in topic_names(client)
