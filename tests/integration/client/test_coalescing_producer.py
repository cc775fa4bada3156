"""The producers' coalesced sends against a real broker process: fewer requests, each caller's own answer."""

from __future__ import annotations

import asyncio
import re
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from halfmq.client import UNIQ_KEY, AsyncProducer, OutgoingMessage, Producer, SendStatus
from halfmq.errors import InvalidProperty, ReservedProperty
from tests.integration.broker.http_helpers import read_all
from tests.support.lossy_proxy import LossyProxy
from tests.support.processes import BrokerProcess


def create(url: str, topic: str, queues: int = 1) -> None:
    httpx.post(f"{url}/v1/topics", json={"name": topic, "queues": queues}).raise_for_status()


def stored(url: str, topic: str, queue_id: int = 0) -> list[dict]:
    with httpx.Client(base_url=url, timeout=10) as client:
        return read_all(client, topic, queue_id)


def send_requests(url: str) -> int:
    """Send requests the broker has answered so far, over all statuses."""
    text = httpx.get(f"{url}/metrics").text
    return int(sum(float(v) for v in re.findall(r"^halfmq_send_requests_total\{[^}]*\} ([0-9.eE+]+)$", text, re.M)))


def test_64_concurrent_sends_share_requests_and_each_caller_gets_its_own_offset(broker: BrokerProcess) -> None:
    create(broker.url, "CO_MANY")

    async def scenario() -> list:
        async with AsyncProducer(broker.url) as producer:
            return await asyncio.gather(*(producer.send("CO_MANY", f"m{i:02}") for i in range(64)))

    before = send_requests(broker.url)
    results = asyncio.run(scenario())
    requests = send_requests(broker.url) - before
    messages = stored(broker.url, "CO_MANY")
    assert requests <= 4, f"{requests} requests for 64 sends of one loop pass"
    assert all(r.status is SendStatus.SEND_OK for r in results)
    by_offset = {m["queue_offset"]: m for m in messages}
    assert len(messages) == 64
    for i, result in enumerate(results):  # each caller's result is its own message's
        assert by_offset[result.queue_offset]["body"] == f"m{i:02}"
        assert by_offset[result.queue_offset]["msg_id"] == result.msg_id


def test_coalesce_false_sends_one_request_per_message(broker: BrokerProcess) -> None:
    create(broker.url, "CO_OFF")

    async def scenario() -> None:
        async with AsyncProducer(broker.url, coalesce=False) as producer:
            await asyncio.gather(*(producer.send("CO_OFF", f"m{i}") for i in range(16)))

    before = send_requests(broker.url)
    asyncio.run(scenario())
    assert send_requests(broker.url) - before == 16


def test_one_bad_message_among_good_ones_gets_its_own_error_and_the_others_are_stored_once(broker: BrokerProcess) -> None:
    create(broker.url, "CO_BAD")
    bad_properties = [{"ORIGIN_MESSAGE_ID": "forged"}, {UNIQ_KEY: "has space"}]

    async def scenario() -> list:
        async with AsyncProducer(broker.url) as producer:
            sends = [producer.send("CO_BAD", f"good{i}") for i in range(6)]
            sends.insert(2, producer.send("CO_BAD", "reserved", properties=bad_properties[0]))
            sends.insert(5, producer.send("CO_BAD", "invalid", properties=bad_properties[1]))
            return await asyncio.gather(*sends, return_exceptions=True)

    outcomes = asyncio.run(scenario())
    assert isinstance(outcomes[2], ReservedProperty)
    assert isinstance(outcomes[5], InvalidProperty) and outcomes[5].status == 400
    good = [o for i, o in enumerate(outcomes) if i not in (2, 5)]
    assert all(o.status is SendStatus.SEND_OK for o in good)
    assert sorted(m["body"] for m in stored(broker.url, "CO_BAD")) == [f"good{i}" for i in range(6)]


