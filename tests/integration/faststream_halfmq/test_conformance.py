"""FastStream's broker behaviours for ``HalfmqBroker``, each in memory and against a real broker process."""

from __future__ import annotations

from typing import Any

import pytest
from faststream import BaseMiddleware
from faststream.exceptions import RejectMessage
from faststream.message import StreamMessage
from faststream_halfmq import HalfmqBroker, HalfmqResponse, HalfmqRoute, HalfmqRouter
from faststream_halfmq.annotations import HalfmqMessage

from tests.integration.faststream_halfmq.conftest import Running, Seen
from tests.support.unique_names import unique


async def in_flight(url: str, group: str, topic: str) -> int:
    """The group's messages delivered and not settled yet."""
    from halfmq import AsyncSimpleConsumer

    async with AsyncSimpleConsumer(url, group, topic) as consumer:
        info = await consumer.group_info()
    return sum(q.in_flight for t in info.topics for q in t.queues)


async def test_a_published_message_reaches_its_subscriber_with_body_headers_and_correlation_id(url: str, running: Running, seen: Seen) -> None:
    broker, topic = HalfmqBroker(url), unique("FS")

    @broker.subscriber(topic, group="g")
    async def handle(body: dict[str, Any], message: HalfmqMessage) -> None:
        seen.add((body, message.headers.get("x-tenant"), message.correlation_id, message.raw_message.topic))

    async with running(broker) as br:
        await br.publish({"order_id": "o-1"}, topic, headers={"x-tenant": "t1"}, correlation_id="c-1")
        [(body, tenant, correlation_id, on_topic)] = await seen.at_least(1)
    assert (body, tenant, correlation_id, on_topic) == ({"order_id": "o-1"}, "t1", "c-1", topic)


async def test_every_consumer_group_gets_each_message(url: str, running: Running, seen: Seen) -> None:
    broker, topic = HalfmqBroker(url), unique("FS")

    @broker.subscriber(topic, group="billing")
    async def billing(body: str) -> None:
        seen.add(("billing", body))

    @broker.subscriber(topic, group="audit")
    async def audit(body: str) -> None:
        seen.add(("audit", body))

    async with running(broker) as br:
        await br.publish("hello", topic)
        await seen.at_least(2)
    assert sorted(seen.items) == [("audit", "hello"), ("billing", "hello")]


async def test_a_handler_result_goes_to_its_publisher_topic(url: str, running: Running, seen: Seen) -> None:
    broker, source, target = HalfmqBroker(url), unique("FS"), unique("FS")

    @broker.subscriber(source, group="g")
    @broker.publisher(target)
    async def double(n: int) -> int:
        return n * 2

    @broker.subscriber(target, group="g")
    async def sink(n: int) -> None:
        seen.add(n)

    async with running(broker) as br:
        await br.publish(21, source)
        assert await seen.at_least(1) == [42]


async def test_a_router_prefixes_its_topics_and_its_routes_are_registered(url: str, running: Running, seen: Seen) -> None:
    broker, topic = HalfmqBroker(url), unique("FS")

    async def handle(body: str) -> None:
        seen.add(body)

    router = HalfmqRouter(prefix="P", handlers=[HalfmqRoute(handle, topic, group="g")])
    broker.include_router(router)
    async with running(broker) as br:
        await br.publish("routed", f"P{topic}")
        assert await seen.at_least(1) == ["routed"]


async def test_middlewares_wrap_in_order_broker_then_router(url: str, running: Running, seen: Seen) -> None:
    def named(name: str) -> type[BaseMiddleware]:
        class Recording(BaseMiddleware):
            async def consume_scope(self, call_next: Any, msg: StreamMessage[Any]) -> Any:
                seen.add(f"{name} in")
                result = await call_next(msg)
                seen.add(f"{name} out")
                return result
        return Recording

    broker, topic = HalfmqBroker(url, middlewares=[named("broker")]), unique("FS")
    router = HalfmqRouter(middlewares=[named("router")])

    @router.subscriber(topic, group="g")
    async def handle(body: str) -> None:
        seen.add("handler")

    broker.include_router(router)
    async with running(broker) as br:
        await br.publish("x", topic)
        await seen.at_least(5)
    assert seen.items == ["broker in", "router in", "handler", "router out", "broker out"]


