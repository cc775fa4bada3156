"""A telemetry stream whose client never reads its replies is ended by the broker, and the broker's memory stays put.

The attack from issue 30 (item 10): one stream, 20,000 settings commands, no reply read. It took a broker's RSS up by
187 MiB (every reply queued for a stream that never drained). Now the stream's outbox is bounded: the broker stops
reading, drops the session and ends the stream with RESOURCE_EXHAUSTED.

Issue 42: bounded per stream, 100 such streams still took a broker from 97 MB to 2.2 GB. Now all streams together
hold at most the broker's budget of unread bytes (the stream holding the most ends), and a client and its principal
may hold only so many streams open.
"""

from __future__ import annotations

import re
import threading
import time

import grpc
import pytest
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as spb
from rocketmq.grpc_protocol import service_pb2_grpc as rpc

from .conftest import RmqBroker

pytestmark = pytest.mark.slow

COMMANDS = 20_000
TOPICS = [pb.Resource(name=f"TOPIC_{i:03d}_" + "x" * 60) for i in range(50)]  # a settings reply of about 3.8 kB


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024


def test_a_stream_that_never_reads_its_replies_is_ended_and_broker_memory_stays_bounded(rmq_broker: RmqBroker) -> None:
    pid = rmq_broker.process.proc.pid
    taken = 0
    lock = threading.Lock()

    def commands():
        nonlocal taken
        settings = spb.TelemetryCommand(settings=pb.Settings(client_type=pb.ClientType.PRODUCER, publishing=pb.Publishing(topics=TOPICS)))
        for _ in range(COMMANDS):
            with lock:
                taken += 1
            yield settings

    with grpc.insecure_channel(rmq_broker.endpoint) as channel:
        stub = rpc.MessagingServiceStub(channel)
        stub.Heartbeat(spb.HeartbeatRequest())  # the channel and the front are warm before the baseline
        before = rss_mib(pid)
        replies = stub.Telemetry(commands(), metadata=(("x-mq-client-id", "never-reads"),), timeout=120)
        last, still = -1, 0.0
        while taken < COMMANDS and still < 3.0:  # until every command is taken, or gRPC's flow control holds the rest back
            time.sleep(0.25)
            still = still + 0.25 if taken == last else 0.0
            last = taken
        grown = rss_mib(pid) - before
        print(f"\nbroker RSS {before:.0f} MiB -> +{grown:.1f} MiB with {taken} of {COMMANDS} settings commands taken, none read")
        assert grown < 50
        read = 0
        with pytest.raises(grpc.RpcError) as ended:
            for _ in replies:
                read += 1
        print(f"read {read} replies, then {ended.value.code().name}: {ended.value.details()}")
    assert ended.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert taken < COMMANDS and read < taken  # the broker stopped reading, and dropped what it had not written
    log = rmq_broker.process.log_path.read_text()
    assert "telemetry stream of client 'never-reads' ended" in log


class Stream:
    """A telemetry stream that sends one settings command, then waits (its request iterator blocks) until ``end``."""

    def __init__(self, stub: rpc.MessagingServiceStub, client_id: str) -> None:
        self._ended = threading.Event()
        self.replies = stub.Telemetry(self._commands(), metadata=(("x-mq-client-id", client_id),), timeout=60)

    def _commands(self):
        yield spb.TelemetryCommand(settings=pb.Settings(client_type=pb.ClientType.PRODUCER, publishing=pb.Publishing(topics=TOPICS[:1])))
        self._ended.wait(60)

    def answered(self) -> bool:
        """True once the broker replied to its settings; False when it refused the stream with RESOURCE_EXHAUSTED."""
        try:
            return next(self.replies).HasField("settings")
        except grpc.RpcError as exc:
            assert exc.code() is grpc.StatusCode.RESOURCE_EXHAUSTED and "TOO_MANY_TELEMETRY_STREAMS" in exc.details()
            return False

    def end(self) -> None:
        self._ended.set()
        self.replies.cancel()


def test_more_telemetry_streams_than_a_client_and_its_principal_may_hold_are_refused(start_rmq_broker) -> None:
    broker = start_rmq_broker({"HALFMQ_BROKER_GRPC_TELEMETRY_STREAMS_PER_CLIENT": "2",
                               "HALFMQ_BROKER_GRPC_TELEMETRY_STREAMS_PER_PRINCIPAL": "3"})
    streams: list[Stream] = []
    with grpc.insecure_channel(broker.endpoint) as channel:
        stub = rpc.MessagingServiceStub(channel)
        try:
            for client_id, accepted in (("c1", True), ("c1", True), ("c1", False), ("c2", True), ("c3", False)):
                streams.append(Stream(stub, client_id))
                assert streams[-1].answered() is accepted, client_id
            streams[0].end()  # one of c1's ends: its place is free again, for another client of the principal
            deadline = time.monotonic() + 30
            while not Stream(stub, "c3").answered():
                assert time.monotonic() < deadline, "the ended stream still counts"
                time.sleep(0.2)
        finally:
            for stream in streams:
                stream.end()


UNREAD_BUDGET = 1024 * 1024
STREAMS = 20


def test_streams_that_never_read_cannot_make_the_broker_hold_more_than_its_budget_of_unread_replies(start_rmq_broker) -> None:
    broker = start_rmq_broker({"HALFMQ_BROKER_GRPC_TELEMETRY_UNREAD_BYTES": str(UNREAD_BUDGET)})
    pid = broker.process.proc.pid
    taken = [0] * STREAMS

    def commands(i: int):
        settings = spb.TelemetryCommand(settings=pb.Settings(client_type=pb.ClientType.PRODUCER, publishing=pb.Publishing(topics=TOPICS)))
        for _ in range(2_000):  # 7.6 MB of replies each: what one stream's outbox alone (16 MiB) would still take
            taken[i] += 1
            yield settings

    channels = [grpc.insecure_channel(broker.endpoint) for _ in range(STREAMS)]
    try:
        rpc.MessagingServiceStub(channels[0]).Heartbeat(spb.HeartbeatRequest())
        before = rss_mib(pid)
        calls = [rpc.MessagingServiceStub(ch).Telemetry(commands(i), metadata=(("x-mq-client-id", f"never-reads-{i}"),), timeout=120)
                 for i, ch in enumerate(channels)]
        last, still = -1, 0.0
        while still < 3.0:  # until gRPC's flow control holds every client back
            time.sleep(0.25)
            still = still + 0.25 if sum(taken) == last else 0.0
            last = sum(taken)
        print(f"\nbroker RSS {before:.0f} MiB -> +{rss_mib(pid) - before:.1f} MiB with {STREAMS} streams that never read, "
              f"{sum(taken)} settings commands taken")
        ends = []
        for call in calls:  # now read: what gRPC had sent, then the end the broker gave the stream
            with pytest.raises(grpc.RpcError) as ended:
                for _ in call:
                    pass
            ends.append((ended.value.code(), ended.value.details()))
    finally:
        for ch in channels:
            ch.close()
    assert {code for code, _ in ends} == {grpc.StatusCode.RESOURCE_EXHAUSTED}
    held = [int(m.group(1)) for _, details in ends if (m := re.search(r"hold (\d+) bytes unread \(at most (\d+)\)", details))]
    assert len(held) == STREAMS and max(held) <= UNREAD_BUDGET  # each ended by the broker's budget, never past it
    log = broker.process.log_path.read_text()
    assert log.count("the broker's telemetry streams hold") == STREAMS
