"""`kafka`: Kafka's clients against halfmq's Kafka front beside halfmq's own async SDK over HTTP, on one broker in
one run (issue 47's "the Kafka front costs no more than ~1.2x the SDK's HTTP path per message").

* ``kafka_produce_c64``: a confluent-kafka (librdkafka) idempotent producer, acks=all, keeping 64 messages in flight
  (a message's latency: ``produce`` to its delivery report); ``sdk_send_c64``: ``await AsyncProducer.send`` by 64
  callers. Both are durable (fsync'd) on the broker before they are acknowledged, and taken in turn (kafka, sdk,
  kafka, …). ``kafka_to_sdk``: the ratio of rates; each carries ``cpu_ms_per_msg`` (the broker's and the driver's
  CPU per acknowledged message, warm-up left out), and ``kafka_produce_c64``'s ``broker_cpu_kafka_to_sdk`` is the
  issue's gate: the broker's CPU per message on the Kafka front over the SDK's HTTP path.
* ``kafka_produce_c64_linger5``: the same producer with librdkafka's default ``linger.ms=5`` (the case above sends
  with 0): the broker's cost is per Produce request (one partition's batch, its write and its fsync), so the records a
  request carries set its cost per message.
* ``aiokafka_consume``: an aiokafka consumer reading a pre-filled topic's backlog by offset (``getmany``, no group,
  nothing acked: Kafka's reading); ``sdk_consume``: the SDK's ``AsyncConsumer`` draining the same backlog with a fresh
  group (receive 32 + ack: halfmq's reading, which holds and acks each message). ``kafka_to_sdk``: the ratio.

The backlog is written into the store before the broker starts (``bench.fill``), so every run reads the same one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from ..context import Context
from ..cpu import HasPid, cpu_ms_per_item, cpu_now, medians
from ..drain import drain_with_sdk
from ..load import Run, drive, percentile, run_async
from ..results import scenario_ok, scenario_unavailable, throughput_case
from ..servers import BrokerServer, free_port

SEND_TOPIC = "BENCH_KAFKA_SEND"
CONSUME_TOPIC = "BENCH_KAFKA_CONSUME"
QUEUES = 4
IN_FLIGHT = 64


def baselines(driver: str) -> list[str]:
    return []  # compared with halfmq's own SDK measured beside it


def _with_cpu(broker: HasPid, measure: Callable[[], Run]) -> Run:
    """``measure()``, and the CPU milliseconds the broker and the driver spent per message it carried."""
    before = cpu_now({"broker": broker})
    run = measure()
    run.extra["cpu_ms_per_msg"] = cpu_ms_per_item(before, cpu_now({"broker": broker}), run.items)
    return run


def _kafka_produce(bootstrap: str, seconds: float, max_ops: int, warmup: float, size: int, broker: HasPid,
                   linger_ms: int = 0) -> Run:
    """librdkafka keeping ``IN_FLIGHT`` messages unacknowledged; acknowledged messages per second."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": linger_ms})
    body = b"x" * size

    def one_run(secs: float) -> Run:
        latencies: list[float] = []
        errors = 0
        outstanding = threading.Semaphore(IN_FLIGHT)
        clock = time.perf_counter

        def delivered(started: float, err: Any) -> None:
            nonlocal errors
            outstanding.release()
            if err is None:
                latencies.append(clock() - started)
            else:
                errors += 1

        t0 = clock()
        deadline, sent = t0 + secs, 0
        while clock() < deadline and sent < max_ops:
            if outstanding.acquire(blocking=False):
                now = clock()
                producer.produce(SEND_TOPIC, body, on_delivery=lambda err, _m, s=now: delivered(s, err))
                sent += 1
            producer.poll(0.0005)
        producer.flush(60)
        elapsed = clock() - t0
        latencies.sort()
        return Run(len(latencies), len(latencies), len(latencies), errors, elapsed, _ms(percentile(latencies, 0.5)),
                   _ms(percentile(latencies, 0.99)), "confluent-kafka")

    try:
        if warmup > 0:
            one_run(warmup)
        return _with_cpu(broker, lambda: one_run(seconds))
    finally:
        producer.flush(60)


async def _sdk_send(url: str, seconds: float, max_ops: int, warmup: float, size: int, broker: HasPid) -> Run:
    from halfmq.client import AsyncProducer

    body = "x" * size
    producer: AsyncProducer[Any] = AsyncProducer(url)
    async with producer:
        async def one() -> int:
            await producer.send(SEND_TOPIC, body)
            return 1

        if warmup > 0:
            await drive(lambda _i: one, IN_FLIGHT, warmup, max_ops)
        before = cpu_now({"broker": broker})
        run = await drive(lambda _i: one, IN_FLIGHT, seconds, max_ops)
        run.extra["cpu_ms_per_msg"] = cpu_ms_per_item(before, cpu_now({"broker": broker}), run.items)
        return run


