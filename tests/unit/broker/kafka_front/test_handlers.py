"""The Kafka front's Fetch waits for records on the store's arrivals (the long polls' wake-up), never on a timer; an
idempotent producer this node holds nothing of starts over at number 0."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from kafka.errors import LeaderNotAvailableError, OutOfOrderSequenceNumberError, UnknownTopicOrPartitionError
from kafka.protocol.consumer import FetchRequest

from halfmq.broker.kafka_front.handlers import KafkaHandlers, Node
from halfmq.broker.kafka_front.producer_sequences import ProducerSequences
from halfmq.broker.kafka_front.record_batches import Record, encode_batch
from halfmq.broker.kafka_front.request_header import RequestHeader
from halfmq.broker.security.access import ANONYMOUS
from halfmq.broker.store.record import StoredMessage


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FakeTopics:
    """One queue that a test fills; ``wait_for_records`` is a real wait on an event the test sets (the arrival)."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.records: list[Any] = []
        self.arrival = asyncio.Event()
        self.waits: list[tuple[list[str], float]] = []
        self.closing = False

    def read_records(self, who: Any, scope: Any, topic: str, queue_id: int, offset: int, limit: int) -> tuple[list[Any], tuple[int, int]]:
        return self.records[offset:offset + limit], (0, len(self.records))

    async def wait_for_records(self, topics: list[str], seconds: float) -> bool:
        self.waits.append((topics, seconds))
        await self.arrival.wait()
        self.arrival.clear()
        return not self.closing


