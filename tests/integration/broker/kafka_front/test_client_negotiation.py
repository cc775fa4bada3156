"""Real Kafka clients against the Kafka listener: ApiVersions negotiated from the table, then Metadata refused with
an error the client reports (not a hang, not a dropped connection), and the listener's own edges over a socket.

The listener runs in the test's event loop on a port the OS picks, with a dispatcher that has no handlers (so every
API but ApiVersions is "not served"); the blocking clients run in a thread beside it. test_kafka_clients.py drives the
broker's own front.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient
from kafka.errors import KafkaTimeoutError
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse

from halfmq.broker.kafka_front.dispatch import Dispatcher, PendingAnswer
from halfmq.broker.kafka_front.framing import frame
from halfmq.broker.kafka_front.listener import KafkaListener
from halfmq.broker.kafka_front.request_header import parse_request_header

UNSUPPORTED_VERSION = 35


class RecordingDispatcher(Dispatcher):
    """The real dispatcher, noting each (api key, version) it answered, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.answered: list[tuple[int, int]] = []

    async def begin(self, payload: bytes) -> bytes | None | PendingAnswer:
        answer = await super().begin(payload)
        header = parse_request_header(payload, self.is_flexible)
        self.answered.append((header.api_key, header.api_version))
        return answer


@dataclass
class Listening:
    port: int
    dispatcher: RecordingDispatcher
    listener: KafkaListener = field(repr=False)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"


@pytest.fixture
async def kafka_listener() -> AsyncIterator[Listening]:
    dispatcher = RecordingDispatcher()
    listener = KafkaListener(dispatcher, max_frame_bytes=64 * 1024)
    port = await listener.start("127.0.0.1", 0)
    yield Listening(port, dispatcher, listener)
    await listener.stop()


async def test_kafka_python_negotiates_api_versions_then_fails_its_bootstrap_on_the_refused_metadata(kafka_listener: Listening) -> None:
    with pytest.raises(KafkaTimeoutError, match="bootstrap"):
        await asyncio.wait_for(asyncio.to_thread(
            KafkaAdminClient, bootstrap_servers=kafka_listener.bootstrap, bootstrap_timeout_ms=3000, request_timeout_ms=3000,
            client_id="negotiation-test"), timeout=60)
    answered = kafka_listener.dispatcher.answered
    assert answered[0] == (18, 4)  # ApiVersions at kafka-python 3's newest, answered with the table
    assert answered[1] == (3, 12)  # Metadata at the table's ceiling: kafka-python knows v13, the table says 12


async def test_confluent_kafka_negotiates_api_versions_and_reports_the_refused_metadata_as_an_error(kafka_listener: Listening) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_listener.bootstrap, "client.id": "negotiation-test"})
    metadata = await asyncio.wait_for(asyncio.to_thread(admin.list_topics, topic="orders", timeout=20), timeout=60)
    assert metadata.topics["orders"].error.code() == KafkaError.UNSUPPORTED_VERSION
    answered = kafka_listener.dispatcher.answered
    assert answered[0][0] == 18 and answered[0][1] >= 3  # librdkafka asks ApiVersions v3+ first
    assert (3, 12) in answered[1:]  # then Metadata, at the table's ceiling


def ask(sock: socket.socket, payload: bytes) -> bytes:
    sock.sendall(frame(payload))
    (size,) = struct.unpack(">i", receive(sock, 4))
    return receive(sock, size)


def receive(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError(f"closed after {len(data)} of {n} bytes")
        data += chunk
    return data


def payload_of(request, correlation_id: int) -> bytes:
    request.with_header(correlation_id=correlation_id, client_id="raw")
    return bytes(request.encode(header=True))


def raw_conversation(port: int) -> list[object]:
    seen: list[object] = []
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        too_new = bytearray(payload_of(ApiVersionsRequest[3](client_software_name="raw", client_software_version="1"), 1))
        struct.pack_into(">h", too_new, 2, 42)
        body = ask(sock, bytes(too_new))
        seen.append(struct.unpack_from(">ih", body))
        seen.append(len(ApiVersionsResponse.decode(body[4:], version=0).api_keys))
        unknown = struct.pack(">hhih", 999, 0, 2, -1)
        seen.append(struct.unpack(">ih", ask(sock, unknown)))
        body = ask(sock, payload_of(MetadataRequest[1](topics=[MetadataRequest.MetadataRequestTopic(name="t")]), 3))
        seen.append([(t.name, t.error_code) for t in MetadataResponse.decode(body, version=1, header=True).topics])
        sock.sendall(struct.pack(">i", 64 * 1024 + 1))  # over this listener's bound: the connection ends
        seen.append(sock.recv(1))
    return seen


async def test_every_refusal_is_answered_on_the_same_connection_and_only_an_oversized_frame_closes_it(kafka_listener: Listening) -> None:
    seen = await asyncio.wait_for(asyncio.to_thread(raw_conversation, kafka_listener.port), timeout=60)
    assert seen == [(1, UNSUPPORTED_VERSION), 26, (2, UNSUPPORTED_VERSION), [("t", UNSUPPORTED_VERSION)], b""]