async def test_a_custom_parser_and_decoder_see_the_halfmq_message(url: str, running: Running, seen: Seen) -> None:
    async def parser(raw: Any, original: Any) -> StreamMessage[Any]:
        message = await original(raw)
        message.headers["parsed-from"] = raw.topic
        return message

    async def decoder(message: StreamMessage[Any], original: Any) -> Any:
        return {"decoded": await original(message)}

    broker, topic = HalfmqBroker(url), unique("FS")

    @broker.subscriber(topic, group="g", parser=parser, decoder=decoder)
    async def handle(body: dict[str, Any], message: HalfmqMessage) -> None:
        seen.add((body, message.headers["parsed-from"]))

    async with running(broker) as br:
        await br.publish("plain", topic)
        assert await seen.at_least(1) == [({"decoded": "plain"}, topic)]


async def test_a_message_group_travels_to_the_consumer_in_send_order(url: str, running: Running, seen: Seen) -> None:
    broker, topic = HalfmqBroker(url), unique("FS")

    @broker.subscriber(topic, group="g", max_workers=4)
    async def handle(body: str, message: HalfmqMessage) -> None:
        seen.add((body, message.raw_message.message_group))

    async with running(broker) as br:
        for n in range(5):
            await br.publish(f"m{n}", topic, message_group="acct-1")
        await seen.at_least(5)
    assert seen.items == [(f"m{n}", "acct-1") for n in range(5)]  # FIFO within the group, even with 4 workers


@pytest.mark.parametrize("mode", ["real_broker"])
async def test_a_delayed_message_is_delivered_after_one_sent_later_without_delay(url: str, running: Running, seen: Seen) -> None:
    broker, topic = HalfmqBroker(url), unique("FS")

    @broker.subscriber(topic, group="g", wait_seconds=0.5)
    async def handle(body: str) -> None:
        seen.add(body)

    async with running(broker) as br:
        await br.publish("late", topic, delay=1.0)
        await br.publish("early", topic)
        await seen.at_least(2)
    assert seen.items == ["early", "late"]


def test_the_asyncapi_schema_names_each_topic_as_a_channel() -> None:
    from faststream.specification import AsyncAPI

    broker = HalfmqBroker("http://127.0.0.1:9", description="credit")

    @broker.subscriber("ORDERS", group="credit")
    @broker.publisher("CREDITS")
    async def handle(order: dict[str, Any]) -> dict[str, Any]:
        return order

    schema = AsyncAPI(broker, schema_version="3.0.0").to_specification().to_jsonable()
    addresses = sorted(channel["address"] for channel in schema["channels"].values())
    assert addresses == ["CREDITS", "ORDERS"]
    assert schema["servers"]["development"]["protocol"] == "http"


@pytest.mark.parametrize("mode", ["in_memory"])
async def test_request_gets_the_handler_answer_in_memory(url: str, running: Running) -> None:
    broker, topic = HalfmqBroker(url), unique("FS")

    @broker.subscriber(topic, group="g")
    async def answer(n: int) -> HalfmqResponse:
        return HalfmqResponse(n + 1, headers={"answered": "yes"})

    async with running(broker) as br:
        response = await br.request(1, topic)
        assert await response.decode() == 2
        assert response.headers["answered"] == "yes"


@pytest.mark.parametrize("mode", ["in_memory"])
async def test_the_test_client_records_calls_on_handler_mocks(url: str, running: Running) -> None:
    broker, topic, target = HalfmqBroker(url), unique("FS"), unique("FS")
    out = broker.publisher(target)

    @broker.subscriber(topic, group="g")
    async def handle(body: dict[str, Any]) -> None:
        await out.publish({"seen": body["n"]})

    async with running(broker) as br:
        await br.publish({"n": 1}, topic)
        handle.mock.assert_called_once_with({"n": 1})
        out.mock.assert_called_once_with({"seen": 1})


@pytest.mark.parametrize("mode", ["real_broker"])
async def test_a_failing_handler_is_nacked_and_redelivered_then_acked(url: str, running: Running, seen: Seen) -> None:
    broker, topic = HalfmqBroker(url), unique("FS")

    @broker.subscriber(topic, group="g", wait_seconds=0.5)
    async def flaky(body: str, message: HalfmqMessage) -> None:
        seen.add(message.raw_message.delivery_attempt)
        if message.raw_message.delivery_attempt == 1:
            raise RuntimeError("first try fails")

    async with running(broker) as br:
        await br.publish("retry me", topic)
        await seen.at_least(2)
        left = await in_flight(url, "g", topic)
    assert seen.items[:2] == [1, 2]
    assert left == 0  # the second delivery was acked