async def _aiokafka_consume(bootstrap: str, backlog: int, seconds: float, max_ops: int, warmup: float) -> Run:
    """One aiokafka consumer reads the backlog of every partition from offset 0 (no group); records per second."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def one_run(secs: float) -> Run:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
        await consumer.start()
        try:
            partitions = [TopicPartition(CONSUME_TOPIC, q) for q in range(QUEUES)]
            consumer.assign(partitions)
            await consumer.seek_to_beginning(*partitions)
            limit, got = min(backlog, max_ops), 0
            clock = time.perf_counter
            t0 = clock()
            deadline = t0 + secs
            while got < limit and clock() < deadline:
                batches = await consumer.getmany(timeout_ms=500, max_records=500)
                got += sum(len(records) for records in batches.values())
            return Run(got, got, 0, 0, clock() - t0, None, None, "aiokafka")
        finally:
            await consumer.stop()

    if warmup > 0:
        await one_run(warmup)
    return await one_run(seconds)


def _ms(v: float | None) -> float | None:
    return None if v is None else v * 1e3


def _ratio(cases: dict[str, Any], kafka: str, sdk: str) -> None:
    base = cases[sdk]["ops_per_s"]["median"]
    if base:
        cases[kafka]["kafka_to_sdk"] = round(cases[kafka]["ops_per_s"]["median"] / base, 3)


def _cpu_ratio(cases: dict[str, Any], kafka: str, sdk: str) -> None:
    base = cases[sdk].get("cpu_ms_per_msg", {}).get("broker")
    if base:
        cases[kafka]["broker_cpu_kafka_to_sdk"] = round(cases[kafka]["cpu_ms_per_msg"]["broker"] / base, 3)


def run(ctx: Context) -> dict[str, Any]:
    try:
        import aiokafka  # noqa: F401 - the dev extra
        import confluent_kafka  # noqa: F401
        import kafka  # noqa: F401 - the kafka extra: the broker's codec
    except ImportError as exc:
        return scenario_unavailable(f"{exc.name} is not installed (pip install 'halfmq[kafka,dev]')")
    from ..fill import fill  # the store itself: imported only when this scenario runs

    s = ctx.settings
    data = ctx.dir("kafka", "broker")
    ctx.note(f"kafka: pre-filling {CONSUME_TOPIC} with {s.consume_prefill:,} messages of {s.body_bytes} bytes")
    filled = fill(data, CONSUME_TOPIC, QUEUES, messages=s.consume_prefill, body_size=s.body_bytes)
    kafka_port = free_port()
    bootstrap = f"127.0.0.1:{kafka_port}"
    broker = BrokerServer(data, ctx.logs, env={"HALFMQ_BROKER_KAFKA_PORT": str(kafka_port)})
    cases = ctx.cases()
    with broker:
        broker.start()
        from halfmq.client import Producer

        with Producer(broker.url) as sdk:
            sdk.create_topic(SEND_TOPIC, queues=QUEUES)
        produced = ctx.alternate({
            "kafka produce c64": lambda _i, w: _kafka_produce(bootstrap, s.seconds, s.max_ops, w, s.body_bytes, broker),
            "kafka produce c64 linger5": lambda _i, w: _kafka_produce(bootstrap, s.seconds, s.max_ops, w, s.body_bytes, broker,
                                                                      linger_ms=5),
            "sdk send c64": lambda _i, w: run_async(_sdk_send(broker.url, s.seconds, s.max_ops, w, s.body_bytes, broker)),
        })
        for name, label, what in (
            ("kafka_produce_c64", "kafka produce c64",
             f"confluent-kafka idempotent producer, acks=all, {IN_FLIGHT} messages in flight (messages/s)"),
            ("kafka_produce_c64_linger5", "kafka produce c64 linger5",
             f"confluent-kafka idempotent producer, acks=all, linger.ms=5 (librdkafka's default), {IN_FLIGHT} messages in flight (messages/s)"),
            ("sdk_send_c64", "sdk send c64", f"halfmq AsyncProducer.send over HTTP, {IN_FLIGHT} callers (messages/s)"),
        ):
            runs = produced[label]
            cases[name] = throughput_case(runs, unit="msg/s", concurrency=IN_FLIGHT, what=what,
                                          cpu_ms_per_msg=medians([r.extra.get("cpu_ms_per_msg") or {} for r in runs]))
        for kafka_case in ("kafka_produce_c64", "kafka_produce_c64_linger5"):
            _ratio(cases, kafka_case, "sdk_send_c64")
            _cpu_ratio(cases, kafka_case, "sdk_send_c64")
        cases["aiokafka_consume"] = throughput_case(
            ctx.repeat("aiokafka consume", lambda _i, w: run_async(_aiokafka_consume(bootstrap, s.consume_prefill, s.seconds,
                                                                                    s.max_ops, w))),
            unit="msg/s", concurrency=1, what="aiokafka consumer, getmany by offset over 4 partitions, no group (messages/s)",
            no_latency="records per second read; no per-record latency")
        cases["sdk_consume"] = throughput_case(
            ctx.repeat("sdk consume", lambda _i, w: run_async(drain_with_sdk(
                broker.url, CONSUME_TOPIC, group_prefix="bench_kafka_sdk", batch=s.receive_batch, backlog=s.consume_prefill,
                seconds=s.seconds, max_ops=s.max_ops, warmup=w))),
            unit="msg/s", concurrency=1, what=f"AsyncConsumer (SDK) receive {s.receive_batch} + trivial handler + ack (messages/s)",
            no_latency="the SDK hides its receive and ack round trips; the figure is throughput only")
        _ratio(cases, "aiokafka_consume", "sdk_consume")
    return scenario_ok(cases, send_topic=SEND_TOPIC, consume_topic=CONSUME_TOPIC, queues=QUEUES, in_flight=IN_FLIGHT,
                       backlog=filled.as_json())
