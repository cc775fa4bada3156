"""Kafka's own Python clients, unchanged, against a real broker process with its Kafka listener on.

kafka-python (its default producer is idempotent) and librdkafka through confluent-kafka produce and consume with
consumer groups; what they produce the SDK reads over HTTP and the other way round; a group's committed offsets are
the offsets every front shares, and they survive a kill -9 of the broker.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer as RdConsumer
from confluent_kafka import Producer as RdProducer
from confluent_kafka.admin import AdminClient as RdAdminClient
from confluent_kafka.admin import NewTopic as RdNewTopic
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import KafkaError, SaslAuthenticationFailedError, TopicAlreadyExistsError, TopicAuthorizationFailedError
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse

from halfmq.client import Producer, SimpleConsumer
from tests.conftest import TEST_BROKER_ENV
from tests.support.auth import write_auth_file
from tests.support.processes import BrokerProcess, free_port
from tests.support.unique_names import unique

pytestmark = pytest.mark.timeout(180)


class KafkaBroker:
    def __init__(self, root: Path, env: dict[str, str] | None = None) -> None:
        self.kafka_port = free_port()
        self.process = BrokerProcess(root / "data", root, {**TEST_BROKER_ENV, "HALFMQ_BROKER_KAFKA_PORT": str(self.kafka_port),
                                                           **(env or {})})

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.kafka_port}"

    @property
    def url(self) -> str:
        return self.process.url


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    running = KafkaBroker(tmp_path_factory.mktemp("kafka-broker"))
    running.process.start(timeout=60)
    try:
        yield running
    finally:
        running.process.stop()


def consume_with_kafka_python(broker: KafkaBroker, topic: str, group: str, expected: int, members: int) -> list[tuple[str, int, int, bytes]]:
    """``members`` consumers of one group in threads until ``expected`` records arrived (or 60 s)."""
    got: list[tuple[str, int, int, bytes]] = []
    done = threading.Event()

    def member(name: str) -> None:
        consumer = KafkaConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=group, client_id=name,
                                 auto_offset_reset="earliest", consumer_timeout_ms=1000)
        deadline = time.monotonic() + 60
        try:
            while not done.is_set() and time.monotonic() < deadline:
                for record in consumer:
                    got.append((name, record.partition, record.offset, record.value))
                    if len(got) >= expected:
                        done.set()
                consumer.commit()
        finally:
            consumer.close()

    threads = [threading.Thread(target=member, args=(f"member-{i}",)) for i in range(members)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    return got


def test_kafka_python_s_default_idempotent_producer_and_a_group_of_two_see_every_record_once(broker: KafkaBroker) -> None:
    topic, group = unique("KAFKA_PY"), unique("kgroup")
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)  # enable_idempotence is its default
    sent = [producer.send(topic, key=b"k%d" % i, value=b"v%d" % i, headers=[("origin", b"kafka")], partition=i % 2).get(timeout=30)
            for i in range(40)]
    producer.close()
    assert sorted((m.partition, m.offset) for m in sent) == sorted((i % 2, i // 2) for i in range(40))

    got = consume_with_kafka_python(broker, topic, group, 40, members=2)

    assert sorted(value for _, _, _, value in got) == sorted(b"v%d" % i for i in range(40))
    assert len({(partition, offset) for _, partition, offset, _ in got}) == 40  # each record once across the group
    with httpx.Client(base_url=broker.url) as http:
        lag = http.get(f"/v1/consumer-groups/{group}").json()
    [state] = [t for t in lag["topics"] if t["topic"] == topic]
    committed = {q["queue_id"]: q["committed_offset"] for q in state["queues"]}
    assert committed == {0: 20, 1: 20, 2: 0, 3: 0}  # the group's Kafka commits are the offsets the HTTP front shows


def test_librdkafka_with_zstd_batches_and_a_group_consumer(broker: KafkaBroker) -> None:
    topic, group = unique("KAFKA_RD"), unique("rdgroup")
    producer = RdProducer({"bootstrap.servers": broker.bootstrap, "compression.type": "zstd", "linger.ms": 20,
                           "enable.idempotence": True})
    for i in range(200):
        producer.produce(topic, key=b"key-%d" % i, value=b"value-%d" % i, headers={"h": b"x"})
    assert producer.flush(30) == 0

    consumer = RdConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = {}
    deadline = time.monotonic() + 60
    while len(got) < 200 and time.monotonic() < deadline:
        record = consumer.poll(1.0)
        if record is None or record.error():
            continue
        got[record.value()] = (record.key(), record.headers())
    consumer.close()

    assert len(got) == 200
    assert got[b"value-7"] == (b"key-7", [("h", b"x")])


def test_what_kafka_produces_the_sdk_reads_and_what_the_sdk_sends_kafka_consumes(broker: KafkaBroker) -> None:
    topic, group = unique("KAFKA_BOTH"), unique("both")
    with Producer(broker.url) as sdk:
        sdk.create_topic(topic, queues=1)
        kafka = KafkaProducer(bootstrap_servers=broker.bootstrap)
        kafka.send(topic, key=b"order-1", value="été".encode(), headers=[("p", b"v")], partition=0).get(timeout=30)
        kafka.close()
        [message] = sdk.read(topic, 0, 0, max=1).messages
        assert (message.body, message.keys, message.properties["p"]) == ("été", ["order-1"], "v")

        sdk.send(topic, "from http", keys=["order-2"], properties={"q": "w"})
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group, auto_offset_reset="earliest",
                             consumer_timeout_ms=3000)
    consumer.assign([TopicPartition(topic, 0)])
    records = list(consumer)
    consumer.close()
    assert [(r.key, r.value, dict(r.headers).get("q")) for r in records] == [
        (b"order-1", "été".encode(), None), (b"order-2", b"from http", b"w")]


def test_a_record_with_a_header_that_is_not_utf8_is_refused_and_nothing_is_stored(broker: KafkaBroker) -> None:
    topic = unique("KAFKA_BAD")
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, retries=0)
    producer.send(topic, value=b"fine", partition=0).get(timeout=30)
    with pytest.raises(Exception, match="InvalidRecord"):
        producer.send(topic, value=b"x", headers=[("h", b"\xff\xfe")], partition=0).get(timeout=30)
    producer.close()
    with Producer(broker.url) as sdk:
        assert [m.body for m in sdk.read(topic, 0, 0, max=10).messages] == ["fine"]


def test_a_group_s_committed_offsets_survive_a_kill_9_and_consumption_resumes_after_them(tmp_path: Path) -> None:
    broker = KafkaBroker(tmp_path)
    broker.process.start(timeout=60)
    try:
        topic, group = unique("KAFKA_KILL"), unique("killgroup")
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
        for i in range(10):
            producer.send(topic, value=b"m%d" % i, partition=0).get(timeout=30)
        producer.close()
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group, auto_offset_reset="earliest",
                                 enable_auto_commit=False, consumer_timeout_ms=3000, max_poll_records=6)
        partition = TopicPartition(topic, 0)
        consumer.assign([partition])
        first = consumer.poll(timeout_ms=5000, max_records=6)[partition]
        consumer.commit()
        consumer.close()
        assert [r.offset for r in first] == list(range(6))

        broker.process.kill9()
        broker.process.restart(timeout=60)

        again = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group, auto_offset_reset="earliest",
                              consumer_timeout_ms=3000)
        again.assign([partition])
        assert [r.value for r in again] == [b"m%d" % i for i in range(6, 10)]
        again.close()
    finally:
        broker.process.stop()


def call(connection: socket.socket, request: Any, response: Any) -> Any:
    """One request on a raw connection and its decoded answer (kafka-python's classes, as the clients use them)."""
    request.with_header(correlation_id=7, client_id="raw")
    connection.sendall(bytes(request.encode(framed=True, header=True)))
    size = struct.unpack(">i", recv_exactly(connection, 4))[0]
    payload = recv_exactly(connection, size)
    return response.decode(payload[4 + (1 if request.flexible_version_q(request.API_VERSION) else 0):], version=request.API_VERSION)


def recv_exactly(connection: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = connection.recv(size - len(data))
        assert chunk, "the connection closed"
        data += chunk
    return data


def sasl(user: str, password: str) -> dict[str, str]:
    return {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN", "sasl_plain_username": user,
            "sasl_plain_password": password}


def test_with_auth_on_a_client_signs_in_with_sasl_plain_and_acts_within_its_principal_s_grants(tmp_path: Path) -> None:
    _, tokens = write_auth_file(tmp_path / "auth.json")
    broker = KafkaBroker(tmp_path, {"HALFMQ_BROKER_AUTH_FILE": str(tmp_path / "auth.json")})
    broker.process.start(timeout=60)
    try:
        with Producer(broker.url, token=tokens["admin"]) as admin:
            admin.create_topic("MALLORY_KAFKA", queues=1)
            admin.create_topic("ORDER_TOPIC", queues=1)
        mallory = KafkaProducer(bootstrap_servers=broker.bootstrap, retries=0, max_block_ms=10_000, **sasl("mallory", tokens["mallory"]))
        assert mallory.send("MALLORY_KAFKA", b"mine", partition=0).get(timeout=30).offset == 0
        with pytest.raises(TopicAuthorizationFailedError):
            mallory.send("ORDER_TOPIC", b"not mine", partition=0).get(timeout=30)
        mallory.close()

        with socket.create_connection(("127.0.0.1", broker.kafka_port), timeout=10) as wrong:  # a token not the user's
            assert call(wrong, SaslHandshakeRequest[1](mechanism="PLAIN"), SaslHandshakeResponse).error_code == 0
            signed = call(wrong, SaslAuthenticateRequest[2](auth_bytes=b"\x00admin\x00" + tokens["mallory"].encode()),
                          SaslAuthenticateResponse)
            assert signed.error_code == SaslAuthenticationFailedError.errno
        with socket.create_connection(("127.0.0.1", broker.kafka_port), timeout=5) as plain:  # no SASL: closed at once
            metadata = MetadataRequest[0](topics=[])
            metadata.with_header(correlation_id=1, client_id="plain")
            plain.sendall(bytes(metadata.encode(framed=True, header=True)))
            assert plain.recv(4) == b""
        with Producer(broker.url, token=tokens["admin"]) as admin:
            assert [m.body for m in admin.read("ORDER_TOPIC", 0, 0, max=5).messages] == []
    finally:
        broker.process.stop()


def test_an_sdk_consumer_group_and_a_kafka_group_of_the_same_name_share_the_committed_offset(broker: KafkaBroker) -> None:
    topic, group = unique("KAFKA_SHARE"), unique("shared")
    with Producer(broker.url) as sdk:
        sdk.create_topic(topic, queues=1)
        for i in range(4):
            sdk.send(topic, f"m{i}")
    with SimpleConsumer(broker.url, group, topic) as http_consumer:
        received = http_consumer.receive(max_messages=2, wait_seconds=2)
        http_consumer.ack(received)
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group, consumer_timeout_ms=3000)
    consumer.assign([TopicPartition(topic, 0)])
    assert [r.value for r in consumer] == [b"m2", b"m3"]  # the Kafka member starts where the HTTP group committed
    consumer.close()


def test_kafka_s_admin_clients_create_topics_and_list_and_describe_groups(broker: KafkaBroker) -> None:
    topic, group = unique("KAFKA_ADMIN"), unique("admgroup")
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])
    with pytest.raises(TopicAlreadyExistsError):
        admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])
    with Producer(broker.url) as sdk:
        assert len(sdk.get_topic(topic).queues) == 3  # the SDK sees the topic Kafka's admin made

    member = KafkaConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=group, client_id="the-member",
                           consumer_timeout_ms=500)
    list(member)  # joins the group and waits for records once
    assert {"group_id": group, "protocol_type": "consumer", "group_state": "Stable"} in admin.list_groups()
    described = admin.describe_groups([group])[group]
    assert described["group_state"] == "Stable" and [m["client_id"] for m in described["members"]] == ["the-member"]
    assert described["members"][0]["member_assignment"]["assigned_partitions"] == [{"topic": topic, "partitions": [0, 1, 2]}]
    member.close()

    admin.delete_topics([topic])
    with Producer(broker.url) as sdk:
        assert topic not in [t.name for t in sdk.list_topics()]  # what Kafka's admin deleted, no front lists
    rd_admin = RdAdminClient({"bootstrap.servers": broker.bootstrap})
    futures = rd_admin.create_topics([RdNewTopic(topic + "_RD", num_partitions=2, replication_factor=1)])
    futures[topic + "_RD"].result(timeout=30)
    with Producer(broker.url) as sdk:
        assert len(sdk.get_topic(topic + "_RD").queues) == 2
    admin.close()


