"""A follower whose disk is full says so once at ERROR, and once more when it stores again, not at every tick.

Issue 30, item 12: the node's follow loop logged "No space left on device" at
INFO once a second. A real full disk (a small tmpfs) under the follower's store;
the leader is a real store behind a fake replication stream.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from halfmq.broker.cluster.follower import TERM_HEADER
from halfmq.broker.cluster.node import ClusterNode
from halfmq.broker.cluster.peers import PeerClient, PeerDisconnected, PeerRequest, PeerResponse
from halfmq.broker.cluster.stream_frames import RUN, run_frame
from halfmq.broker.config import BrokerSettings
from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig
from tests.support.fake_peers import fake_peers
from tests.support.small_disk import SmallDisk

SEGMENT = 1 << 20
TERM = 7
LEADER = "http://leader.test"


class _Stream:
    """A leader's replication stream: one run of the rest of its log from where the follower's log ends, then closed."""

    def __init__(self, store: MessageStore, first: bytes) -> None:
        start = json.loads(first)["from_offset"]
        end = store.commit_log.end_offset
        self.frames = [run_frame(RUN, TERM, start, end, 0, 0, SEGMENT, store.commit_log.read(start, end - start), history=[])]

    async def send(self, data: bytes) -> None:
        pass

    async def receive(self) -> bytes:
        if not self.frames:
            raise PeerDisconnected("closed")  # (the loop stops)
        return self.frames.pop(0)

    async def aclose(self) -> None:
        pass


def fake_leader(store: MessageStore) -> PeerClient:
    """The replication calls of a leader: its term end, and a stream that pushes the rest of its log, then closes."""
    def handle(request: PeerRequest) -> PeerResponse:
        assert request.url.path == "/v1/replication/term-end"
        return PeerResponse.of(200, json={"end_offset": store.commit_log.end_offset}, headers={TERM_HEADER: str(TERM)})
    client = fake_peers(handle, LEADER)

    async def stream(url: str, first: bytes, max_message_bytes: int = 0) -> _Stream:
        return _Stream(store, first)

    client.stream = stream  # type: ignore[method-assign, assignment]
    return client


def disk_lines(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    """What the broker said about storing the leader's log: the refusal, and that it works again (not the checkpoint's)."""
    return [(r.levelname, r.getMessage()) for r in caplog.records if r.name.startswith("halfmq.")
            and ("No space left" in r.getMessage() or " again" in r.getMessage()) and "checkpoint" not in r.getMessage()]


def levels(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [level for level, _ in disk_lines(caplog)]


async def test_a_full_disk_is_logged_once_per_change_at_error_not_at_info_every_tick(
        small_disk: SmallDisk, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    leader = MessageStore(StoreConfig(tmp_path / "leader", segment_bytes=SEGMENT))
    replica = MessageStore(StoreConfig(small_disk.path / "data", segment_bytes=SEGMENT))
    settings = BrokerSettings(data_dir=small_disk.path / "data", cluster="etcd://127.0.0.1:9/t", node_id="n2",
                              cluster_members=f"n1={LEADER},n2=http://127.0.0.1:10911")  # a set names its members
    node = ClusterNode(settings, SimpleNamespace(store=replica))  # type: ignore[arg-type]
    node.following.replication._http = fake_leader(leader)
    caplog.set_level(logging.INFO)
    try:
        leader.create_topic("T", 1)
        leader.put([PutItem("T", 0, b"x" * 200_000)])
        small_disk.fill()
        for _ in range(3):  # three ticks of the node: each follows again and is refused
            await node.following.replicate(LEADER, TERM)
        assert replica.commit_log.end_offset == 0
        assert levels(caplog) == ["ERROR"], disk_lines(caplog)

        small_disk.free()
        await node.following.replicate(LEADER, TERM)
        assert replica.commit_log.end_offset == leader.commit_log.end_offset
        assert levels(caplog) == ["ERROR", "WARNING"], disk_lines(caplog)

        leader.put([PutItem("T", 0, b"y" * 200_000)])
        small_disk.fill()
        for _ in range(3):
            await node.following.replicate(LEADER, TERM)
        assert levels(caplog) == ["ERROR", "WARNING", "ERROR"], disk_lines(caplog)
    finally:
        await node.following.replication._http.aclose()
        await node.etcd.aclose()
        await node._http.aclose()
        replica.close()
        leader.close()
