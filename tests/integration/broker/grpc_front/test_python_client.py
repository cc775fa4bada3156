"""Apache's rocketmq-python-client, unchanged, against a real halfmq broker's gRPC front."""

from __future__ import annotations

import threading
import time

import pytest
from rocketmq import ConsumeResult, FilterExpression, MessageListener, Producer, PushConsumer, SimpleConsumer, TransactionChecker
from rocketmq import TransactionResolution as Resolution
from rocketmq.grpc_protocol import MessageType
from rocketmq.v5.exception import BadRequestException

from halfmq.client import Producer as HttpProducer
from halfmq.client.simple_consumer import SimpleConsumer as HttpSimpleConsumer
from tests.support.waiting import wait_for

from .conftest import RmqBroker, message

pytestmark = pytest.mark.slow


class Answers(TransactionChecker):
    """The producer's check-back: answers what the test says and remembers what it was asked."""

    def __init__(self, answer=Resolution.COMMIT) -> None:
        self.answer = answer
        self.asked: list[str] = []

    def check(self, message):
        self.asked.append(message.message_id)
        return self.answer


def drain(consumer: SimpleConsumer, rounds: int = 3, ack: bool = True) -> list:
    out = []
    for _ in range(rounds):
        for m in consumer.receive(32, 15):
            out.append(m)
            if ack:
                consumer.ack(m)
    return out


def test_a_committed_transactional_message_is_delivered_once_to_a_simple_consumer(rmq_broker: RmqBroker, started) -> None:
    producer = started(Producer(rmq_broker.config(), ("orders",), Answers()))
    tx = producer.begin_transaction()
    receipt = producer.send(message("orders", b"order-1", tag="created", keys="o-1"), tx)
    tx.commit()
    consumer = started(SimpleConsumer(rmq_broker.config(), "billing", {"orders": FilterExpression()}, await_duration=1))
    got = drain(consumer)
    assert [(m.body, m.message_id, m.tag) for m in got] == [(b"order-1", receipt.message_id, "created")]
    assert drain(consumer, rounds=2) == []


def test_a_rolled_back_transactional_message_is_never_delivered(rmq_broker: RmqBroker, started) -> None:
    producer = started(Producer(rmq_broker.config(), ("orders",), Answers(Resolution.COMMIT)))
    tx = producer.begin_transaction()
    producer.send(message("orders", b"cancelled"), tx)
    tx.rollback()
    producer.send(message("orders", b"plain-after"))
    consumer = started(SimpleConsumer(rmq_broker.config(), "billing", {"orders": FilterExpression()}, await_duration=1))
    time.sleep(1.5)  # past the transaction timeout: a check, had the rollback been lost, would have committed it
    assert [m.body for m in drain(consumer)] == [b"plain-after"]


def test_a_transaction_never_ended_is_decided_by_the_clients_checker_over_telemetry(rmq_broker: RmqBroker, started) -> None:
    committing = Answers(Resolution.COMMIT)
    producer = started(Producer(rmq_broker.config(), ("orders",), committing))
    tx = producer.begin_transaction()
    receipt = producer.send(message("orders", b"left-open"), tx)  # neither commit nor rollback: the broker must ask
    consumer = started(SimpleConsumer(rmq_broker.config(), "billing", {"orders": FilterExpression()}, await_duration=2))
    got = []
    wait_for(lambda: got.extend(drain(consumer, rounds=1)) or got, timeout=20)
    assert [m.body for m in got] == [b"left-open"]
    assert receipt.message_id in committing.asked


def test_a_checker_answering_rollback_keeps_the_message_from_consumers(rmq_broker: RmqBroker, started) -> None:
    rolling_back = Answers(Resolution.ROLLBACK)
    producer = started(Producer(rmq_broker.config(), ("orders",), rolling_back))
    producer.send(message("orders", b"never"), producer.begin_transaction())
    wait_for(lambda: rolling_back.asked, timeout=20)
    consumer = started(SimpleConsumer(rmq_broker.config(), "billing", {"orders": FilterExpression()}, await_duration=1))
    time.sleep(1.0)
    assert drain(consumer, rounds=2) == []
    with HttpProducer(rmq_broker.url) as http:
        assert http.get_topic("orders").name == "orders"