def test_a_kafka_transaction_s_records_appear_at_its_commit_and_an_aborted_one_s_never(broker: KafkaBroker) -> None:
    topic, tid = unique("KAFKA_TXN"), unique("ktx")
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=tid)
    producer.init_transactions()
    producer.begin_transaction()
    for i in range(3):
        producer.send(topic, b"committed-%d" % i, partition=0)
    producer.flush()
    with Producer(broker.url) as sdk:
        assert sdk.read(topic, 0, 0, max=10).messages == []  # held by the open transaction: no front sees it yet
    producer.commit_transaction()
    producer.begin_transaction()
    producer.send(topic, b"aborted", partition=0)
    producer.flush()
    producer.abort_transaction()
    producer.close()

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, isolation_level="read_committed", auto_offset_reset="earliest",
                             consumer_timeout_ms=3000)
    consumer.assign([TopicPartition(topic, 0)])
    assert [r.value for r in consumer] == [b"committed-0", b"committed-1", b"committed-2"]
    consumer.close()


def test_a_second_producer_with_the_same_transactional_id_fences_the_first(broker: KafkaBroker) -> None:
    topic, tid = unique("KAFKA_FENCE"), unique("fence")
    first = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=tid)
    first.init_transactions()
    first.begin_transaction()
    first.send(topic, b"from the zombie", partition=0)
    first.flush()
    second = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=tid)
    second.init_transactions()  # a new epoch: the first's open transaction is aborted
    with pytest.raises(KafkaError):
        first.commit_transaction()
    second.begin_transaction()
    second.send(topic, b"from the new one", partition=0)
    second.commit_transaction()
    second.close()
    first.close(timeout=5)
    with Producer(broker.url) as sdk:
        assert [m.body for m in sdk.read(topic, 0, 0, max=10).messages] == ["from the new one"]