def test_retries_through_a_proxy_that_loses_answers_store_each_coalesced_message_once(broker: BrokerProcess) -> None:
    create(broker.url, "CO_ONCE")
    proxy = LossyProxy(broker.port, "/v1/topics/CO_ONCE/messages", drops=3)
    try:
        async def scenario() -> None:
            async with AsyncProducer(proxy.url, retries=5) as producer:
                for round_ in range(3):
                    await asyncio.gather(*(producer.send("CO_ONCE", f"r{round_}m{i}") for i in range(20)))

        asyncio.run(scenario())
    finally:
        proxy.close()
    assert proxy.dropped == 3
    bodies = Counter(m["body"] for m in stored(broker.url, "CO_ONCE"))
    assert bodies == Counter(f"r{r}m{i}" for r in range(3) for i in range(20))


def test_the_same_loss_without_numbering_stores_coalesced_messages_twice(broker: BrokerProcess) -> None:
    create(broker.url, "CO_TWICE")
    proxy = LossyProxy(broker.port, "/v1/topics/CO_TWICE/messages", drops=1)
    try:
        async def scenario() -> None:
            async with AsyncProducer(proxy.url, retries=3, idempotent=False) as producer:
                await asyncio.gather(*(producer.send("CO_TWICE", f"m{i}") for i in range(5)))

        asyncio.run(scenario())
    finally:
        proxy.close()
    assert Counter(m["body"] for m in stored(broker.url, "CO_TWICE")) == Counter({f"m{i}": 2 for i in range(5)})


def test_per_message_options_survive_the_shared_request(broker: BrokerProcess) -> None:
    create(broker.url, "CO_OPTS", queues=4)
    ready = OutgoingMessage(body="ready", properties={UNIQ_KEY: "MY-OWN-KEY", "colour": "red"}, queue_id=3)

    async def scenario() -> list:
        async with AsyncProducer(broker.url) as producer:
            return await asyncio.gather(
                producer.send("CO_OPTS", "tagged", tag="TagA", keys=["k1", "k2"], queue_id=1),
                producer.send("CO_OPTS", b"\x00\xffbinary", properties={"p": "v"}, queue_id=2),
                producer.send("CO_OPTS", ready),
                producer.send("CO_OPTS", "plain", queue_id=1, keys="single"),
            )

    tagged, binary, mine, plain = asyncio.run(scenario())
    assert (tagged.queue_id, binary.queue_id, mine.queue_id, plain.queue_id) == (1, 2, 3, 1)
    assert mine.msg_id == "MY-OWN-KEY"
    q1 = {m["body"]: m for m in stored(broker.url, "CO_OPTS", 1)}
    assert q1["tagged"]["tag"] == "TagA" and q1["tagged"]["keys"] == ["k1", "k2"]
    assert q1["plain"]["keys"] == ["single"] and q1["plain"]["tag"] is None
    (stored_binary,) = stored(broker.url, "CO_OPTS", 2)
    assert stored_binary["body_encoding"] == "base64" and stored_binary["properties"]["p"] == "v"
    (stored_ready,) = stored(broker.url, "CO_OPTS", 3)
    assert stored_ready["msg_id"] == "MY-OWN-KEY" and stored_ready["properties"]["colour"] == "red"


def test_cancelling_one_caller_leaves_the_others_sends_stored(broker: BrokerProcess) -> None:
    create(broker.url, "CO_CANCEL")

    async def scenario() -> list:
        async with AsyncProducer(broker.url) as producer:
            tasks = [asyncio.ensure_future(producer.send("CO_CANCEL", f"m{i}")) for i in range(10)]
            await asyncio.sleep(0)  # the sends are queued; their request leaves on the next pass
            tasks[4].cancel()
            return await asyncio.gather(*tasks, return_exceptions=True)

    outcomes = asyncio.run(scenario())
    assert isinstance(outcomes[4], asyncio.CancelledError)
    assert all(o.status is SendStatus.SEND_OK for i, o in enumerate(outcomes) if i != 4)
    assert sorted(m["body"] for m in stored(broker.url, "CO_CANCEL")) == sorted(f"m{i}" for i in range(10) if i != 4)


