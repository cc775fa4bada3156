"""A telemetry stream whose client never reads its replies is ended by the broker, and the broker's memory stays put.

The attack from issue 30 (item 10): one stream, 20,000 settings commands, no reply read. It took a broker's RSS up by
187 MiB (every reply queued for a stream that never drained). Now the stream's outbox is bounded: the broker stops
reading, drops the session and ends the stream with RESOURCE_EXHAUSTED.
"""

from __future__ import annotations

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