@pytest.mark.parametrize("mode", ["real_broker"])
async def test_a_handler_failing_every_time_ends_in_the_groups_dlq(url: str, running: Running, seen: Seen) -> None:
    broker, topic = HalfmqBroker(url), unique("FS")

    @broker.subscriber(topic, group="g", wait_seconds=0.5)
    async def broken(body: str) -> None:
        seen.add(body)
        raise RuntimeError("always")

    @broker.subscriber("%DLQ%g", group="dlq-reader", wait_seconds=0.5)
    async def dead(body: str, message: HalfmqMessage) -> None:
        seen.add(("dead", body))

    async with running(broker) as br:
        await br.publish("poison", topic)
        await seen.at_least(5)  # 1 + MAX_RECONSUME_TIMES (3) attempts, then the dead letter
    assert seen.items == ["poison"] * 4 + [("dead", "poison")]


@pytest.mark.parametrize("mode", ["real_broker"])
async def test_a_rejected_message_is_settled_and_never_redelivered(url: str, running: Running, seen: Seen) -> None:
    broker, topic = HalfmqBroker(url), unique("FS")

    @broker.subscriber(topic, group="g", wait_seconds=0.5)
    async def refuse(body: str) -> None:
        seen.add(body)
        if body == "bad":
            raise RejectMessage

    async with running(broker) as br:
        await br.publish("bad", topic)
        await br.publish("good", topic)
        await seen.at_least(2)
        left = await in_flight(url, "g", topic)
    assert seen.items == ["bad", "good"]
    assert left == 0


@pytest.mark.parametrize("mode", ["real_broker"])
async def test_a_message_sent_with_the_sdk_reaches_a_faststream_handler(url: str, running: Running, seen: Seen) -> None:
    from halfmq import AsyncProducer

    broker, topic = HalfmqBroker(url), unique("FS")

    @broker.subscriber(topic, group="g")
    async def handle(body: dict[str, Any], message: HalfmqMessage) -> None:
        seen.add((body, message.message_id))

    async with running(broker), AsyncProducer(url) as producer:
        sent = await producer.send(topic, {"from": "sdk"}, properties={"k": "v"})
        assert await seen.at_least(1) == [({"from": "sdk"}, sent.msg_id)]


@pytest.mark.parametrize(("option", "value"), [("max_messages", 0), ("max_messages", 10_000), ("invisible_seconds", 0),
                                               ("wait_seconds", -1), ("max_workers", 0)])
def test_a_subscriber_out_of_the_receive_bounds_is_refused_where_it_is_declared(option: str, value: float) -> None:
    broker = HalfmqBroker("http://127.0.0.1:9")
    with pytest.raises(ValueError, match=option):
        broker.subscriber("ORDERS", group="g", **{option: value})


@pytest.mark.parametrize("mode", ["real_broker"])
async def test_request_against_a_broker_says_to_use_a_reply_topic(url: str, running: Running) -> None:
    from faststream.exceptions import FeatureNotSupportedException

    broker = HalfmqBroker(url)
    async with running(broker) as br:
        with pytest.raises(FeatureNotSupportedException, match="reply_to"):
            await br.request(1, unique("FS"))


@pytest.mark.parametrize("mode", ["real_broker"])
async def test_max_workers_handle_that_many_messages_at_once(url: str, running: Running, seen: Seen) -> None:
    import asyncio

    broker, topic, together = HalfmqBroker(url), unique("FS"), asyncio.Barrier(4)

    @broker.subscriber(topic, group="g", max_workers=4, wait_seconds=0.5)
    async def handle(body: str) -> None:
        async with asyncio.timeout(20):  # one worker at a time would never get four handlers in here
            await together.wait()
        seen.add(body)

    async with running(broker) as br:
        for body in "abcd":  # one by one: each may arrive in a receive of its own
            await br.publish(body, topic)
            await asyncio.sleep(0.3)
        await seen.at_least(4)
    assert sorted(seen.items) == ["a", "b", "c", "d"]


@pytest.mark.parametrize("mode", ["real_broker"])
async def test_the_test_client_with_real_runs_the_same_test_against_the_broker(url: str, seen: Seen) -> None:
    from faststream_halfmq import TestHalfmqBroker

    broker, topic = HalfmqBroker(url), unique("FS")

    @broker.subscriber(topic, group="g", wait_seconds=0.5)
    async def handle(body: dict[str, Any]) -> None:
        seen.add(body)

    async with TestHalfmqBroker(broker, with_real=True) as br:
        await br.publish({"n": 1}, topic)
        await seen.at_least(1)
        handle.mock.assert_called_once_with({"n": 1})