def test_closing_the_producer_answers_every_send_already_made(broker: BrokerProcess) -> None:
    create(broker.url, "CO_CLOSE")

    async def scenario() -> list:
        producer = AsyncProducer(broker.url)
        tasks = [asyncio.ensure_future(producer.send("CO_CLOSE", f"m{i}")) for i in range(30)]
        await asyncio.sleep(0)
        await asyncio.wait_for(producer.close(), 10)
        assert all(t.done() for t in tasks)
        return [t.result() for t in tasks]

    results = asyncio.run(scenario())
    assert all(r.status is SendStatus.SEND_OK for r in results)
    assert len(stored(broker.url, "CO_CLOSE")) == 30


@pytest.mark.parametrize("coalesce", [True, False])
def test_a_lone_send_is_one_request_either_way(broker: BrokerProcess, coalesce: bool) -> None:
    create(broker.url, f"CO_LONE_{coalesce}")

    async def scenario() -> None:
        async with AsyncProducer(broker.url, coalesce=coalesce) as producer:
            for i in range(5):
                await producer.send(f"CO_LONE_{coalesce}", f"m{i}")

    before = send_requests(broker.url)
    asyncio.run(scenario())
    assert send_requests(broker.url) - before == 5


def send_from_threads(producer: Producer, topic: str, bodies: list[str], **options: object) -> list:
    start = threading.Barrier(len(bodies))

    def one(body: str) -> object:
        start.wait(10)  # every thread sends at the same moment, as a busy program's would
        try:
            return producer.send(topic, body, **options)  # type: ignore[arg-type]
        except Exception as exc:  # noqa: BLE001 - returned for the assertions
            return exc

    with ThreadPoolExecutor(len(bodies)) as pool:
        return list(pool.map(one, bodies))


def test_blocking_sends_from_many_threads_share_requests_and_each_thread_gets_its_own_offset(broker: BrokerProcess) -> None:
    create(broker.url, "CO_THREADS")
    bodies = [f"t{i:02}" for i in range(48)]
    before = send_requests(broker.url)
    with Producer(broker.url) as producer:
        results = send_from_threads(producer, "CO_THREADS", bodies)
    requests = send_requests(broker.url) - before
    by_offset = {m["queue_offset"]: m["body"] for m in stored(broker.url, "CO_THREADS")}
    assert len(by_offset) == 48
    assert [by_offset[r.queue_offset] for r in results] == bodies
    print(f"48 blocking sends from 48 threads in {requests} requests")
    assert requests < 48


def test_a_bad_blocking_send_among_threads_gets_its_own_error_and_the_others_are_stored_once(broker: BrokerProcess) -> None:
    create(broker.url, "CO_THREADS_BAD")
    with Producer(broker.url) as producer:
        def one(i: int) -> object:
            try:
                if i == 7:
                    return producer.send("CO_THREADS_BAD", "bad", properties={"ORIGIN_MESSAGE_ID": "forged"})
                return producer.send("CO_THREADS_BAD", f"g{i:02}")
            except Exception as exc:  # noqa: BLE001 - returned for the assertions
                return exc

        with ThreadPoolExecutor(24) as pool:
            outcomes = list(pool.map(one, range(24)))
    assert isinstance(outcomes[7], ReservedProperty)
    assert sorted(m["body"] for m in stored(broker.url, "CO_THREADS_BAD")) == [f"g{i:02}" for i in range(24) if i != 7]


def test_blocking_sends_through_a_proxy_that_loses_answers_are_stored_once(broker: BrokerProcess) -> None:
    create(broker.url, "CO_THREADS_ONCE")
    proxy = LossyProxy(broker.port, "/v1/topics/CO_THREADS_ONCE/messages", drops=4)
    try:
        with Producer(proxy.url, retries=6) as producer:
            outcomes = send_from_threads(producer, "CO_THREADS_ONCE", [f"m{i}" for i in range(32)])
    finally:
        proxy.close()
    assert all(not isinstance(o, Exception) for o in outcomes), outcomes
    assert Counter(m["body"] for m in stored(broker.url, "CO_THREADS_ONCE")) == Counter(f"m{i}" for i in range(32))