def test_receive_then_change_invisible_duration_redelivers_and_ack_settles(rmq_broker: RmqBroker, started) -> None:
    producer = started(Producer(rmq_broker.config(), ("jobs",)))
    producer.send(message("jobs", b"job-1"))
    consumer = started(SimpleConsumer(rmq_broker.config(), "workers", {"jobs": FilterExpression()}, await_duration=1))
    [first] = drain(consumer, rounds=2, ack=False)
    assert first.delivery_attempt == 1
    consumer.change_invisible_duration(first, 4)
    assert drain(consumer, rounds=1, ack=False) == []  # still invisible (the poll waits 1 s)
    time.sleep(3.2)
    [second] = drain(consumer, rounds=2, ack=False)
    assert (second.body, second.delivery_attempt) == (b"job-1", 2)
    consumer.ack(second)
    time.sleep(0.5)
    assert drain(consumer, rounds=2) == []


def test_a_push_consumer_with_a_listener_gets_every_message(rmq_broker: RmqBroker, started) -> None:
    seen: list[bytes] = []
    lock = threading.Lock()

    class Collect(MessageListener):
        def consume(self, message):
            with lock:
                seen.append(message.body)
            return ConsumeResult.SUCCESS

    started(PushConsumer(rmq_broker.config(), "pushers", Collect(), {"events": FilterExpression()}))
    producer = started(Producer(rmq_broker.config(), ("events",)))
    for i in range(5):
        producer.send(message("events", f"e-{i}".encode()))
    wait_for(lambda: len(seen) >= 5, timeout=30)
    time.sleep(1.0)
    assert sorted(seen) == [f"e-{i}".encode() for i in range(5)]


def test_a_message_failing_every_attempt_lands_in_the_dead_letter_queue(start_rmq_broker, started) -> None:
    broker = start_rmq_broker({"HALFMQ_BROKER_MAX_RECONSUME_TIMES": "1"})
    attempts: list[int] = []

    class Fail(MessageListener):
        def consume(self, message):
            attempts.append(message.delivery_attempt)
            return ConsumeResult.FAILURE

    started(PushConsumer(broker.config(), "fragile", Fail(), {"poison": FilterExpression()}))
    started(Producer(broker.config(), ("poison",))).send(message("poison", b"bad"))
    with HttpProducer(broker.url) as http:
        def dead() -> list:
            try:
                return http.read("%DLQ%fragile", 0, 0).messages
            except Exception:  # noqa: BLE001 - not created yet
                return []
        wait_for(dead, timeout=90)  # the client lets a failed message's invisible time (30 s) run out: ~32 s quiet
        [moved] = dead()
    assert moved.body == "bad"
    assert attempts[:2] == [1, 2]