def fetch_request(max_wait_ms: int) -> Any:
    partition = SimpleNamespace(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
    return SimpleNamespace(max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20,
                           topics=[SimpleNamespace(topic="ORDERS", partitions=[partition])])


def handlers(topics: FakeTopics, clock: FakeClock) -> KafkaHandlers:
    runtime = SimpleNamespace(usecases=SimpleNamespace(topics=topics))
    return KafkaHandlers(lambda: runtime, Node("127.0.0.1", 9092), lambda: ANONYMOUS, ProducerSequences(10), None,  # type: ignore[arg-type]
                         clock=clock)


HEADER = RequestHeader(api_key=int(FetchRequest.API_KEY), api_version=12, correlation_id=1, client_id="test", flexible=True,
                       body_offset=0)


def message(offset: int) -> StoredMessage:
    return StoredMessage(topic="ORDERS", queue_id=0, queue_offset=offset, commit_log_offset=offset, born_timestamp=1,
                         store_timestamp=1, properties={}, body=b"m%d" % offset)


async def test_a_fetch_waiting_for_records_is_answered_at_their_arrival_with_them() -> None:
    clock = FakeClock()
    topics = FakeTopics(clock)
    fetching = asyncio.create_task(handlers(topics, clock).fetch(fetch_request(max_wait_ms=60_000), HEADER))
    await asyncio.sleep(0)
    assert not fetching.done() and topics.waits == [(["ORDERS"], 60.0)]  # it waits on the topic's arrivals, all its time

    topics.records.append(message(0))
    topics.arrival.set()
    answer = await asyncio.wait_for(fetching, 30)

    [partition] = answer.responses[0].partitions
    assert partition.high_watermark == 1 and partition.records


async def test_a_wake_without_records_for_it_waits_again_for_what_is_left_of_max_wait() -> None:
    clock = FakeClock()
    topics = FakeTopics(clock)
    fetching = asyncio.create_task(handlers(topics, clock).fetch(fetch_request(max_wait_ms=10_000), HEADER))
    await asyncio.sleep(0)
    clock.now += 4
    topics.arrival.set()  # another partition's record: nothing for this fetch
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert not fetching.done() and [seconds for _, seconds in topics.waits] == [10.0, 6.0]

    clock.now += 6
    topics.arrival.set()
    answer = await asyncio.wait_for(fetching, 30)  # its time is up: answered empty
    assert answer.responses[0].partitions[0].records == b""


async def test_a_fetch_waiting_when_the_broker_stops_serving_is_answered_at_once_with_what_there_is() -> None:
    clock = FakeClock()
    topics = FakeTopics(clock)
    fetching = asyncio.create_task(handlers(topics, clock).fetch(fetch_request(max_wait_ms=60_000), HEADER))
    await asyncio.sleep(0)
    topics.closing = True  # shutdown, or a set's leader stepping down: the long polls end
    topics.arrival.set()
    answer = await asyncio.wait_for(fetching, 30)
    assert answer.responses[0].partitions[0].records == b"" and len(topics.waits) == 1


class FakeSending:
    """Writes at once (as the sender does, before any await), then waits for ``flushed`` (the fsync)."""

    def __init__(self) -> None:
        self.sent: list[Any] = []
        self.flushed = asyncio.Event()
        self.flushed.set()

    async def send(self, publisher: Any, body: Any) -> Any:
        offset = len(self.sent)
        self.sent += body.messages
        await self.flushed.wait()
        return SimpleNamespace(results=[SimpleNamespace(queue_offset=offset)])


def produce_request(producer_id: int, base_sequence: int) -> Any:
    batch = encode_batch([Record(0, 1, None, b"v", ())], producer_id=producer_id, producer_epoch=3, base_sequence=base_sequence)
    partition = SimpleNamespace(index=0, records=batch)
    return SimpleNamespace(transactional_id=None, topic_data=[SimpleNamespace(name="ORDERS", partition_data=[partition])])


async def produced(handlers: KafkaHandlers, request: Any, header: RequestHeader) -> Any:
    """The Produce's response: its records written when ``produce`` returns, the answer once their flush ends."""
    return await (await handlers.produce(request, header)).rest


def producing_handlers() -> tuple[KafkaHandlers, FakeSending]:
    sending = FakeSending()
    runtime = SimpleNamespace(usecases=SimpleNamespace(sending=sending), access=SimpleNamespace(publisher=lambda *_: None))
    return KafkaHandlers(lambda: runtime, Node("127.0.0.1", 9092), lambda: ANONYMOUS, ProducerSequences(10), None), sending  # type: ignore[arg-type]


async def test_a_producer_this_node_holds_nothing_of_is_taken_at_the_number_it_carries_and_a_repeat_is_answered_once() -> None:
    """A set's new leader (or a restarted broker) has no batches of a running idempotent producer: its next batch,
    numbered where the client left off, is stored (as Kafka's brokers take a producer they hold no state of; aiokafka
    has no KIP-360 answer to UNKNOWN_PRODUCER_ID), the next one follows it, and a repeat is answered with its first answer."""
    handlers, sending = producing_handlers()
    header = RequestHeader(api_key=0, api_version=9, correlation_id=1, client_id="t", flexible=True, body_offset=0)
    [taken] = (await produced(handlers, produce_request(77, base_sequence=288), header)).responses[0].partition_responses
    [again] = (await produced(handlers, produce_request(77, base_sequence=288), header)).responses[0].partition_responses
    [next_one] = (await produced(handlers, produce_request(77, base_sequence=289), header)).responses[0].partition_responses
    [skipped] = (await produced(handlers, produce_request(77, base_sequence=291), header)).responses[0].partition_responses
    assert (taken.error_code, again.error_code, again.base_offset, next_one.error_code) == (0, 0, taken.base_offset, 0)
    assert skipped.error_code == OutOfOrderSequenceNumberError.errno and len(sending.sent) == 2


async def test_a_produce_writes_every_partition_before_it_returns_and_is_answered_after_their_flushes() -> None:
    handlers, sending = producing_handlers()
    sending.flushed.clear()
    header = RequestHeader(api_key=0, api_version=9, correlation_id=1, client_id="t", flexible=True, body_offset=0)
    batch = encode_batch([Record(0, 1, None, b"v", ())])
    partitions = [SimpleNamespace(index=i, records=batch) for i in range(3)]
    request = SimpleNamespace(transactional_id=None, topic_data=[SimpleNamespace(name="ORDERS", partition_data=partitions)])

    later = await handlers.produce(request, header)
    assert len(sending.sent) == 3  # written, in order, before the connection reads its next request
    answering = asyncio.ensure_future(later.rest)
    await asyncio.sleep(0)
    assert not answering.done()  # the answer waits for the flush
    sending.flushed.set()
    response = await asyncio.wait_for(answering, 30)
    assert [p.index for p in response.responses[0].partition_responses] == [0, 1, 2]


async def test_an_idempotent_producer_s_next_batch_is_taken_while_the_one_before_waits_for_its_flush() -> None:
    """librdkafka pipelines a partition's batches: the second (numbered on from the first) comes while the first's
    flush is awaited, and it follows it, not OUT_OF_ORDER_SEQUENCE_NUMBER."""
    handlers, sending = producing_handlers()
    header = RequestHeader(api_key=0, api_version=9, correlation_id=1, client_id="t", flexible=True, body_offset=0)
    await produced(handlers, produce_request(77, base_sequence=0), header)
    sending.flushed.clear()
    first = await handlers.produce(produce_request(77, base_sequence=1), header)
    second = await handlers.produce(produce_request(77, base_sequence=2), header)
    sending.flushed.set()
    answers = [(await later.rest).responses[0].partition_responses[0] for later in (first, second)]
    assert [a.error_code for a in answers] == [0, 0] and [a.base_offset for a in answers] == [1, 2] and len(sending.sent) == 3


class FakeLeaderIds:
    """A follower's way to the leader's producer ids: records the token it is asked with."""

    def __init__(self) -> None:
        self.tokens: list[str | None] = []

    async def new_producer_id(self, token: str | None) -> tuple[int, int]:
        self.tokens.append(token)
        return 4711, 0


async def test_a_followers_idempotent_producer_id_is_the_leaders_asked_with_the_connections_token() -> None:
    """No use case of the follower's runtime is called (it has none of the leader's): the id comes from the leader."""
    from halfmq.broker.kafka_front.sasl import connection_token
    from halfmq.broker.kafka_front.set_view import Broker, SetView

    leader_ids = FakeLeaderIds()
    view = SetView(own=2, brokers=(Broker(1, "h1", 9092), Broker(2, "h2", 9093)), leader=1, leading=False)
    follower = KafkaHandlers(lambda: SimpleNamespace(), Node("h2", 9093, 2), lambda: ANONYMOUS, ProducerSequences(10), None,  # type: ignore[arg-type]
                             view=lambda: view, leader_ids=leader_ids)  # type: ignore[arg-type]
    header = RequestHeader(api_key=22, api_version=4, correlation_id=1, client_id="t", flexible=True, body_offset=0)
    request = SimpleNamespace(transactional_id=None, transaction_timeout_ms=-1)
    reset = connection_token.set("alice-token")
    try:
        answer = await follower.init_producer_id(request, header)
    finally:
        connection_token.reset(reset)
    assert (answer.error_code, answer.producer_id, answer.producer_epoch) == (0, 4711, 0)
    assert leader_ids.tokens == ["alice-token"]


class FakeLeaderTopics:
    """A follower's way to the leader's topic creation: records what it is asked, answers ``queues``."""

    def __init__(self, queues: int = 2) -> None:
        self.asked: list[tuple[str, str | None]] = []
        self.queues = queues

    async def create(self, name: str, token: str | None) -> int:
        self.asked.append((name, token))
        return self.queues


class FollowerTopics:
    """The follower's own topics use case: ``known`` topics and their queue counts; it never creates one."""

    def __init__(self, known: dict[str, int]) -> None:
        self.known = known

    def describe(self, who: Any, scope: Any, name: str) -> Any:
        from halfmq.errors import TopicNotFound

        if name not in self.known:
            raise TopicNotFound(f"no topic {name!r}")
        return SimpleNamespace(queues=[None] * self.known[name])

    async def create(self, who: Any, scope: Any, body: Any) -> Any:
        raise AssertionError("a follower creates no topic of its own")


def follower_metadata(known: dict[str, int], leader: int | None = 1) -> tuple[KafkaHandlers, FakeLeaderTopics]:
    from halfmq.broker.kafka_front.set_view import Broker, SetView

    view = SetView(own=2, brokers=(Broker(1, "h1", 9092), Broker(2, "h2", 9093)), leader=leader, leading=False)
    runtime = SimpleNamespace(usecases=SimpleNamespace(topics=FollowerTopics(known)))
    leader_topics = FakeLeaderTopics()
    return KafkaHandlers(lambda: runtime, Node("h2", 9093, 2), lambda: ANONYMOUS, ProducerSequences(10), None,  # type: ignore[arg-type]
                         view=lambda: view, leader_topics=leader_topics), leader_topics  # type: ignore[arg-type]


async def metadata_of(handlers: KafkaHandlers, topic: str, auto: bool, token: str | None = None) -> Any:
    from halfmq.broker.kafka_front.sasl import connection_token

    header = RequestHeader(api_key=3, api_version=8, correlation_id=1, client_id="t", flexible=False, body_offset=0)
    request = SimpleNamespace(topics=[SimpleNamespace(name=topic)], allow_auto_topic_creation=auto)
    reset = connection_token.set(token)
    try:
        [answer] = (await handlers.metadata(request, header)).topics
    finally:
        connection_token.reset(reset)
    return answer


async def test_a_follower_creates_an_unknown_topic_on_the_leader_as_the_connection_and_names_the_leader_s_partitions() -> None:
    follower, leader = follower_metadata({})
    answer = await metadata_of(follower, "ORDERS", auto=True, token="alice-token")
    assert leader.asked == [("ORDERS", "alice-token")]
    assert answer.error_code == 0 and [(p.partition_index, p.leader_id) for p in answer.partitions] == [(0, 1), (1, 1)]


async def test_a_follower_creates_nothing_when_the_client_does_not_allow_it_or_the_topic_is_known() -> None:
    follower, leader = follower_metadata({"KNOWN": 3})
    refused = await metadata_of(follower, "ORDERS", auto=False)
    known = await metadata_of(follower, "KNOWN", auto=True)
    assert leader.asked == []
    assert refused.error_code == UnknownTopicOrPartitionError.errno and refused.partitions == []
    assert known.error_code == 0 and len(known.partitions) == 3


async def test_a_follower_that_knows_no_leader_answers_leader_not_available_for_a_topic_to_create() -> None:
    follower, leader = follower_metadata({}, leader=None)
    answer = await metadata_of(follower, "ORDERS", auto=True)
    assert leader.asked == [] and answer.error_code == LeaderNotAvailableError.errno