def test_two_fifo_simple_consumers_keep_each_of_3_groups_in_send_order(rmq_broker: RmqBroker, started) -> None:
    groups, per_group = ("user-1", "user-2", "user-3"), 6
    producer = started(Producer(rmq_broker.config(), ("credits",)))
    for seq in range(per_group):  # interleaved across the groups, each group's messages in send order
        for group in groups:
            fifo = message("credits", f"{group}:{seq}".encode())
            fifo.message_group = group
            producer.send(fifo)
    seen: list[tuple[str, int, str, int]] = []  # (group, seq, its group and type as received), each before its ack
    batches: list[list[str]] = []  # the groups of each receive's messages
    lock = threading.Lock()
    consumers = [started(SimpleConsumer(rmq_broker.config(), "credit-appliers", {"credits": FilterExpression()}, await_duration=1))
                 for _ in range(2)]

    def consume(consumer: SimpleConsumer) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(seen) < len(groups) * per_group:
            batch = consumer.receive(32, 60)
            batches.append([m.message_group for m in batch])
            for m in batch:
                group, seq = m.body.decode().split(":")
                with lock:
                    seen.append((group, int(seq), m.message_group, m.message_type))
                consumer.ack(m)  # the group's next message is handed out only after this

    threads = [threading.Thread(target=consume, args=(c,)) for c in consumers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {g: [seq for group, seq, _, _ in seen if group == g] for g in groups} == {g: list(range(per_group)) for g in groups}
    assert all((told, kind) == (group, MessageType.FIFO) for group, _, told, kind in seen)
    assert all(len(set(batch)) == len(batch) for batch in batches)  # one message of a group at a time


def test_a_delay_message_arrives_no_earlier_than_its_delivery_timestamp(rmq_broker: RmqBroker, started) -> None:
    consumer = started(SimpleConsumer(rmq_broker.config(), "reminders", {"payments": FilterExpression()}, await_duration=1))
    producer = started(Producer(rmq_broker.config(), ("payments",)))
    due = int(time.time()) + 3  # Apache's Python client sends whole seconds
    delayed = message("payments", b"payment due")
    delayed.delivery_timestamp = due
    producer.send(delayed)
    producer.send(message("payments", b"paid"))  # a plain one after it is not held back by it
    arrivals: dict[bytes, tuple[float, object]] = {}
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline and len(arrivals) < 2:
        for m in consumer.receive(32, 30):
            arrivals[m.body] = (time.time(), m)
            consumer.ack(m)
    arrived, received = arrivals[b"payment due"]
    assert arrived >= due
    assert (received.delivery_timestamp, received.message_type) == (due * 1000, MessageType.DELAY)


def test_grpc_in_http_sdk_out_and_http_sdk_in_grpc_out(rmq_broker: RmqBroker, started) -> None:
    producer = started(Producer(rmq_broker.config(), ("bridge",)))
    sent = producer.send(message("bridge", b"from-grpc", tag="g"))
    http_consumer = HttpSimpleConsumer(rmq_broker.url, "http-side", "bridge")
    got = http_consumer.receive(16, 30, wait_seconds=2)
    assert [(m.body, m.msg_id, m.tag) for m in got] == [("from-grpc", sent.message_id, "g")]
    http_consumer.ack([m.receipt_handle for m in got])
    http_consumer.close()

    with HttpProducer(rmq_broker.url) as http:
        result = http.send("bridge", "from-http")
    consumer = started(SimpleConsumer(rmq_broker.config(), "grpc-side", {"bridge": FilterExpression()}, await_duration=1))
    bodies = [(m.body, m.message_id) for m in drain(consumer)]
    assert (b"from-http", result.msg_id) in bodies


def test_a_simple_consumer_subscribed_with_a_tag_expression_gets_only_those_tags_and_never_the_others(
        rmq_broker: RmqBroker, started) -> None:
    producer = started(Producer(rmq_broker.config(), ("tagged",)))
    for n, tag in enumerate(["created", "paid", "shipped", "created"]):
        producer.send(message("tagged", f"m{n}".encode(), tag=tag))
    consumer = started(SimpleConsumer(rmq_broker.config(), "billing", {"tagged": FilterExpression("created || paid")},
                                      await_duration=1))
    got = drain(consumer)
    assert sorted((m.body, m.tag) for m in got) == [(b"m0", "created"), (b"m1", "paid"), (b"m3", "created")]
    http = HttpSimpleConsumer(rmq_broker.url, "billing", "tagged")  # the group's view over HTTP: "shipped" was consumed for it
    try:
        assert http.receive(max_messages=16, wait_seconds=1) == []
    finally:
        http.close()


def test_apaches_client_recalls_a_delay_message_before_it_is_due_and_hears_too_late_after(rmq_broker: RmqBroker, started) -> None:
    consumer = started(SimpleConsumer(rmq_broker.config(), "reminders", {"payments": FilterExpression()}, await_duration=1))
    producer = started(Producer(rmq_broker.config(), ("payments",)))
    due = int(time.time()) + 3  # Apache's Python client sends whole seconds
    receipts = {}
    for body in (b"recalled", b"kept"):
        delayed = message("payments", body)
        delayed.delivery_timestamp = due
        receipts[body] = producer.send(delayed)
    assert all(receipt.recall_handle for receipt in receipts.values())
    assert producer.recall_message("payments", receipts[b"recalled"].recall_handle) == receipts[b"recalled"].message_id
    bodies: list[bytes] = []
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline and b"kept" not in bodies:
        for m in consumer.receive(32, 30):
            bodies.append(m.body)
            consumer.ack(m)
    bodies += [m.body for m in drain(consumer, rounds=2)]  # a release pass or more past the due time of both
    assert bodies == [b"kept"]
    with pytest.raises(BadRequestException, match="RECALL_TOO_LATE"):
        producer.recall_message("payments", receipts[b"kept"].recall_handle)
    with pytest.raises(BadRequestException, match="INVALID_RECALL_HANDLE"):
        producer.recall_message("payments", "not-a-handle")
